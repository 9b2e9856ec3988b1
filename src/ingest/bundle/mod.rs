//! Ingest: from a bundle directory (or a plain Markdown folder) to the list of files kbtools
//! serves, with their titles, frontmatter, index text and relations, plus a diagnostic for every
//! file it could not use as is. One bad file never stops the rest.

mod assembly;
pub mod beneath;
mod diagnostic;
pub mod exclusions;
pub mod frontmatter;
pub mod paths;
pub mod plain;
mod read;
pub mod records;
pub mod walk;

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::error::IndexError;
use crate::ingest::markdown;
use crate::relation::Direction;
use markdown::Link;
use paths::PathClass;
use records::{LocalRelationship, PacketDocuments};
use walk::WalkedFile;

pub use assembly::{
    assemble, assemble_excluding, render_per_file_graph, Assembly, RelationRef, RelationText,
    RelationView, VirtualFile,
};
pub use diagnostic::{Code, Diagnostic, Problem, Severity};
use read::{read_bytes, read_one, text_of};

/// Bytes of a file read at most: only this much of a larger page is read, parsed, indexed and
/// hashed; a larger JSON file is listed (hashed by this much) but not parsed.
pub const MAX_PARSE_BYTES: u64 = 16 * 1024 * 1024;
/// Plain text indexed per page at most (bytes); the rest of a huge page is not searchable.
pub(crate) const MAX_INDEXED_TEXT: usize = 4 * 1024 * 1024;

/// A Focowiki bundle or a plain Markdown folder (rules#plain-folders).
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

/// A relation's type: the common ones are shared, not allocated for
/// each of the hundreds of thousands of relations of a large bundle.
#[derive(Debug, Clone)]
pub(crate) enum Word {
    Known(&'static str),
    Other(Box<str>),
}

/// The relation types of the bundle format.
const KNOWN_WORDS: [&str; 2] = ["references", "related"];

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
        let text = <Cow<'de, str>>::deserialize(deserializer)?;
        Ok(Word::new(&text))
    }
}

/// One relationship of a per-file graph record, as ingest keeps it (the target title is not
/// kept: the catalog has every page's title).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Relationship {
    pub target: Box<str>,
    pub relation_type: Word,
    pub direction: Direction,
    pub reason: Option<Box<str>>,
}

impl From<LocalRelationship> for Relationship {
    fn from(rel: LocalRelationship) -> Self {
        Relationship {
            target: rel.target_path.into(),
            relation_type: Word::new(&rel.relation_type),
            direction: rel.direction,
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
    pub direction: Direction,
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
    pub(crate) fn document_titles(&self) -> impl Iterator<Item = (&str, Option<&str>)> {
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
pub(crate) fn is_record_class(class: PathClass) -> bool {
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
    /// Boxed: most files are pages, which have none, and a build holds every file's detail.
    pub record: Option<Box<ParsedRecord>>,
    /// A page whose headings are releases: a changelog, release notes
    /// ([`crate::ingest::aggregate::is_history`]).
    pub history: bool,
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
    /// Problems of this file.
    pub problems: Vec<Problem>,
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
    /// The rules of the files the walk left out (the root's `.kbignore`, a plain folder's
    /// `.gitignore`); `None` when there are none.
    pub exclusions: Option<exclusions::Exclusions>,
}

impl Ingested {
    pub fn source_page_count(&self) -> usize {
        self.assembly.source_backed.iter().filter(|s| **s).count()
    }
}

/// Detects the kind of the directory at `root`.
pub(crate) fn detect_kind(root: &Path) -> BundleKind {
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
    let rules = root
        .canonicalize()
        .ok()
        .and_then(|root| exclusions::Exclusions::new(&root, &[], &mut Vec::new()));
    let assembly = match &rules {
        Some(rules) => assemble_excluding(kind, &read, &|path| rules.excludes(path)),
        None => assemble(kind, &read),
    };
    diagnostics.extend(assembly.diagnostics.iter().cloned());
    Ok(Ingested {
        exclusions: rules,
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
                        Code::NotServed,
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
pub(crate) type OnPage<'a> = &'a (dyn Fn(&ReadFile, PageText) + Sync);

/// [`read_files`], handing every page (`pages/**` Markdown, parsed) with its indexed text to
/// `on_page` as soon as it is read: a full build indexes pages while the rest is still read,
/// and parses each page once.
pub(crate) fn read_files_with_pages(
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
    files: impl Iterator<Item = (&'a str, &'a [Problem])>,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (disk, problems) in files {
        for p in problems {
            out.push(Diagnostic::new(
                p.code,
                disk.to_string(),
                p.line,
                p.message.clone(),
            ));
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
pub(crate) struct ContentHasher(walk::BufferedSha256);

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
            Code::NotServed,
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
                    Code::NotServed,
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

/// Whether a file of `class` is served as a source page: a page always, a navigation page when
/// a document record lists it.
pub(crate) fn is_source_page(class: PathClass, has_record: bool) -> bool {
    match class {
        PathClass::Page => true,
        PathClass::PageNavigation => has_record,
        _ => false,
    }
}

/// The knowledge-base name: the root `index.md` title, else the folder name
/// (rules#knowledge-base-id).
pub fn knowledge_base_name(root: &Path, read: &[ReadFile]) -> String {
    let index = read
        .iter()
        .find(|r| r.path == "index.md" && r.class == PathClass::RootIndex);
    name_from(root, index.map(|r| &r.detail))
}

/// The knowledge-base name from the [`Detail`] of the root `index.md`, if there is one.
pub(crate) fn name_from(root: &Path, index: Option<&Detail>) -> String {
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

/// Title of a file (rules#titles): record title, frontmatter `title`, first H1, JSON `title`,
/// file stem, "Untitled".
pub(crate) fn resolve_title(record: Option<&str>, path: &str, detail: &Detail) -> String {
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
pub(crate) fn indexed_body_text(text: &str) -> String {
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
