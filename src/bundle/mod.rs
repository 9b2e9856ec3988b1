//! Ingest: from a bundle directory (or a plain Markdown folder) to the list of files kbtools
//! serves, with their titles, frontmatter, index text and relations, plus a diagnostic for every
//! file it could not use as is. One bad file never stops the rest.

pub mod beneath;
pub mod frontmatter;
pub mod paths;
pub mod plain;
pub mod records;
pub mod walk;

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::error::IndexError;
use crate::markdown;
use markdown::Link;
use paths::PathClass;
use records::{LocalRelationship, PacketDocuments};
use walk::WalkedFile;

/// Bytes of a file read at most: only this much of a larger page is read, parsed, indexed and
/// hashed; a larger JSON file is listed (hashed by this much) but not parsed.
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

/// A word of a relation (its type or direction): the common ones are shared, not allocated for
/// each of the hundreds of thousands of relations of a large bundle.
#[derive(Debug, Clone)]
pub enum Word {
    Known(&'static str),
    Other(Box<str>),
}

/// The relation types and directions of the bundle format.
const KNOWN_WORDS: [&str; 5] = [
    "references",
    "related",
    "outgoing",
    "incoming",
    "bidirectional",
];

impl Word {
    pub fn new(text: &str) -> Self {
        match KNOWN_WORDS.iter().find(|known| **known == text) {
            Some(known) => Word::Known(known),
            None => Word::Other(text.into()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Word::Known(word) => word,
            Word::Other(word) => word,
        }
    }
}

impl PartialEq for Word {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Serialize for Word {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Word {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Ok(Word::new(&text))
    }
}

/// One relationship of a per-file graph record, as ingest keeps it (the target title is not
/// kept: the catalog has every page's title).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Relationship {
    pub target: Box<str>,
    pub relation_type: Word,
    pub direction: Word,
    pub reason: Option<Box<str>>,
}

impl From<LocalRelationship> for Relationship {
    fn from(rel: LocalRelationship) -> Self {
        Relationship {
            target: rel.target_path.into(),
            relation_type: Word::new(&rel.relation_type),
            direction: Word::new(&rel.direction),
            reason: rel.reason.map(String::into_boxed_str),
        }
    }
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

/// What ingest takes from a JSON record it reads (routers, document packets, per-file graphs).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ParsedRecord {
    /// `childDirectories[].path` (routers).
    children: Vec<String>,
    /// `resources[].path` (routers).
    resources: Vec<String>,
    /// `documents[]` as (path, title), with a message per bad item; `None` when absent.
    documents: Option<PacketDocuments>,
    /// The `path` of a per-file graph.
    page: Option<String>,
    /// `relationships[]` of a per-file graph, with a message per bad item.
    relationships: Vec<Relationship>,
    relationship_problems: Vec<String>,
}

impl ParsedRecord {
    /// The (path, title) of each good `documents[]` record of a document packet.
    pub fn document_titles(&self) -> impl Iterator<Item = (&str, Option<&str>)> {
        self.documents
            .iter()
            .flat_map(|(good, _)| good)
            .map(|(path, title)| (path.as_str(), title.as_deref()))
    }

    fn of(parts: records::RecordParts, class: PathClass) -> Self {
        let mut record = ParsedRecord {
            children: parts.children,
            resources: parts.resources,
            documents: parts.documents,
            ..ParsedRecord::default()
        };
        if class == PathClass::PerFileGraph {
            let (good, bad) = parts.relationships;
            record.page = parts.path;
            record.relationships = good.into_iter().map(Relationship::from).collect();
            record.relationship_problems = bad;
        }
        record
    }
}

/// True for the classes whose JSON records ingest reads (their content shapes the whole bundle:
/// which pages are source pages, their titles, the relations).
pub fn is_record_class(class: PathClass) -> bool {
    matches!(
        class,
        PathClass::PageDirectoryRouter | PathClass::DocumentPacket | PathClass::PerFileGraph
    )
}

/// What reading one file gave (its parse), before the bundle-wide steps: what the ingest cache
/// keeps of a file besides its identity, so that a re-index reads only the files whose size or
/// modification time changed. The page text is not kept: it is read again when the page is
/// indexed ([`read_page_text`]), so that a large bundle's texts are never all held at once.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Detail {
    /// The file's own title: its frontmatter `title`, else its first H1, else the `title` of
    /// its JSON record.
    pub own_title: Option<String>,
    /// The frontmatter as JSON text (`""` when there is none).
    pub frontmatter: String,
    /// A Markdown file that was parsed (readable, not too large): as a source page it is
    /// indexed.
    pub parsed: bool,
    /// The links of a page (kept for a plain folder only, where they make the relations).
    pub links: Vec<Link>,
    pub record: Option<ParsedRecord>,
}

/// One file read: its identity and stat, checksum, problems and [`Detail`].
#[derive(Debug, Clone)]
pub struct ReadFile {
    /// Bundle-logical path.
    pub path: String,
    /// Path relative to the root on disk.
    pub disk: String,
    pub class: PathClass,
    pub size: u64,
    pub mtime_ns: i128,
    pub sha256: String,
    /// Problems of this file: line and message.
    pub problems: Vec<(Option<usize>, String)>,
    pub detail: Detail,
}

/// A file of the walk with the logical path and class it is served under.
#[derive(Debug, Clone)]
pub struct Job {
    pub file: WalkedFile,
    /// The logical path when it is not the walked one (`file.relative`): a plain folder's
    /// (under `pages/`), or a name normalized to NFC.
    logical: Option<String>,
    pub class: PathClass,
}

impl Job {
    /// The logical path (as the bundle names the file).
    pub fn path(&self) -> &str {
        self.logical.as_deref().unwrap_or(&self.file.relative)
    }
}

/// What a walk holds for ingest: the files to serve in logical path order, and the diagnostics
/// of the walk and of the paths.
#[derive(Debug)]
pub struct Scan {
    pub kind: BundleKind,
    /// In byte order of logical path.
    pub jobs: Vec<Job>,
    pub diagnostics: Vec<Diagnostic>,
    pub stat_fingerprint: String,
}

/// Everything ingest found (the whole bundle read; an index build reuses the ingest cache
/// instead, see `index::build`).
#[derive(Debug)]
pub struct Ingested {
    pub kind: BundleKind,
    pub name: String,
    /// Every file read, in logical path order.
    pub read: Vec<ReadFile>,
    pub assembly: Assembly,
    /// The diagnostics of the walk, of each file, then of the assembly.
    pub diagnostics: Vec<Diagnostic>,
    pub stat_fingerprint: String,
    pub content_fingerprint: String,
}

impl Ingested {
    pub fn source_page_count(&self) -> usize {
        self.assembly.source_backed.iter().filter(|s| **s).count()
    }
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
    let scan = scan(root, walk::walk(root))?;
    let kind = scan.kind;
    let jobs: Vec<&Job> = scan.jobs.iter().collect();
    let read = read_files(kind, &jobs);
    let mut diagnostics = scan.diagnostics;
    diagnostics.extend(problem_diagnostics(
        read.iter()
            .map(|r| (r.disk.as_str(), r.problems.as_slice())),
    ));
    let assembly = assemble(kind, &read);
    diagnostics.extend(assembly.diagnostics.iter().cloned());
    Ok(Ingested {
        kind,
        name: knowledge_base_name(root, &read),
        content_fingerprint: content_fingerprint(
            kind,
            read.iter().map(|r| (r.path.as_str(), r.sha256.as_str())),
        ),
        read,
        assembly,
        diagnostics,
        stat_fingerprint: scan.stat_fingerprint,
    })
}

/// The files of the bundle at `root` from its `walked` files: each file's logical path and
/// class, in logical path order; the files kbtools does not serve are reported.
pub fn scan(root: &Path, walked: walk::Walk) -> Result<Scan, IndexError> {
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
    let mut diagnostics = walked.diagnostics;

    // Logical paths: as they are in a bundle, under `pages/` for a plain folder. A name that is
    // not canonical (NFD, controls, …) is normalized to NFC when that makes it canonical.
    let logical: Vec<Logical> = walked
        .files
        .par_iter()
        .map(|file| logical_path(kind, file))
        .collect();
    // In logical path order; of files with one logical path (Unicode twins), the first walked
    // is served.
    let mut order: Vec<u32> = (0..logical.len() as u32)
        .filter(|&i| logical[i as usize].is_ok())
        .collect();
    let path_of = |i: u32| match &logical[i as usize] {
        Ok((Some(path), _)) => path.as_str(),
        Ok((None, _)) => walked.files[i as usize].relative.as_str(),
        Err(_) => "",
    };
    // The walk is in byte order of path, so the logical order is mostly that already (ties are
    // in walk order: `order` ascends).
    let walk_order = order.is_sorted_by(|&a, &b| path_of(a) <= path_of(b));
    if !walk_order {
        order.par_sort_unstable_by(|&a, &b| path_of(a).cmp(path_of(b)).then(a.cmp(&b)));
    }
    let mut twin_of: HashMap<u32, u32> = HashMap::new();
    for run in order.chunk_by(|&a, &b| path_of(a) == path_of(b)) {
        for &twin in &run[1..] {
            twin_of.insert(twin, run[0]);
        }
    }
    for (i, result) in logical.iter().enumerate() {
        match result {
            Err(Some(diagnostic)) => diagnostics.push(diagnostic.clone()),
            Ok(_) => {
                if let Some(&first) = twin_of.get(&(i as u32)) {
                    diagnostics.push(Diagnostic::new(
                        walked.files[i].relative.clone(),
                        None,
                        format!(
                            "same logical path {} as {} (Unicode twins); skipped",
                            path_of(i as u32),
                            walked.files[first as usize].relative
                        ),
                    ));
                }
            }
            Err(None) => {}
        }
    }
    // Sized up front: grown by doubling, 100,000 jobs cost more in fresh pages than in copies.
    let mut jobs: Vec<Job> = Vec::with_capacity(order.len() - twin_of.len());
    let job = |(file, logical): (WalkedFile, Result<_, _>)| {
        let (logical, class) = logical.ok()?;
        Some(Job {
            file,
            logical,
            class,
        })
    };
    if walk_order && twin_of.is_empty() {
        // Every file with a logical path served, in the order walked: moved straight in.
        jobs.extend(walked.files.into_iter().zip(logical).filter_map(job));
    } else {
        let mut slots: Vec<Option<Job>> = walked.files.into_iter().zip(logical).map(job).collect();
        jobs.extend(
            order
                .iter()
                .filter(|i| !twin_of.contains_key(i))
                .filter_map(|&i| slots[i as usize].take()),
        );
    }
    Ok(Scan {
        kind,
        jobs,
        diagnostics,
        stat_fingerprint,
    })
}

/// Reads `jobs`, in parallel, in their order.
pub fn read_files(kind: BundleKind, jobs: &[&Job]) -> Vec<ReadFile> {
    jobs.par_iter()
        .map(|job| read_one(&job.file, job.path().to_string(), job.class, kind, None))
        .collect()
}

/// What a page's reader is handed as the page is read: the file and the text the index holds of
/// it ([`read_page_text`]'s, made from the same parse).
pub type OnPage<'a> = &'a (dyn Fn(&ReadFile, PageText) + Sync);

/// [`read_files`], handing every page (`pages/**` Markdown, parsed) with its indexed text to
/// `on_page` as soon as it is read: a full build indexes pages while the rest is still read,
/// and parses each page once.
pub fn read_files_with_pages(
    kind: BundleKind,
    jobs: &[&Job],
    on_page: OnPage<'_>,
) -> Vec<ReadFile> {
    jobs.par_iter()
        .map(|job| {
            read_one(
                &job.file,
                job.path().to_string(),
                job.class,
                kind,
                Some(on_page),
            )
        })
        .collect()
}

/// The diagnostics of each file's own problems, for `(disk path, problems)` in path order.
pub fn problem_diagnostics<'a>(
    files: impl Iterator<Item = (&'a str, &'a [(Option<usize>, String)])>,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (disk, problems) in files {
        for (line, message) in problems {
            out.push(Diagnostic::new(disk.to_string(), *line, message.clone()));
        }
    }
    out
}

/// The content fingerprint of a bundle of `kind` from its files' (path, sha256) in path order.
pub fn content_fingerprint<'a>(
    kind: BundleKind,
    files: impl Iterator<Item = (&'a str, &'a str)>,
) -> String {
    let mut hasher = ContentHasher::new(kind);
    for (path, sha256) in files {
        hasher.add(path, sha256);
    }
    hasher.finish()
}

/// [`content_fingerprint`], a file at a time.
pub struct ContentHasher(walk::BufferedSha256);

impl ContentHasher {
    pub fn new(kind: BundleKind) -> Self {
        let mut hasher = walk::BufferedSha256::new();
        hasher.update(format!("{kind:?}").as_bytes());
        ContentHasher(hasher)
    }

    /// The next file in path order.
    pub fn add(&mut self, path: &str, sha256: &str) {
        self.0.update(path.as_bytes());
        self.0.update(&[0]);
        self.0.update(sha256.as_bytes());
    }

    pub fn finish(self) -> String {
        hex::encode(self.0.finalize())
    }
}

/// The indexed text of the source page at `disk` (relative to `root`), read again; `None` when
/// it cannot be read or parsed.
pub fn read_page_text(root: &Path, disk: &str, _path: &str) -> Option<PageText> {
    let meta = std::fs::metadata(root.join(disk)).ok()?;
    let file = WalkedFile::new(Arc::from(root), None, disk.to_string(), meta.len(), 0);
    with_read_buffer(|bytes| {
        let read = read_bytes(&file, bytes).ok()?;
        Some(page_text(&text_of(bytes, read.total).0))
    })
}

/// Runs `f` with this thread's read buffer (empty; its capacity kept from earlier reads, at
/// most [`MAX_PARSE_BYTES`]): reading a file into memory that was just freed and returned to
/// the system cost more, in zeroed pages, than reading it.
fn with_read_buffer<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    thread_local! {
        static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    // Taken out while in use: a nested read (none today) gets a buffer of its own.
    let mut bytes = BUFFER.with(|b| std::mem::take(&mut *b.borrow_mut()));
    let out = f(&mut bytes);
    bytes.clear();
    let _ = BUFFER.try_with(|b| *b.borrow_mut() = bytes);
    out
}

/// The indexed text of a page whose file content is `text`.
fn page_text(text: &str) -> PageText {
    let split = split_page(text);
    let raw = split.invalid.map(|(_, raw)| raw);
    indexed_text(
        split.frontmatter,
        raw,
        markdown::summarize(split.body).plain_text,
    )
}

/// A page's text split at its frontmatter.
struct SplitPage<'a> {
    /// The frontmatter parsed (empty when there is none or it did not parse).
    frontmatter: Map<String, Value>,
    /// Why the frontmatter did not parse, and its raw YAML.
    invalid: Option<(frontmatter::FrontmatterError, &'a str)>,
    body: &'a str,
}

fn split_page(text: &str) -> SplitPage<'_> {
    // A byte-order mark (editors on Windows write one) is no part of the frontmatter fence.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut split = SplitPage {
        frontmatter: Map::new(),
        invalid: None,
        body: text,
    };
    if let Some(block) = frontmatter::locate(text) {
        match frontmatter::parse(&block) {
            Ok(map) => split.frontmatter = map,
            Err(e) => split.invalid = Some((e, block.yaml)),
        }
        split.body = &text[block.body_start..];
    }
    split
}

/// The indexed text of a page from its parse: its frontmatter (or the raw block that did not
/// parse) and the plain text of its body.
fn indexed_text(
    mut frontmatter: Map<String, Value>,
    raw_frontmatter: Option<&str>,
    plain_text: String,
) -> PageText {
    // Every frontmatter value but the title (which the title field and the H1 already hold).
    frontmatter.remove("title");
    let mut metadata = metadata_values_text(&Value::Object(frontmatter));
    if let Some(raw) = raw_frontmatter {
        // Frontmatter too large to parse is indexed only as far as it would have been parsed.
        let mut end = raw.len().min(frontmatter::MAX_FRONTMATTER_BYTES);
        while !raw.is_char_boundary(end) {
            end -= 1;
        }
        metadata.push_str(&raw[..end]);
    }
    PageText {
        metadata,
        body: cap_indexed_text(plain_text),
    }
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

/// A file's logical path ([`logical_path`]) and class, or why it is not served (`None`: not
/// a file of the bundle, silently).
type Logical = Result<(Option<String>, PathClass), Option<Diagnostic>>;

/// The logical path and class of `file`, or why it is not served (`None`: silently).
///
/// The path is `None` when it is the walked one (`file.relative`), as in most bundles.
fn logical_path(kind: BundleKind, file: &WalkedFile) -> Logical {
    let candidate: Cow<'_, str> = match kind {
        BundleKind::Focowiki => Cow::Borrowed(&file.relative),
        BundleKind::PlainFolder => {
            if !ends_with_md(&file.relative) {
                return Err(None);
            }
            Cow::Owned(format!("pages/{}", file.relative))
        }
    };
    let candidate = if crate::text::is_nfc(&candidate) {
        candidate
    } else {
        Cow::Owned(crate::text::nfc(&candidate))
    };
    if let Err(problem) = paths::check_canonical(&candidate) {
        return Err(Some(Diagnostic::new(
            file.relative.clone(),
            None,
            format!("{problem}; skipped"),
        )));
    }
    let class = match kind {
        BundleKind::PlainFolder => PathClass::Page,
        BundleKind::Focowiki => match paths::classify(&candidate) {
            Some(class) => class,
            None => {
                return Err(Some(Diagnostic::new(
                    file.relative.clone(),
                    None,
                    "not a path a Focowiki bundle holds; ignored".into(),
                )));
            }
        },
    };
    let logical = match candidate {
        Cow::Owned(path) if path != file.relative => Some(path),
        _ => None,
    };
    Ok((logical, class))
}

/// The SHA-256 of `bytes` in lowercase hex, as `checksumSha256` spells it.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// What [`read_bytes`] read of a file.
struct ReadBytes {
    /// SHA-256 of the bytes read: the whole file, or its first [`MAX_PARSE_BYTES`] when it is
    /// larger.
    sha256: String,
    /// The file's size: the bytes read, or its size on disk when it is over the limit.
    total: u64,
    /// The file's size or modification time changed between the walk and the end of the read.
    changed: bool,
}

/// A file's bytes into `bytes`: at most the first [`MAX_PARSE_BYTES`] of it, and never past
/// that, so a huge (a sparse 100 GiB file) or a growing file costs no more time and memory than
/// a file of the limit. A larger file is hashed by that prefix. The file is opened inside the
/// bundle only ([`beneath`]).
fn read_bytes(file: &WalkedFile, bytes: &mut Vec<u8>) -> std::io::Result<ReadBytes> {
    let mut handle = beneath::open_under(file.root(), &file.relative)?;
    bytes.clear();
    bytes.reserve(file.size.min(MAX_PARSE_BYTES) as usize);
    (&mut handle).take(MAX_PARSE_BYTES).read_to_end(bytes)?;
    let sha256 = sha256_hex(bytes);
    let after = handle.metadata()?;
    let read = bytes.len() as u64;
    let changed = after.len() != file.size
        || walk::mtime_ns(&after) != file.mtime_ns
        || (read < MAX_PARSE_BYTES && read != after.len());
    let total = if read == MAX_PARSE_BYTES {
        after.len().max(read)
    } else {
        read
    };
    Ok(ReadBytes {
        sha256,
        total,
        changed,
    })
}

/// The text of `bytes`, the first `MAX_PARSE_BYTES` of a file of `total` bytes: a character cut
/// at the end of a truncated prefix is dropped; any other invalid UTF-8 becomes U+FFFD, and
/// `Err(byte)` tells where the first one was.
fn text_of(bytes: &mut Vec<u8>, total: u64) -> (std::borrow::Cow<'_, str>, Option<usize>) {
    if total > bytes.len() as u64 {
        if let Err(e) = std::str::from_utf8(bytes) {
            if e.error_len().is_none() {
                bytes.truncate(e.valid_up_to());
            }
        }
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => (std::borrow::Cow::Borrowed(text), None),
        Err(e) => (String::from_utf8_lossy(bytes), Some(e.valid_up_to())),
    }
}

fn read_one(
    file: &WalkedFile,
    path: String,
    class: PathClass,
    kind: BundleKind,
    on_page: Option<OnPage<'_>>,
) -> ReadFile {
    let out = ReadFile {
        path,
        disk: file.relative.clone(),
        class,
        size: file.size,
        mtime_ns: file.mtime_ns,
        sha256: String::new(),
        problems: Vec::new(),
        detail: Detail::default(),
    };
    // Only a file that can be a source page (a navigation page when a record lists it).
    let on_page = on_page.filter(|_| is_source_page(class, true));
    let mut text = None;
    let out =
        with_read_buffer(|bytes| read_parsed(file, out, bytes, kind, on_page.map(|_| &mut text)));
    if let (Some(on_page), Some(text)) = (on_page, text) {
        on_page(&out, text);
    }
    out
}

/// [`read_one`] of the file, read into `bytes`.
fn read_parsed(
    file: &WalkedFile,
    mut out: ReadFile,
    bytes: &mut Vec<u8>,
    kind: BundleKind,
    page_text: Option<&mut Option<PageText>>,
) -> ReadFile {
    let ReadBytes {
        sha256: sha,
        total,
        changed,
    } = match read_bytes(file, bytes) {
        Ok(x) => x,
        Err(e) => {
            out.problems
                .push((None, format!("cannot read: {e}; skipped")));
            out.sha256 = "unreadable".into();
            return out;
        }
    };
    out.sha256 = sha;
    out.size = total;
    if changed {
        out.problems.push((
            None,
            "changed while it was read; indexed as read (the next build reads it again)".into(),
        ));
    }
    if total > MAX_PARSE_BYTES {
        if out.path.ends_with(".json") {
            out.problems.push((
                None,
                format!(
                    "{total} bytes, more than the {MAX_PARSE_BYTES} bytes kbtools reads; listed but not parsed (its checksumSha256 covers the first {MAX_PARSE_BYTES} bytes)"
                ),
            ));
            return out;
        }
        out.problems.push((
            None,
            format!(
                "{total} bytes, more than the {MAX_PARSE_BYTES} bytes kbtools reads; only the first {MAX_PARSE_BYTES} bytes are read, parsed, indexed and hashed (its checksumSha256 covers them)"
            ),
        ));
    }
    let (text, invalid_at) = text_of(bytes, total);
    if let Some(valid) = invalid_at {
        out.problems.push((
            None,
            format!("invalid UTF-8 at byte {valid}; read as text with U+FFFD replacements"),
        ));
    }
    if out.path.ends_with(".json") {
        // Only the records ingest reads are kept (as what ingest takes from them); of the others
        // (term postings can be megabytes) only the syntax is checked and the title taken.
        let parsed = if is_record_class(out.class) {
            let graph = out.class == PathClass::PerFileGraph;
            records::parse_record(&text, graph).map(|mut parts| {
                out.detail.own_title = parts.title.take();
                out.detail.record = Some(ParsedRecord::of(parts, out.class));
            })
        } else {
            records::parse_title(&text).map(|title| out.detail.own_title = title)
        };
        if let Err(e) = parsed {
            out.problems.push((None, format!("invalid JSON: {e}")));
        }
        return out;
    }
    let SplitPage {
        frontmatter,
        invalid,
        body,
    } = split_page(&text);
    let mut raw_frontmatter = None;
    if let Some((e, raw)) = invalid {
        out.problems.push((
            e.line,
            format!("invalid frontmatter, kept as raw text: {}", e.message),
        ));
        raw_frontmatter = Some(raw);
    }
    let mut summary = markdown::summarize(body);
    if let Some(slot) = page_text {
        let plain_text = std::mem::take(&mut summary.plain_text);
        *slot = Some(indexed_text(
            frontmatter.clone(),
            raw_frontmatter,
            plain_text,
        ));
    }
    out.detail.parsed = true;
    out.detail.own_title = string_field(&frontmatter, "title").or(summary.first_h1);
    if kind == BundleKind::PlainFolder {
        out.detail.links = summary.links;
    }
    if !frontmatter.is_empty() {
        out.detail.frontmatter = serde_json::to_string(&frontmatter).unwrap_or_default();
    }
    out
}

/// Whether a file of `class` is served as a source page: a page always, a navigation page when
/// a document record lists it.
pub fn is_source_page(class: PathClass, has_record: bool) -> bool {
    match class {
        PathClass::Page => true,
        PathClass::PageNavigation => has_record,
        _ => false,
    }
}

/// The knowledge-base name: the root `index.md` title, else the folder name (DECISIONS 4).
pub fn knowledge_base_name(root: &Path, read: &[ReadFile]) -> String {
    let index = read
        .iter()
        .find(|r| r.path == "index.md" && r.class == PathClass::RootIndex);
    name_from(root, index.map(|r| &r.detail))
}

/// The knowledge-base name from the [`Detail`] of the root `index.md`, if there is one.
pub fn name_from(root: &Path, index: Option<&Detail>) -> String {
    index
        .and_then(|d| d.own_title.clone())
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

/// The title a document record gives, if it gives one.
fn record_title(record_title: Option<&str>) -> Option<&str> {
    record_title.map(str::trim).filter(|t| !t.is_empty())
}

/// Title of a file (DECISIONS 22): record title, frontmatter `title`, first H1, JSON `title`,
/// file stem, "Untitled".
pub fn resolve_title(record: Option<&str>, path: &str, detail: &Detail) -> String {
    record_title(record)
        .map(str::to_string)
        .or_else(|| detail.own_title.clone())
        .or_else(|| file_stem(path))
        .unwrap_or_else(|| "Untitled".to_string())
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

/// A per-file graph record kbtools renders for a source page that has none on disk.
#[derive(Debug, Clone)]
pub struct VirtualFile {
    pub path: String,
    /// The read file (a source page) whose relations it renders.
    pub page: u32,
    pub size: u64,
    pub sha256: String,
    pub title: String,
    /// False for a page without relations: readable, not listed.
    pub listed: bool,
}

/// Marks a relation seen from its target's side (a mirrored relation).
const FLIPPED: u32 = 1 << 31;
/// The source of a relation a plain folder derives.
const PLAIN: u32 = u32::MAX;

/// A relation between two source pages (by their index among the files read), from `from`'s
/// point of view. Its type, direction and reason stay where ingest read them ([`Assembly::text`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelationRef {
    pub from: u32,
    pub to: u32,
    /// The per-file graph record (a file index) that holds it, or [`PLAIN`].
    source: u32,
    /// Its place in that record (with [`FLIPPED`]), or in [`Assembly::plain`].
    item: u32,
}

/// The type, direction and reason of a relation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct RelationText<'a> {
    pub relation_type: &'a str,
    pub direction: &'a str,
    pub reason: Option<&'a str>,
}

/// What the bundle-wide steps make of the files read: which are source pages, every title, the
/// relations, the relation records kbtools renders and the diagnostics of these steps.
#[derive(Debug, Default)]
pub struct Assembly {
    /// Per file read.
    pub source_backed: Vec<bool>,
    pub titles: Vec<String>,
    /// Per file read: its title comes from its document record.
    pub record_titled: Vec<bool>,
    /// Sorted by path.
    pub virtual_files: Vec<VirtualFile>,
    /// Sorted (by source page, target page, type, direction, reason) and deduplicated.
    pub relations: Vec<RelationRef>,
    /// (type, direction, reason) of the relations a plain folder derives.
    plain: Vec<(String, String, Option<String>)>,
    pub diagnostics: Vec<Diagnostic>,
}

impl Assembly {
    /// The type, direction and reason of `rel` (`read` are the files it was assembled from).
    pub fn text<'a>(&'a self, read: &'a [ReadFile], rel: &RelationRef) -> RelationText<'a> {
        if rel.source == PLAIN {
            let (relation_type, direction, reason) = &self.plain[rel.item as usize];
            return RelationText {
                relation_type,
                direction,
                reason: reason.as_deref(),
            };
        }
        let record = read[rel.source as usize]
            .detail
            .record
            .as_ref()
            .expect("a relation's record was read");
        let item = &record.relationships[(rel.item & !FLIPPED) as usize];
        let direction = item.direction.as_str();
        RelationText {
            relation_type: item.relation_type.as_str(),
            direction: if rel.item & FLIPPED != 0 {
                flip_direction(direction)
            } else {
                direction
            },
            reason: item.reason.as_deref(),
        }
    }

    /// Sorts and deduplicates the relations, then renders the relation records of the source
    /// pages that have none on disk.
    fn finish(&mut self, read: &[ReadFile], by_path: &HashMap<&str, u32>) {
        let mut relations = std::mem::take(&mut self.relations);
        relations.sort_by(|a, b| {
            (a.from, a.to)
                .cmp(&(b.from, b.to))
                .then_with(|| self.text(read, a).cmp(&self.text(read, b)))
        });
        relations.dedup_by(|a, b| {
            (a.from, a.to) == (b.from, b.to) && self.text(read, a) == self.text(read, b)
        });
        self.relations = relations;
        self.add_virtual_graphs(read, by_path);
    }

    /// Adds a `_graph/by-file/**.json` record for every source page that has none on disk:
    /// listed when the page has relations, readable but unlisted when it has none (so every
    /// `graphRef` opens, DECISIONS 20–21).
    fn add_virtual_graphs(&mut self, read: &[ReadFile], by_path: &HashMap<&str, u32>) {
        // Relations are sorted by source page: each page's are one run.
        let mut starts = vec![0u32; read.len() + 1];
        for rel in &self.relations {
            starts[rel.from as usize + 1] += 1;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut added: HashSet<String> = HashSet::new();
        let mut virtual_files = Vec::new();
        for (i, file) in read.iter().enumerate() {
            if !self.source_backed[i] {
                continue;
            }
            let graph_path = paths::per_file_graph_path(&file.path);
            // Skipped for a record on disk or one already rendered for a page whose path
            // differs only in the case of `.md` (both map to one record path).
            if paths::check_canonical(&graph_path).is_err()
                || by_path.contains_key(graph_path.as_str())
                || !added.insert(graph_path.clone())
            {
                continue;
            }
            let rels = &self.relations[starts[i] as usize..starts[i + 1] as usize];
            let views: Vec<RelationView<'_>> = rels
                .iter()
                .map(|rel| {
                    let text = self.text(read, rel);
                    RelationView {
                        to: &read[rel.to as usize].path,
                        to_title: &self.titles[rel.to as usize],
                        relation_type: text.relation_type,
                        direction: text.direction,
                        reason: text.reason,
                    }
                })
                .collect();
            let title = &self.titles[i];
            let content = render_per_file_graph(&file.path, title, &views, &|path| {
                by_path.contains_key(path)
            });
            let mut hasher = Sha256::new();
            hasher.update(content.as_bytes());
            virtual_files.push(VirtualFile {
                path: graph_path,
                page: i as u32,
                size: content.len() as u64,
                sha256: hex::encode(hasher.finalize()),
                title: format!("{title} relationships"),
                listed: !rels.is_empty(),
            });
        }
        virtual_files.sort_by(|a, b| a.path.cmp(&b.path));
        self.virtual_files = virtual_files;
    }
}

/// The bundle-wide steps over the files read (in path order).
pub fn assemble(kind: BundleKind, read: &[ReadFile]) -> Assembly {
    match kind {
        BundleKind::Focowiki => assemble_bundle(read),
        BundleKind::PlainFolder => assemble_plain(read),
    }
}

/// Walks the `_index/pages` routers from the root router, reading every packet they name.
fn routed_packets<'a>(
    read: &'a [ReadFile],
    by_path: &HashMap<&'a str, u32>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<&'a str> {
    let mut packets = Vec::new();
    let mut seen_routers = HashSet::new();
    let mut queue: Vec<&str> = vec!["_index/pages/index.json"];
    while let Some(router) = queue.pop() {
        if !seen_routers.insert(router) || seen_routers.len() > 1_000_000 {
            continue;
        }
        let Some(&file) = by_path.get(router) else {
            diagnostics.push(Diagnostic::new(
                router.to_string(),
                None,
                "router is missing".into(),
            ));
            continue;
        };
        let Some(record) = &read[file as usize].detail.record else {
            continue;
        };
        for child in &record.children {
            queue.push(child);
        }
        for resource in &record.resources {
            if by_path.contains_key(resource.as_str()) {
                packets.push(resource.as_str());
            } else {
                diagnostics.push(Diagnostic::new(
                    router.to_string(),
                    None,
                    format!("routes to {resource}, which is missing"),
                ));
            }
        }
    }
    packets
}

fn assemble_bundle(read: &[ReadFile]) -> Assembly {
    let mut diagnostics = Vec::new();
    let by_path: HashMap<&str, u32> = read
        .iter()
        .enumerate()
        .map(|(i, r)| (r.path.as_str(), i as u32))
        .collect();

    // Document records: through the routers first, then any packet the routers missed.
    let mut packet_paths = routed_packets(read, &by_path, &mut diagnostics);
    let routed: HashSet<&str> = packet_paths.iter().copied().collect();
    for r in read {
        if r.class == PathClass::DocumentPacket && !routed.contains(r.path.as_str()) {
            diagnostics.push(Diagnostic::new(
                r.path.clone(),
                None,
                "document packet is not reached from _index/pages/index.json; read anyway".into(),
            ));
            packet_paths.push(&r.path);
        }
    }
    drop(routed);
    packet_paths.sort_unstable();
    packet_paths.dedup();
    // Path → title of every document record (the first record of a path wins).
    let mut records: HashMap<&str, Option<&str>> = HashMap::new();
    for packet in &packet_paths {
        let Some(record) = by_path
            .get(packet)
            .and_then(|&i| read[i as usize].detail.record.as_ref())
        else {
            continue;
        };
        let Some((good, bad)) = &record.documents else {
            diagnostics.push(Diagnostic::new(
                packet.to_string(),
                None,
                "`documents` is missing".into(),
            ));
            continue;
        };
        for message in bad {
            diagnostics.push(Diagnostic::new(packet.to_string(), None, message.clone()));
        }
        for (path, title) in good {
            records.entry(path.as_str()).or_insert(title.as_deref());
        }
    }
    let mut missing: Vec<&str> = records
        .keys()
        .copied()
        .filter(|path| !by_path.contains_key(path))
        .collect();
    missing.sort_unstable();
    for path in missing {
        diagnostics.push(Diagnostic::new(
            path.to_string(),
            None,
            "listed in the _index document records but missing from pages/".into(),
        ));
    }

    // Relations: each page's own per-file graph is authoritative. (page, graph file) in path
    // order of the graph files.
    let mut owners: Vec<(&str, u32)> = Vec::new();
    for (i, r) in read.iter().enumerate() {
        if r.class != PathClass::PerFileGraph {
            continue;
        }
        let Some(record) = &r.detail.record else {
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
        for message in &record.relationship_problems {
            diagnostics.push(Diagnostic::new(r.path.clone(), None, message.clone()));
        }
        owners.push((page, i as u32));
    }

    let mut assembly = Assembly {
        source_backed: Vec::with_capacity(read.len()),
        titles: Vec::with_capacity(read.len()),
        record_titled: Vec::with_capacity(read.len()),
        ..Assembly::default()
    };
    for r in read {
        let record = records.get(r.path.as_str());
        let source_backed = is_source_page(r.class, record.is_some());
        if source_backed && record.is_none() {
            diagnostics.push(Diagnostic::new(
                r.path.clone(),
                None,
                "page is not in the _index document records; served as a source page".into(),
            ));
        }
        let record = record.copied().flatten();
        assembly.source_backed.push(source_backed);
        assembly.record_titled.push(record_title(record).is_some());
        assembly
            .titles
            .push(resolve_title(record, &r.path, &r.detail));
    }
    drop(records);

    // A page with a per-file graph of its own.
    let mut has_own = vec![false; read.len()];
    for (page, _) in &owners {
        if let Some(&i) = by_path.get(page) {
            has_own[i as usize] = true;
        }
    }
    let source_page = |path: &str| {
        by_path
            .get(path)
            .copied()
            .filter(|&i| assembly.source_backed[i as usize])
    };
    // By page (stable: a page's graph files stay in path order).
    owners.sort_by(|a, b| a.0.cmp(b.0));
    let mut relations = Vec::new();
    for group in owners.chunk_by(|a, b| a.0 == b.0) {
        let page = group[0].0;
        // The last graph file of the page names it in diagnostics.
        let graph_path = &read[group[group.len() - 1].1 as usize].path;
        let Some(from) = source_page(page) else {
            diagnostics.push(Diagnostic::new(
                graph_path.clone(),
                None,
                format!("relation records for {page}, which is not a readable page; skipped"),
            ));
            continue;
        };
        for &(_, graph) in group {
            let Some(record) = &read[graph as usize].detail.record else {
                continue;
            };
            for (item, rel) in record.relationships.iter().enumerate() {
                let Some(to) = source_page(&rel.target) else {
                    diagnostics.push(Diagnostic::new(
                        graph_path.clone(),
                        None,
                        format!(
                            "relation to {}, which is not a readable page; skipped",
                            rel.target
                        ),
                    ));
                    continue;
                };
                relations.push(RelationRef {
                    from,
                    to,
                    source: graph,
                    item: item as u32,
                });
            }
        }
    }
    // A page without its own per-file graph still gets the relations others record with it.
    let mirrored: Vec<RelationRef> = relations
        .iter()
        .filter(|rel| !has_own[rel.to as usize])
        .map(|rel| RelationRef {
            from: rel.to,
            to: rel.from,
            source: rel.source,
            item: rel.item | FLIPPED,
        })
        .collect();
    relations.extend(mirrored);
    assembly.relations = relations;
    assembly.diagnostics = diagnostics;
    assembly.finish(read, &by_path);
    assembly
}

pub(crate) fn flip_direction(direction: &str) -> &str {
    match direction {
        "outgoing" => "incoming",
        "incoming" => "outgoing",
        other => other,
    }
}

fn assemble_plain(read: &[ReadFile]) -> Assembly {
    let by_path: HashMap<&str, u32> = read
        .iter()
        .enumerate()
        .map(|(i, r)| (r.path.as_str(), i as u32))
        .collect();
    let titles: Vec<String> = read
        .iter()
        .map(|r| resolve_title(None, &r.path, &r.detail))
        .collect();
    let pages: Vec<plain::PlainPage<'_>> = read
        .iter()
        .zip(&titles)
        .map(|(r, title)| plain::PlainPage {
            path: &r.path,
            title,
            frontmatter: if r.detail.frontmatter.is_empty() {
                Map::new()
            } else {
                serde_json::from_str(&r.detail.frontmatter).unwrap_or_default()
            },
            links: &r.detail.links,
        })
        .collect();
    let mut diagnostics = Vec::new();
    let derived = plain::derive_relations(&pages, &mut diagnostics);
    drop(pages);
    let mut assembly = Assembly {
        source_backed: vec![true; read.len()],
        record_titled: vec![false; read.len()],
        titles,
        diagnostics,
        ..Assembly::default()
    };
    for rel in derived {
        let (Some(&from), Some(&to)) =
            (by_path.get(rel.from.as_str()), by_path.get(rel.to.as_str()))
        else {
            continue;
        };
        assembly.relations.push(RelationRef {
            from,
            to,
            source: PLAIN,
            item: assembly.plain.len() as u32,
        });
        assembly
            .plain
            .push((rel.relation_type, rel.direction, rel.reason));
    }
    assembly.finish(read, &by_path);
    assembly
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
/// it is read. `indexPath` and `directoryGraphPath` are null where `exists` says the bundle has
/// no such file (a plain folder has neither): a record never points at a file that does not
/// open.
pub fn render_per_file_graph(
    page: &str,
    page_title: &str,
    rels: &[RelationView<'_>],
    exists: &dyn Fn(&str) -> bool,
) -> String {
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
    let existing = |path: String| {
        if exists(&path) {
            Value::from(path)
        } else {
            Value::Null
        }
    };
    let value = serde_json::json!({
        "formatVersion": 2,
        "title": format!("{page_title} relationships"),
        "path": page,
        "indexPath": existing(format!("_index/pages{scope}/index.json")),
        "directoryGraphPath": existing(format!("_graph/by-directory{scope}/index.json")),
        "relationships": relationships,
    });
    let mut text = serde_json::to_string(&value).unwrap_or_default();
    text.push('\n');
    text
}
