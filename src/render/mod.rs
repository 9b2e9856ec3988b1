//! The compact text format for models (`docs/text-format.md`): what a model reads
//! instead of the contract JSON, one renderer per tool, with a character budget. The JSON stays
//! the result of record (audit log, `format: "json"`); this is a view of it.
//!
//! Every renderer reads its tool's typed output (`render/<tool>.rs` beside `tools/<tool>.rs`;
//! an empty optional field is left out), keeps each identifier and path verbatim, shortens free
//! text (titles, excerpts, reasons) and flattens it to one line. A result longer than the budget is cut at a whole item
//! (lists) or a whole line (`read_file`), never inside a character, and ends with a note saying
//! what was cut and which call continues.

use serde_json::Value;

use crate::error::{ErrorCode, ToolError};
use crate::text::{collapse_whitespace, is_forbidden_path_char, truncate_chars};
use crate::tools::Output;

/// The default character budget of one text result: safely under common client limits
/// (25k tokens, 100 KB).
pub const DEFAULT_TEXT_BUDGET: usize = 20_000;

/// The smallest budget honoured: a smaller one is raised to this, so a cut result still has room
/// for its header and the call that continues it.
pub(crate) const MIN_TEXT_BUDGET: usize = 400;

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

/// Renders a tool's `output` as compact text of at most `budget` characters (at least
/// `MIN_TEXT_BUDGET`); a cut result says so and how to continue.
pub fn render_output(output: &Output, budget: usize) -> String {
    let budget = budget.max(MIN_TEXT_BUDGET);
    let text = match output {
        Output::ReadFile(output) => read_file::read_file(output, budget),
        Output::SearchFiles(output) => {
            search_files::search_files(output).fit(output.query.cursor_provided, budget)
        }
        Output::ListTree(output) => list_tree::list_tree(output).fit(output.paged, budget),
        Output::GetFile(output) => get_file::get_file(output, budget),
        Output::ReadRelated(output) => read_related::read_related(output).fit(output.paged, budget),
        Output::ExpandGraph(output) => expand_graph::expand_graph(output).fit(output.paged, budget),
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
pub(crate) fn cap_text(text: String, budget: usize) -> String {
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

    /// The listing within `budget`; `paged`: the call gave a cursor (a cut page then says to
    /// start over, since the cursor is bound to its limit).
    fn fit(self, paged: bool, budget: usize) -> String {
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

/// `text` unless it is empty or only whitespace (then the field is left out).
fn shown(text: &str) -> Option<&str> {
    Some(text).filter(|s| !s.trim().is_empty())
}

/// An optional text field, as [`shown`].
fn shown_opt(text: &Option<String>) -> Option<&str> {
    text.as_deref().and_then(shown)
}

/// The non-empty items of a list of texts, each on one line.
fn lines_of<S: AsRef<str>>(items: &[S], max_chars: usize) -> Vec<String> {
    items
        .iter()
        .map(|s| one_line(s.as_ref(), max_chars))
        .filter(|s| !s.is_empty())
        .collect()
}

/// A file as a list names it: its path, else its fileId.
fn path_or_id(path: &str, file_id: &str) -> String {
    shown(path)
        .or_else(|| shown(file_id))
        .map(identifier)
        .unwrap_or_else(|| "?".into())
}

fn revision(revision: Option<u64>) -> Option<String> {
    revision.map(|r| format!("revision {r}"))
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

mod expand_graph;
mod get_file;
mod list_tree;
mod read_file;
mod read_related;
mod search_files;
#[cfg(test)]
mod tests;

pub use search_files::render_explained;
