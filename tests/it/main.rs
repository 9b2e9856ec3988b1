//! Integration tests: one binary, a module per area (the slow suites are `tests/slow`), so that
//! `cargo test` links the library into two test binaries, not one per file.

#[path = "../common/mod.rs"]
mod common;

// The modules that run a server, or the binary as a whole, need the `server` feature (on by
// default).

mod architecture;
#[cfg(feature = "server")]
mod attack_faults;
#[cfg(all(feature = "semantic", feature = "server"))]
mod background_embedding;
#[cfg(feature = "gen-bundle")]
mod bundle_gen;
#[cfg(feature = "server")]
mod check;
#[cfg(feature = "server")]
mod cli;
mod contract_schema;
#[cfg(all(feature = "semantic", feature = "server"))]
mod crosslingual;
mod edge_fixtures;
#[cfg(feature = "server")]
mod eval_ci;
mod exclusions;
mod fuzz_corpus;
mod garbage_inputs;
mod golden;
mod golden_text;
#[cfg(feature = "server")]
mod hostile_http;
#[cfg(feature = "server")]
mod hostile_mcp;
mod hostile_paths;
#[cfg(feature = "server")]
mod http_server;
#[cfg(feature = "server")]
mod live_reload;
#[cfg(feature = "server")]
mod mcp_server;
#[cfg(all(feature = "semantic", feature = "server"))]
mod model_download;
mod plain_generators;
mod plain_paths;
#[cfg(feature = "server")]
mod proptest_tools;
mod read_partial;
mod relation_graph;
#[cfg(feature = "server")]
mod replicas;
mod search_aggregates;
mod search_analysis;
mod search_borrowed;
mod search_contract;
mod search_graph;
mod search_identifiers;
mod search_literals;
mod search_memo;
mod search_nearest;
mod search_phrases;
#[cfg(all(feature = "semantic", feature = "server"))]
mod semantic;
#[cfg(feature = "server")]
mod server_guards;
#[cfg(feature = "server")]
mod server_limits;
#[cfg(feature = "server")]
mod skill;
#[cfg(feature = "server")]
mod tool_doors;
