//! `kbtools check`: a bundle (or a plain Markdown folder) validated without an index, for a CI
//! job that must fail when an export is broken.
//!
//! Ingest already reports what it cannot use (unreadable files, JSON and frontmatter that do
//! not parse, records of missing pages, relations to missing pages). The check reads the
//! bundle the way ingest does and adds what a reader of the bundle would trip over but ingest
//! does not need: the required navigation files, every JSON file's `formatVersion`, each
//! document record against its page (`checksumSha256`, `byteCount`, `graphPath`), every
//! relationship's endpoints at the place they are written, every Markdown link of pages and
//! generated navigation, titles that collide and pages that `index.md` does not reach.
//!
//! Each finding is a [`Diagnostic`] with a stable code ([`Code`]); [`report`] writes them for
//! people and for CI systems.

pub mod report;

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::Path;

use rayon::prelude::*;
use serde::Deserialize;
use serde_json::Value;

use crate::error::IndexError;
use crate::ingest::bundle::paths::{self, PathClass};
use crate::ingest::bundle::{self, records, BundleKind, Code, Diagnostic, ReadFile, Severity};

/// The files the generator always writes. `_graph/catalog.json` and
/// `_index/terms/index.json` are left out: the generator may omit them in a knowledge base
/// that never had a relationship or a term.
const REQUIRED: [&str; 6] = [
    "index.md",
    "log.md",
    "pages/index.md",
    "_index/index.md",
    "_index/catalog.json",
    "_graph/index.md",
];

/// The ingest codes the check reports itself, at the place in the record where the problem is
/// written (ingest names the missing page or the graph file without a line).
const RELOCATED: [Code; 3] = [Code::MissingPage, Code::DanglingRelation, Code::OrphanGraph];

/// What `kbtools check` found.
#[derive(Debug, Clone)]
pub struct Report {
    pub kind: BundleKind,
    /// Files read (served by kbtools).
    pub files: usize,
    /// Source pages.
    pub pages: usize,
    /// In path, line, column and code order; codes allowed by the caller left out.
    pub findings: Vec<Diagnostic>,
    /// Findings left out because their code was allowed.
    pub allowed: usize,
}

impl Report {
    /// Findings of each severity: (errors, warnings, notes).
    pub fn counts(&self) -> (usize, usize, usize) {
        let of = |s: Severity| self.findings.iter().filter(|d| d.severity() == s).count();
        (
            of(Severity::Error),
            of(Severity::Warning),
            of(Severity::Note),
        )
    }

    /// Whether a finding at or above `threshold` is there (the check then fails).
    pub fn fails(&self, threshold: Severity) -> bool {
        self.findings.iter().any(|d| d.severity() >= threshold)
    }
}

/// Checks the bundle or plain folder at `root`, leaving out findings whose code is in `allow`.
/// An error is returned only when the check cannot run (no such directory).
pub fn check(root: &Path, allow: &[Code]) -> Result<Report, IndexError> {
    if !root.is_dir() {
        return Err(IndexError::Bundle(format!(
            "{}: not a directory (expected a bundle folder or a folder of Markdown files)",
            root.display()
        )));
    }
    let kind = bundle::detect_kind(root);
    let mut findings = Vec::new();
    let (files, pages) = match bundle::ingest(root) {
        Ok(ingested) => {
            findings.extend(
                ingested
                    .diagnostics
                    .iter()
                    .filter(|d| kind == BundleKind::PlainFolder || !RELOCATED.contains(&d.code))
                    .cloned(),
            );
            if kind == BundleKind::Focowiki {
                findings.extend(check_bundle(root, &ingested));
            } else {
                // A plain folder's relation diagnostics name pages by their logical path
                // (`pages/…`); the user's file is the one on disk.
                let disk: HashMap<&str, &str> = ingested
                    .read
                    .iter()
                    .map(|r| (r.path.as_str(), r.disk.as_str()))
                    .collect();
                for d in &mut findings {
                    if let Some(on_disk) = disk.get(d.path.as_str()) {
                        d.path = on_disk.to_string();
                    }
                }
            }
            findings.extend(duplicate_titles(&ingested));
            (ingested.read.len(), ingested.source_page_count())
        }
        // Ingest refuses a bundle of another formatVersion as a whole; so does the check.
        Err(IndexError::Bundle(message)) if kind == BundleKind::Focowiki => {
            findings.push(Diagnostic::new(
                Code::FormatVersion,
                "_index/catalog.json".into(),
                None,
                message,
            ));
            (0, 0)
        }
        Err(e) => return Err(e),
    };
    let before = findings.len();
    findings.retain(|d| !allow.contains(&d.code));
    let allowed = before - findings.len();
    findings.sort_by(|a, b| {
        (&a.path, a.line, a.column, a.code, &a.message)
            .cmp(&(&b.path, b.line, b.column, b.code, &b.message))
    });
    findings.dedup();
    Ok(Report {
        kind,
        files,
        pages,
        findings,
        allowed,
    })
}

/// The checks of a Focowiki bundle beyond ingest's.
fn check_bundle(root: &Path, ingested: &bundle::Ingested) -> Vec<Diagnostic> {
    let read = &ingested.read;
    let by_path: HashMap<&str, usize> = read
        .iter()
        .enumerate()
        .map(|(i, r)| (r.path.as_str(), i))
        .collect();
    // A file the walk left out is no file of the bundle: what names it is not reported as
    // naming a missing file (DECISIONS 26).
    let excluded = |path: &str| {
        ingested
            .exclusions
            .as_ref()
            .is_some_and(|rules| rules.excludes(path))
    };
    let is_page = |path: &str| {
        by_path
            .get(path)
            .is_some_and(|&i| ingested.assembly.source_backed[i])
            || excluded(path)
    };
    let mut out: Vec<Diagnostic> = REQUIRED
        .iter()
        .filter(|path| !by_path.contains_key(*path))
        .map(|path| {
            Diagnostic::new(
                Code::MissingNavigation,
                path.to_string(),
                None,
                "missing: every exported bundle has it".into(),
            )
        })
        .collect();

    // A link that names a file in other case still resolves (the generator's link
    // validation compares lowercased paths).
    let folded: HashMap<String, &str> = read
        .iter()
        .map(|r| (r.path.to_lowercase(), r.path.as_str()))
        .collect();
    let existing = |path: &str| -> Option<String> {
        if by_path.contains_key(path) || excluded(path) {
            Some(path.to_string())
        } else {
            folded.get(&path.to_lowercase()).map(|p| p.to_string())
        }
    };

    // Every JSON file, every Markdown file: read again (the check keeps no page text from
    // ingest), in parallel.
    let per_file: Vec<Checked> = read
        .par_iter()
        .map(|r| {
            if r.path.ends_with(".json") {
                Checked {
                    found: check_json(root, r, &by_path, read, &is_page),
                    ..Checked::default()
                }
            } else if r.path.to_ascii_lowercase().ends_with(".md") {
                check_markdown(root, r, &existing)
            } else {
                Checked::default()
            }
        })
        .collect();
    // A missing required file is reported once (KB001), not again at every navigation page
    // that links to it (each names `_graph/index.md` and `_index/index.md` in its header).
    let missing: HashSet<String> = out.iter().map(|d| d.path.clone()).collect();
    // Navigation links, for reachability: from file i to the files it links to.
    let mut links: Vec<Vec<String>> = Vec::with_capacity(read.len());
    for checked in per_file {
        out.extend(checked.found);
        out.extend(
            checked
                .broken
                .into_iter()
                .filter(|(_, target)| !target.as_ref().is_some_and(|t| missing.contains(t)))
                .map(|(d, _)| d),
        );
        links.push(checked.links);
    }
    out.extend(unreachable(ingested, &by_path, &links));
    out
}

/// Reads up to [`bundle::MAX_PARSE_BYTES`] of a file of the bundle as text.
fn read_text(root: &Path, r: &ReadFile) -> Option<String> {
    let file = bundle::beneath::open_under(root, &r.disk).ok()?;
    let mut bytes = Vec::new();
    file.take(bundle::MAX_PARSE_BYTES)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The 1-based lines and columns (in characters) of byte offsets of one text, counted forward:
/// offsets asked for in increasing order (records and links come in text order) cost one pass
/// over the text in all, not one pass each (a one-line packet of 20,000 records took 5.2 s).
struct Places<'a> {
    text: &'a str,
    offset: usize,
    line: usize,
    column: usize,
}

impl<'a> Places<'a> {
    fn new(text: &'a str) -> Self {
        Places {
            text,
            offset: 0,
            line: 1,
            column: 1,
        }
    }

    /// The line and column of byte `offset` (a smaller offset than the last starts over).
    fn at(&mut self, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        if offset < self.offset {
            *self = Places::new(self.text);
        }
        for c in self.text[self.offset..offset].chars() {
            if c == '\n' {
                self.line += 1;
                self.column = 1;
            } else {
                self.column += 1;
            }
        }
        self.offset = offset;
        (self.line, self.column)
    }

    /// Where `key` with the string value `value` is written next in the JSON text, searched
    /// from `from`, which moves past it: its line and column.
    fn locate(&mut self, from: &mut usize, key: &str, value: &str) -> Option<(usize, usize)> {
        let value = serde_json::to_string(value).ok()?;
        let needle = format!("\"{key}\":{value}");
        let at = *from + self.text.get(*from..)?.find(&needle)?;
        *from = at + needle.len();
        Some(self.at(at))
    }
}

/// One `documents[]` record, as far as the check compares it with its page.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PageRecord {
    path: String,
    #[serde(default)]
    checksum_sha256: Option<String>,
    #[serde(default)]
    byte_count: Option<u64>,
    #[serde(default)]
    graph_path: Option<String>,
}

/// One relationship of a per-file graph, as far as the check follows its endpoint.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Endpoint {
    target_path: String,
}

/// A JSON file's `formatVersion`, and for a document packet or a per-file graph, what its
/// records say of pages.
fn check_json(
    root: &Path,
    r: &ReadFile,
    by_path: &HashMap<&str, usize>,
    read: &[ReadFile],
    is_page: &dyn Fn(&str) -> bool,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let Some(text) = read_text(root, r) else {
        return out;
    };
    // A file that does not parse is reported by ingest (KB003).
    let Ok(value) = records::parse_json(&text) else {
        return out;
    };
    let at = |code: Code, place: Option<(usize, usize)>, message: String| {
        Diagnostic::new(code, r.disk.clone(), place.map(|p| p.0), message).at(place.map(|p| p.1))
    };
    let mut places = Places::new(&text);
    match value.get("formatVersion") {
        Some(Value::Number(n)) if n.as_u64() == Some(2) => {}
        Some(other) => out.push(at(
            Code::FormatVersion,
            Some((1, 1)),
            format!("formatVersion is {other}; kbtools reads 2"),
        )),
        None => out.push(at(
            Code::RecordShape,
            Some((1, 1)),
            "`formatVersion` is missing".into(),
        )),
    }
    match r.class {
        PathClass::DocumentPacket => {
            let (records, _) = records::typed_items::<PageRecord>(&value, "documents");
            let mut from = 0;
            for record in records {
                let place = places.locate(&mut from, "path", &record.path);
                let Some(&page) = by_path.get(record.path.as_str()) else {
                    if is_page(&record.path) {
                        // Left out by the walk: not missing.
                        continue;
                    }
                    out.push(at(
                        Code::MissingPage,
                        place,
                        format!("record of {}, which is missing from pages/", record.path),
                    ));
                    continue;
                };
                let page = &read[page];
                if let Some(sum) = &record.checksum_sha256 {
                    if page.size <= bundle::MAX_PARSE_BYTES
                        && !sum.eq_ignore_ascii_case(&page.sha256)
                    {
                        out.push(at(
                            Code::ChecksumMismatch,
                            place,
                            format!(
                                "{}: checksumSha256 {sum} in the record, {} on disk",
                                record.path, page.sha256
                            ),
                        ));
                    }
                }
                if let Some(count) = record.byte_count {
                    if count != page.size {
                        out.push(at(
                            Code::ByteCountMismatch,
                            place,
                            format!(
                                "{}: byteCount {count} in the record, {} bytes on disk",
                                record.path, page.size
                            ),
                        ));
                    }
                }
                if let Some(graph) = &record.graph_path {
                    if !by_path.contains_key(graph.as_str()) && !is_page(graph) {
                        out.push(at(
                            Code::MissingGraph,
                            places
                                .locate(&mut from.clone(), "graphPath", graph)
                                .or(place),
                            format!("{}: graphPath {graph} does not exist", record.path),
                        ));
                    }
                }
            }
        }
        PathClass::PerFileGraph => {
            if let Some(page) = value.get("path").and_then(Value::as_str) {
                if !is_page(page) {
                    out.push(at(
                        Code::OrphanGraph,
                        places.locate(&mut 0, "path", page),
                        format!("relationships of {page}, which is not a page of the bundle"),
                    ));
                }
            }
            let (endpoints, _) = records::typed_items::<Endpoint>(&value, "relationships");
            let mut from = 0;
            for endpoint in endpoints {
                let place = places.locate(&mut from, "targetPath", &endpoint.target_path);
                if !is_page(&endpoint.target_path) {
                    out.push(at(
                        Code::DanglingRelation,
                        place,
                        format!(
                            "relationship to {}, which is not a page of the bundle",
                            endpoint.target_path
                        ),
                    ));
                }
            }
        }
        _ => {}
    }
    out
}

/// Whether `destination` names a file the bundle would hold (a relative path to a Markdown or
/// JSON file), not a site, an anchor or an asset outside the bundle.
fn bundle_target(destination: &str) -> Option<String> {
    let destination = destination.trim();
    let scheme = destination
        .split_once(':')
        .is_some_and(|(s, _)| !s.is_empty() && !s.contains('/') && !s.contains('#'));
    if destination.is_empty() || destination.starts_with('#') || scheme {
        return None;
    }
    let path = destination.split(['#', '?']).next().unwrap_or_default();
    let path = crate::text::percent_decode_once(path).unwrap_or_else(|| path.to_string());
    let lower = path.to_ascii_lowercase();
    (lower.ends_with(".md") || lower.ends_with(".json")).then_some(path)
}

/// `target` relative to the file at `from` as a bundle path (in NFC); `None` when it leaves the
/// bundle.
fn resolve(from: &str, target: &str) -> Option<String> {
    paths::resolve_link(from, target).map(|path| crate::text::nfc(&path))
}

/// What the check of one file found.
#[derive(Default)]
struct Checked {
    found: Vec<Diagnostic>,
    /// Links to missing files, with the bundle path each names (`None`: outside the bundle).
    broken: Vec<(Diagnostic, Option<String>)>,
    /// The bundle files its navigation links name (for reachability).
    links: Vec<String>,
}

/// The links of a Markdown file that name a missing file of the bundle, and the bundle files
/// its navigation links name.
fn check_markdown(
    root: &Path,
    r: &ReadFile,
    existing: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Checked {
    let mut out = Checked::default();
    let Some(text) = read_text(root, r) else {
        return out;
    };
    let body_start = bundle::frontmatter::locate(&text).map_or(0, |f| f.body_start);
    let mut places = Places::new(&text);
    let code = if r.class == PathClass::Page {
        Code::BrokenLink
    } else {
        Code::BrokenNavigationLink
    };
    for (destination, offset) in crate::ingest::markdown::link_destinations(&text[body_start..]) {
        let Some(target) = bundle_target(&destination) else {
            continue;
        };
        let resolved = resolve(&r.path, &target);
        match resolved.as_deref().and_then(existing) {
            // Reachability follows the generated navigation: not page bodies, not the log (a
            // window of recent events).
            Some(path) if r.class != PathClass::Page && r.path != "log.md" => out.links.push(path),
            Some(_) => {}
            None => {
                let (line, column) = places.at(body_start + offset);
                let message = match &resolved {
                    Some(path) => format!("link to {destination}: {path} does not exist"),
                    None => format!("link to {destination} leaves the bundle"),
                };
                let d = Diagnostic::new(code, r.disk.clone(), Some(line), message).at(Some(column));
                out.broken.push((d, resolved));
            }
        }
    }
    out
}

/// The pages `index.md` does not reach through the generated navigation (which links every
/// page from its directory's leaves; the log and the pages' own links are not followed).
fn unreachable(
    ingested: &bundle::Ingested,
    by_path: &HashMap<&str, usize>,
    links: &[Vec<String>],
) -> Vec<Diagnostic> {
    let Some(&start) = by_path.get("index.md") else {
        // KB001 says so already.
        return Vec::new();
    };
    let mut seen = vec![false; ingested.read.len()];
    seen[start] = true;
    let mut queue = vec![start];
    while let Some(i) = queue.pop() {
        for target in &links[i] {
            if let Some(&j) = by_path.get(target.as_str()) {
                if !seen[j] {
                    seen[j] = true;
                    queue.push(j);
                }
            }
        }
    }
    ingested
        .read
        .iter()
        .enumerate()
        .filter(|&(i, r)| ingested.assembly.source_backed[i] && r.class == PathClass::Page && !seen[i])
        .map(|(_, r)| {
            Diagnostic::new(
                Code::Unreachable,
                r.disk.clone(),
                None,
                "no navigation page links to it (from index.md through pages/**/index.md and its leaves)"
                    .into(),
            )
        })
        .collect()
}

/// Source pages whose titles are the same (translations of each other aside): each reported
/// after the first of its title.
fn duplicate_titles(ingested: &bundle::Ingested) -> Vec<Diagnostic> {
    let mut by_title: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, title) in ingested.assembly.titles.iter().enumerate() {
        if ingested.assembly.source_backed[i] {
            by_title.entry(title.trim()).or_default().push(i);
        }
    }
    let mut out = Vec::new();
    for (title, pages) in by_title {
        if pages.len() < 2 || title.is_empty() {
            continue;
        }
        let path = |i: usize| ingested.read[i].path.as_str();
        for (k, &page) in pages.iter().enumerate().skip(1) {
            let translations: HashSet<String> =
                paths::translation_paths(path(page)).into_iter().collect();
            let Some(&first) = pages[..k]
                .iter()
                .find(|&&other| !translations.contains(path(other)))
            else {
                continue;
            };
            out.push(Diagnostic::new(
                Code::DuplicateTitle,
                ingested.read[page].disk.clone(),
                None,
                format!("title {title:?} is also the title of {}", path(first)),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_resolve_relative_to_their_file() {
        assert_eq!(
            resolve("pages/a/b.md", "../c.md").as_deref(),
            Some("pages/c.md")
        );
        assert_eq!(
            resolve("pages/a/b.md", "./d/e.md").as_deref(),
            Some("pages/a/d/e.md")
        );
        assert_eq!(
            resolve("index.md", "pages/index.md").as_deref(),
            Some("pages/index.md")
        );
        assert_eq!(resolve("index.md", "../x.md"), None, "leaves the bundle");
    }

    #[test]
    fn only_links_to_bundle_files_are_followed() {
        assert_eq!(bundle_target("a%20b.md#x").as_deref(), Some("a b.md"));
        assert_eq!(
            bundle_target("../_graph/catalog.json").as_deref(),
            Some("../_graph/catalog.json")
        );
        assert_eq!(bundle_target("https://example.com/a.md"), None);
        assert_eq!(bundle_target("mailto:a@b.md"), None);
        assert_eq!(bundle_target("#heading"), None);
        assert_eq!(bundle_target("image.png"), None);
        assert_eq!(bundle_target(""), None);
    }

    #[test]
    fn places_are_lines_and_character_columns() {
        let text = "ab\n中文x\n";
        let mut places = Places::new(text);
        assert_eq!(places.at(0), (1, 1));
        assert_eq!(places.at(3), (2, 1));
        assert_eq!(places.at(9), (2, 3), "columns count characters, not bytes");
        assert_eq!(places.at(1), (1, 2), "an earlier offset starts over");
        let json = r#"{"documents":[{"path":"pages/a.md"},{"path":"pages/b.md"}]}"#;
        let mut places = Places::new(json);
        let mut from = 0;
        assert_eq!(
            places.locate(&mut from, "path", "pages/a.md"),
            Some((1, 16))
        );
        assert!(
            places.locate(&mut from, "path", "pages/a.md").is_none(),
            "searched after"
        );
    }
}
