//! `search_files` as text: the query's status line, then a line per candidate (path, title,
//! evidence, excerpt); `kbtools search --explain` as text.

use super::{
    identifier, lines_of, number, one_line, parens, path_or_id, plural, revision, shown, shown_opt,
    Listing, EXCERPT_CHARS, MESSAGE_CHARS, QUERY_CHARS, RELATED_PATHS_SHOWN, TITLE_CHARS,
    VALUE_CHARS,
};
use crate::ingest::bundle::paths::ContractFileKind;
use crate::tools::search_files::{Output, ResultClass, SafeCode, SearchResult, Status};

pub(super) fn search_files(output: &Output) -> Listing {
    let mut listing = Listing::new("candidates");
    let items = &output.items;
    let count = if items.is_empty() {
        "no candidates".to_string()
    } else {
        plural(items.len(), "candidate", "candidates")
    };
    listing.head.push(format!(
        "search_files \"{}\": {count}{}",
        one_line(&output.query.query, QUERY_CHARS),
        parens(&[
            revision(output.active_content_revision),
            Some(format!("mode {}", output.search_mode)),
        ])
    ));
    listing.head.push(search_status(output));
    // The API's `message` and `nextActions` (edge responses), as header lines.
    if let Some(message) = output.message.flatten().and_then(shown) {
        listing
            .head
            .push(format!("message: {}", one_line(message, MESSAGE_CHARS)));
    }
    // Nearest pages, not matches (DECISIONS item 29): a line of their own.
    if let Some(nearest) = output.nearest.and_then(shown) {
        listing.head.push(format!(
            "nearest pages: {}",
            one_line(nearest, MESSAGE_CHARS)
        ));
    }
    let actions = lines_of(
        output.next_actions.as_deref().unwrap_or_default(),
        MESSAGE_CHARS,
    );
    if !actions.is_empty() {
        listing.head.push("next actions:".to_string());
        listing
            .head
            .extend(actions.into_iter().map(|a| format!("- {a}")));
    }
    if !items.is_empty() {
        listing.head.push(
            "Candidates, not evidence: read_file the ones you use (by fileId or path) before citing them."
                .to_string(),
        );
    }
    listing.items = items
        .iter()
        .enumerate()
        .map(|(i, item)| search_item(i + 1, item))
        .collect();
    listing.cursor = shown_opt(&output.next_cursor).map(identifier);
    listing
}

fn search_status(output: &Output) -> String {
    let mut parts = vec![format!(
        "search {}",
        identifier(output.search_status.as_str())
    )];
    if let Some(graph) = shown(output.graph_status.as_str()) {
        parts.push(format!("graph {}", identifier(graph)));
    }
    for (name, status) in [
        ("semantic", &output.semantic_status),
        ("reranker", &output.reranker_status),
    ] {
        parts.extend(status_part(name, status));
    }
    let degraded = lines_of(&output.evidence_status.degraded_families, VALUE_CHARS);
    if !degraded.is_empty() {
        parts.push(format!("degraded lanes: {}", degraded.join(", ")));
    }
    format!("status: {}", parts.join(" · "))
}

/// `semantic unavailable (SAFE_CODE)`: a lane's state and its code.
fn status_part(name: &str, status: &Status) -> Option<String> {
    let state = shown(status.state.as_str())?;
    let code = status
        .safe_code
        .map(SafeCode::as_str)
        .and_then(shown)
        .map(|c| format!(" ({})", identifier(c)))
        .unwrap_or_default();
    Some(format!("{name} {}{code}", identifier(state)))
}

fn search_item(rank: usize, item: &SearchResult) -> String {
    let mut first = format!("{rank}. {}", path_or_id(&item.path, &item.file_id));
    if let Some(title) = shown_opt(&item.title) {
        first.push_str(&format!(" — {}", one_line(title, TITLE_CHARS)));
    }
    first.push_str(&format!(" · score {}", number(item.score)));
    let mut lines = vec![first];

    let mut ids = Vec::new();
    if let Some(id) = shown(&item.file_id) {
        ids.push(format!("fileId {}", identifier(id)));
    }
    if let Some(source) = shown_opt(&item.source_file_id) {
        if Some(source) != shown(&item.file_id) {
            ids.push(format!("sourceFileId {}", identifier(source)));
        }
    }
    if item.file_kind != ContractFileKind::Page {
        ids.push(format!("kind {}", item.file_kind));
    }
    let fields = lines_of(&item.matched_fields, VALUE_CHARS);
    if !fields.is_empty() {
        ids.push(format!("match: {}", fields.join(", ")));
    }
    if !item.content_available {
        ids.push("content unavailable".to_string());
    }
    if item.okf_signals.is_stale == Some(true) {
        ids.push("stale".to_string());
    }
    if !ids.is_empty() {
        lines.push(format!("   {}", ids.join(" · ")));
    }

    if let Some(graph) = &item.graph_context {
        let mut parts = Vec::new();
        if let Some(graph_ref) = shown(&graph.graph_ref) {
            parts.push(format!("graphRef {}", identifier(graph_ref)));
        }
        let related: Vec<String> = graph
            .relationships
            .iter()
            .filter_map(|r| shown(&r.path))
            .map(identifier)
            .collect();
        if !related.is_empty() {
            let mut shown = related[..related.len().min(RELATED_PATHS_SHOWN)].join(", ");
            if related.len() > RELATED_PATHS_SHOWN {
                shown.push_str(&format!(", +{} more", related.len() - RELATED_PATHS_SHOWN));
            }
            parts.push(format!("related: {shown}"));
        }
        if !parts.is_empty() {
            lines.push(format!("   {}", parts.join(" · ")));
        }
    }

    if let Some(excerpt) = shown_opt(&item.source_excerpt) {
        lines.push(format!("   > {}", one_line(excerpt, EXCERPT_CHARS)));
    } else if let Some(description) = shown_opt(&item.description) {
        lines.push(format!("   > {}", one_line(description, EXCERPT_CHARS)));
    }
    lines.join("\n")
}

/// `kbtools search --explain` as text: a line per result (rank, class, score, path), then a line
/// per lane that found it (rank in the lane, weight, share) and the graph, relation and
/// translation shares that are not zero.
pub fn render_explained(results: &[crate::tools::search_files::ExplainedResult]) -> String {
    use std::fmt::Write as _;
    if results.is_empty() {
        return "no candidates\n".to_string();
    }
    let mut out = String::new();
    for r in results {
        // Path and title hits come before the rest whatever their score.
        let class = match r.class {
            ResultClass::Score => String::new(),
            class => format!(" · {class} hit"),
        };
        let _ = writeln!(
            out,
            "{:>2}. {}{class} · score {}",
            r.rank,
            identifier(&r.path),
            number(r.score)
        );
        for lane in &r.explained.lanes {
            let cosine = lane
                .cosine
                .map_or(String::new(), |c| format!("  cosine {c:.4}"));
            let _ = writeln!(
                out,
                "      {:<14} rank {:>4}  weight {:>5}  +{}{cosine}",
                lane.lane,
                lane.rank,
                number(lane.weight),
                number(lane.share)
            );
        }
        for (what, share) in [
            ("file_graph", r.explained.graph),
            ("relationship", r.explained.relationship),
            ("translation", r.explained.translation),
        ] {
            if share > 0.0 {
                let _ = writeln!(out, "      {what:<14} +{}", number(share));
            }
        }
    }
    out
}
