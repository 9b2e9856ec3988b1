//! `list_tree` as text: a line per entry (directories first as the tool orders them).

use serde_json::Value;

use super::{identifier, list_of, parens, path_of, plural, revision, str_of, Listing};

pub(super) fn list_tree(input: &Value, output: &Value) -> Listing {
    let mut listing = Listing::new("entries");
    let items = list_of(output, "items");
    let parent = input
        .get("parentPath")
        .and_then(Value::as_str)
        .or_else(|| items.first().and_then(|i| i.get("parentPath")?.as_str()))
        .map(|p| p.trim().trim_matches('/'))
        .filter(|p| !p.is_empty());
    let count = if items.is_empty() {
        "no entries".to_string()
    } else {
        plural(items.len(), "entry", "entries")
    };
    listing.head.push(format!(
        "list_tree {}: {count}{}",
        parent.map(identifier).unwrap_or_else(|| "(root)".into()),
        parens(&[revision(output)])
    ));
    listing.items = items.iter().map(tree_entry).collect();
    listing.cursor = str_of(output, "nextCursor").map(identifier);
    listing
}

fn tree_entry(entry: &Value) -> String {
    let path = path_of(entry);
    if str_of(entry, "entryType") == Some("directory") {
        let mut line = format!("dir  {path}/");
        if let Some(n) = entry.get("directEntryCount").and_then(Value::as_u64) {
            line.push_str(&format!(" · {}", plural(n as usize, "entry", "entries")));
        }
        return line;
    }
    let mut parts = vec![format!("file {path}")];
    if let Some(id) = str_of(entry, "fileId") {
        parts.push(identifier(id));
    }
    if let Some(kind) = str_of(entry, "fileKind").filter(|k| *k != "page") {
        parts.push(identifier(kind));
    }
    if entry.get("contentAvailable") == Some(&Value::Bool(false)) {
        parts.push("content unavailable".into());
    }
    parts.join(" · ")
}

// ---------------------------------------------------------------------------------------------
// get_file
