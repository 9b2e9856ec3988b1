//! `read_file` → `getFileContentById` / `getFileContentByPath`: a file's content with its
//! metadata, `{file, content}`. Takes exactly one of `fileId` and `path`; a path must be a
//! canonical bundle path (the security boundary). `type` picks what `content` holds: `read` (the
//! default) the file's bytes exactly, frontmatter included; `search` the snippets around the lines
//! that match a query; `extract` the line ranges asked for. Partial reads number lines from 1,
//! split on `\n`, and copy lines verbatim under a `[label] Lx-y` header.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::fields::{wire_names, Bounds};
use super::{require_revision, GeneratedFile, Malformed};
use crate::error::{messages, ErrorCode, ToolError};
use crate::index::catalog::CatalogFile;
use crate::ingest::bundle::paths::{self, PathClass};
use crate::kb::KnowledgeBase;
use crate::search::query::{is_quote, quote_runs, Quoting};
use crate::text;

mod request;

use request::{bounded, validate_with, LineRange, Part, Target};
pub use request::{validate, Request};

/// `contextLines`: lines of context around each matching line.
pub(crate) const CONTEXT_LINES: Bounds<u8> = Bounds {
    min: 0,
    max: 20,
    default: 2,
};
/// `maxMatches`: snippets returned at most.
pub(crate) const MAX_MATCHES: Bounds<u8> = Bounds {
    min: 1,
    max: 100,
    default: 20,
};
pub(crate) const MAX_QUERY_CHARS: usize = 512;
pub(crate) const MAX_QUERY_TERMS: usize = 32;
pub(crate) const MAX_SEGMENTS: usize = 50;
pub(crate) const MAX_LABEL_CHARS: usize = 64;

/// `FileContentResponse`.
#[derive(Debug, Clone, Serialize)]
pub struct Output {
    pub file: GeneratedFile,
    pub content: String,
    /// What `content` holds (not in the contract: the text renderer's way to continue a cut).
    #[serde(skip)]
    pub read_type: ReadType,
}

/// True when `path` is exactly the path of a per-file graph record kbtools renders itself. A
/// plain-folder page named `index.md` gets `_graph/by-file/**/index.json`, which the bundle path
/// table does not allow; it must still open, since it is that page's `graphRef`
/// (rules#graph-refs-open).
fn is_virtual_graph(kb: &KnowledgeBase, path: &str) -> bool {
    kb.catalog.by_path(path).is_some_and(|i| {
        let file = kb.catalog.file(i);
        file.path == path && file.class == PathClass::PerFileGraph && file.is_virtual()
    })
}

crate::wire::wire_enum! {
    /// What `content` holds.
    #[derive(Default)]
    pub enum ReadType {
        #[default]
        Read = "read",
        Search = "search",
        Extract = "extract",
    }
}

/// One line range of `type: "extract"`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Segment {
    /// Header label, up to 64 characters (default `segment_N`, N counting from 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// First line, 1-based; at most the file's line count.
    pub start: u64,
    /// Last line, inclusive, not before `start` (default `start`); past the end reads to the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<u64>,
}

/// The tool input (`read_file {fileId | path}`, exactly one, and optionally a partial read), for
/// Rust callers and schemas.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Params {
    /// A fileId from the tree, search, file detail, related files or graph expansion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_id: Option<String>,
    /// A bundle path such as `pages/guide.md` or a `graphRef`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// What to return (default read): `read`, the whole file, byte for byte; `search`, only the
    /// lines matching `query` with context, as `[match_N] Lx-y hits:a,b` snippets; `extract`,
    /// only the line ranges in `segments`, as `[label] Lx-y` blocks. Lines count from 1.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub read_type: Option<ReadType>,
    /// For `type: "search"` (required there): words to find, case-insensitively; a line matches
    /// when it contains any word; a "double-quoted phrase" is one word; a query without spaces
    /// (e.g. Chinese) matches as one substring. At most 512 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// For `type: "search"`: lines of context around each matching line, 0–20 (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = CONTEXT_LINES.min, max = CONTEXT_LINES.max))]
    pub context_lines: Option<u8>,
    /// For `type: "search"`: most snippets returned, 1–100 (default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = MAX_MATCHES.min, max = MAX_MATCHES.max))]
    pub max_matches: Option<u8>,
    /// For `type: "extract"` (required there): 1–50 line ranges `{label?, start, end?}`, returned
    /// in the order given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segments: Option<Vec<Segment>>,
}

wire_names! {
    /// The wire names of [`Params`]' fields.
    pub struct ParamNames for Params {
        file_id,
        path,
        read_type = "type",
        query,
        context_lines,
        max_matches,
        segments,
    }
}

wire_names! {
    /// The wire names of [`Segment`]'s fields.
    pub struct SegmentNames for Segment { label, start, end }
}

/// Runs the tool with typed parameters.
pub fn run_params(kb: &KnowledgeBase, params: &Params) -> Result<Output, ToolError> {
    answer(kb, validate(params)?)
}

/// Runs the tool with its JSON input.
pub fn run(kb: &KnowledgeBase, input: &Value) -> Result<Output, ToolError> {
    let (params, malformed) = Params::from_json(input)?;
    answer(kb, validate_with(&params, &malformed)?)
}

fn answer(kb: &KnowledgeBase, request: Request) -> Result<Output, ToolError> {
    let Request { target, part } = request;
    if let Target::Path(path) = &target {
        if paths::classify(path).is_none() && !is_virtual_graph(kb, path) {
            return Err(ToolError::invalid_field(
                messages::PATH_UNSUPPORTED,
                Params::WIRE.path,
            ));
        }
    }
    let revision = require_revision(kb)?;
    let position = match &target {
        Target::Id(id) => kb.catalog.by_id_or_path(id),
        Target::Path(path) => kb.catalog.by_path(path),
    }
    .ok_or_else(ToolError::not_found)?;
    let file = kb.catalog.file(position);
    let content = kb.read_content(file)?;
    let file_size = content.len() as u64;
    let (content, read_type) = match part {
        Part::Whole => (content, ReadType::Read),
        Part::Search(search) => (search.render(file, &content), ReadType::Search),
        Part::Extract(ranges) => (extract(kb, file, &content, &ranges)?, ReadType::Extract),
    };
    Ok(Output {
        file: GeneratedFile::new(kb, revision, file, file_size),
        content,
        read_type,
    })
}

fn invalid(message: &str, field: &str) -> ToolError {
    ToolError::invalid_field(message, field)
}

/// The lines of `content`: split on `\n`, a final newline ending the last line rather than
/// starting an empty one. Lines keep any `\r`.
fn lines_of(content: &str) -> Vec<&str> {
    content.split_terminator('\n').collect()
}

/// The text of lines `start..=end` (1-based, in range), verbatim.
fn line_block(lines: &[&str], start: usize, end: usize) -> String {
    lines[start - 1..end].join("\n")
}

/// `s` on one line: control and bidi characters become spaces, whitespace runs one space,
/// trimmed.
fn one_line(s: &str) -> String {
    let replaced: String = s
        .chars()
        .map(|c| {
            if text::is_forbidden_path_char(c) {
                ' '
            } else {
                c
            }
        })
        .collect();
    text::collapse_whitespace(&replaced)
}

/// The matching key of a query or a line: NFKC, lower-cased, whitespace runs as one space.
fn match_key(s: &str) -> String {
    text::exact_key(s)
}

/// The terms of a match key. Without whitespace the key is one term (a Chinese query matches as
/// a substring); wholly double-quoted, the quotes go. With whitespace, terms split on it and a
/// double-quoted phrase stays one term (an unclosed quote quotes nothing: the search's quote
/// scanner, [`quote_runs`]). Terms without a letter or digit are dropped when others have one,
/// so a stray `-` or `:` does not match every line.
fn query_terms(key: &str) -> Vec<String> {
    let mut terms: Vec<&str> = Vec::new();
    if !key.contains(' ') {
        let inner = key
            .strip_prefix(is_quote)
            .and_then(|rest| rest.strip_suffix(is_quote))
            .filter(|inner| !inner.contains(is_quote));
        terms.push(inner.unwrap_or(key));
    } else {
        for (run, quoting) in quote_runs(key) {
            match quoting {
                Quoting::Closed => terms.push(run),
                Quoting::Outside | Quoting::Unclosed => terms.extend(run.split(' ')),
            }
        }
    }
    let mut out: Vec<String> = Vec::new();
    for term in terms {
        let term = term.trim();
        if !term.is_empty() && !out.iter().any(|t| t == term) {
            out.push(term.to_string());
        }
    }
    let has_word = |t: &String| t.chars().any(char::is_alphanumeric);
    if out.iter().any(has_word) {
        out.retain(has_word);
    }
    out
}

/// A validated `type: "search"`.
#[derive(Debug)]
struct LineSearch {
    /// The query as given, on one line, for the no-match note.
    echo: String,
    terms: Vec<String>,
    context: usize,
    max_matches: usize,
}

/// Consecutive lines around one or more hits (1-based, inclusive).
#[derive(Debug)]
struct Snippet {
    start: usize,
    end: usize,
    hits: Vec<usize>,
}

impl LineSearch {
    fn from_params(params: &Params, m: &Malformed) -> Result<Self, ToolError> {
        let f = Params::WIRE;
        let query = f.query;
        let required = format!(
            "{} \"{}\" requires `{query}`: the words or phrase to find in the file.",
            f.read_type,
            ReadType::Search
        );
        let raw = match m.check(query, params.query.as_deref()) {
            Ok(Some(raw)) => raw,
            Ok(None) => return Err(invalid(&required, query)),
            Err(_) => return Err(invalid(&format!("`{query}` must be a string."), query)),
        };
        let key = match_key(raw);
        if key.is_empty() {
            return Err(invalid(&required, query));
        }
        if key.chars().count() > MAX_QUERY_CHARS {
            return Err(invalid(
                &format!("`{query}` must be at most {MAX_QUERY_CHARS} characters."),
                query,
            ));
        }
        let terms = query_terms(&key);
        if terms.is_empty() {
            return Err(invalid(
                &format!("`{query}` has nothing to find once its quotes are removed."),
                query,
            ));
        }
        if terms.len() > MAX_QUERY_TERMS {
            return Err(invalid(
                &format!(
                    "`{query}` has {} terms; at most {MAX_QUERY_TERMS}. Quote a phrase to make it one term.",
                    terms.len()
                ),
                query,
            ));
        }
        Ok(LineSearch {
            echo: one_line(&text::collapse_whitespace(raw)),
            terms,
            context: bounded(m, f.context_lines, params.context_lines, CONTEXT_LINES)?,
            max_matches: bounded(m, f.max_matches, params.max_matches, MAX_MATCHES)?,
        })
    }

    fn is_hit(&self, line: &str) -> bool {
        let key = match_key(line.strip_suffix('\r').unwrap_or(line));
        self.terms.iter().any(|term| key.contains(term.as_str()))
    }

    /// The hit lines grouped with their context; overlapping or adjacent windows merge.
    fn snippets(&self, lines: &[&str]) -> Vec<Snippet> {
        let mut out: Vec<Snippet> = Vec::new();
        for (index, line) in lines.iter().enumerate() {
            if !self.is_hit(line) {
                continue;
            }
            let hit = index + 1;
            let start = hit.saturating_sub(self.context).max(1);
            let end = (hit + self.context).min(lines.len());
            match out.last_mut() {
                Some(last) if start <= last.end + 1 => {
                    last.end = last.end.max(end);
                    last.hits.push(hit);
                }
                _ => out.push(Snippet {
                    start,
                    end,
                    hits: vec![hit],
                }),
            }
        }
        out
    }

    fn render(&self, file: &CatalogFile, content: &str) -> String {
        let lines = lines_of(content);
        let snippets = self.snippets(&lines);
        if snippets.is_empty() {
            return format!(
                "[no_match] \"{}\" not found in {} ({} lines)",
                self.echo,
                file.path,
                lines.len()
            );
        }
        let mut blocks: Vec<String> = snippets
            .iter()
            .take(self.max_matches)
            .enumerate()
            .map(|(i, snippet)| {
                let hits: Vec<String> = snippet.hits.iter().map(usize::to_string).collect();
                format!(
                    "[match_{}] L{}-{} hits:{}\n{}",
                    i + 1,
                    snippet.start,
                    snippet.end,
                    hits.join(","),
                    line_block(&lines, snippet.start, snippet.end)
                )
            })
            .collect();
        if snippets.len() > self.max_matches {
            let rest = snippets.len() - self.max_matches;
            let after = snippets[self.max_matches - 1].end;
            blocks.push(format!(
                "[more] {rest} more {} after L{after}; raise maxMatches or read with type=extract",
                if rest == 1 { "match" } else { "matches" }
            ));
        }
        blocks.join("\n\n")
    }
}

/// The `[label] Lx-y` blocks of `ranges`; a start past the last line is an error, an end past it
/// reads to the end. The result stays within the read limit.
fn extract(
    kb: &KnowledgeBase,
    file: &CatalogFile,
    content: &str,
    ranges: &[LineRange],
) -> Result<String, ToolError> {
    let lines = lines_of(content);
    let count = lines.len() as u64;
    let mut blocks: Vec<String> = Vec::with_capacity(ranges.len());
    let mut total: u64 = 0;
    for range in ranges {
        if range.start > count {
            let field = format!(
                "{}[{}].{}",
                Params::WIRE.segments,
                range.index,
                Segment::WIRE.start
            );
            return Err(invalid(
                &format!(
                    "`{field}` is {}, past the last line of {} ({count} lines).",
                    range.start, file.path
                ),
                &field,
            )
            .with_detail("lineCount", count));
        }
        let (start, end) = (range.start as usize, range.end.min(count) as usize);
        let block = format!(
            "[{}] L{start}-{end}\n{}",
            range.label,
            line_block(&lines, start, end)
        );
        total += block.len() as u64 + 2;
        if total > kb.options.read_limit {
            return Err(ToolError::new(
                ErrorCode::PayloadTooLarge,
                "The requested segments exceed the configured content read limit; ask for fewer or shorter segments.",
            ));
        }
        blocks.push(block);
    }
    Ok(blocks.join("\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(query: &str) -> Vec<String> {
        query_terms(&match_key(query))
    }

    #[test]
    fn query_terms_split_on_whitespace_and_keep_quoted_phrases() {
        assert_eq!(terms("Foo  BAR foo"), vec!["foo", "bar"]);
        assert_eq!(
            terms(r#"a "renewal   Notice" “续费 通知”"#),
            vec!["a", "renewal notice", "续费 通知"]
        );
        assert_eq!(terms("知识库检索"), vec!["知识库检索"]);
        assert_eq!(terms(r#""quoted""#), vec!["quoted"]);
        assert_eq!(terms(r#""type":"x""#), vec![r#""type":"x""#]);
        assert_eq!(
            terms(r#"unclosed "quote here"#),
            vec!["unclosed", "quote", "here"]
        );
        assert_eq!(terms("a - b"), vec!["a", "b"]);
        assert_eq!(terms("-> =>"), vec!["->", "=>"]);
        assert_eq!(terms("ＡＰＩ"), vec!["api"]);
        assert!(terms(r#""" """#).is_empty());
    }

    #[test]
    fn lines_split_on_newline_and_keep_carriage_returns() {
        assert_eq!(lines_of(""), Vec::<&str>::new());
        assert_eq!(lines_of("a"), vec!["a"]);
        assert_eq!(lines_of("a\r\nb\n"), vec!["a\r", "b"]);
        assert_eq!(lines_of("\n\n"), vec!["", ""]);
    }

    #[test]
    fn labels_lose_control_characters() {
        assert_eq!(one_line("  a\nb\u{202e}\u{0}c\t "), "a b c");
    }
}
