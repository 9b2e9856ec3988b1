//! Relations of a plain Markdown folder (DECISIONS 20): Markdown links, wiki links and the
//! frontmatter keys `references`, `related`, `links`, `see_also`, `seeAlso` become `references`
//! relations with a direction and a reason sentence, as the Focowiki generator words them.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::{paths, Diagnostic, Relation};
use crate::markdown::Link;
use crate::text::{exact_key, nfc, percent_decode_once};

const METADATA_KEYS: [&str; 5] = ["references", "related", "links", "see_also", "seeAlso"];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Evidence {
    MarkdownLink,
    Metadata,
}

/// A page of a plain folder, as relation derivation reads it.
pub struct PlainPage<'a> {
    pub path: &'a str,
    pub title: &'a str,
    pub frontmatter: serde_json::Map<String, Value>,
    pub links: &'a [Link],
}

struct Resolver<'a> {
    exact: HashMap<&'a str, &'a str>,
    folded: HashMap<String, Vec<&'a str>>,
    by_title: HashMap<String, Vec<&'a str>>,
    by_stem: HashMap<String, Vec<&'a str>>,
}

fn fold(path: &str) -> String {
    nfc(path).to_lowercase()
}

fn strip_md(path: &str) -> &str {
    if path.len() > 3 && path.as_bytes()[path.len() - 3..].eq_ignore_ascii_case(b".md") {
        &path[..path.len() - 3]
    } else {
        path
    }
}

impl<'a> Resolver<'a> {
    fn new(files: &'a [PlainPage<'a>]) -> Self {
        let mut resolver = Resolver {
            exact: HashMap::new(),
            folded: HashMap::new(),
            by_title: HashMap::new(),
            by_stem: HashMap::new(),
        };
        for file in files {
            let path = file.path;
            resolver.exact.insert(path, path);
            resolver.folded.entry(fold(path)).or_default().push(path);
            resolver
                .by_title
                .entry(exact_key(file.title))
                .or_default()
                .push(path);
            let stem = strip_md(paths::name_of(path));
            resolver
                .by_stem
                .entry(exact_key(stem))
                .or_default()
                .push(path);
        }
        resolver
    }

    fn unique(list: Option<&Vec<&'a str>>) -> Option<&'a str> {
        match list {
            Some(items) if items.len() == 1 => Some(items[0]),
            _ => None,
        }
    }

    /// A page path: exact first, then NFC + lower-case when that is unambiguous.
    fn page(&self, path: &str) -> Option<&'a str> {
        self.exact
            .get(path)
            .copied()
            .or_else(|| Self::unique(self.folded.get(&fold(path))))
    }

    /// A relative (or `/`-rooted) path from the page at `from`, resolved inside `pages/`.
    fn relative(&self, from: &str, target: &str) -> Option<&'a str> {
        let base = paths::parent_of(from);
        let joined = if let Some(rooted) = target.strip_prefix('/') {
            format!("pages/{rooted}")
        } else {
            format!("{base}/{target}")
        };
        let mut stack: Vec<&str> = Vec::new();
        for segment in joined.split('/') {
            match segment {
                "" | "." => {}
                ".." => {
                    stack.pop()?;
                }
                s => stack.push(s),
            }
        }
        if stack.first() != Some(&"pages") {
            return None;
        }
        let path = stack.join("/");
        self.page(&path)
            .or_else(|| self.page(&format!("{path}.md")))
    }

    /// A title or file stem, when exactly one page has it.
    fn by_name(&self, name: &str) -> Option<&'a str> {
        let key = exact_key(name);
        Self::unique(self.by_title.get(&key))
            .or_else(|| Self::unique(self.by_stem.get(&exact_key(strip_md(name)))))
    }
}

fn has_scheme(target: &str) -> bool {
    let mut chars = target.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() => {}
        _ => return false,
    }
    for c in chars {
        if c == ':' {
            return true;
        }
        if !(c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-')) {
            return false;
        }
    }
    false
}

/// The path part of a Markdown link destination, or `None` for URLs, anchors and non-Markdown.
fn link_path(destination: &str) -> Option<String> {
    let d = destination
        .trim()
        .trim_start_matches('<')
        .trim_end_matches('>');
    if d.is_empty() || d.starts_with('#') || d.starts_with("//") || has_scheme(d) {
        return None;
    }
    let d = d.split(['?', '#']).next().unwrap_or(d);
    let decoded = percent_decode_once(d)?;
    let lower = decoded.to_lowercase();
    lower.ends_with(".md").then_some(decoded)
}

fn metadata_targets(value: Option<&Value>) -> Vec<String> {
    let mut out = Vec::new();
    let mut push = |v: &Value| match v {
        Value::String(s) => out.push(s.clone()),
        Value::Object(map) => {
            for key in ["path", "title", "id"] {
                if let Some(s) = map.get(key).and_then(Value::as_str) {
                    out.push(s.to_string());
                    break;
                }
            }
        }
        _ => {}
    };
    match value {
        Some(Value::Array(items)) => items.iter().for_each(&mut push),
        Some(v) => push(v),
        None => {}
    }
    out
}

/// Derives the relations of every page, from both endpoints' points of view.
pub fn derive_relations(
    pages: &[PlainPage<'_>],
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<Relation> {
    let resolver = Resolver::new(pages);
    let titles: HashMap<&str, &str> = pages.iter().map(|f| (f.path, f.title)).collect();
    // (holder, other) → first evidence kind.
    let mut evidence: BTreeMap<(&str, &str), Evidence> = BTreeMap::new();
    for file in pages {
        let from = file.path;
        for link in file.links {
            let target = if link.wiki {
                let name = link
                    .destination
                    .split(['#', '|'])
                    .next()
                    .unwrap_or("")
                    .trim();
                if name.is_empty() {
                    continue;
                }
                resolver
                    .relative(from, &format!("{name}.md"))
                    .or_else(|| resolver.page(&format!("pages/{name}.md")))
                    .or_else(|| resolver.by_name(name))
            } else {
                let Some(path) = link_path(&link.destination) else {
                    continue;
                };
                resolver.relative(from, &path)
            };
            match target {
                Some(to) if to != from => {
                    evidence.entry((from, to)).or_insert(Evidence::MarkdownLink);
                }
                Some(_) => {}
                None => diagnostics.push(Diagnostic::new(
                    from.to_string(),
                    None,
                    format!("link to {} does not resolve to a page", link.destination),
                )),
            }
        }
        for key in METADATA_KEYS {
            for target in metadata_targets(file.frontmatter.get(key)) {
                let resolved = resolver
                    .relative(from, &target)
                    .or_else(|| resolver.page(&format!("pages/{}", target.trim_start_matches('/'))))
                    .or_else(|| resolver.by_name(&target));
                match resolved {
                    Some(to) if to != from => {
                        evidence.entry((from, to)).or_insert(Evidence::Metadata);
                    }
                    Some(_) => {}
                    None => diagnostics.push(Diagnostic::new(
                        from.to_string(),
                        None,
                        format!("frontmatter `{key}` entry {target:?} does not resolve to a page"),
                    )),
                }
            }
        }
    }
    let reason = |holder: &str, other: &str, kind: Evidence| match kind {
        Evidence::MarkdownLink => format!(
            "{} contains an explicit Markdown reference to {}.",
            titles[holder], titles[other]
        ),
        Evidence::Metadata => format!(
            "{} metadata explicitly references {}.",
            titles[holder], titles[other]
        ),
    };
    let mut relations = Vec::new();
    for (&(holder, other), &kind) in &evidence {
        let back = evidence.get(&(other, holder)).copied();
        let (holder_dir, other_dir) = if back.is_some() {
            ("bidirectional", "bidirectional")
        } else {
            ("outgoing", "incoming")
        };
        relations.push(Relation {
            from: holder.to_string(),
            to: other.to_string(),
            relation_type: "references".into(),
            direction: holder_dir.into(),
            reason: Some(reason(holder, other, kind)),
        });
        if back.is_none() {
            relations.push(Relation {
                from: other.to_string(),
                to: holder.to_string(),
                relation_type: "references".into(),
                direction: other_dir.into(),
                reason: Some(reason(holder, other, kind)),
            });
        }
    }
    relations.sort();
    relations.dedup();
    relations
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_paths_skip_urls_and_anchors() {
        assert_eq!(link_path("https://x.org/a.md"), None);
        assert_eq!(link_path("#top"), None);
        assert_eq!(link_path("image.png"), None);
        assert_eq!(link_path("../a%20b.md#h").as_deref(), Some("../a b.md"));
        assert_eq!(link_path("<other.md>").as_deref(), Some("other.md"));
    }
}
