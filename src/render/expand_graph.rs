//! `expand_graph` as text: the walk's pages, each with the step that reached it.

use std::collections::HashMap;

use super::read_related::related_item;
use super::{
    identifier, lines_of, one_line, parens, path_or_id, plural, revision, shown, shown_opt,
    Listing, TITLE_CHARS,
};
use crate::tools::expand_graph::Output;

pub(super) fn expand_graph(output: &Output) -> Listing {
    let mut listing = Listing::new("relationships");
    let seed = &output.seed_file;
    let relationships = &output.relationships;
    let summary = &output.result_summary;

    // fileId → path of every file named here, so a step's start shows as a path.
    let mut paths: HashMap<&str, &str> = HashMap::new();
    let seed_ids = [Some(seed.file_id.as_str()), seed.source_file_id.as_deref()];
    let files =
        std::iter::once((seed.path.as_str(), seed_ids)).chain(relationships.iter().map(|r| {
            let ids = [Some(r.file_id.as_str()), Some(r.source_file_id.as_str())];
            (r.path.as_str(), ids)
        }));
    for (path, ids) in files {
        let Some(path) = shown(path) else { continue };
        for id in ids.into_iter().flatten().filter_map(shown) {
            paths.entry(id).or_insert(path);
        }
    }

    let mut seed_text = path_or_id(&seed.path, &seed.file_id);
    if let Some(title) = shown_opt(&seed.title) {
        seed_text.push_str(&format!(" — {}", one_line(title, TITLE_CHARS)));
    }
    let count = if relationships.is_empty() {
        "no relationships".to_string()
    } else {
        plural(relationships.len(), "relationship", "relationships")
    };
    listing.head.push(format!(
        "expand_graph from {seed_text}: {count}{}",
        parens(&[
            revision(Some(output.active_content_revision)),
            Some(format!("depth {}", summary.depth)),
            Some(format!("fanout {}", summary.fanout)),
        ])
    ));
    if let Some(id) = shown(&seed.file_id) {
        listing.head.push(format!("seed fileId {}", identifier(id)));
    }
    if !relationships.is_empty() {
        listing
            .head
            .push("Leads, not evidence: read_file a related file before citing it.".to_string());
    }
    listing.items = relationships
        .iter()
        .enumerate()
        .map(|(i, item)| related_item(i + 1, item, Some(&paths)))
        .collect();
    listing.cursor = shown_opt(&output.next_cursor).map(identifier);
    let graph_paths = lines_of(&output.graph_paths, usize::MAX);
    if !graph_paths.is_empty() {
        listing.tail.push(format!(
            "graph records (read_file by path): {}",
            graph_paths.join(", ")
        ));
    }
    listing
}
