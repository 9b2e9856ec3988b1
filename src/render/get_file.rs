//! `get_file` as text: the file's metadata, OKF signals and frontmatter keys.

use serde_json::{Map, Value};

use super::{
    fit_lines, identifier, lines_of, one_line, parens, path_or_id, plural, revision, shown,
    shown_opt, value_text, FRONTMATTER_KEYS_SHOWN, MESSAGE_CHARS, TITLE_CHARS, VALUE_CHARS,
};
use crate::okf::{OkfSignals, OkfStatus, TrustTier};
use crate::tools::get_file::Output;

pub(super) fn get_file(output: &Output, budget: usize) -> String {
    let file = &output.file;
    let mut lines = vec![format!(
        "get_file {}{}",
        path_or_id(&file.path, &file.file_id),
        parens(&[revision(Some(file.active_content_revision))])
    )];
    if let Some(title) = shown_opt(&file.title) {
        lines.push(format!("title: {}", one_line(title, TITLE_CHARS)));
    }
    if let Some(id) = shown(&file.file_id) {
        lines.push(format!("fileId: {}", identifier(id)));
    }
    let source = shown_opt(&file.source_file_id);
    if let Some(source) = source.filter(|s| Some(*s) != shown(&file.file_id)) {
        lines.push(format!("sourceFileId: {}", identifier(source)));
    }
    let mut kind = Vec::new();
    kind.push(file.file_kind.to_string());
    if source.is_some() {
        kind.push("source page (read_related and expand_graph apply)".into());
    }
    if let Some(t) = shown(&file.content_type) {
        kind.push(one_line(t, VALUE_CHARS));
    }
    kind.push(format!("{} bytes", file.size_bytes));
    if !file.content_available {
        kind.push("content unavailable".into());
    }
    lines.push(format!("kind: {}", kind.join(" · ")));
    if let Some(okf_type) = shown_opt(&file.okf_type) {
        lines.push(format!("okfType: {}", one_line(okf_type, VALUE_CHARS)));
    }
    if let Some(description) = shown_opt(&file.description) {
        lines.push(format!(
            "description: {}",
            one_line(description, MESSAGE_CHARS)
        ));
    }
    let tags = lines_of(&file.tags, VALUE_CHARS);
    if !tags.is_empty() {
        lines.push(format!("tags: {}", tags.join(", ")));
    }
    if let Some(okf) = okf_line(&file.okf_signals) {
        lines.push(okf);
    }
    lines.extend(frontmatter_lines(&file.frontmatter));
    fit_lines(
        lines,
        budget,
        "[truncated: metadata cut to fit the budget; read_file returns the file with its whole frontmatter]",
    )
}

fn okf_line(signals: &OkfSignals) -> Option<String> {
    let mut parts = Vec::new();
    // What every page without OKF metadata says is no signal worth a line.
    let status = signals
        .effective_status
        .filter(|s| *s != OkfStatus::Stable)
        .map(OkfStatus::as_str);
    let trust = signals
        .trust_tier
        .filter(|t| *t != TrustTier::Unverified)
        .map(TrustTier::as_str);
    for (name, value) in [
        ("status", status),
        ("trust", trust),
        ("stale after", shown_opt(&signals.stale_after)),
        ("generated", shown_opt(&signals.generated_at)),
        ("verified", shown_opt(&signals.latest_verified_at)),
    ] {
        if let Some(v) = value {
            parts.push(format!("{name} {}", one_line(v, VALUE_CHARS)));
        }
    }
    if let Some(freshness) = signals.freshness() {
        parts.push(freshness.as_str().into());
    }
    if let Some(n) = signals.source_count.filter(|n| *n > 0) {
        parts.push(plural(n as usize, "source", "sources"));
    }
    (!parts.is_empty()).then(|| format!("okf: {}", parts.join(" · ")))
}

/// `frontmatter:` and one indented `key: value` line per key not already shown above.
fn frontmatter_lines(frontmatter: &Map<String, Value>) -> Vec<String> {
    const SHOWN_ABOVE: [&str; 4] = ["title", "description", "tags", "type"];
    let keys: Vec<(&String, &Value)> = frontmatter
        .iter()
        .filter(|(k, _)| !SHOWN_ABOVE.contains(&k.as_str()))
        .collect();
    if keys.is_empty() {
        return Vec::new();
    }
    let mut lines = vec!["frontmatter:".to_string()];
    for (key, value) in keys.iter().take(FRONTMATTER_KEYS_SHOWN) {
        lines.push(format!(
            "  {}: {}",
            one_line(key, VALUE_CHARS),
            value_text(value, VALUE_CHARS)
        ));
    }
    if keys.len() > FRONTMATTER_KEYS_SHOWN {
        lines.push(format!(
            "  … {} more keys (read_file shows them all)",
            keys.len() - FRONTMATTER_KEYS_SHOWN
        ));
    }
    lines
}
