//! `get_file` as text: the file's metadata, OKF signals and frontmatter keys.

use serde_json::{Map, Value};

use super::{
    fit_lines, identifier, one_line, parens, path_of, plural, revision, str_of, strings_of,
    value_text, FRONTMATTER_KEYS_SHOWN, MESSAGE_CHARS, TITLE_CHARS, VALUE_CHARS,
};

pub(super) fn get_file(output: &Value, budget: usize) -> String {
    // The contract wraps the file in `file`; the seed's example is flat. Take either.
    let file = output
        .get("file")
        .filter(|f| f.is_object())
        .unwrap_or(output);
    let mut lines = vec![format!(
        "get_file {}{}",
        path_of(file),
        parens(&[revision(file).or_else(|| revision(output))])
    )];
    if let Some(title) = str_of(file, "title") {
        lines.push(format!("title: {}", one_line(title, TITLE_CHARS)));
    }
    if let Some(id) = str_of(file, "fileId") {
        lines.push(format!("fileId: {}", identifier(id)));
    }
    let source = str_of(file, "sourceFileId");
    if let Some(source) = source.filter(|s| Some(*s) != str_of(file, "fileId")) {
        lines.push(format!("sourceFileId: {}", identifier(source)));
    }
    let mut kind = Vec::new();
    if let Some(k) = str_of(file, "fileKind") {
        kind.push(identifier(k));
    }
    if source.is_some() {
        kind.push("source page (read_related and expand_graph apply)".into());
    }
    if let Some(t) = str_of(file, "contentType") {
        kind.push(one_line(t, VALUE_CHARS));
    }
    if let Some(size) = file.get("sizeBytes").and_then(Value::as_u64) {
        kind.push(format!("{size} bytes"));
    }
    if file.get("contentAvailable") == Some(&Value::Bool(false)) {
        kind.push("content unavailable".into());
    }
    if !kind.is_empty() {
        lines.push(format!("kind: {}", kind.join(" · ")));
    }
    if let Some(okf_type) = str_of(file, "okfType") {
        lines.push(format!("okfType: {}", one_line(okf_type, VALUE_CHARS)));
    }
    if let Some(description) = str_of(file, "description") {
        lines.push(format!(
            "description: {}",
            one_line(description, MESSAGE_CHARS)
        ));
    }
    let tags = strings_of(file, "tags", VALUE_CHARS);
    if !tags.is_empty() {
        lines.push(format!("tags: {}", tags.join(", ")));
    }
    if let Some(okf) = okf_line(file.get("okfSignals")) {
        lines.push(okf);
    }
    if let Some(Value::Object(frontmatter)) = file.get("frontmatter") {
        lines.extend(frontmatter_lines(frontmatter));
    }
    fit_lines(
        lines,
        budget,
        "[truncated: metadata cut to fit the budget; read_file returns the file with its whole frontmatter]",
    )
}

fn okf_line(signals: Option<&Value>) -> Option<String> {
    let signals = signals?;
    let mut parts = Vec::new();
    for (key, name) in [
        ("effectiveStatus", "status"),
        ("trustTier", "trust"),
        ("staleAfter", "stale after"),
        ("generatedAt", "generated"),
        ("latestVerifiedAt", "verified"),
    ] {
        if let Some(v) = str_of(signals, key) {
            // What every page without OKF metadata says is no signal worth a line.
            if (key, v) == ("effectiveStatus", "stable") || (key, v) == ("trustTier", "unverified")
            {
                continue;
            }
            parts.push(format!("{name} {}", one_line(v, VALUE_CHARS)));
        }
    }
    if let Some(stale) = signals.get("isStale").and_then(Value::as_bool) {
        parts.push(if stale { "stale" } else { "fresh" }.into());
    }
    if let Some(n) = signals.get("sourceCount").and_then(Value::as_u64) {
        if n > 0 {
            parts.push(plural(n as usize, "source", "sources"));
        }
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

// ---------------------------------------------------------------------------------------------
// read_related and expand_graph
