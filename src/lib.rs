//! kbtools: search and read an exported Focowiki knowledge-base bundle (or a plain Markdown
//! folder) offline, answering the six agent tools — `search_files`, `read_file`, `list_tree`,
//! `get_file`, `read_related`, `expand_graph` — with the output contracts of the online
//! Developer OpenAPI.
//!
//! Data flows one way: [`bundle`] (walk, classify, frontmatter, records, diagnostics) →
//! [`markdown`] → [`index`] (catalog, tantivy, manifest) → [`tools`]. The library never prints.

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod analysis;
pub mod bundle;
pub mod bundle_gen;
pub mod compact;
pub mod cursor;
pub mod error;
pub mod eval;
#[doc(hidden)]
pub mod fuzz_entry;
pub mod graph;
pub mod http;
pub mod ids;
pub mod index;
pub mod json_text;
pub mod live;
pub mod markdown;
pub mod mcp;
pub mod okf;
pub mod render;
pub mod skill;
pub mod text;
pub mod tools;

pub use error::{ErrorCode, IndexError, ToolError};
pub use index::{BuildOptions, KnowledgeBase, ServeOptions};
