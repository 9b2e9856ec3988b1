//! Relations of a plain Markdown folder (rules#plain-folders): Markdown links, wiki links and the
//! frontmatter keys `references`, `related`, `links`, `see_also`, `seeAlso` become `references`
//! relations with a direction and a reason sentence, as the Focowiki generator words them.
//! Translations (rules#translations) become `translation` relations: the same path under sibling
//! language folders, or a translation key the pages share in their frontmatter.

use std::collections::{BTreeMap, HashMap};

use crate::relation::Direction;

use serde_json::Value;

use super::{paths, Code, Diagnostic, Relation};
use crate::ingest::markdown::Link;
use crate::text::{exact_key, nfc, percent_decode_once};

const METADATA_KEYS: [&str; 5] = ["references", "related", "links", "see_also", "seeAlso"];

/// Pages sharing one translation key that are read as translations of one another; a larger
/// group is a key used for something else (a diagnostic says so).
const MAX_TRANSLATIONS: usize = 16;

/// A `translation` relation of `from` to `to` (rules#translations: both ways, with a reason).
fn translation(from: &str, to: &str, reason: String) -> Relation {
    Relation {
        from: from.to_string(),
        to: to.to_string(),
        relation_type: "translation".into(),
        direction: Direction::Bidirectional,
        reason: Some(reason),
    }
}

/// The translation key a page's frontmatter names, with the key's name: Hugo's
/// `translationKey` (any case: Hugo reads front matter keys case-insensitively, and
/// `translation_key`), or `ref` beside `lang` (the convention of multilingual Jekyll sites).
fn translation_key(frontmatter: &serde_json::Map<String, Value>) -> Option<(&'static str, String)> {
    let text = |v: &Value| match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    for (key, value) in frontmatter {
        let folded = key.to_ascii_lowercase();
        if folded == "translationkey" || folded == "translation_key" {
            if let Some(v) = text(value) {
                return Some(("translationKey", v));
            }
        }
    }
    if frontmatter.get("lang").and_then(text).is_some() {
        if let Some(v) = frontmatter.get("ref").and_then(text) {
            return Some(("ref", v));
        }
    }
    None
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Evidence {
    MarkdownLink,
    Metadata,
}

/// A page of a plain folder, as relation derivation reads it.
pub(crate) struct PlainPage<'a> {
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
    /// Every trailing run of path segments of every page (`c.md`, `b/c.md`, `a/b/c.md` for
    /// `pages/a/b/c.md`), folded, with the pages that end so.
    by_suffix: HashMap<String, Vec<&'a str>>,
}

/// File names that name their folder's page rather than a page of their own.
const FOLDER_PAGES: [&str; 3] = ["readme.md", "index.md", "_index.md"];

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
            by_suffix: HashMap::new(),
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
            let inside = fold(path.strip_prefix("pages/").unwrap_or(path));
            let mut start = Some(0);
            while let Some(at) = start {
                resolver
                    .by_suffix
                    .entry(inside[at..].to_string())
                    .or_default()
                    .push(path);
                start = inside[at..].find('/').map(|slash| at + slash + 1);
            }
        }
        resolver
    }

    /// The one page whose path ends as `target` does, on the most trailing segments that name
    /// one page: what a link means when the folder was copied out of a repository or site of
    /// another layout (`../../../lib/rules/color-no-invalid-hex/README.md` from a rule list in
    /// a folder that keeps the rules as `rules/color-no-invalid-hex.md`; a path that climbs
    /// above the folder). A folder's `README.md`, `index.md` or `_index.md` also names
    /// `<folder>.md`; a single segment counts only when it is no such folder page name.
    fn by_suffix(&self, target: &str) -> Option<&'a str> {
        let segments: Vec<String> = fold(target)
            .split('/')
            .filter(|s| !matches!(*s, "" | "." | ".."))
            .map(str::to_string)
            .collect();
        let (last, folders) = segments.split_last()?;
        let mut forms: Vec<Vec<String>> = Vec::new();
        let named = |name: &str| {
            let mut form = folders.to_vec();
            form.push(name.to_string());
            form
        };
        match last.rsplit_once('.') {
            Some((stem, "html" | "htm")) => forms.push(named(&format!("{stem}.md"))),
            Some((_, "md" | "markdown")) => forms.push(segments.clone()),
            _ => forms.push(named(&format!("{last}.md"))),
        }
        if FOLDER_PAGES.contains(&last.as_str()) {
            if let Some((folder, above)) = folders.split_last() {
                let mut form = above.to_vec();
                form.push(format!("{folder}.md"));
                forms.push(form);
            }
        }
        let longest = forms.iter().map(Vec::len).max().unwrap_or(0);
        (1..=longest).rev().find_map(|k| {
            forms.iter().filter(|f| f.len() >= k).find_map(|form| {
                let tail = &form[form.len() - k..];
                if k == 1 && FOLDER_PAGES.contains(&tail[0].as_str()) {
                    return None;
                }
                Self::unique(self.by_suffix.get(&tail.join("/")))
            })
        })
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

    /// A path relative to the page at `from` (or `/`-rooted), resolved inside `pages/` the way
    /// site generators mean it: a `/`-rooted path from the site's root, which is the folder
    /// of the page or one above it (the outermost that has the target: the folder itself, else
    /// `en/` in a folder of language roots, `content/` of a Hugo site); a path without extension, or ending in
    /// `.html`, names `<path>.md`; a folder names its `index.md`, `README.md` or `_index.md`.
    fn relative(&self, from: &str, target: &str) -> Option<&'a str> {
        let bases: Vec<String> = match target.strip_prefix('/') {
            Some(rooted) => {
                let mut roots = Vec::new();
                let mut dir = paths::parent_of(from);
                loop {
                    roots.push(format!("{dir}/{rooted}"));
                    if dir == "pages" || !dir.contains('/') {
                        break;
                    }
                    dir = paths::parent_of(dir);
                }
                roots.reverse();
                roots
            }
            None => vec![format!("{}/{target}", paths::parent_of(from))],
        };
        bases.iter().find_map(|base| {
            let path = normalize(base)?;
            self.page_named(&path, target.ends_with('/'))
        })
    }

    /// The page a normalized path names, trying the forms generators accept.
    fn page_named(&self, path: &str, folder: bool) -> Option<&'a str> {
        let lower = path.to_ascii_lowercase();
        let stem = [".html", ".htm"].iter().find_map(|ext| {
            lower
                .ends_with(ext)
                .then(|| &path[..path.len() - ext.len()])
        });
        let mut candidates = Vec::new();
        if folder {
            candidates.extend(
                ["index.md", "README.md", "_index.md", "readme.md"].map(|n| format!("{path}/{n}")),
            );
            candidates.push(format!("{path}.md"));
        } else if let Some(stem) = stem {
            candidates.push(format!("{stem}.md"));
            if let Some(folder) = stem.strip_suffix("/index") {
                candidates.push(format!("{folder}/README.md"));
            }
        } else {
            candidates.push(path.to_string());
            candidates.push(format!("{path}.md"));
            candidates.extend(
                ["index.md", "README.md", "_index.md", "readme.md"].map(|n| format!("{path}/{n}")),
            );
        }
        candidates.iter().find_map(|c| self.page(c))
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

/// `path` with `.` and `..` segments applied; `None` when it leaves `pages/`.
fn normalize(path: &str) -> Option<String> {
    let mut stack: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                stack.pop()?;
            }
            s => stack.push(s),
        }
    }
    (stack.first() == Some(&"pages") && stack.len() > 1).then(|| stack.join("/"))
}

/// Extensions of the links that name a page (besides none at all).
const PAGE_EXTENSIONS: [&str; 5] = ["md", "markdown", "mdx", "html", "htm"];

/// The path part of a Markdown link destination, and whether it looks like a page (no
/// extension, or a page's); `None` for URLs, bare anchors and mail links.
fn link_path(destination: &str) -> Option<(String, bool)> {
    let d = destination
        .trim()
        .trim_start_matches('<')
        .trim_end_matches('>');
    if d.is_empty() || d.starts_with('#') || d.starts_with("//") || has_scheme(d) {
        return None;
    }
    let d = d.split(['?', '#']).next().unwrap_or(d);
    let decoded = percent_decode_once(d)?;
    if decoded.is_empty() {
        return None;
    }
    let name = decoded.rsplit('/').next().unwrap_or("");
    let page_like = match name.rsplit_once('.') {
        Some((_, ext))
            if !ext.is_empty()
                && ext.len() <= 5
                && ext.chars().all(|c| c.is_ascii_alphanumeric()) =>
        {
            PAGE_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
        }
        _ => true,
    };
    Some((decoded, page_like))
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

/// [`derive_relations_excluding`] with nothing left out.
#[cfg(test)]
pub(crate) fn derive_relations(
    pages: &[PlainPage<'_>],
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<Relation> {
    derive_relations_excluding(pages, &|_| false, diagnostics)
}

/// Derives the relations of every page, from both endpoints' points of view. `excluded` tells
/// the paths (`pages/…`) the walk left out: a link to one is not reported as not resolving
/// (DECISIONS 26).
pub(crate) fn derive_relations_excluding(
    pages: &[PlainPage<'_>],
    excluded: &dyn Fn(&str) -> bool,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<Relation> {
    let resolver = Resolver::new(pages);
    let titles: HashMap<&str, &str> = pages.iter().map(|f| (f.path, f.title)).collect();
    let evidence = evidence(pages, &resolver, excluded, diagnostics);
    let mut relations = references(&evidence, &titles);
    // Translations (rules#translations): the same path under a sibling language root, both ways.
    for file in pages {
        for other in paths::translation_paths(file.path) {
            if let Some((&to, other_title)) = titles.get_key_value(other.as_str()) {
                relations.push(translation(
                    file.path,
                    to,
                    format!(
                        "{} and {} are translations of one page (the same path under sibling language folders).",
                        titles[file.path], other_title
                    ),
                ));
            }
        }
    }
    let named = named_translations(pages, &relations, diagnostics);
    relations.extend(named);
    relations.sort();
    relations.dedup();
    relations
}

/// (holder, other) → the first evidence of a reference from holder to other: its links, then
/// its frontmatter's references. A link or reference that names no page is reported, but not
/// a link to an image or another file that is no page.
fn evidence<'p>(
    pages: &'p [PlainPage<'p>],
    resolver: &Resolver<'p>,
    excluded: &dyn Fn(&str) -> bool,
    diagnostics: &mut Vec<Diagnostic>,
) -> BTreeMap<(&'p str, &'p str), Evidence> {
    // Whether `target`, relative to `from` (or to the folder when `/`-rooted), names a file the
    // walk left out.
    let left_out = |from: &str, target: &str| {
        let base = match target.strip_prefix('/') {
            Some(rooted) => format!("pages/{rooted}"),
            None => format!("{}/{target}", paths::parent_of(from)),
        };
        normalize(&base).is_some_and(|path| excluded(&path))
    };
    let mut evidence = BTreeMap::new();
    for file in pages {
        let from = file.path;
        for link in file.links {
            let Some((target, page_like)) = link_target(resolver, from, link) else {
                continue;
            };
            match target {
                Some(to) if to != from => {
                    evidence.entry((from, to)).or_insert(Evidence::MarkdownLink);
                }
                Some(_) => {}
                None if !page_like => {}
                None if link_path(&link.destination)
                    .is_some_and(|(path, _)| left_out(from, &path)) => {}
                None => diagnostics.push(Diagnostic::new(
                    Code::UnresolvedLink,
                    from.to_string(),
                    Some(link.line as usize).filter(|&line| line > 0),
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
                    None if left_out(from, &target) => {}
                    None => diagnostics.push(Diagnostic::new(
                        Code::UnresolvedLink,
                        from.to_string(),
                        None,
                        format!("frontmatter `{key}` entry {target:?} does not resolve to a page"),
                    )),
                }
            }
        }
    }
    evidence
}

/// The page a link of `from` names (`None` inside: it names none), and whether it looks like a
/// link to a page; `None`: a link with nothing to resolve.
fn link_target<'p>(
    resolver: &Resolver<'p>,
    from: &str,
    link: &Link,
) -> Option<(Option<&'p str>, bool)> {
    if link.wiki {
        let name = link
            .destination
            .split(['#', '|'])
            .next()
            .unwrap_or("")
            .trim();
        if name.is_empty() {
            return None;
        }
        let name = name.trim_end_matches(".md");
        let target = resolver
            .relative(from, &format!("{name}.md"))
            .or_else(|| resolver.page(&format!("pages/{name}.md")))
            .or_else(|| resolver.by_name(name));
        return Some((target, true));
    }
    if link.shortcode {
        // Hugo's ref/relref: relative to the page, from the content root, or a file name the
        // site has once.
        let path = link.destination.split('#').next().unwrap_or("");
        if path.is_empty() {
            return None;
        }
        let target = resolver
            .relative(from, path)
            .or_else(|| resolver.relative(from, &format!("/{}", path.trim_start_matches('/'))))
            .or_else(|| resolver.by_name(paths::name_of(path)));
        return Some((target, true));
    }
    let (path, looks_like_page) = link_path(&link.destination)?;
    let target = resolver
        .relative(from, &path)
        .or_else(|| {
            // A `/`-rooted path whose first folder is a route prefix the folder does not have
            // (Docusaurus' `/docs/…` in its docs folder).
            let rest = path.strip_prefix('/')?.split_once('/')?.1;
            resolver.relative(from, &format!("/{rest}"))
        })
        .or_else(|| resolver.by_suffix(&path).filter(|_| looks_like_page));
    Some((target, looks_like_page))
}

/// The `references` relations of `evidence`, from both endpoints: bidirectional when each
/// page references the other, else outgoing from the holder and incoming to the other.
fn references(
    evidence: &BTreeMap<(&str, &str), Evidence>,
    titles: &HashMap<&str, &str>,
) -> Vec<Relation> {
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
    for (&(holder, other), &kind) in evidence {
        let back = evidence.get(&(other, holder)).copied();
        let (holder_dir, other_dir) = if back.is_some() {
            (Direction::Bidirectional, Direction::Bidirectional)
        } else {
            (Direction::Outgoing, Direction::Incoming)
        };
        relations.push(Relation {
            from: holder.to_string(),
            to: other.to_string(),
            relation_type: "references".into(),
            direction: holder_dir,
            reason: Some(reason(holder, other, kind)),
        });
        if back.is_none() {
            relations.push(Relation {
                from: other.to_string(),
                to: holder.to_string(),
                relation_type: "references".into(),
                direction: other_dir,
                reason: Some(reason(holder, other, kind)),
            });
        }
    }
    relations
}

/// Translations named in frontmatter: the pages that share a translation key, both ways, each
/// pair once (a pair already in `relations`, under sibling language folders, is not repeated).
/// Pages with the same `lang` are no translations of each other.
fn named_translations(
    pages: &[PlainPage<'_>],
    relations: &[Relation],
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<Relation> {
    let mut groups: BTreeMap<(&str, String), Vec<&PlainPage<'_>>> = BTreeMap::new();
    for file in pages {
        if let Some(key) = translation_key(&file.frontmatter) {
            groups.entry(key).or_default().push(file);
        }
    }
    fn lang<'p>(page: &'p PlainPage<'_>) -> Option<&'p str> {
        page.frontmatter.get("lang").and_then(Value::as_str)
    }
    let mut paired: std::collections::HashSet<(String, String)> = relations
        .iter()
        .filter(|r| r.relation_type == "translation")
        .map(|r| (r.from.clone(), r.to.clone()))
        .collect();
    let mut named = Vec::new();
    for ((name, value), members) in &groups {
        if members.len() > MAX_TRANSLATIONS {
            diagnostics.push(Diagnostic::new(
                Code::SharedKey,
                members[0].path.to_string(),
                None,
                format!(
                    "frontmatter `{name}: {value}` is shared by {} pages, so none of them is read \
                     as a translation (at most {MAX_TRANSLATIONS}); give each page's translations \
                     a key of their own",
                    members.len()
                ),
            ));
            continue;
        }
        for a in members {
            for b in members {
                let same_lang = lang(a).is_some() && lang(a) == lang(b);
                if a.path == b.path || same_lang {
                    continue;
                }
                if !paired.insert((a.path.to_string(), b.path.to_string())) {
                    continue;
                }
                named.push(translation(
                    a.path,
                    b.path,
                    format!(
                        "{} and {} are translations of one page (the same `{name}` in their frontmatter).",
                        a.title, b.title
                    ),
                ));
            }
        }
    }
    named
}

#[cfg(test)]
mod resolution_tests;
#[cfg(test)]
mod tests;
