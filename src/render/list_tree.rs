//! `list_tree` as text: a line per entry (directories first as the tool orders them).

use super::{identifier, parens, path_or_id, plural, revision, shown, shown_opt, Listing};
use crate::ingest::bundle::paths::ContractFileKind;
use crate::tools::list_tree::{EntryType, Output, TreeEntry};

pub(super) fn list_tree(output: &Output) -> Listing {
    let mut listing = Listing::new("entries");
    let items = &output.items;
    let parent = output.parent_path.trim().trim_matches('/');
    let count = if items.is_empty() {
        "no entries".to_string()
    } else {
        plural(items.len(), "entry", "entries")
    };
    listing.head.push(format!(
        "list_tree {}: {count}{}",
        shown(parent).map_or_else(|| "(root)".into(), identifier),
        parens(&[revision(output.active_content_revision)])
    ));
    listing.items = items.iter().map(tree_entry).collect();
    listing.cursor = shown_opt(&output.next_cursor).map(identifier);
    listing
}

fn tree_entry(entry: &TreeEntry) -> String {
    let path = path_or_id(&entry.path, entry.file_id.as_deref().unwrap_or_default());
    if entry.entry_type == EntryType::Directory {
        let n = entry.direct_entry_count as usize;
        return format!("dir  {path}/ · {}", plural(n, "entry", "entries"));
    }
    let mut parts = vec![format!("file {path}")];
    if let Some(id) = shown_opt(&entry.file_id) {
        parts.push(identifier(id));
    }
    if let Some(kind) = entry.file_kind.filter(|k| *k != ContractFileKind::Page) {
        parts.push(kind.to_string());
    }
    if !entry.content_available {
        parts.push("content unavailable".into());
    }
    parts.join(" · ")
}
