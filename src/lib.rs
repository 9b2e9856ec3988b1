//! kbtools: search and read an exported Focowiki knowledge-base bundle (or a plain Markdown
//! folder) offline, answering the six agent tools — `search_files`, `read_file`, `list_tree`,
//! `get_file`, `read_related`, `expand_graph` — with the output contracts of the online
//! Developer OpenAPI.
//!
//! Data flows one way: [`ingest`] (walk, classify, frontmatter, records, diagnostics, Markdown,
//! analysis) → [`index`] (catalog, tantivy, manifest) → [`search`] → [`tools`] → [`render`];
//! every front door answers a tool call through [`door`].
//! The library never prints.

#![deny(clippy::print_stdout, clippy::print_stderr)]

#[cfg(feature = "gen-bundle")]
pub mod bundle_gen;
pub mod check;
pub(crate) mod compact;
pub mod cursor;
pub mod door;
#[cfg(feature = "semantic")]
pub mod embed;
pub mod error;
pub mod eval;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod fuzz_entry;
pub mod graph;
pub(crate) mod ids;
pub mod index;
pub mod ingest;
pub(crate) mod json_text;
pub mod junit;
pub mod kb;
pub mod memory;
pub mod okf;
pub(crate) mod relation;
pub mod render;
pub mod search;
#[cfg(feature = "server")]
pub mod serve;
pub mod skill;
#[cfg(test)]
mod test_rng;
pub mod text;
pub mod tools;
pub mod wire;

pub use error::{ErrorCode, IndexError, ToolError};
pub use index::BuildOptions;
pub use kb::{KnowledgeBase, ServeOptions};

/// Turns transparent huge pages off for this process, as `MIMALLOC_ALLOW_THP=0` does (the
/// `kbtools` command does it first thing; the benchmarks too, to measure what it does). Memory
/// mimalloc gives back and takes again came back as 2 MiB pages zeroed whole: a server zeroed
/// them on every search (a fifth of its CPU time), an incremental build for every fresh
/// vector. Measured at 100,000 pages: one-page rebuild 1.37 → 1.00 s, the MCP server's CPU over
/// 300 searches 3.5 → 2.65 s (p99 40 → 14 ms); full builds unchanged.
pub fn no_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    {
        use libc::c_ulong;
        // SAFETY: PR_SET_THP_DISABLE takes one integer argument and touches no memory of ours;
        // it fails harmlessly (EINVAL) on kernels without it.
        unsafe {
            libc::prctl(
                libc::PR_SET_THP_DISABLE,
                1 as c_ulong,
                0 as c_ulong,
                0 as c_ulong,
                0 as c_ulong,
            );
        }
    }
}
