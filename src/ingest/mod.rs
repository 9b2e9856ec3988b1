//! Ingest: from a folder on disk to what the index stores. The walk, reading, frontmatter,
//! records and the bundle-wide assembly (`bundle/`); the pulldown-cmark summary of a page
//! (`markdown.rs`); the text analysis the index and the queries share (`analysis/`).

pub mod analysis;
pub mod bundle;
pub mod markdown;
