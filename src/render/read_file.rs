//! `read_file` as text: the content alone, cut at a line boundary.

use super::{char_len, json_string, plural, shown, EXTRACT_HEADER_CHARS};
use crate::text::truncate_chars;
use crate::tools::read_file::{Output, ReadType};
use crate::tools::GeneratedFile;

pub(super) fn read_file(output: &Output, budget: usize) -> String {
    let content = output.content.as_str();
    if char_len(content) <= budget {
        return content.to_string();
    }
    match output.read_type {
        ReadType::Read => cut_whole_file(content, read_target(&output.file), budget),
        ReadType::Search | ReadType::Extract => cut_partial_read(content, output.read_type, budget),
    }
}

/// The `"path": …` (or `"fileId": …`) member that names the file in a continuation call.
fn read_target(file: &GeneratedFile) -> Option<String> {
    if let Some(path) = shown(&file.path) {
        return Some(format!("\"path\": {}", json_string(path)));
    }
    let id = shown(&file.file_id)?;
    Some(format!("\"fileId\": {}", json_string(id)))
}

/// A whole-file read cut after line N: `[truncated: showing L1-N of M lines; continue with
/// read_file {…, "type": "extract", "segments": [{"start": N+1, "end": E}]}]`, E the last line
/// of a continuation that itself fits the budget.
fn cut_whole_file(content: &str, target: Option<String>, budget: usize) -> String {
    let total = content.split_inclusive('\n').count();
    let continuation = |start: usize, end: usize| {
        match &target {
        Some(target) => format!(
            "; continue with read_file {{{target}, \"type\": \"extract\", \"segments\": [{{\"start\": {start}, \"end\": {end}}}]}}"
        ),
        None => String::new(),
    }
    };
    let note = |shown: usize, start: usize, end: usize| {
        format!(
            "[truncated: showing L1-{shown} of {total} lines{}]",
            continuation(start, end)
        )
    };
    let partial_note = |chars: usize, end: usize| {
        let rest = if total > 1 {
            continuation(2, end)
        } else {
            String::new()
        };
        format!(
            "[truncated: showing the first {chars} characters of L1 (of {}){rest}]",
            plural(total, "line", "lines")
        )
    };
    // Room for either note at its widest (every number as wide as it can be) and its newline.
    let reserve =
        char_len(&note(total, total, total)).max(char_len(&partial_note(budget, total))) + 1;
    let room = budget.saturating_sub(reserve);
    let (shown_text, shown) = whole_lines(content, room);
    if shown == 0 {
        // Line 1 alone is longer than the budget: show its start.
        let part = truncate_chars(content, room);
        let end = next_chunk_end(content, 1, room);
        return format!("{part}\n{}", partial_note(char_len(part), end));
    }
    let end = next_chunk_end(content, shown, room);
    format!("{shown_text}{}", note(shown, shown + 1, end))
}

/// A `search` or `extract` read cut at a line of its snippets (their lines are not file lines).
fn cut_partial_read(content: &str, read_type: ReadType, budget: usize) -> String {
    let total = content.split_inclusive('\n').count();
    let advice = match read_type {
        ReadType::Search => "a narrower query or a smaller maxMatches or contextLines",
        ReadType::Extract => "fewer or shorter segments",
        ReadType::Read => "a smaller read",
    };
    let note = |shown: usize| {
        format!(
            "[truncated: showing lines 1-{shown} of {total} of this {read_type} result; ask for {advice}]"
        )
    };
    let room = budget.saturating_sub(char_len(&note(total)) + 1);
    let (shown_text, shown) = whole_lines(content, room);
    if shown == 0 {
        let part = truncate_chars(content, room);
        return format!("{part}\n{}", note(0));
    }
    let mut text = shown_text.to_string();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&note(shown));
    text
}

/// The longest prefix of whole lines (each with its `\n`) of at most `room` characters, and how
/// many lines it holds.
fn whole_lines(content: &str, room: usize) -> (&str, usize) {
    let (mut chars, mut bytes, mut lines) = (0, 0, 0);
    for line in content.split_inclusive('\n') {
        let n = char_len(line);
        if chars + n > room {
            break;
        }
        chars += n;
        bytes += line.len();
        lines += 1;
    }
    (&content[..bytes], lines)
}

/// The last line of a continuation that starts after line `after` and fits in `room`
/// characters with an extract header; at least one line.
fn next_chunk_end(content: &str, after: usize, room: usize) -> usize {
    let room = room.saturating_sub(EXTRACT_HEADER_CHARS);
    let mut chars = 0;
    let mut end = after;
    for line in content.split_inclusive('\n').skip(after) {
        chars += char_len(line);
        if chars > room && end > after {
            break;
        }
        end += 1;
    }
    end
}
