//! `read_related` as text: a line per related page with its relation; the related-item line
//! `expand_graph` shares.

use std::collections::HashMap;

use super::{
    identifier, one_line, parens, path_or_id, plural, revision, shown, shown_opt, Listing,
    REASON_CHARS, TITLE_CHARS,
};
use crate::relation::Direction;
use crate::tools::read_related::Output;
use crate::tools::RelatedFile;

pub(super) fn read_related(output: &Output) -> Listing {
    let mut listing = Listing::new("related files");
    let items = &output.items;
    let requested = shown(&output.file_id).map(identifier);
    let source = shown(&output.source_file_id)
        .map(identifier)
        .filter(|s| Some(s) != requested.as_ref());
    let seed = match (requested, source) {
        (Some(r), Some(s)) => format!("{r} ({s})"),
        (Some(one), None) | (None, Some(one)) => one,
        (None, None) => "?".into(),
    };
    let count = if items.is_empty() {
        "no related files".to_string()
    } else {
        plural(items.len(), "related file", "related files")
    };
    listing.head.push(format!(
        "read_related {seed}: {count}{}",
        parens(&[revision(Some(output.active_content_revision))])
    ));
    if !items.is_empty() {
        listing
            .head
            .push("Leads, not evidence: read_file a related file before citing it.".to_string());
    }
    listing.items = items
        .iter()
        .enumerate()
        .map(|(i, item)| related_item(i + 1, item, None))
        .collect();
    listing.cursor = shown_opt(&output.next_cursor).map(identifier);
    listing
}

/// One related file: `n. path — title`, then relation, direction and fileId, then the reason.
/// `steps` (expand_graph) maps fileIds to paths to name each step's start.
pub(super) fn related_item(
    rank: usize,
    item: &RelatedFile,
    steps: Option<&HashMap<&str, &str>>,
) -> String {
    let mut first = format!("{rank}. {}", path_or_id(&item.path, &item.file_id));
    if let Some(title) = shown(&item.title) {
        first.push_str(&format!(" — {}", one_line(title, TITLE_CHARS)));
    }
    let mut parts = Vec::new();
    if steps.is_some() {
        parts.push(format!("depth {}", item.relationship_depth));
    }
    if let Some(relation) = shown(&item.relation_type) {
        parts.push(identifier(relation));
    }
    let direction = item.direction;
    match steps {
        Some(steps) => {
            let link = match direction {
                Direction::Outgoing => "outgoing from",
                Direction::Incoming => "incoming to",
                Direction::Bidirectional => "bidirectional with",
            };
            match shown(&item.from_file_id) {
                Some(id) => {
                    let from = identifier(steps.get(id).copied().unwrap_or(id));
                    parts.push(format!("{link} {from}"));
                }
                None => parts.push(direction.as_str().to_string()),
            }
        }
        None => parts.push(direction.as_str().to_string()),
    }
    if let Some(id) = shown(&item.file_id) {
        parts.push(format!("fileId {}", identifier(id)));
    }
    if !item.content_available {
        parts.push("content unavailable".into());
    }
    let mut lines = vec![first];
    lines.push(format!("   {}", parts.join(" · ")));
    if let Some(reason) = shown_opt(&item.reason) {
        lines.push(format!("   reason: {}", one_line(reason, REASON_CHARS)));
    }
    lines.join("\n")
}
