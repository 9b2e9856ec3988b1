//! Integration tests: one binary, a module per area (the slow suites are `tests/slow`), so that
//! `cargo test` links the library into two test binaries, not one per file.

#[path = "../common/mod.rs"]
mod common;

mod attack_faults;
mod bundle_gen;
mod cli;
mod contract_schema;
mod edge_fixtures;
mod fuzz_corpus;
mod garbage_inputs;
mod golden;
mod golden_text;
mod hostile_http;
mod hostile_mcp;
mod hostile_paths;
mod http_server;
mod live_reload;
mod mcp_server;
mod plain_generators;
mod proptest_tools;
mod read_partial;
mod search_contract;
mod search_graph;
mod search_phrases;
mod skill;
