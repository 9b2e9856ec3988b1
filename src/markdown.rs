//! The one pulldown-cmark choke point: from a Markdown body, the title (first level-1 heading
//! outside code), every heading, every link destination (inline, reference and wiki links), and
//! the plain text that feeds the full-text index.

use pulldown_cmark::{Event, HeadingLevel, LinkType, Options, Parser, Tag, TagEnd};

/// What the index needs from one Markdown body.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MarkdownSummary {
    pub first_h1: Option<String>,
    pub headings: Vec<String>,
    pub links: Vec<Link>,
    pub plain_text: String,
}

/// A link destination as written, and whether it was a `[[wiki link]]`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Link {
    pub destination: String,
    pub wiki: bool,
}

/// Headings kept per document.
const MAX_HEADINGS: usize = 512;
/// Characters kept of a heading (and so of a title taken from the first H1): a page that is
/// one huge `# …` line must not make a title of megabytes that every search result repeats.
pub const MAX_HEADING_CHARS: usize = 1024;
/// Links kept per document.
const MAX_LINKS: usize = 4096;

pub fn summarize(body: &str) -> MarkdownSummary {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_WIKILINKS;
    let mut summary = MarkdownSummary::default();
    let mut heading: Option<(HeadingLevel, String)> = None;
    let mut text = String::with_capacity(body.len());
    for event in Parser::new_ext(body, options) {
        match event {
            Event::Start(Tag::Heading { level, .. }) => heading = Some((level, String::new())),
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, content)) = heading.take() {
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
                summary.links.push(Link {
                    destination: dest_url.to_string(),
                    wiki: matches!(link_type, LinkType::WikiLink { .. }),
                });
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, content)) = heading.as_mut() {
                    content.push_str(&t);
                }
                text.push_str(&t);
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
                | TagEnd::CodeBlock
                | TagEnd::BlockQuote(_)
                | TagEnd::TableRow
                | TagEnd::TableHead
                | TagEnd::FootnoteDefinition,
            ) => text.push('\n'),
            Event::End(TagEnd::TableCell) => text.push(' '),
            _ => {}
        }
    }
    summary.plain_text = text;
    summary
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn huge_headings_are_cut() {
        let body = format!("# {}\n\ntext", "word ".repeat(100_000));
        let s = summarize(&body);
        let title = s.first_h1.unwrap();
        assert_eq!(title.chars().count(), MAX_HEADING_CHARS);
        assert!(title.starts_with("word word"));
        assert_eq!(s.headings[0], title);
    }
}
