//! The one pulldown-cmark choke point: from a Markdown body, the title (first level-1 heading
//! outside code), every heading, every link destination (inline, reference and wiki links), and
//! the plain text that feeds the full-text index.

use pulldown_cmark::{Event, HeadingLevel, LinkType, Options, Parser, Tag, TagEnd};

/// What the index needs from one Markdown body.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct MarkdownSummary {
    pub first_h1: Option<String>,
    pub headings: Vec<String>,
    pub links: Vec<Link>,
    pub plain_text: String,
}

/// A link destination as written, and what kind of link it was.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Link {
    pub destination: String,
    pub wiki: bool,
    /// A Hugo `{{< ref "…" >}}` / `{{< relref "…" >}}` shortcode (its argument is the
    /// destination).
    #[serde(default)]
    pub shortcode: bool,
    /// The line of the text given to `summarize` where the link starts (1-based; 0 when
    /// unknown, as in records written before it was kept).
    #[serde(default)]
    pub line: u32,
}

/// The 1-based line of byte `offset` of `text`, counting on from the previous call's offset
/// when the offsets come in order (a page's links do).
struct Lines<'a> {
    text: &'a str,
    at: usize,
    line: u32,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Self {
        Lines {
            text,
            at: 0,
            line: 1,
        }
    }

    fn line_of(&mut self, offset: usize) -> u32 {
        let offset = offset.min(self.text.len());
        if offset < self.at {
            (self.at, self.line) = (0, 1);
        }
        let newlines = self.text.as_bytes()[self.at..offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        self.line = self.line.saturating_add(newlines as u32);
        self.at = offset;
        self.line
    }
}

/// Where a section of the plain text starts (before its heading): a form feed, which every
/// analyzer drops as whitespace, so it costs the index nothing; the passage lane's sections are
/// split at it ([`sections`]).
pub(crate) const SECTION_BREAK: char = '\u{c}';

/// A section shorter than this (bytes of indexed text) is joined to the one after it: a
/// heading with a line under it is no passage, and BM25's length normalization would rank such
/// stubs over the sections that explain.
pub(crate) const MIN_SECTION_BYTES: usize = 400;
/// Sections of a page at most (the rest join the last one).
pub(crate) const MAX_SECTIONS: usize = 256;

/// The sections of a page's indexed body text (the passage lane's units): byte ranges of
/// `body` split at `SECTION_BREAK`, short ones joined to the next (a short last one to the
/// one before), in order; one break character lies between two sections, and a page without
/// headings is one section. The index marks where each ends
/// (`crate::ingest::analysis::SECTION_MARK`) and a section is named by its number here, so this is
/// computed the same way at indexing and when an excerpt is cut from the page again.
pub fn sections(body: &str) -> Vec<std::ops::Range<usize>> {
    let mut out: Vec<std::ops::Range<usize>> = Vec::new();
    let mut open: Option<usize> = None;
    let mut at = 0;
    for text in body.split(SECTION_BREAK) {
        let end = at + text.len();
        let start = open.take().unwrap_or(at);
        if end - start >= MIN_SECTION_BYTES && out.len() + 1 < MAX_SECTIONS {
            out.push(start..end);
        } else {
            open = Some(start);
        }
        at = end + SECTION_BREAK.len_utf8();
    }
    if let Some(start) = open {
        match out.last_mut() {
            // A short tail joins the section before it.
            Some(last) if body.len() - start < MIN_SECTION_BYTES => last.end = body.len(),
            _ => out.push(start..body.len()),
        }
    }
    out
}

/// Headings kept per document.
const MAX_HEADINGS: usize = 512;
/// Characters kept of a heading (and so of a title taken from the first H1): a page that is
/// one huge `# …` line must not make a title of megabytes that every search result repeats.
pub const MAX_HEADING_CHARS: usize = 1024;
/// Links kept per document.
const MAX_LINKS: usize = 4096;

/// The Markdown extensions every parse of a page enables.
const OPTIONS: Options = Options::ENABLE_TABLES
    .union(Options::ENABLE_FOOTNOTES)
    .union(Options::ENABLE_STRIKETHROUGH)
    .union(Options::ENABLE_TASKLISTS)
    .union(Options::ENABLE_WIKILINKS)
    .union(Options::ENABLE_HEADING_ATTRIBUTES);

/// The destination of every Markdown link of `body` (not images, not wiki links) with the
/// byte offset where the link starts (`kbtools check` reports broken ones there).
pub(crate) fn link_destinations(body: &str) -> Vec<(String, usize)> {
    Parser::new_ext(body, OPTIONS)
        .into_offset_iter()
        .filter_map(|(event, range)| match event {
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                ..
            }) if !matches!(link_type, LinkType::WikiLink { .. }) => {
                Some((dest_url.into_string(), range.start))
            }
            _ => None,
        })
        .collect()
}

pub(crate) fn summarize(body: &str) -> MarkdownSummary {
    // A byte-order mark before the first heading is no part of it.
    let body = body.strip_prefix('\u{feff}').unwrap_or(body);
    // Heading attributes (`# Title {#anchor .class}`, as VitePress, Hugo, MkDocs and Docusaurus
    // write anchors) are no part of the heading's text.
    let options = OPTIONS;
    let mut summary = MarkdownSummary::default();
    let mut heading: Option<(HeadingLevel, String)> = None;
    let mut text = String::with_capacity(body.len());
    // Byte ranges of `body` inside code (blocks, spans, raw HTML), where no link is taken.
    let mut code_ranges: Vec<std::ops::Range<usize>> = Vec::new();
    let mut code_block: Option<usize> = None;
    // What Hugo's code shortcodes (`{{< code-toggle >}}` holding TOML's `[[params]]`) enclose
    // is code, though CommonMark sees text.
    let in_code_shortcodes = shortcode_code_ranges(body);
    // Byte ranges of `text` that are code, kept as written when the rest is cleaned.
    let mut text_code: Vec<std::ops::Range<usize>> = Vec::new();
    let mut lines = Lines::new(body);
    for (event, range) in Parser::new_ext(body, options).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(_)) => code_block = Some(range.start),
            Event::End(TagEnd::CodeBlock) => {
                code_ranges.push(code_block.take().unwrap_or(range.start)..range.end);
                text.push('\n');
            }
            Event::Code(_) | Event::Html(_) | Event::InlineHtml(_) => {
                code_ranges.push(range.clone());
            }
            _ => {}
        }
        let in_code = code_block.is_some();
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                // A section starts at each heading of levels 1-3 (deeper ones stay inside theirs).
                if level <= HeadingLevel::H3 && !text.is_empty() {
                    text.push(SECTION_BREAK);
                }
                heading = Some((level, String::new()));
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, content)) = heading.take() {
                    let content = clean_generator_syntax(&content);
                    let content = crate::text::collapse_whitespace(&content);
                    let content =
                        crate::text::truncate_chars(&content, MAX_HEADING_CHARS).to_string();
                    if level == HeadingLevel::H1
                        && summary.first_h1.is_none()
                        && !content.is_empty()
                    {
                        summary.first_h1 = Some(content.clone());
                    }
                    if !content.is_empty() && summary.headings.len() < MAX_HEADINGS {
                        summary.headings.push(content);
                    }
                }
                text.push('\n');
            }
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                ..
            }) if summary.links.len() < MAX_LINKS && !dest_url.is_empty() => {
                let wiki = matches!(link_type, LinkType::WikiLink { .. });
                // VitePress' table of contents marker is no link to a page named "toc".
                let toc = wiki && dest_url.trim().eq_ignore_ascii_case("toc");
                let in_code = wiki && in_code_shortcodes.iter().any(|r| r.contains(&range.start));
                if !toc && !in_code {
                    summary.links.push(Link {
                        destination: dest_url.to_string(),
                        wiki,
                        shortcode: false,
                        line: lines.line_of(range.start),
                    });
                }
            }
            Event::Text(t) => {
                if let Some((_, content)) = heading.as_mut() {
                    content.push_str(&t);
                }
                if in_code {
                    let start = text.len();
                    text.push_str(&t);
                    text_code.push(start..text.len());
                } else {
                    text.push_str(&t);
                }
            }
            Event::Code(t) => {
                if let Some((_, content)) = heading.as_mut() {
                    content.push_str(&t);
                }
                let start = text.len();
                text.push_str(&t);
                text_code.push(start..text.len());
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some((_, content)) = heading.as_mut() {
                    content.push(' ');
                }
                text.push(' ');
            }
            Event::End(
                TagEnd::Paragraph
                | TagEnd::Item
                | TagEnd::BlockQuote(_)
                | TagEnd::TableRow
                | TagEnd::TableHead
                | TagEnd::FootnoteDefinition,
            ) => text.push('\n'),
            Event::End(TagEnd::TableCell) => text.push(' '),
            _ => {}
        }
    }
    let code = [code_ranges.as_slice(), in_code_shortcodes.as_slice()];
    add_ref_shortcodes(body, &code, &mut lines, &mut summary.links);
    summary.plain_text = clean_outside(&text, &text_code);
    summary
}

/// The pages Hugo's `ref`/`relref` shortcodes of `body` name, outside the `code` ranges, added
/// to `links` (up to [`MAX_LINKS`]).
fn add_ref_shortcodes(
    body: &str,
    code: &[&[std::ops::Range<usize>]],
    lines: &mut Lines<'_>,
    links: &mut Vec<Link>,
) {
    for (at, target) in ref_shortcodes(body) {
        let inside = code
            .iter()
            .any(|ranges| ranges.iter().any(|r| r.contains(&at)));
        if links.len() < MAX_LINKS && !inside {
            links.push(Link {
                destination: target,
                wiki: false,
                shortcode: true,
                line: lines.line_of(at),
            });
        }
    }
}

/// `text` with [`clean_generator_syntax`] applied between the `code` ranges (sorted, apart).
fn clean_outside(text: &str, code: &[std::ops::Range<usize>]) -> String {
    if !text.contains("{{") && !text.contains(":::") {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for range in code {
        out.push_str(&clean_generator_syntax(&text[at..range.start]));
        out.push_str(&text[range.clone()]);
        at = range.end;
    }
    out.push_str(&clean_generator_syntax(&text[at..]));
    out
}

/// A shortcode's name and arguments: `{{< name args >}}` or `{{% name args %}}` at `start`,
/// with the byte just past it.
fn shortcode_at(body: &str, start: usize) -> Option<(&str, &str, usize)> {
    let rest = &body[start..];
    let (open, close) = if rest.starts_with("{{<") {
        ("{{<", ">}}")
    } else if rest.starts_with("{{%") {
        ("{{%", "%}}")
    } else {
        return None;
    };
    let inner_end = rest[open.len()..].find(close)?;
    let inner = rest[open.len()..open.len() + inner_end].trim();
    // One line at most: `{{<` in prose that never closes is no shortcode.
    if inner.contains('\n') {
        return None;
    }
    let inner = inner.trim_start_matches("/*").trim_end_matches("*/").trim();
    let (name, args) = inner.split_once(char::is_whitespace).unwrap_or((inner, ""));
    Some((
        name,
        args.trim(),
        start + open.len() + inner_end + close.len(),
    ))
}

/// Hugo's `ref` and `relref` shortcodes of `body`: (offset, target without quotes).
fn ref_shortcodes(body: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (at, _) in body.match_indices("{{") {
        let Some((name, args, _)) = shortcode_at(body, at) else {
            continue;
        };
        if name != "ref" && name != "relref" {
            continue;
        }
        let target = args
            .trim_start_matches("path=")
            .trim()
            .trim_matches(|c| c == '"' || c == '\'' || c == '`');
        let target = target.split_whitespace().next().unwrap_or("");
        if !target.is_empty() {
            out.push((at, target.to_string()));
        }
    }
    out
}

/// Byte ranges of `body` between a code shortcode and its closing tag (`{{< code >}}`,
/// `{{< code-toggle >}}`, `{{< highlight >}}`, … `{{< /code >}}`): what they hold is code.
fn shortcode_code_ranges(body: &str) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut open: Vec<(String, usize)> = Vec::new();
    for (at, _) in body.match_indices("{{") {
        let Some((name, _, end)) = shortcode_at(body, at) else {
            continue;
        };
        if let Some(closing) = name.strip_prefix('/') {
            if let Some(i) = open.iter().rposition(|(n, _)| n == closing) {
                let (_, start) = open.remove(i);
                out.push(start..at);
            }
        } else if name.starts_with("code") || name == "highlight" || name.ends_with("code") {
            open.push((name.to_string(), end));
        }
    }
    out
}

/// The custom container types of VitePress, Docusaurus and markdown-it-container.
const CONTAINER_TYPES: [&str; 14] = [
    "tip",
    "info",
    "warning",
    "danger",
    "details",
    "note",
    "caution",
    "important",
    "success",
    "code-group",
    "raw",
    "v-pre",
    "example",
    "seealso",
];

/// `text` without the syntax of site generators that is no part of what a reader sees:
/// shortcodes (`{{< name … >}}`, `{{% name … %}}`) and the `:::` markers of custom containers
/// (`::: tip`, `:::warning Title` keeps `Title`).
pub(crate) fn clean_generator_syntax(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains("{{") && !text.contains(":::") {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        if rest.starts_with("{{") {
            if let Some((_, _, end)) = shortcode_at(text, i) {
                i = end;
                continue;
            }
        }
        // A container marker at the start of a line (or of what a soft break joined): `:::`,
        // then its type when it is one of the generators' (the title after it is kept).
        let after_space = i == 0 || text.as_bytes()[i - 1].is_ascii_whitespace();
        if after_space && rest.starts_with(":::") {
            let colons = rest.bytes().take_while(|&b| b == b':').count();
            let tail = &rest[colons..];
            let word_start = tail.len() - tail.trim_start_matches([' ', '\t']).len();
            let word: String = tail[word_start..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            let is_type = CONTAINER_TYPES.contains(&word.to_ascii_lowercase().as_str());
            let ends = tail.is_empty() || tail.starts_with(char::is_whitespace);
            if is_type {
                i += colons + word_start + word.len();
                continue;
            }
            if ends {
                i += colons;
                continue;
            }
        }
        let c = rest.chars().next().unwrap_or(' ');
        out.push(c);
        i += c.len_utf8();
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sections split at the section breaks, short ones joined to the next (a short last one
    /// to the one before), with one break between two sections.
    #[test]
    fn sections_split_at_headings_and_join_short_ones() {
        let brk = SECTION_BREAK;
        let long = |c: char| c.to_string().repeat(MIN_SECTION_BYTES);
        let body = format!(
            "{}{brk}short{brk}{}{brk}{}{brk}tail",
            long('a'),
            long('b'),
            long('c')
        );
        let found = sections(&body);
        let texts: Vec<&str> = found.iter().map(|r| &body[r.clone()]).collect();
        assert_eq!(
            texts,
            vec![
                long('a'),
                format!("short{brk}{}", long('b')),
                format!("{}{brk}tail", long('c'))
            ]
        );
        for pair in found.windows(2) {
            assert_eq!(&body[pair[0].end..pair[1].start], brk.to_string());
        }
        // A page without headings, and an empty one, are one section; so is a page whose
        // headings hold only stubs.
        assert_eq!(sections("no headings"), vec![0..11]);
        assert_eq!(sections(""), vec![0..0]);
        assert_eq!(sections(&format!("a{brk}b{brk}c")).len(), 1);
        // At most MAX_SECTIONS: the rest join the last.
        let many = vec![long('x'); MAX_SECTIONS + 10].join(&brk.to_string());
        let found = sections(&many);
        assert_eq!(found.len(), MAX_SECTIONS);
        assert_eq!(found.last().unwrap().end, many.len());
    }

    #[test]
    fn title_ignores_code_blocks() {
        let s = summarize("```\n# not a title\n```\n\n# Real Title\n\ntext");
        assert_eq!(s.first_h1.as_deref(), Some("Real Title"));
    }

    #[test]
    fn escaped_heading_is_unescaped() {
        let s = summarize("# DEV\\_234\n\nbody");
        assert_eq!(s.first_h1.as_deref(), Some("DEV_234"));
    }

    #[test]
    fn collects_links_and_wiki_links() {
        let s = summarize("See [a](other.md) and [[Note Name]].");
        assert_eq!(s.links[0].destination, "other.md");
        assert!(!s.links[0].wiki);
        assert_eq!(s.links[1].destination, "Note Name");
        assert!(s.links[1].wiki);
    }

    #[test]
    fn heading_anchors_and_a_bom_are_no_part_of_the_title() {
        let s = summarize(
            "\u{feff}# Computed Properties {#computed-properties}\n\n## Basics {#basics .x}",
        );
        assert_eq!(s.first_h1.as_deref(), Some("Computed Properties"));
        assert_eq!(s.headings, ["Computed Properties", "Basics"]);
        assert!(!s.plain_text.contains("{#"), "{:?}", s.plain_text);
    }

    #[test]
    fn containers_and_shortcodes_stay_out_of_titles_and_text() {
        let body = "# Setup {{< new-in 0.120 >}}\n\n::: tip Good to know\nUse it.\n:::\n\n{{< note >}}\nA note.\n{{< /note >}}\n\n```md\n::: kept {{< kept >}}\n```\n";
        let s = summarize(body);
        assert_eq!(s.first_h1.as_deref(), Some("Setup"));
        assert!(s.plain_text.contains("Good to know"), "{:?}", s.plain_text);
        assert!(s.plain_text.contains("A note."));
        assert!(!s.plain_text.contains("::: tip"), "{:?}", s.plain_text);
        assert!(!s.plain_text.contains("{{< note"), "{:?}", s.plain_text);
        // Code is kept as written.
        assert!(
            s.plain_text.contains("::: kept {{< kept >}}"),
            "{:?}",
            s.plain_text
        );
    }

    #[test]
    fn hugo_refs_are_links_and_code_holds_none() {
        let body = "See [a]({{< ref \"guide/a.md\" >}}) and {{< relref path=\"/b\" >}}.\n\n{{< code-toggle file=\"hugo\" >}}\n[[params.menu]]\nname = \"x\"\n{{< /code-toggle >}}\n\n`{{< ref \"code.md\" >}}` [[toc]] [[Real Note|alias]]\n\n```\n[[in.fence]]\n```\n";
        let s = summarize(body);
        let links: Vec<(&str, bool, bool)> = s
            .links
            .iter()
            .map(|l| (l.destination.as_str(), l.wiki, l.shortcode))
            .collect();
        assert_eq!(
            links,
            [
                ("Real Note", true, false),
                ("guide/a.md", false, true),
                ("/b", false, true)
            ]
        );
    }

    #[test]
    fn huge_headings_are_cut() {
        let body = format!("# {}\n\ntext", "word ".repeat(100_000));
        let s = summarize(&body);
        let title = s.first_h1.unwrap();
        assert_eq!(title.chars().count(), MAX_HEADING_CHARS);
        assert!(title.starts_with("word word"));
        assert_eq!(s.headings[0], title);
    }
}
