//! The compact text format for models (seed `004_…`, `docs/text-format.md`): what a model reads
//! instead of the contract JSON, one renderer per tool, with a character budget. The JSON stays
//! the result of record (audit log, `format: "json"`); this is a view of it.
//!
//! Every renderer reads the output as loose JSON (a missing or mistyped field is left out, never
//! a panic), keeps each identifier and path verbatim, shortens free text (titles, excerpts,
//! reasons) and flattens it to one line. A result longer than the budget is cut at a whole item
//! (lists) or a whole line (`read_file`), never inside a character, and ends with a note saying
//! what was cut and which call continues.

use serde_json::{Map, Value};

use crate::error::{ErrorCode, ToolError};
use crate::text::{collapse_whitespace, is_forbidden_path_char, truncate_chars};

/// The default character budget of one text result: safely under common client limits
/// (25k tokens, 100 KB).
pub const DEFAULT_TEXT_BUDGET: usize = 20_000;

/// The smallest budget honoured: a smaller one is raised to this, so a cut result still has room
/// for its header and the call that continues it.
pub const MIN_TEXT_BUDGET: usize = 400;

const QUERY_CHARS: usize = 200;
const TITLE_CHARS: usize = 160;
const EXCERPT_CHARS: usize = 240;
const REASON_CHARS: usize = 240;
const VALUE_CHARS: usize = 200;
const MESSAGE_CHARS: usize = 1_000;
const RELATED_PATHS_SHOWN: usize = 5;
const FRONTMATTER_KEYS_SHOWN: usize = 20;
/// Room left for the `[label] Lx-y` header of an extract result when sizing a continuation.
const EXTRACT_HEADER_CHARS: usize = 64;
/// The mark of a last-resort cut (a header or note alone longer than the budget).
const HARD_CUT_MARK: &str = "\n[truncated]";

/// Renders the contract JSON `output` of `tool` (called with `input`) as compact text of at
/// most `budget` characters (at least [`MIN_TEXT_BUDGET`]); a cut result says so and how to
/// continue. An unknown tool renders as compact JSON within the budget.
pub fn render_output(tool: &str, input: &Value, output: &Value, budget: usize) -> String {
    let budget = budget.max(MIN_TEXT_BUDGET);
    let text = match tool {
        "read_file" => read_file::read_file(input, output, budget),
        "search_files" => search_files(input, output).fit(input, budget),
        "list_tree" => list_tree(input, output).fit(input, budget),
        "get_file" => get_file(output, budget),
        "read_related" => read_related(output).fit(input, budget),
        "expand_graph" => expand_graph(output).fit(input, budget),
        _ => output.to_string(),
    };
    cap_text(text, budget)
}

/// Renders a tool error: `失败: <CODE> <message>`, then one `key: value` line per detail (the
/// field or detail code the next call must fix) and, for a few errors, a `hint:` line.
pub fn render_error(error: &ToolError) -> String {
    let mut lines = vec![format!(
        "失败: {} {}",
        error.code.as_str(),
        one_line(&error.message, MESSAGE_CHARS)
    )];
    if let Some(details) = &error.details {
        for (key, value) in details {
            lines.push(format!(
                "{}: {}",
                identifier(key),
                value_text(value, VALUE_CHARS)
            ));
        }
    }
    let specific = error
        .details
        .as_ref()
        .is_some_and(|d| d.contains_key("hint"));
    if let Some(hint) = error_hint(error).filter(|_| !specific) {
        lines.push(format!("hint: {hint}"));
    }
    lines.join("\n")
}

/// `text` within `budget` characters: unchanged when it fits, else cut at a character boundary
/// with a `[truncated]` mark. The last resort of every renderer; front doors may use it for any
/// other text.
pub fn cap_text(text: String, budget: usize) -> String {
    if char_len(&text) <= budget {
        return text;
    }
    if budget < 2 * char_len(HARD_CUT_MARK) {
        return truncate_chars(&text, budget).to_string();
    }
    let keep = budget - char_len(HARD_CUT_MARK);
    format!("{}{HARD_CUT_MARK}", truncate_chars(&text, keep))
}

fn error_hint(error: &ToolError) -> Option<&'static str> {
    let field = error
        .details
        .as_ref()
        .and_then(|d| d.get("field"))
        .and_then(Value::as_str);
    match (error.code, field) {
        (ErrorCode::ValidationError, Some("cursor")) => Some(
            "the cursor is stale or belongs to other inputs; call again without \"cursor\" to start over",
        ),
        (ErrorCode::NotFound, _) => {
            Some("use a fileId or path exactly as a tool returned it (search_files, list_tree)")
        }
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Lists: a header, items, the cursor, a footer; cut at a whole item.

/// A list result before it is fitted to the budget.
struct Listing {
    /// Always shown: what was asked, counts, statuses.
    head: Vec<String>,
    /// One block per item (lines joined by `\n`).
    items: Vec<String>,
    /// `nextCursor` of the page; dropped when items are cut (it would skip them).
    cursor: Option<String>,
    /// After the items; about the whole page, so dropped with the cursor when items are cut.
    tail: Vec<String>,
    /// What the items are, plural ("candidates", "entries").
    noun: &'static str,
}

impl Listing {
    fn new(noun: &'static str) -> Self {
        Listing {
            head: Vec::new(),
            items: Vec::new(),
            cursor: None,
            tail: Vec::new(),
            noun,
        }
    }

    fn fit(self, input: &Value, budget: usize) -> String {
        let cursor_line = self.cursor.as_deref().map(|c| {
            format!(
                "nextCursor: {c} (for the next page, repeat the call with \"cursor\" set to it)"
            )
        });
        let mut all: Vec<&str> = self.head.iter().map(String::as_str).collect();
        all.extend(self.items.iter().map(String::as_str));
        all.extend(cursor_line.as_deref());
        all.extend(self.tail.iter().map(String::as_str));
        let whole = all.join("\n");
        if char_len(&whole) <= budget {
            return whole;
        }

        let total = self.items.len();
        let paged = input.get("cursor").is_some_and(|c| !c.is_null());
        let note = |shown: usize| list_cut_note(shown, total, self.noun, budget, paged);
        // The fixed part, with the longest note; each kept line costs its length plus a newline.
        let fixed: usize =
            self.head.iter().map(|l| char_len(l) + 1).sum::<usize>() + char_len(&note(total));
        let mut used = fixed;
        let mut shown = 0;
        for item in &self.items {
            let cost = char_len(item) + 1;
            if used + cost > budget {
                break;
            }
            used += cost;
            shown += 1;
        }
        let note = note(shown);
        let mut lines: Vec<&str> = self.head.iter().map(String::as_str).collect();
        lines.extend(self.items[..shown].iter().map(String::as_str));
        lines.push(&note);
        lines.join("\n")
    }
}

fn list_cut_note(shown: usize, total: usize, noun: &str, budget: usize, paged: bool) -> String {
    let limit = shown.max(1);
    let again = if paged {
        format!(
            "call again without \"cursor\" (it is bound to its limit) and with \"limit\": {limit}, then follow nextCursor"
        )
    } else {
        format!("call again with \"limit\": {limit} and follow nextCursor")
    };
    format!(
        "[truncated to the {budget}-character budget: showing {shown} of {total} {noun}; to see the rest, {again}]"
    )
}

// ---------------------------------------------------------------------------------------------
// search_files

fn search_files(input: &Value, output: &Value) -> Listing {
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

fn list_tree(input: &Value, output: &Value) -> Listing {
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

fn get_file(output: &Value, budget: usize) -> String {
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

fn read_related(output: &Value) -> Listing {
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

fn expand_graph(output: &Value) -> Listing {
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

/// One related file: `n. path — title`, then relation, direction and fileId, then the reason.
/// `steps` (expand_graph) maps fileIds to paths to name each step's start.
fn related_item(rank: usize, item: &Value, steps: Option<&Map<String, Value>>) -> String {
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

/// `lines` joined, cut at a whole line with `note` when longer than `budget`.
fn fit_lines(lines: Vec<String>, budget: usize, note: &str) -> String {
    let whole = lines.join("\n");
    if char_len(&whole) <= budget {
        return whole;
    }
    let mut used = char_len(note);
    let mut kept: Vec<&str> = Vec::new();
    for line in &lines {
        let cost = char_len(line) + 1;
        if used + cost > budget {
            break;
        }
        used += cost;
        kept.push(line);
    }
    kept.push(note);
    kept.join("\n")
}

fn char_len(s: &str) -> usize {
    s.chars().count()
}

/// The API's `message` and `nextActions` of an output (edge responses), as header lines.
fn push_message_and_actions(listing: &mut Listing, output: &Value) {
    if let Some(message) = str_of(output, "message") {
        listing
            .head
            .push(format!("message: {}", one_line(message, MESSAGE_CHARS)));
    }
    let actions = strings_of(output, "nextActions", MESSAGE_CHARS);
    if !actions.is_empty() {
        listing.head.push("next actions:".to_string());
        listing
            .head
            .extend(actions.into_iter().map(|a| format!("- {a}")));
    }
}

fn str_of<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
}

fn list_of<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The non-empty string items of the array `key`, each on one line.
fn strings_of(value: &Value, key: &str, max_chars: usize) -> Vec<String> {
    list_of(value, key)
        .iter()
        .filter_map(Value::as_str)
        .map(|s| one_line(s, max_chars))
        .filter(|s| !s.is_empty())
        .collect()
}

fn path_of(value: &Value) -> String {
    str_of(value, "path")
        .or_else(|| str_of(value, "fileId"))
        .map(identifier)
        .unwrap_or_else(|| "?".into())
}

fn revision(value: &Value) -> Option<String> {
    value
        .get("activeContentRevision")
        .and_then(Value::as_u64)
        .map(|r| format!("revision {r}"))
}

/// ` (a, b)` of the present parts, or nothing.
fn parens(parts: &[Option<String>]) -> String {
    let present: Vec<&str> = parts.iter().flatten().map(String::as_str).collect();
    if present.is_empty() {
        String::new()
    } else {
        format!(" ({})", present.join(", "))
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Free text on one line: control and bidi characters become spaces, whitespace runs collapse,
/// and text longer than `max_chars` ends with `…`.
fn one_line(s: &str, max_chars: usize) -> String {
    let spaced: String = s
        .chars()
        .map(|c| if is_forbidden_path_char(c) { ' ' } else { c })
        .collect();
    let flat = collapse_whitespace(&spaced);
    if char_len(&flat) <= max_chars {
        return flat;
    }
    let keep = truncate_chars(&flat, max_chars.saturating_sub(1)).trim_end();
    format!("{keep}…")
}

/// An identifier, path or cursor verbatim, except that control and bidi characters (which no
/// valid one holds) become spaces so they cannot break the line structure.
fn identifier(s: &str) -> String {
    s.chars()
        .map(|c| if is_forbidden_path_char(c) { ' ' } else { c })
        .collect()
}

/// A JSON value as text: a string as itself, anything else as compact JSON; on one line.
fn value_text(value: &Value, max_chars: usize) -> String {
    match value {
        Value::String(s) => one_line(s, max_chars),
        other => one_line(&other.to_string(), max_chars),
    }
}

fn json_string(s: &str) -> String {
    Value::from(s).to_string()
}

/// A score: integers as such, else four decimals without trailing zeros (tiny values in
/// scientific notation).
fn number(n: f64) -> String {
    if !n.is_finite() {
        return n.to_string();
    }
    if n.fract() == 0.0 && n.abs() < 1e15 {
        return format!("{}", n as i64);
    }
    let fixed = format!("{n:.4}");
    let trimmed = fixed.trim_end_matches('0').trim_end_matches('.');
    if trimmed == "0" || trimmed == "-0" {
        format!("{n:.2e}")
    } else {
        trimmed.to_string()
    }
}

mod read_file;
#[cfg(test)]
mod tests;

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
