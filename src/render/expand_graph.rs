//! `expand_graph` as text: the walk's pages, each with the step that reached it.

use serde_json::{Map, Value};

use super::read_related::related_item;

use super::{
    identifier, list_of, one_line, parens, path_of, plural, revision, str_of, strings_of, Listing,
    TITLE_CHARS,
};

pub(super) fn expand_graph(output: &Value) -> Listing {
    let mut listing = Listing::new("relationships");
    let seed = output.get("seedFile").filter(|s| s.is_object());
    let relationships = list_of(output, "relationships");
    let summary = output.get("resultSummary");

    // fileId → path of every file named here, so a step's start shows as a path.
    let mut paths: Map<String, Value> = Map::new();
    for file in seed.into_iter().chain(relationships.iter()) {
        if let Some(path) = str_of(file, "path") {
            for key in ["fileId", "sourceFileId"] {
                if let Some(id) = str_of(file, key) {
                    paths
                        .entry(id.to_string())
                        .or_insert_with(|| Value::from(path));
                }
            }
        }
    }

    let mut seed_text = seed.map(path_of).unwrap_or_else(|| "?".into());
    if let Some(title) = seed.and_then(|s| str_of(s, "title")) {
        seed_text.push_str(&format!(" — {}", one_line(title, TITLE_CHARS)));
    }
    let count = if relationships.is_empty() {
        "no relationships".to_string()
    } else {
        plural(relationships.len(), "relationship", "relationships")
    };
    let depth = summary
        .and_then(|s| s.get("depth"))
        .and_then(Value::as_u64)
        .map(|d| format!("depth {d}"));
    let fanout = summary
        .and_then(|s| s.get("fanout"))
        .and_then(Value::as_u64)
        .map(|f| format!("fanout {f}"));
    listing.head.push(format!(
        "expand_graph from {seed_text}: {count}{}",
        parens(&[revision(output), depth, fanout])
    ));
    if let Some(id) = seed.and_then(|s| str_of(s, "fileId")) {
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
    listing.cursor = str_of(output, "nextCursor").map(identifier);
    let graph_paths = strings_of(output, "graphPaths", usize::MAX);
    if !graph_paths.is_empty() {
        listing.tail.push(format!(
            "graph records (read_file by path): {}",
            graph_paths.join(", ")
        ));
    }
    listing
}
