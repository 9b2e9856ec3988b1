//! Tool results for a person at a terminal (`--format text`, the default there): per search
//! result its title, path, how it was found and one line of its text with the question's rare
//! words marked; a read's Markdown as it is; listings a line an entry. No ids or graph paths
//! unless `--verbose`. The compact text for models (seed 004) is `--format compact`, and what
//! MCP sends.

use serde_json::Value;

use kbtools::tools::search_files::SearchResult;
use kbtools::tools::Output;
use kbtools::ToolError;

/// How a result is written for a person.
pub(crate) struct Style {
    /// Ids, graph paths and scores too.
    pub(crate) verbose: bool,
    /// ANSI bold for titles and marked words (a terminal, `NO_COLOR` unset).
    pub(crate) color: bool,
    /// The question's rare terms (lower case), marked in excerpts.
    pub(crate) marks: Vec<String>,
}

/// Characters of a search result's excerpt line.
const EXCERPT_CHARS: usize = 160;

/// The text of `result` (the tool's typed answer; `json`, its contract JSON, for the fields the
/// listings print) for a person.
pub(crate) fn render(result: &Result<Output, ToolError>, json: &Value, style: &Style) -> String {
    let mut out = match result {
        Err(error) => return error_text(error),
        Ok(Output::SearchFiles(output)) => search(output, style),
        Ok(Output::ReadFile(output)) => output.content.clone(),
        Ok(Output::ListTree(_)) => tree(json, style),
        Ok(Output::GetFile(_)) => file(&json["file"], style),
        Ok(Output::ReadRelated(_)) => relations(&json["items"], style),
        Ok(Output::ExpandGraph(_)) => {
            let mut out = format!("{}\n", title_line(&json["seedFile"], style));
            out.push_str(&relations(&json["relationships"], style));
            out
        }
    };
    if let Some(cursor) = json["nextCursor"].as_str().filter(|c| !c.is_empty()) {
        out.truncate(out.trim_end().len());
        out.push_str(&format!(
            "\n\nmore: repeat the command with --cursor {cursor}\n"
        ));
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// An error: `error: CODE message`, then the detail code and the hint, once each.
pub(crate) fn error_text(error: &ToolError) -> String {
    let mut out = format!("error: {} {}\n", error.code.as_str(), error.message);
    if let Some(details) = &error.details {
        for (key, value) in details {
            if let Some(value) = value.as_str() {
                out.push_str(&format!("  {key}: {value}\n"));
            }
        }
    }
    kbtools::text::terminal_safe_lines(&out).into_owned()
}

fn search(output: &kbtools::tools::search_files::Output, style: &Style) -> String {
    let mut out = String::new();
    if output.items.is_empty() {
        out.push_str(&format!("No page matches \"{}\".\n", output.query.query));
        if let Some(Some(message)) = output.message {
            let message: &str = message;
            out.push_str(&format!("{message}\n"));
        }
        return out;
    }
    if output.nearest.is_some() {
        out.push_str("No page holds these words; the nearest pages:\n\n");
    }
    for (i, item) in output.items.iter().enumerate() {
        out.push_str(&result_text(i + 1, item, style));
    }
    out
}

fn result_text(n: usize, item: &SearchResult, style: &Style) -> String {
    let title = item.title.as_deref().unwrap_or(&item.path);
    let mut out = format!("{n}. {}\n", bold(title, style));
    out.push_str(&format!("   {} · {}\n", item.path, found_by(item)));
    if let Some(excerpt) = &item.source_excerpt {
        out.push_str(&format!("   {}\n", excerpt_line(excerpt, style)));
    }
    if style.verbose {
        out.push_str(&format!(
            "   fileId {} · score {:.4}",
            item.file_id, item.score
        ));
        if let Some(graph) = &item.graph_context {
            out.push_str(&format!(" · graph {}", graph.graph_ref));
        }
        out.push('\n');
    }
    out.push('\n');
    out
}

/// How a result was found, as people say it: its text, its meaning, across languages, its
/// links, its name.
fn found_by(item: &SearchResult) -> String {
    let mut ways: Vec<&str> = Vec::new();
    for lane in item.lanes.iter() {
        let way = lane.found_as();
        if !ways.contains(&way) {
            ways.push(way);
        }
    }
    match ways.is_empty() {
        true => "found".to_string(),
        false => format!("found by {}", ways.join(", ")),
    }
}

/// One line of `excerpt`: from a little before its first marked word, at most
/// [`EXCERPT_CHARS`] characters, the marked words in bold.
fn excerpt_line(excerpt: &str, style: &Style) -> String {
    let text = kbtools::text::terminal_safe_lines(excerpt).replace('\n', " ");
    let lower = text.to_lowercase();
    // Lower-casing can change byte lengths (rarely): mark only when it did not.
    let comparable = lower.len() == text.len();
    let first = comparable
        .then(|| {
            style
                .marks
                .iter()
                .filter_map(|m| find_word(&lower, m))
                .min()
        })
        .flatten()
        .unwrap_or(0);
    // Start a few words before the first mark, at a character boundary.
    let mut start = first.saturating_sub(40);
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let start = match start {
        0 => 0,
        s => text[s..].find(' ').map_or(s, |space| s + space + 1),
    };
    let shown = kbtools::text::truncate_chars(&text[start..], EXCERPT_CHARS);
    let mut line = String::new();
    if start > 0 {
        line.push('…');
    }
    if comparable && style.color && !style.marks.is_empty() {
        line.push_str(&marked(
            shown,
            &lower[start..start + shown.len()],
            &style.marks,
        ));
    } else {
        line.push_str(shown);
    }
    if start + shown.len() < text.len() {
        line.push('…');
    }
    line
}

/// The byte offset of `term` in `lower` where it starts a word (a Latin term) or anywhere (a
/// Chinese one).
fn find_word(lower: &str, term: &str) -> Option<usize> {
    let latin = term.chars().all(|c| c.is_ascii_alphanumeric());
    lower.match_indices(term).map(|(at, _)| at).find(|&at| {
        !latin
            || lower[..at]
                .chars()
                .next_back()
                .is_none_or(|c| !c.is_alphanumeric())
    })
}

/// `text` with each occurrence of a mark (found in `lower`, its lower-cased copy of the same
/// length) in bold, through the end of the word it starts.
fn marked(text: &str, lower: &str, marks: &[String]) -> String {
    let mut bold = vec![false; text.len()];
    for mark in marks {
        let latin = mark.chars().all(|c| c.is_ascii_alphanumeric());
        let mut from = 0;
        while let Some(at) = find_word(&lower[from..], mark).map(|at| at + from) {
            let mut end = at + mark.len();
            if latin {
                // The rest of the word: `file` marks `files`.
                end += lower[end..]
                    .find(|c: char| !c.is_alphanumeric())
                    .unwrap_or(lower.len() - end);
            }
            bold[at..end].iter_mut().for_each(|b| *b = true);
            from = end;
        }
    }
    let mut out = String::new();
    let mut on = false;
    for (i, c) in text.char_indices() {
        if bold[i] != on {
            out.push_str(if bold[i] { "\x1b[1m" } else { "\x1b[0m" });
            on = bold[i];
        }
        out.push(c);
    }
    if on {
        out.push_str("\x1b[0m");
    }
    out
}

fn bold(text: &str, style: &Style) -> String {
    let text = kbtools::text::terminal_safe_lines(text).into_owned();
    match style.color {
        true => format!("\x1b[1m{text}\x1b[0m"),
        false => text,
    }
}

/// A file's title (bold) and path, its id with `--verbose`.
fn title_line(file: &Value, style: &Style) -> String {
    let path = file["path"].as_str().unwrap_or("");
    let title = file["title"].as_str().unwrap_or(path);
    let mut line = format!("{}\n   {path}", bold(title, style));
    if style.verbose {
        if let Some(id) = file["fileId"].as_str() {
            line.push_str(&format!(" · fileId {id}"));
        }
    }
    line
}

/// `get_file`: title, path, size, what its frontmatter says.
fn file(file: &Value, style: &Style) -> String {
    let mut out = format!("{}\n", title_line(file, style));
    if let Some(size) = file["sizeBytes"].as_u64() {
        out.push_str(&format!("   {size} bytes"));
        if let Some(status) = file["okfSignals"]["effectiveStatus"].as_str() {
            out.push_str(&format!(" · status {status}"));
        }
        out.push('\n');
    }
    if let Some(description) = file["description"].as_str() {
        out.push_str(&format!("   {description}\n"));
    }
    let tags: Vec<&str> = file["tags"]
        .as_array()
        .map(|t| t.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !tags.is_empty() {
        out.push_str(&format!("   tags: {}\n", tags.join(", ")));
    }
    kbtools::text::terminal_safe_lines(&out).into_owned()
}

/// `list_tree`: a line an entry, folders with a slash and their page count.
fn tree(json: &Value, style: &Style) -> String {
    let mut out = String::new();
    for item in json["items"].as_array().into_iter().flatten() {
        let name = item["name"].as_str().unwrap_or("");
        match item["entryType"].as_str() {
            Some("directory") => {
                let pages = item["descendantFileCount"].as_u64().unwrap_or(0);
                out.push_str(&format!("{name}/  ({pages} files)\n"));
            }
            _ => {
                out.push_str(name);
                if style.verbose {
                    if let Some(id) = item["fileId"].as_str() {
                        out.push_str(&format!("  · fileId {id}"));
                    }
                }
                out.push('\n');
            }
        }
    }
    if out.is_empty() {
        out.push_str("(no entries)\n");
    }
    kbtools::text::terminal_safe_lines(&out).into_owned()
}

/// `read_related` and `expand_graph`'s relations: title, path, and why.
fn relations(items: &Value, style: &Style) -> String {
    let mut out = String::new();
    for item in items.as_array().into_iter().flatten() {
        out.push_str(&format!("{}\n", title_line(item, style)));
        let kind = item["relationType"].as_str().unwrap_or("related");
        let direction = item["direction"].as_str().unwrap_or("");
        out.push_str(&format!("   {kind} ({direction})"));
        if let Some(reason) = item["reason"].as_str() {
            out.push_str(&format!(": {reason}"));
        }
        out.push_str("\n\n");
    }
    if out.is_empty() {
        out.push_str("(no related pages)\n");
    }
    kbtools::text::terminal_safe_lines(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn style(marks: &[&str]) -> Style {
        Style {
            verbose: false,
            color: true,
            marks: marks.iter().map(|m| m.to_string()).collect(),
        }
    }

    #[test]
    fn marks_run_from_a_word_start_to_the_end_of_the_word() {
        let text = "Profile Files and related pages";
        let shown = marked(text, &text.to_lowercase(), &["file".into(), "relat".into()]);
        assert_eq!(
            shown,
            "Profile \u{1b}[1mFiles\u{1b}[0m and \u{1b}[1mrelated\u{1b}[0m pages"
        );
        // Chinese terms mark where they stand.
        let text = "读取知识库的文件";
        let shown = marked(text, text, &["知识库".into()]);
        assert_eq!(shown, "读取\u{1b}[1m知识库\u{1b}[0m的文件");
    }

    #[test]
    fn an_excerpt_line_starts_near_its_first_rare_word() {
        let words: Vec<String> = (0..60).map(|i| format!("w{i}")).collect();
        let excerpt = format!("{} needle {}", words.join(" "), words.join(" "));
        let line = excerpt_line(&excerpt, &style(&["needle"]));
        assert!(line.starts_with('…'), "{line}");
        assert!(line.contains("\u{1b}[1mneedle\u{1b}[0m"), "{line}");
        assert!(line.ends_with('…'), "{line}");
        // No mark: the excerpt's start, cut.
        let line = excerpt_line(&excerpt, &style(&[]));
        assert!(line.starts_with("w0 w1"), "{line}");
        assert!(line.chars().count() <= EXCERPT_CHARS + 1, "{line}");
    }
}
