//! `search_files` as text: the query's status line, then a line per candidate (path, title,
//! evidence, excerpt); `kbtools search --explain` as text.

use serde_json::Value;

use super::{
    identifier, list_of, number, one_line, parens, path_of, plural, push_message_and_actions,
    revision, str_of, strings_of, Listing, EXCERPT_CHARS, QUERY_CHARS, RELATED_PATHS_SHOWN,
    TITLE_CHARS, VALUE_CHARS,
};

pub(super) fn search_files(input: &Value, output: &Value) -> Listing {
    let mut listing = Listing::new("candidates");
    let items = list_of(output, "items");
    let context = output.get("query").filter(|q| q.is_object());
    let query = context
        .and_then(|q| str_of(q, "query"))
        .or_else(|| str_of(input, "query"))
        .unwrap_or("");
    let mode = str_of(output, "searchMode").or_else(|| context.and_then(|q| str_of(q, "mode")));
    let count = if items.is_empty() {
        "no candidates".to_string()
    } else {
        plural(items.len(), "candidate", "candidates")
    };
    listing.head.push(format!(
        "search_files \"{}\": {count}{}",
        one_line(query, QUERY_CHARS),
        parens(&[
            revision(output),
            mode.map(|m| format!("mode {}", identifier(m)))
        ])
    ));
    listing.head.push(search_status(output, items.is_empty()));
    push_message_and_actions(&mut listing, output);
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
    listing.cursor = str_of(output, "nextCursor").map(identifier);
    listing
}

fn search_status(output: &Value, empty: bool) -> String {
    let mut parts = vec![format!(
        "search {}",
        str_of(output, "searchStatus")
            .map(identifier)
            .unwrap_or_else(|| if empty { "no_candidates" } else { "ok" }.to_string())
    )];
    if let Some(graph) = str_of(output, "graphStatus") {
        parts.push(format!("graph {}", identifier(graph)));
    }
    for (key, name) in [
        ("semanticStatus", "semantic"),
        ("rerankerStatus", "reranker"),
    ] {
        if let Some(status) = output.get(key) {
            if let Some(state) = str_of(status, "state") {
                let code = str_of(status, "safeCode")
                    .map(|c| format!(" ({})", identifier(c)))
                    .unwrap_or_default();
                parts.push(format!("{name} {}{code}", identifier(state)));
            }
        }
    }
    if let Some(evidence) = output.get("evidenceStatus") {
        let degraded = strings_of(evidence, "degradedFamilies", VALUE_CHARS);
        if !degraded.is_empty() {
            parts.push(format!("degraded lanes: {}", degraded.join(", ")));
        }
    }
    format!("status: {}", parts.join(" · "))
}

fn search_item(rank: usize, item: &Value) -> String {
    let mut first = format!("{rank}. {}", path_of(item));
    if let Some(title) = str_of(item, "title") {
        first.push_str(&format!(" — {}", one_line(title, TITLE_CHARS)));
    }
    if let Some(score) = item.get("score").and_then(Value::as_f64) {
        first.push_str(&format!(" · score {}", number(score)));
    }
    let mut lines = vec![first];

    let mut ids = Vec::new();
    if let Some(id) = str_of(item, "fileId") {
        ids.push(format!("fileId {}", identifier(id)));
    }
    if let Some(source) = str_of(item, "sourceFileId") {
        if Some(source) != str_of(item, "fileId") {
            ids.push(format!("sourceFileId {}", identifier(source)));
        }
    }
    if let Some(kind) = str_of(item, "fileKind").filter(|k| *k != "page") {
        ids.push(format!("kind {}", identifier(kind)));
    }
    let fields = strings_of(item, "matchedFields", VALUE_CHARS);
    if !fields.is_empty() {
        ids.push(format!("match: {}", fields.join(", ")));
    }
    if item.get("contentAvailable") == Some(&Value::Bool(false)) {
        ids.push("content unavailable".to_string());
    }
    if item
        .get("okfSignals")
        .and_then(|s| s.get("isStale"))
        .and_then(Value::as_bool)
        == Some(true)
    {
        ids.push("stale".to_string());
    }
    if !ids.is_empty() {
        lines.push(format!("   {}", ids.join(" · ")));
    }

    if let Some(graph) = item.get("graphContext").filter(|g| g.is_object()) {
        let mut parts = Vec::new();
        if let Some(graph_ref) = str_of(graph, "graphRef") {
            parts.push(format!("graphRef {}", identifier(graph_ref)));
        }
        let related: Vec<String> = list_of(graph, "relationships")
            .iter()
            .filter_map(|r| str_of(r, "path"))
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

    if let Some(excerpt) = str_of(item, "sourceExcerpt") {
        lines.push(format!("   > {}", one_line(excerpt, EXCERPT_CHARS)));
    } else if let Some(description) = str_of(item, "description") {
        lines.push(format!("   > {}", one_line(description, EXCERPT_CHARS)));
    }
    lines.join("\n")
}

// ---------------------------------------------------------------------------------------------
// list_tree

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
            "score" => String::new(),
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
            let _ = writeln!(
                out,
                "      {:<14} rank {:>4}  weight {:>5}  +{}",
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
