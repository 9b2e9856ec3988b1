//! `read_related` as text: a line per related page with its relation; the related-item line
//! `expand_graph` shares.

use serde_json::{Map, Value};

use super::{
    identifier, list_of, one_line, parens, path_of, plural, push_message_and_actions, revision,
    str_of, Listing, REASON_CHARS, TITLE_CHARS,
};

pub(super) fn read_related(output: &Value) -> Listing {
    let mut listing = Listing::new("related files");
    let items = list_of(output, "items");
    let requested = str_of(output, "fileId").map(identifier);
    let source = str_of(output, "sourceFileId")
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
        parens(&[revision(output)])
    ));
    push_message_and_actions(&mut listing, output);
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
    listing.cursor = str_of(output, "nextCursor").map(identifier);
    listing
}

/// One related file: `n. path — title`, then relation, direction and fileId, then the reason.
/// `steps` (expand_graph) maps fileIds to paths to name each step's start.
pub(super) fn related_item(
    rank: usize,
    item: &Value,
    steps: Option<&Map<String, Value>>,
) -> String {
    let mut first = format!("{rank}. {}", path_of(item));
    if let Some(title) = str_of(item, "title") {
        first.push_str(&format!(" — {}", one_line(title, TITLE_CHARS)));
    }
    let mut parts = Vec::new();
    if steps.is_some() {
        if let Some(depth) = item.get("relationshipDepth").and_then(Value::as_u64) {
            parts.push(format!("depth {depth}"));
        }
    }
    if let Some(relation) = str_of(item, "relationType") {
        parts.push(identifier(relation));
    }
    let direction = str_of(item, "direction").map(identifier);
    match (direction, steps) {
        (Some(direction), Some(steps)) => {
            let from = str_of(item, "fromFileId").map(|id| {
                steps
                    .get(id)
                    .and_then(Value::as_str)
                    .map(identifier)
                    .unwrap_or_else(|| identifier(id))
            });
            let link = match direction.as_str() {
                "outgoing" => "outgoing from",
                "incoming" => "incoming to",
                "bidirectional" => "bidirectional with",
                other => other,
            };
            parts.push(match from {
                Some(from) => format!("{link} {from}"),
                None => direction.clone(),
            });
        }
        (Some(direction), None) => parts.push(direction),
        (None, _) => {}
    }
    if let Some(id) = str_of(item, "fileId") {
        parts.push(format!("fileId {}", identifier(id)));
    }
    if item.get("contentAvailable") == Some(&Value::Bool(false)) {
        parts.push("content unavailable".into());
    }
    let mut lines = vec![first];
    if !parts.is_empty() {
        lines.push(format!("   {}", parts.join(" · ")));
    }
    if let Some(reason) = str_of(item, "reason") {
        lines.push(format!("   reason: {}", one_line(reason, REASON_CHARS)));
    }
    lines.join("\n")
}

// ---------------------------------------------------------------------------------------------
// Shared pieces
