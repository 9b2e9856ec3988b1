//! Ingest: from a bundle directory (or a plain Markdown folder) to the list of files kbtools
//! serves, with their titles, frontmatter, index text and relations, plus a diagnostic for every
//! file it could not use as is. One bad file never stops the rest.

pub mod frontmatter;
pub mod paths;
pub mod plain;
pub mod records;
pub mod walk;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Read;
use std::path::Path;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::error::IndexError;
use crate::markdown;
use paths::PathClass;
use records::{DocumentRecord, LocalRelationship};
use walk::{hex, WalkedFile};

/// Files larger than this are listed and hashed but not parsed or indexed.
pub const MAX_PARSE_BYTES: u64 = 16 * 1024 * 1024;
/// Plain text indexed per page at most (bytes); the rest of a huge page is not searchable.
pub const MAX_INDEXED_TEXT: usize = 4 * 1024 * 1024;

/// A problem found while reading a bundle: which file, where, and what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub line: Option<usize>,
    pub message: String,
}

impl Diagnostic {
    pub fn new(path: String, line: Option<usize>, message: String) -> Self {
        Diagnostic {
            path,
            line,
            message,
        }
    }
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.path, line, self.message),
            None => write!(f, "{}: {}", self.path, self.message),
        }
    }
}

/// A Focowiki bundle or a plain Markdown folder (DECISIONS 20).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BundleKind {
    Focowiki,
    PlainFolder,
}

/// The text of a source page that feeds the full-text index.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PageText {
    /// Description, tags, subjects, keywords and the frontmatter as text.
    pub metadata: String,
    pub body: String,
}

/// One file kbtools serves.
#[derive(Debug, Clone, PartialEq)]
pub struct IngestedFile {
    /// Bundle-logical path.
    pub path: String,
    /// Path relative to the root on disk; `None` for a virtual file.
    pub disk: Option<String>,
    pub class: PathClass,
    pub source_backed: bool,
    pub size: u64,
    pub sha256: String,
    pub title: Option<String>,
    pub frontmatter: Map<String, Value>,
    /// Content of a virtual file (relation records kbtools renders).
    pub virtual_content: Option<String>,
    /// False for virtual relation files of pages without relations: readable, not listed.
    pub listed: bool,
    pub text: Option<PageText>,
}

/// A relation of a source page to another, from that page's point of view.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Relation {
    pub from: String,
    pub to: String,
    pub relation_type: String,
    pub direction: String,
    pub reason: Option<String>,
}

/// Everything ingest found.
#[derive(Debug)]
pub struct Ingested {
    pub kind: BundleKind,
    pub name: String,
    pub files: Vec<IngestedFile>,
    pub relations: Vec<Relation>,
    pub diagnostics: Vec<Diagnostic>,
    pub stat_fingerprint: String,
    pub content_fingerprint: String,
}

/// What one file read gave before the bundle-wide steps.
struct ReadFile {
    path: String,
    disk: String,
    class: PathClass,
    size: u64,
    sha256: String,
    frontmatter: Map<String, Value>,
    raw_frontmatter: Option<String>,
    summary: Option<markdown::MarkdownSummary>,
    json: Option<Value>,
    json_title: Option<String>,
    diagnostics: Vec<Diagnostic>,
}

/// Detects the kind of the directory at `root`.
pub fn detect_kind(root: &Path) -> BundleKind {
    if root.join("_index").is_dir() || root.join("_graph").is_dir() {
        BundleKind::Focowiki
    } else {
        BundleKind::PlainFolder
    }
}

/// Reads the bundle at `root`.
pub fn ingest(root: &Path) -> Result<Ingested, IndexError> {
    if !root.is_dir() {
        return Err(IndexError::Bundle(format!(
            "{}: not a directory (expected a bundle folder or a folder of Markdown files)",
            root.display()
        )));
    }
    let kind = detect_kind(root);
    if kind == BundleKind::Focowiki {
        check_format_version(root)?;
    }
    let walked = walk::walk(root);
    let stat_fingerprint = walk::stat_fingerprint(&walked);
    let mut diagnostics = walked.diagnostics;

    // Logical paths: as they are in a bundle, under `pages/` for a plain folder. A name that is
    // not canonical (NFD, controls, …) is normalized to NFC when that makes it canonical.
    let mut seen = HashMap::new();
    let mut jobs = Vec::new();
    for file in walked.files {
        let Some((logical, class)) = logical_path(kind, &file, &mut diagnostics) else {
            continue;
        };
        if let Some(first) = seen.insert(logical.clone(), file.relative.clone()) {
            diagnostics.push(Diagnostic::new(
                file.relative.clone(),
                None,
                format!("same logical path {logical} as {first} (Unicode twins); skipped"),
            ));
            seen.insert(logical, first);
            continue;
        }
        jobs.push((file, logical, class));
    }

    let mut read: Vec<ReadFile> = jobs
        .into_par_iter()
        .map(|(file, logical, class)| read_one(&file, logical, class))
        .collect();
    read.sort_by(|a, b| a.path.cmp(&b.path));
    for r in &mut read {
        diagnostics.append(&mut r.diagnostics);
    }

    let mut content_hasher = Sha256::new();
    content_hasher.update(format!("{kind:?}").as_bytes());
    for r in &read {
        content_hasher.update(r.path.as_bytes());
        content_hasher.update([0]);
        content_hasher.update(r.sha256.as_bytes());
    }
    let content_fingerprint = hex(&content_hasher.finalize());

    let name = knowledge_base_name(root, &read);
    let (files, relations) = match kind {
        BundleKind::Focowiki => assemble_bundle(read, &mut diagnostics),
        BundleKind::PlainFolder => assemble_plain(read, &mut diagnostics),
    };
    Ok(Ingested {
        kind,
        name,
        files,
        relations,
        diagnostics,
        stat_fingerprint,
        content_fingerprint,
    })
}

/// A `formatVersion: 1` bundle (or any other unknown version) is refused with a clear error.
fn check_format_version(root: &Path) -> Result<(), IndexError> {
    let catalog = root.join("_index").join("catalog.json");
    let Ok(text) = std::fs::read_to_string(&catalog) else {
        return Ok(());
    };
    let Ok(value) = records::parse_json(&text) else {
        return Ok(());
    };
    match records::format_version(&value) {
        Some(2) | None => Ok(()),
        Some(1) => Err(IndexError::Bundle(format!(
            "{}: formatVersion 1 is the legacy Focowiki bundle layout (before 2026-08-18); kbtools reads formatVersion 2. Export the knowledge base again.",
            catalog.display()
        ))),
        Some(other) => Err(IndexError::Bundle(format!(
            "{}: unknown bundle formatVersion {other}; kbtools reads formatVersion 2",
            catalog.display()
        ))),
    }
}

fn ends_with_md(name: &str) -> bool {
    // Bytes, not `str` slicing: a file name may end inside a multi-byte character (`x😀`).
    name.len() > 3 && name.as_bytes()[name.len() - 3..].eq_ignore_ascii_case(b".md")
}

fn logical_path(
    kind: BundleKind,
    file: &WalkedFile,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<(String, PathClass)> {
    let candidate = match kind {
        BundleKind::Focowiki => file.relative.clone(),
        BundleKind::PlainFolder => {
            if !ends_with_md(&file.relative) {
                return None;
            }
            format!("pages/{}", file.relative)
        }
    };
    let candidate = if crate::text::is_nfc(&candidate) {
        candidate
    } else {
        crate::text::nfc(&candidate)
    };
    if let Err(problem) = paths::check_canonical(&candidate) {
        diagnostics.push(Diagnostic::new(
            file.relative.clone(),
            None,
            format!("{problem}; skipped"),
        ));
        return None;
    }
    let class = match kind {
        BundleKind::PlainFolder => PathClass::Page,
        BundleKind::Focowiki => match paths::classify(&candidate) {
            Some(class) => class,
            None => {
                diagnostics.push(Diagnostic::new(
                    file.relative.clone(),
                    None,
                    "not a path a Focowiki bundle holds; ignored".into(),
                ));
                return None;
            }
        },
    };
    Some((candidate, class))
}

fn read_bytes(file: &WalkedFile) -> std::io::Result<(Vec<u8>, String)> {
    let mut handle = std::fs::File::open(&file.disk_path)?;
    let mut hasher = Sha256::new();
    if file.size > MAX_PARSE_BYTES {
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = handle.read(&mut buf)?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
        }
        return Ok((Vec::new(), hex(&hasher.finalize())));
    }
    let mut bytes = Vec::with_capacity(file.size as usize);
    handle.read_to_end(&mut bytes)?;
    hasher.update(&bytes);
    Ok((bytes, hex(&hasher.finalize())))
}

fn read_one(file: &WalkedFile, path: String, class: PathClass) -> ReadFile {
    let mut out = ReadFile {
        path,
        disk: file.relative.clone(),
        class,
        size: file.size,
        sha256: String::new(),
        frontmatter: Map::new(),
        raw_frontmatter: None,
        summary: None,
        json: None,
        json_title: None,
        diagnostics: Vec::new(),
    };
    let (bytes, sha) = match read_bytes(file) {
        Ok(x) => x,
        Err(e) => {
            out.diagnostics.push(Diagnostic::new(
                file.relative.clone(),
                None,
                format!("cannot read: {e}; skipped"),
            ));
            out.sha256 = "unreadable".into();
            return out;
        }
    };
    out.sha256 = sha;
    out.size = if file.size > MAX_PARSE_BYTES {
        file.size
    } else {
        bytes.len() as u64
    };
    if file.size > MAX_PARSE_BYTES {
        out.diagnostics.push(Diagnostic::new(
            file.relative.clone(),
            None,
            format!(
                "{} bytes, more than the {} bytes kbtools parses; listed but not indexed",
                file.size, MAX_PARSE_BYTES
            ),
        ));
        return out;
    }
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            out.diagnostics.push(Diagnostic::new(
                file.relative.clone(),
                None,
                format!("invalid UTF-8 at byte {valid}; read as text with U+FFFD replacements"),
            ));
            String::from_utf8_lossy(e.as_bytes()).into_owned()
        }
    };
    if out.path.ends_with(".json") {
        // Only the records ingest reads are kept as JSON trees; of the others (term postings
        // can be megabytes) only the syntax is checked and the title taken.
        let keep = matches!(
            class,
            PathClass::DocumentPacket | PathClass::PageDirectoryRouter | PathClass::PerFileGraph
        );
        let parsed = if keep {
            records::parse_json(&text).map(Some)
        } else {
            records::parse_title(&text).map(|title| {
                out.json_title = title;
                None
            })
        };
        match parsed {
            Ok(value) => out.json = value,
            Err(e) => out.diagnostics.push(Diagnostic::new(
                file.relative.clone(),
                None,
                format!("invalid JSON: {e}"),
            )),
        }
        return out;
    }
    let mut body = text.as_str();
    if let Some(block) = frontmatter::locate(&text) {
        match frontmatter::parse(&block) {
            Ok(map) => out.frontmatter = map,
            Err(e) => {
                out.diagnostics.push(Diagnostic::new(
                    file.relative.clone(),
                    e.line,
                    format!("invalid frontmatter, kept as raw text: {}", e.message),
                ));
                out.raw_frontmatter = Some(block.yaml.to_string());
            }
        }
        body = &text[block.body_start..];
    }
    out.summary = Some(markdown::summarize(body));
    out
}

/// The knowledge-base name: the root `index.md` title, else the folder name (DECISIONS 4).
fn knowledge_base_name(root: &Path, read: &[ReadFile]) -> String {
    let from_index = read
        .iter()
        .find(|r| r.path == "index.md" && r.class == PathClass::RootIndex)
        .and_then(|r| {
            string_field(&r.frontmatter, "title")
                .or_else(|| r.summary.as_ref().and_then(|s| s.first_h1.clone()))
        });
    from_index
        .or_else(|| {
            root.canonicalize()
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        })
        .unwrap_or_else(|| "Untitled".to_string())
}

pub(crate) fn string_field(map: &Map<String, Value>, key: &str) -> Option<String> {
    map.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn file_stem(path: &str) -> Option<String> {
    let name = paths::name_of(path);
    let stem = name.rfind('.').map_or(name, |i| &name[..i]);
    (!stem.is_empty()).then(|| stem.to_string())
}

/// Title of a file (DECISIONS 22): record title, frontmatter `title`, first H1, JSON `title`,
/// file stem, "Untitled".
fn resolve_title(record_title: Option<&str>, r: &ReadFile) -> String {
    record_title
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .or_else(|| string_field(&r.frontmatter, "title"))
        .or_else(|| r.summary.as_ref().and_then(|s| s.first_h1.clone()))
        .or_else(|| r.json_title.clone())
        .or_else(|| {
            r.json
                .as_ref()
                .and_then(|j| j.get("title"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .or_else(|| file_stem(&r.path))
        .unwrap_or_else(|| "Untitled".to_string())
}

fn page_text(r: &ReadFile) -> PageText {
    let summary = r.summary.clone().unwrap_or_default();
    // Every frontmatter value but the title (which the title field and the H1 already hold).
    let mut frontmatter = r.frontmatter.clone();
    frontmatter.remove("title");
    let mut metadata = metadata_values_text(&Value::Object(frontmatter));
    if let Some(raw) = &r.raw_frontmatter {
        metadata.push_str(raw);
    }
    let body = cap_indexed_text(summary.plain_text);
    PageText { metadata, body }
}

/// `text` cut to [`MAX_INDEXED_TEXT`] bytes at a character boundary.
fn cap_indexed_text(mut text: String) -> String {
    if text.len() > MAX_INDEXED_TEXT {
        let mut end = MAX_INDEXED_TEXT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

/// The plain body text the index holds for a page whose file content is `text`: frontmatter
/// cut, Markdown rendered to text, capped — exactly what ingest indexes, so excerpts can be made
/// from the file instead of a stored copy.
pub fn indexed_body_text(text: &str) -> String {
    let body = match frontmatter::locate(text) {
        Some(block) => &text[block.body_start..],
        None => text,
    };
    cap_indexed_text(markdown::summarize(body).plain_text)
}

/// Every string and number value of a JSON tree, one per line (keys left out).
fn metadata_values_text(value: &Value) -> String {
    let mut out = String::new();
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => {
                out.push_str(s);
                out.push('\n');
            }
            Value::Number(n) => {
                out.push_str(&n.to_string());
                out.push('\n');
            }
            Value::Array(items) => stack.extend(items.iter().rev()),
            Value::Object(map) => stack.extend(map.values().rev()),
            _ => {}
        }
    }
    out
}

fn to_file(r: ReadFile, source_backed: bool, title: String) -> IngestedFile {
    let text = (source_backed && r.summary.is_some()).then(|| page_text(&r));
    let frontmatter = if source_backed {
        r.frontmatter
    } else {
        Map::new()
    };
    IngestedFile {
        path: r.path,
        disk: Some(r.disk),
        class: r.class,
        source_backed,
        size: r.size,
        sha256: r.sha256,
        title: Some(title),
        frontmatter,
        virtual_content: None,
        listed: true,
        text,
    }
}

/// Walks the `_index/pages` routers from the root router, reading every packet they name.
fn routed_packets(
    by_path: &HashMap<&str, &ReadFile>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<String> {
    let mut packets = Vec::new();
    let mut seen_routers = BTreeSet::new();
    let mut queue = vec!["_index/pages/index.json".to_string()];
    while let Some(router) = queue.pop() {
        if !seen_routers.insert(router.clone()) || seen_routers.len() > 1_000_000 {
            continue;
        }
        let Some(file) = by_path.get(router.as_str()) else {
            diagnostics.push(Diagnostic::new(router, None, "router is missing".into()));
            continue;
        };
        let Some(json) = &file.json else { continue };
        for child in records::listed_paths(json, "childDirectories") {
            queue.push(child);
        }
        for resource in records::listed_paths(json, "resources") {
            if by_path.contains_key(resource.as_str()) {
                packets.push(resource);
            } else {
                diagnostics.push(Diagnostic::new(
                    router.clone(),
                    None,
                    format!("routes to {resource}, which is missing"),
                ));
            }
        }
    }
    packets
}

fn assemble_bundle(
    read: Vec<ReadFile>,
    diagnostics: &mut Vec<Diagnostic>,
) -> (Vec<IngestedFile>, Vec<Relation>) {
    let by_path: HashMap<&str, &ReadFile> = read.iter().map(|r| (r.path.as_str(), r)).collect();

    // Document records: through the routers first, then any packet the routers missed.
    let mut packet_paths = routed_packets(&by_path, diagnostics);
    let routed: BTreeSet<String> = packet_paths.iter().cloned().collect();
    for r in &read {
        if r.class == PathClass::DocumentPacket && !routed.contains(&r.path) {
            diagnostics.push(Diagnostic::new(
                r.path.clone(),
                None,
                "document packet is not reached from _index/pages/index.json; read anyway".into(),
            ));
            packet_paths.push(r.path.clone());
        }
    }
    packet_paths.sort();
    packet_paths.dedup();
    let mut records: BTreeMap<String, DocumentRecord> = BTreeMap::new();
    for packet in &packet_paths {
        let Some(json) = by_path.get(packet.as_str()).and_then(|r| r.json.as_ref()) else {
            continue;
        };
        let (good, bad) = records::typed_items::<DocumentRecord>(json, "documents");
        for message in bad {
            diagnostics.push(Diagnostic::new(packet.clone(), None, message));
        }
        for record in good {
            records.entry(record.path.clone()).or_insert(record);
        }
    }
    for path in records.keys() {
        if !by_path.contains_key(path.as_str()) {
            diagnostics.push(Diagnostic::new(
                path.clone(),
                None,
                "listed in the _index document records but missing from pages/".into(),
            ));
        }
    }

    // Relations: each page's own per-file graph is authoritative.
    let mut own: BTreeMap<String, Vec<Relation>> = BTreeMap::new();
    let mut graph_of: HashMap<String, String> = HashMap::new();
    for r in read.iter().filter(|r| r.class == PathClass::PerFileGraph) {
        let Some(json) = &r.json else { continue };
        let Some(page) = json.get("path").and_then(Value::as_str) else {
            diagnostics.push(Diagnostic::new(
                r.path.clone(),
                None,
                "`path` is missing".into(),
            ));
            continue;
        };
        graph_of.insert(page.to_string(), r.path.clone());
        let (good, bad) = records::typed_items::<LocalRelationship>(json, "relationships");
        for message in bad {
            diagnostics.push(Diagnostic::new(r.path.clone(), None, message));
        }
        let list = own.entry(page.to_string()).or_default();
        for rel in good {
            list.push(Relation {
                from: page.to_string(),
                to: rel.target_path,
                relation_type: rel.relation_type,
                direction: rel.direction,
                reason: rel.reason,
            });
        }
    }

    let mut files = Vec::with_capacity(read.len());
    for r in read {
        let record = records.get(&r.path);
        let source_backed = match r.class {
            PathClass::Page | PathClass::PageNavigation => {
                record.is_some() || r.class == PathClass::Page
            }
            _ => false,
        };
        if source_backed && record.is_none() {
            diagnostics.push(Diagnostic::new(
                r.path.clone(),
                None,
                "page is not in the _index document records; served as a source page".into(),
            ));
        }
        let title = resolve_title(record.and_then(|d| d.title.as_deref()), &r);
        files.push(to_file(r, source_backed, title));
    }

    let source_pages: BTreeSet<String> = files
        .iter()
        .filter(|f| f.source_backed)
        .map(|f| f.path.clone())
        .collect();
    let mut relations = Vec::new();
    for (page, list) in &own {
        if !source_pages.contains(page) {
            diagnostics.push(Diagnostic::new(
                graph_of.get(page).cloned().unwrap_or_else(|| page.clone()),
                None,
                format!("relation records for {page}, which is not a readable page; skipped"),
            ));
            continue;
        }
        for rel in list {
            if !source_pages.contains(&rel.to) {
                diagnostics.push(Diagnostic::new(
                    graph_of.get(page).cloned().unwrap_or_default(),
                    None,
                    format!(
                        "relation to {}, which is not a readable page; skipped",
                        rel.to
                    ),
                ));
                continue;
            }
            relations.push(rel.clone());
        }
    }
    // A page without its own per-file graph still gets the relations others record with it.
    let mut mirrored = Vec::new();
    for rel in &relations {
        if !own.contains_key(&rel.to) {
            mirrored.push(Relation {
                from: rel.to.clone(),
                to: rel.from.clone(),
                relation_type: rel.relation_type.clone(),
                direction: flip_direction(&rel.direction).to_string(),
                reason: rel.reason.clone(),
            });
        }
    }
    relations.extend(mirrored);
    relations.sort();
    relations.dedup();
    add_virtual_graphs(&mut files, &relations);
    (files, relations)
}

pub(crate) fn flip_direction(direction: &str) -> &str {
    match direction {
        "outgoing" => "incoming",
        "incoming" => "outgoing",
        other => other,
    }
}

fn assemble_plain(
    read: Vec<ReadFile>,
    diagnostics: &mut Vec<Diagnostic>,
) -> (Vec<IngestedFile>, Vec<Relation>) {
    let mut files = Vec::with_capacity(read.len());
    let mut links = HashMap::new();
    for r in read {
        let title = resolve_title(None, &r);
        links.insert(
            r.path.clone(),
            r.summary
                .as_ref()
                .map(|s| s.links.clone())
                .unwrap_or_default(),
        );
        files.push(to_file(r, true, title));
    }
    let relations = plain::derive_relations(&files, &links, diagnostics);
    add_virtual_graphs(&mut files, &relations);
    (files, relations)
}

/// Adds a `_graph/by-file/**.json` record for every source page that has none on disk: listed
/// when the page has relations, readable but unlisted when it has none (so every `graphRef`
/// opens, DECISIONS 20–21).
fn add_virtual_graphs(files: &mut Vec<IngestedFile>, relations: &[Relation]) {
    let mut existing: BTreeSet<String> = files.iter().map(|f| f.path.clone()).collect();
    let titles: HashMap<String, String> = files
        .iter()
        .filter(|f| f.source_backed)
        .map(|f| (f.path.clone(), f.title.clone().unwrap_or_default()))
        .collect();
    let mut by_page: BTreeMap<&str, Vec<&Relation>> = BTreeMap::new();
    for rel in relations {
        by_page.entry(rel.from.as_str()).or_default().push(rel);
    }
    let mut added = Vec::new();
    for file in files.iter().filter(|f| f.source_backed) {
        let graph_path = paths::per_file_graph_path(&file.path);
        // `insert` is false for a record on disk or one already rendered for a page whose path
        // differs only in the case of `.md` (both map to one record path).
        if paths::check_canonical(&graph_path).is_err() || !existing.insert(graph_path.clone()) {
            continue;
        }
        let rels = by_page.get(file.path.as_str()).cloned().unwrap_or_default();
        let content = render_per_file_graph(&file.path, &titles, &rels);
        let mut hasher = Sha256::new();
        hasher.update(content.as_bytes());
        added.push(IngestedFile {
            path: graph_path,
            disk: None,
            class: PathClass::PerFileGraph,
            source_backed: false,
            size: content.len() as u64,
            sha256: hex(&hasher.finalize()),
            title: Some(format!("{} relationships", titles[&file.path])),
            frontmatter: Map::new(),
            virtual_content: Some(content),
            listed: !rels.is_empty(),
            text: None,
        });
    }
    files.extend(added);
    files.sort_by(|a, b| a.path.cmp(&b.path));
}

/// A per-file graph record in the bundle format (bundle-format.md §1.15).
fn render_per_file_graph(
    page: &str,
    titles: &HashMap<String, String>,
    rels: &[&Relation],
) -> String {
    let dir = paths::parent_of(page);
    let scope = dir.strip_prefix("pages").unwrap_or(dir);
    let relationships: Vec<Value> = rels
        .iter()
        .map(|rel| {
            let mut item = Map::new();
            item.insert("targetPath".into(), Value::from(rel.to.clone()));
            item.insert(
                "targetTitle".into(),
                Value::from(titles.get(&rel.to).cloned().unwrap_or_default()),
            );
            item.insert("direction".into(), Value::from(rel.direction.clone()));
            item.insert(
                "relationType".into(),
                Value::from(rel.relation_type.clone()),
            );
            item.insert("weight".into(), Value::from(1));
            item.insert(
                "reason".into(),
                rel.reason.clone().map_or(Value::Null, Value::from),
            );
            let evidence_path = if rel.direction == "incoming" {
                &rel.to
            } else {
                &rel.from
            };
            item.insert(
                "evidence".into(),
                serde_json::json!([{ "path": evidence_path }]),
            );
            Value::Object(item)
        })
        .collect();
    let value = serde_json::json!({
        "formatVersion": 2,
        "title": format!("{} relationships", titles.get(page).cloned().unwrap_or_default()),
        "path": page,
        "indexPath": format!("_index/pages{scope}/index.json"),
        "directoryGraphPath": format!("_graph/by-directory{scope}/index.json"),
        "relationships": relationships,
    });
    let mut text = serde_json::to_string(&value).unwrap_or_default();
    text.push('\n');
    text
}
