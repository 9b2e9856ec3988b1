//! Ingest: from a folder on disk to what the index stores. The walk, reading, frontmatter,
//! records and the bundle-wide assembly (`bundle/`); the pulldown-cmark summary of a page
//! (`markdown.rs`); which pages are aggregates, changelogs and collections (`aggregate.rs`);
//! the text analysis the index and the queries share (`analysis/`).

pub mod aggregate;
pub mod analysis;
pub mod bundle;
pub mod markdown;
