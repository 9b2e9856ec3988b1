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
    /// The indexed text of a source page read in this ingest.
    pub text: Option<PageText>,
    /// A source page whose parse came from the ingest cache: its text is read again only if it
    /// has to be indexed again ([`read_page_text`]).
    pub text_cached: bool,
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
    /// Files read and parsed (the others came from the ingest cache).
    pub files_read: u64,
}

/// What one file read gave before the bundle-wide steps. The index keeps it (without the page
/// text) as the ingest cache, so that a re-index reads only files whose size or modification
/// time changed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReadFile {
    path: String,
    disk: String,
    class: PathClass,
    size: u64,
    mtime_ns: i128,
    sha256: String,
    #[serde(with = "crate::json_text")]
    frontmatter: Map<String, Value>,
    raw_frontmatter: Option<String>,
    summary: Option<markdown::MarkdownSummary>,
    record: Option<ParsedRecord>,
    json_title: Option<String>,
    /// Problems of this file: line and message.
    problems: Vec<(Option<usize>, String)>,
    #[serde(skip)]
    from_cache: bool,
}

/// The document records of a packet as (path, title), and a message per bad item.
type PacketDocuments = (Vec<(String, Option<String>)>, Vec<String>);

/// What ingest takes from a JSON record it reads (routers, document packets, per-file graphs).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct ParsedRecord {
    /// `childDirectories[].path` (routers).
    children: Vec<String>,
    /// `resources[].path` (routers).
    resources: Vec<String>,
    /// `documents[]` as (path, title), with a message per bad item; `None` when absent.
    documents: Option<PacketDocuments>,
    /// The `path` of a per-file graph.
    page: Option<String>,
    /// `relationships[]` of a per-file graph, with a message per bad item.
    relationships: Vec<LocalRelationship>,
    relationship_problems: Vec<String>,
}

impl ParsedRecord {
    fn of(json: &Value, class: PathClass) -> Self {
        let documents = json.get("documents").map(|_| {
            let (good, bad) = records::typed_items::<DocumentRecord>(json, "documents");
            (good.into_iter().map(|d| (d.path, d.title)).collect(), bad)
        });
        let mut record = ParsedRecord {
            children: records::listed_paths(json, "childDirectories"),
            resources: records::listed_paths(json, "resources"),
            documents,
            ..ParsedRecord::default()
        };
        if class == PathClass::PerFileGraph {
            record.page = json.get("path").and_then(Value::as_str).map(str::to_string);
            let (mut good, bad) = records::typed_items::<LocalRelationship>(json, "relationships");
            // Ingest does not use the target titles (the catalog has every page's title).
            for rel in &mut good {
                rel.target_title = None;
            }
            record.relationships = good;
            record.relationship_problems = bad;
        }
        record
    }
}

/// The parse of every file of the last ingest (see [`ReadFile`]).
#[derive(Debug, Default, Deserialize)]
pub struct IngestCache {
    /// When the cache was made (ns since the epoch): a file modified within the clock
    /// granularity before it may have changed again without changing its stat, so it is read
    /// again.
    made_ns: i128,
    files: Vec<ReadFile>,
}

/// The same, borrowed, to encode it.
#[derive(Serialize)]
struct IngestCacheRef<'a> {
    made_ns: i128,
    files: &'a [ReadFile],
}

/// An ingest cache in the compact encoding ([`crate::compact`]), as written to disk.
#[derive(Debug, Default)]
pub struct EncodedIngestCache(pub Vec<u8>);

/// Modification times this close before the cache was made are not trusted (ns).
const RACY_WINDOW_NS: i128 = 2_000_000_000;

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
    ingest_with_cache(root, walk::walk(root), None).map(|(ingested, _)| ingested)
}

/// Reads the bundle at `root` from its `walked` files, taking the parse of every file whose path,
/// size and modification time match an entry of `cache` from there instead of reading it.
/// Returns what it found and the cache of this ingest.
pub fn ingest_with_cache(
    root: &Path,
    walked: walk::Walk,
    cache: Option<IngestCache>,
) -> Result<(Ingested, EncodedIngestCache), IndexError> {
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
    let stat_fingerprint = walk::stat_fingerprint(&walked);
    let mut cached: HashMap<String, ReadFile> = cache
        .map(|c| {
            let made_ns = c.made_ns;
            c.files
                .into_iter()
                .filter(|r| r.mtime_ns < made_ns - RACY_WINDOW_NS)
                .map(|r| (r.disk.clone(), r))
                .collect()
        })
        .unwrap_or_default();
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

    // Files whose parse the cache holds (same path, size and modification time) are taken from
    // it; the others are read, in parallel.
    let mut read: Vec<ReadFile> = Vec::with_capacity(jobs.len());
    let mut to_read = Vec::new();
    for (file, logical, class) in jobs {
        match cached.remove(&file.relative) {
            Some(mut r)
                if r.size == file.size
                    && r.mtime_ns == file.mtime_ns
                    && r.path == logical
                    && r.class == class =>
            {
                r.from_cache = true;
                read.push(r);
            }
            _ => to_read.push((file, logical, class)),
        }
    }
    drop(cached);
    read.par_extend(
        to_read
            .into_par_iter()
            .map(|(file, logical, class)| read_one(&file, logical, class)),
    );
    read.sort_by(|a, b| a.path.cmp(&b.path));
    let files_read = read.iter().filter(|r| !r.from_cache).count() as u64;
    for r in &read {
        for (line, message) in &r.problems {
            diagnostics.push(Diagnostic::new(r.disk.clone(), *line, message.clone()));
        }
    }
    // The cache is encoded without the page texts (taken out and put back: no copy).
    let texts: Vec<String> = read
        .iter_mut()
        .map(|r| {
            r.summary
                .as_mut()
                .map(|s| std::mem::take(&mut s.plain_text))
                .unwrap_or_default()
        })
        .collect();
    let new_cache = crate::compact::encode(&IngestCacheRef {
        made_ns: walk::now_ns(),
        files: &read,
    })
    .map(EncodedIngestCache)
    .unwrap_or_default();
    for (r, text) in read.iter_mut().zip(texts) {
        if let Some(summary) = &mut r.summary {
            summary.plain_text = text;
        }
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
    let ingested = Ingested {
        kind,
        name,
        files,
        relations,
        diagnostics,
        stat_fingerprint,
        content_fingerprint,
        files_read,
    };
    Ok((ingested, new_cache))
}

/// The indexed text of the source page at `disk` (relative to `root`), read again; `None` when
/// it cannot be read or parsed.
pub fn read_page_text(root: &Path, disk: &str, path: &str) -> Option<PageText> {
    let disk_path = root.join(disk);
    let meta = std::fs::metadata(&disk_path).ok()?;
    let file = WalkedFile {
        disk_path,
        relative: disk.to_string(),
        size: meta.len(),
        mtime_ns: 0,
    };
    let mut r = read_one(&file, path.to_string(), PathClass::Page);
    r.summary.is_some().then(|| page_text(&mut r))
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
        mtime_ns: file.mtime_ns,
        sha256: String::new(),
        frontmatter: Map::new(),
        raw_frontmatter: None,
        summary: None,
        record: None,
        json_title: None,
        problems: Vec::new(),
        from_cache: false,
    };
    let (bytes, sha) = match read_bytes(file) {
        Ok(x) => x,
        Err(e) => {
            out.problems
                .push((None, format!("cannot read: {e}; skipped")));
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
        out.problems.push((
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
            out.problems.push((
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
            records::parse_json(&text).map(|json| {
                out.json_title = json
                    .get("title")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                out.record = Some(ParsedRecord::of(&json, class));
            })
        } else {
            records::parse_title(&text).map(|title| out.json_title = title)
        };
        if let Err(e) = parsed {
            out.problems.push((None, format!("invalid JSON: {e}")));
        }
        return out;
    }
    let mut body = text.as_str();
    if let Some(block) = frontmatter::locate(&text) {
        match frontmatter::parse(&block) {
            Ok(map) => out.frontmatter = map,
            Err(e) => {
                out.problems.push((
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
        .or_else(|| file_stem(&r.path))
        .unwrap_or_else(|| "Untitled".to_string())
}

/// The indexed text of a page (its plain text is taken out of `r`).
fn page_text(r: &mut ReadFile) -> PageText {
    let plain_text = r
        .summary
        .as_mut()
        .map(|s| std::mem::take(&mut s.plain_text))
        .unwrap_or_default();
    // Every frontmatter value but the title (which the title field and the H1 already hold).
    let mut frontmatter = r.frontmatter.clone();
    frontmatter.remove("title");
    let mut metadata = metadata_values_text(&Value::Object(frontmatter));
    if let Some(raw) = &r.raw_frontmatter {
        metadata.push_str(raw);
    }
    let body = cap_indexed_text(plain_text);
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

fn to_file(mut r: ReadFile, source_backed: bool, title: String) -> IngestedFile {
    let indexed = source_backed && r.summary.is_some();
    let text = (indexed && !r.from_cache).then(|| page_text(&mut r));
    let text_cached = indexed && r.from_cache;
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
        text_cached,
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
        let Some(record) = &file.record else { continue };
        for child in &record.children {
            queue.push(child.clone());
        }
        for resource in &record.resources {
            if by_path.contains_key(resource.as_str()) {
                packets.push(resource.clone());
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
    mut read: Vec<ReadFile>,
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
    // Path → title of every document record.
    let mut records: BTreeMap<String, Option<String>> = BTreeMap::new();
    for packet in &packet_paths {
        let Some(record) = by_path.get(packet.as_str()).and_then(|r| r.record.as_ref()) else {
            continue;
        };
        let Some((good, bad)) = &record.documents else {
            diagnostics.push(Diagnostic::new(
                packet.clone(),
                None,
                "`documents` is missing".into(),
            ));
            continue;
        };
        for message in bad {
            diagnostics.push(Diagnostic::new(packet.clone(), None, message.clone()));
        }
        for (path, title) in good {
            records.entry(path.clone()).or_insert_with(|| title.clone());
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
    for r in read
        .iter_mut()
        .filter(|r| r.class == PathClass::PerFileGraph)
    {
        // Moved out: the relations are not needed in the record any more.
        let Some(record) = r.record.take() else {
            continue;
        };
        let Some(page) = record.page.as_deref() else {
            diagnostics.push(Diagnostic::new(
                r.path.clone(),
                None,
                "`path` is missing".into(),
            ));
            continue;
        };
        graph_of.insert(page.to_string(), r.path.clone());
        for message in record.relationship_problems {
            diagnostics.push(Diagnostic::new(r.path.clone(), None, message));
        }
        let list = own.entry(page.to_string()).or_default();
        for rel in record.relationships {
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
        let title = resolve_title(record.and_then(|title| title.as_deref()), &r);
        files.push(to_file(r, source_backed, title));
    }

    let source_pages: BTreeSet<String> = files
        .iter()
        .filter(|f| f.source_backed)
        .map(|f| f.path.clone())
        .collect();
    let has_own: BTreeSet<String> = own.keys().cloned().collect();
    let mut relations = Vec::new();
    for (page, list) in own {
        if !source_pages.contains(&page) {
            diagnostics.push(Diagnostic::new(
                graph_of.get(&page).cloned().unwrap_or_else(|| page.clone()),
                None,
                format!("relation records for {page}, which is not a readable page; skipped"),
            ));
            continue;
        }
        for rel in list {
            if !source_pages.contains(&rel.to) {
                diagnostics.push(Diagnostic::new(
                    graph_of.get(&page).cloned().unwrap_or_default(),
                    None,
                    format!(
                        "relation to {}, which is not a readable page; skipped",
                        rel.to
                    ),
                ));
                continue;
            }
            relations.push(rel);
        }
    }
    // A page without its own per-file graph still gets the relations others record with it.
    let mut mirrored = Vec::new();
    for rel in &relations {
        if !has_own.contains(&rel.to) {
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
        let views: Vec<RelationView<'_>> = rels
            .iter()
            .map(|rel| RelationView {
                to: &rel.to,
                to_title: titles.get(&rel.to).map_or("", String::as_str),
                relation_type: &rel.relation_type,
                direction: &rel.direction,
                reason: rel.reason.as_deref(),
            })
            .collect();
        let content = render_per_file_graph(&file.path, &titles[&file.path], &views);
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
            text_cached: false,
        });
    }
    files.extend(added);
    files.sort_by(|a, b| a.path.cmp(&b.path));
}

/// One relation of a page as its per-file graph record shows it.
pub struct RelationView<'a> {
    pub to: &'a str,
    pub to_title: &'a str,
    pub relation_type: &'a str,
    pub direction: &'a str,
    pub reason: Option<&'a str>,
}

/// The per-file graph record kbtools renders for a source page without one on disk, in the
/// bundle format (bundle-format.md §1.15). Ingest hashes it; the catalog renders it again when
/// it is read.
pub fn render_per_file_graph(page: &str, page_title: &str, rels: &[RelationView<'_>]) -> String {
    let dir = paths::parent_of(page);
    let scope = dir.strip_prefix("pages").unwrap_or(dir);
    let relationships: Vec<Value> = rels
        .iter()
        .map(|rel| {
            let mut item = Map::new();
            item.insert("targetPath".into(), Value::from(rel.to));
            item.insert("targetTitle".into(), Value::from(rel.to_title));
            item.insert("direction".into(), Value::from(rel.direction));
            item.insert("relationType".into(), Value::from(rel.relation_type));
            item.insert("weight".into(), Value::from(1));
            item.insert("reason".into(), rel.reason.map_or(Value::Null, Value::from));
            let evidence_path = if rel.direction == "incoming" {
                rel.to
            } else {
                page
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
        "title": format!("{page_title} relationships"),
        "path": page,
        "indexPath": format!("_index/pages{scope}/index.json"),
        "directoryGraphPath": format!("_graph/by-directory{scope}/index.json"),
        "relationships": relationships,
    });
    let mut text = serde_json::to_string(&value).unwrap_or_default();
    text.push('\n');
    text
}
