//! The bundle-wide files of a generated bundle: directory navigation (`index.md` and its
//! leaves), the root `index.md` and `log.md`, `_index/pages/**` routers and document packets,
//! `_index/terms/**` term routes, and `_graph/**` (catalog, `by-directory` routers and
//! relationship packets, `by-file` records), in the shapes of a real export.

use super::*;

mod graph;
mod navigation;
mod page_index;
mod terms;

pub(super) use graph::{graph_files, Evidence};
pub(super) use navigation::{log_md, page_navigation, root_index};
pub(super) use page_index::index_pages;
pub(super) use terms::index_terms;
// Each part reaches the others' items through `super::*`.
use navigation::*;
use page_index::*;

#[cfg(test)]
mod tests;
