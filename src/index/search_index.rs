//! The tantivy full-text index of source pages: its schema, writing it, opening a published
//! generation and what its queries read once (catalog positions, deleted documents, statistics).
//! The lanes of `crate::search::lanes` read it through a [`SearchView`] and score it themselves.

use std::collections::HashMap;
use std::path::Path;

use tantivy::columnar::Column;
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, INDEXED,
};
use tantivy::{DocAddress, Index, IndexReader, ReloadPolicy, Searcher};

use super::catalog::store::KeyTable;
use crate::error::IndexError;
use crate::ingest::analysis::{self, BODY_ANALYZER, TEXT_ANALYZER, WORDS_ANALYZER};
use crate::ingest::bundle::PageText;

mod memo;
pub mod stats;
mod view;
mod writer;

pub use view::{PageHit, SearchView};
pub use writer::Writer;

/// The fields the lanes query by name ([`SearchView::fields`]).
#[derive(Clone, Copy)]
pub(crate) struct Fields {
    pub title: Field,
    pub body: Field,
    pub exact_path: Field,
    pub exact_title: Field,
    pub name: Field,
}

/// What one source page contributes to the index.
pub struct IndexedPage<'a> {
    /// The page's stable key (`page_key`).
    pub key: u64,
    pub path: &'a str,
    pub title: &'a str,
    pub text: &'a PageText,
}

/// Text indexing options: `analyzer`, recording `record`. Nothing is stored: excerpts are
/// made from the page files (the bundle is read anyway).
fn text(analyzer: &str, record: IndexRecordOption) -> TextOptions {
    TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(analyzer)
            .set_index_option(record),
    )
}

/// The schema of the pages' index.
fn page_schema() -> Schema {
    let mut builder = Schema::builder();
    // Positions only where phrases are matched (the body): no query reads the others'.
    let counted = text(TEXT_ANALYZER, IndexRecordOption::WithFreqs);
    // The body's positions also bound its sections (`kb_body`'s section marks).
    let positioned = text(BODY_ANALYZER, IndexRecordOption::WithFreqsAndPositions);
    let words = text(WORDS_ANALYZER, IndexRecordOption::WithFreqs);
    // The page's stable key: a fast field to map hits to catalog positions, indexed so that an
    // incremental build can delete the page's document.
    builder.add_u64_field("key", INDEXED | FAST);
    builder.add_text_field("title", counted.clone());
    builder.add_text_field("path", counted.clone());
    builder.add_text_field("meta", counted);
    builder.add_text_field("body", positioned);
    builder.add_text_field("body_w", words);
    // The exact lanes' keys, as their hashes ([`exact_term`]): a key is a whole normalized path
    // or title, and the term dictionary of the keys themselves was most of its bytes (on SciFact,
    // 650 KB of keys against 240 KB of body terms), built at a tenth of the build's time.
    builder.add_u64_field("exact_path", INDEXED);
    builder.add_u64_field("exact_title", INDEXED);
    // The page's names ([`crate::index::catalog::page_names`]: file stem, title label), for the
    // identifier lane; hashed as the exact keys are.
    builder.add_u64_field("name", INDEXED);
    builder.build()
}

pub(crate) fn field(schema: &Schema, name: &str) -> Result<Field, IndexError> {
    schema
        .get_field(name)
        .map_err(|_| IndexError::Tantivy(format!("field `{name}` is missing")))
}

/// The exact-path keys of a page: its full path and its path without `pages/`, normalized.
pub(crate) fn exact_path_keys(path: &str) -> Vec<String> {
    let mut keys = vec![crate::text::exact_key(path)];
    if let Some(rest) = path.strip_prefix("pages/") {
        keys.push(crate::text::exact_key(rest));
    }
    keys
}

/// The stable key of a source page in the index: the first 8 bytes of the SHA-256 of its path.
/// Catalog positions shift when pages come and go; keys do not, so an incremental build can
/// delete and add single pages.
pub(crate) fn page_key(path: &str) -> u64 {
    hash64(path)
}

/// The indexed term of an exact-lane key (from [`crate::text::exact_key`]). Two keys share a
/// term only when their SHA-256 digests share the first 64 bits.
pub(crate) fn exact_term(key: &str) -> u64 {
    hash64(key)
}

/// The first 64 bits of the SHA-256 digest of `text`, little-endian: stable across platforms
/// and versions.
fn hash64(text: &str) -> u64 {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(text.as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(bytes)
}

/// An open index, ready for queries.
pub struct SearchIndex {
    pub(crate) pages: Part,
    pub(crate) schema: Schema,
    pub(crate) fields: Fields,
    /// Page key → catalog position (the catalog's table, read in place).
    pub(crate) positions: KeyTable,
}

/// One open tantivy index of a [`SearchIndex`], with what its queries read once.
pub(crate) struct Part {
    reader: IndexReader,
    /// The catalog position of every document of the open generation, per segment, read on
    /// first use (a one-shot call maps its hits and nothing else).
    doc_positions: std::sync::OnceLock<DocPositions>,
    /// Average field lengths, computed on first use.
    average_lengths: std::sync::Mutex<HashMap<Field, f32>>,
    /// The sections' statistics of the opened segments, read on first use.
    section_stats: std::sync::OnceLock<stats::SectionStats>,
    /// The deleted documents of the opened segments, read on first use: every document
    /// frequency and count subtracts them, and finding them scans each segment with deletes.
    deleted: std::sync::OnceLock<Deleted>,
    /// What queries look up again and again in the opened segments, which never change.
    pub(crate) memo: Memo,
}

/// Statistics of the opened segments kept for the queries after: the title lane looks up the
/// IDF of every term of its 50 candidates' titles (a fifth of a warm SciFact query, with the
/// titles' analysis), and the next questions meet most of those pages and terms again.
#[derive(Default)]
pub(crate) struct Memo {
    /// The opened segments' ids, read once.
    segments: std::sync::OnceLock<Vec<tantivy::index::SegmentId>>,
    /// Body-field term → IDF ([`SearchIndex::idfs`]); emptied when it reaches
    /// [`IDF_MEMO_ENTRIES`].
    pub(crate) idfs: std::sync::Mutex<rustc_hash::FxHashMap<String, f32>>,
    /// Catalog position → its title's terms and their IDFs ([`SearchIndex::title_terms`]); at
    /// most one entry per page.
    pub(crate) titles: std::sync::Mutex<rustc_hash::FxHashMap<u32, TitleTerms>>,
}

/// The IDFs a memo keeps at most (about 5 MB of words).
pub(crate) const IDF_MEMO_ENTRIES: usize = 100_000;

/// A page's title terms, each with its IDF in the body field.
pub(crate) type TitleTerms = std::sync::Arc<[(String, f32)]>;

/// `mutex` locked; a memo a panicking thread left is still whole (each insert is one call).
pub(crate) fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The ids of `searcher`'s segments, in order: what tells whether per-segment data read for
/// one searcher holds for another.
fn segment_ids(searcher: &Searcher) -> Vec<tantivy::index::SegmentId> {
    searcher
        .segment_readers()
        .iter()
        .map(|r| r.segment_id())
        .collect()
}

/// The deleted documents of each segment ([`stats::deleted_docs`]), with the segments' ids.
struct Deleted {
    segments: Vec<tantivy::index::SegmentId>,
    docs: Vec<Vec<tantivy::DocId>>,
}

/// The search index folder of a published generation, which nothing writes again: reading it
/// takes no lock file (tantivy's meta lock guards a folder a writer may still garbage-collect),
/// so an index on a read-only file system opens.
#[derive(Clone, Debug)]
struct PublishedDirectory(tantivy::directory::MmapDirectory);

impl tantivy::Directory for PublishedDirectory {
    fn get_file_handle(
        &self,
        path: &Path,
    ) -> Result<
        std::sync::Arc<dyn tantivy::directory::FileHandle>,
        tantivy::directory::error::OpenReadError,
    > {
        self.0.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), tantivy::directory::error::DeleteError> {
        self.0.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, tantivy::directory::error::OpenReadError> {
        self.0.exists(path)
    }

    fn open_write(
        &self,
        path: &Path,
    ) -> Result<tantivy::directory::WritePtr, tantivy::directory::error::OpenWriteError> {
        self.0.open_write(path)
    }

    fn atomic_read(
        &self,
        path: &Path,
    ) -> Result<Vec<u8>, tantivy::directory::error::OpenReadError> {
        self.0.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> std::io::Result<()> {
        self.0.atomic_write(path, data)
    }

    fn sync_directory(&self) -> std::io::Result<()> {
        self.0.sync_directory()
    }

    fn acquire_lock(
        &self,
        lock: &tantivy::directory::Lock,
    ) -> Result<tantivy::directory::DirectoryLock, tantivy::directory::error::LockError> {
        if lock.filepath == tantivy::directory::META_LOCK.filepath {
            return Ok(tantivy::directory::DirectoryLock::from(Box::new(())));
        }
        self.0.acquire_lock(lock)
    }

    fn watch(
        &self,
        callback: tantivy::directory::WatchCallback,
    ) -> tantivy::Result<tantivy::directory::WatchHandle> {
        self.0.watch(callback)
    }
}

impl Part {
    fn open(dir: &Path) -> Result<(Self, Schema), IndexError> {
        let mmap = tantivy::directory::MmapDirectory::open(dir)
            .map_err(|e| IndexError::Tantivy(e.to_string()))?;
        let index = Index::open(PublishedDirectory(mmap))?;
        analysis::register(&index);
        let reader: IndexReader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        let part = Part {
            reader,
            doc_positions: std::sync::OnceLock::new(),
            average_lengths: std::sync::Mutex::new(HashMap::new()),
            section_stats: std::sync::OnceLock::new(),
            deleted: std::sync::OnceLock::new(),
            memo: Memo::default(),
        };
        Ok((part, index.schema()))
    }

    /// Whether `searcher` reads the opened segments (what [`Memo`] holds is theirs).
    pub(crate) fn reads_opened(&self, searcher: &Searcher) -> bool {
        let opened = self
            .memo
            .segments
            .get_or_init(|| segment_ids(&self.reader.searcher()));
        opened.len() == searcher.segment_readers().len()
            && opened
                .iter()
                .zip(searcher.segment_readers())
                .all(|(id, reader)| *id == reader.segment_id())
    }

    /// The catalog positions of the documents of `searcher`'s segments: those read at open
    /// (the reader never reloads), or read now for another set of segments.
    pub(crate) fn doc_positions<'s>(
        &'s self,
        searcher: &Searcher,
        keys: &KeyTable,
    ) -> Result<std::borrow::Cow<'s, DocPositions>, IndexError> {
        let opened = self.reader.searcher();
        if opened.segment_readers().len() == searcher.segment_readers().len()
            && self.doc_positions.get().is_none()
        {
            // The usual case: read the positions of the opened segments once.
            let read = DocPositions::read(&opened, keys)?;
            let _ = self.doc_positions.set(read);
        }
        if let Some(known) = self.doc_positions.get().filter(|d| d.matches(searcher)) {
            Ok(std::borrow::Cow::Borrowed(known))
        } else {
            Ok(std::borrow::Cow::Owned(DocPositions::read(searcher, keys)?))
        }
    }

    /// Positions for looking up a few documents (hits, ties near the top): the table when it
    /// was read already, else each document's key looked up in the catalog's key table, so that
    /// a one-shot call does not read the key of every document.
    pub(crate) fn few_positions<'s>(
        &'s self,
        searcher: &Searcher,
        keys: &'s KeyTable,
    ) -> Result<Positions<'s>, IndexError> {
        if let Some(known) = self.doc_positions.get().filter(|d| d.matches(searcher)) {
            return Ok(Positions::Table(known));
        }
        let columns = searcher
            .segment_readers()
            .iter()
            .map(|segment| Ok(segment.fast_fields().u64("key")?))
            .collect::<Result<Vec<Column<u64>>, IndexError>>()?;
        Ok(Positions::Keys { columns, keys })
    }

    /// The deleted documents of `searcher`'s segments: those of the opened segments read once
    /// (the reader never reloads), or read now for another set of segments.
    pub(crate) fn deleted<'s>(
        &'s self,
        searcher: &Searcher,
    ) -> std::borrow::Cow<'s, [Vec<tantivy::DocId>]> {
        let opened = self.deleted.get_or_init(|| {
            let opened = self.reader.searcher();
            Deleted {
                segments: segment_ids(&opened),
                docs: stats::deleted_docs(&opened),
            }
        });
        if opened.segments == segment_ids(searcher) {
            std::borrow::Cow::Borrowed(&opened.docs)
        } else {
            std::borrow::Cow::Owned(stats::deleted_docs(searcher))
        }
    }

    /// The sections' statistics of `searcher`'s segments: those of the opened segments read
    /// once (the reader never reloads), or read now for another set of segments.
    pub(crate) fn section_stats(
        &self,
        searcher: &Searcher,
        title: Field,
        body: Field,
    ) -> Result<stats::SectionStats, IndexError> {
        let opened = self.reader.searcher();
        if segment_ids(&opened) != segment_ids(searcher) {
            return stats::SectionStats::read(searcher, title, body);
        }
        if let Some(stats) = self.section_stats.get() {
            return Ok(*stats);
        }
        let stats = stats::SectionStats::read(&opened, title, body)?;
        let _ = self.section_stats.set(stats);
        Ok(stats)
    }

    /// The average length of `field`, computed once (the reader never reloads).
    pub(crate) fn average_field_length(
        &self,
        searcher: &Searcher,
        field: Field,
    ) -> Result<f32, IndexError> {
        if let Some(v) = self
            .average_lengths
            .lock()
            .ok()
            .and_then(|m| m.get(&field).copied())
        {
            return Ok(v);
        }
        let v = stats::average_field_length(searcher, field)?;
        if let Ok(mut m) = self.average_lengths.lock() {
            m.insert(field, v);
        }
        Ok(v)
    }

    /// Runs `score` with this index's collection statistics (ties ordered by catalog
    /// position).
    pub(crate) fn with_collection<T>(
        &self,
        searcher: &Searcher,
        keys: &KeyTable,
        score: impl FnOnce(&stats::Collection<'_>) -> Result<T, IndexError>,
    ) -> Result<T, IndexError> {
        let positions = self.few_positions(searcher, keys)?;
        let order = |a: DocAddress| positions.order(a);
        let average = |f: Field| self.average_field_length(searcher, f);
        score(&stats::Collection {
            order: &order,
            average_field_length: &average,
            total_docs: searcher.num_docs(),
            deleted: &self.deleted(searcher),
        })
    }
}

impl SearchIndex {
    /// Opens the index in `dir`; `positions`
    /// maps each indexed page's key to its catalog position. Tantivy panics on some damaged
    /// files (a fast-field table that points past its end, say) where it would rather fail:
    /// such a panic is an error here.
    pub fn open(dir: &Path, positions: KeyTable) -> Result<Self, IndexError> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Self::open_unchecked(dir, positions)
        }))
        .unwrap_or_else(|panic| {
            let reason = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(IndexError::Tantivy(format!(
                "a file of {} does not read ({reason})",
                dir.display()
            )))
        })
    }

    fn open_unchecked(dir: &Path, positions: KeyTable) -> Result<Self, IndexError> {
        let (pages, schema) = Part::open(dir)?;
        let fields = Fields {
            title: field(&schema, "title")?,
            body: field(&schema, "body")?,
            exact_path: field(&schema, "exact_path")?,
            exact_title: field(&schema, "exact_title")?,
            name: field(&schema, "name")?,
        };
        Ok(SearchIndex {
            pages,
            schema,
            fields,
            positions,
        })
    }

    /// A searcher of the pages' index.
    pub fn searcher(&self) -> Searcher {
        self.pages.reader.searcher()
    }

    /// Reads the catalog position of every document now (a long-running server: each query then
    /// maps its candidates by table lookups, where a one-shot call reads the few it needs).
    pub(crate) fn read_doc_positions(&self) -> Result<(), IndexError> {
        self.pages
            .doc_positions(&self.pages.reader.searcher(), &self.positions)
            .map(drop)
    }

    /// Number of indexed pages.
    pub(crate) fn num_docs(&self) -> u64 {
        self.searcher().num_docs()
    }
}

/// The catalog position of every document, per segment (`u32::MAX`: a document whose key the
/// catalog does not know), with the segments' ids to tell whether a searcher has the same
/// segments.
#[derive(Clone)]
pub(crate) struct DocPositions {
    segments: Vec<(tantivy::index::SegmentId, Vec<u32>)>,
}

impl DocPositions {
    const UNKNOWN: u32 = u32::MAX;

    fn read(searcher: &Searcher, positions: &KeyTable) -> Result<Self, IndexError> {
        let mut segments = Vec::with_capacity(searcher.segment_readers().len());
        for segment in searcher.segment_readers() {
            let keys: Column<u64> = segment.fast_fields().u64("key")?;
            let of_doc = (0..segment.max_doc())
                .map(|doc| {
                    keys.first(doc)
                        .and_then(|key| positions.get(key))
                        .unwrap_or(Self::UNKNOWN)
                })
                .collect();
            segments.push((segment.segment_id(), of_doc));
        }
        Ok(DocPositions { segments })
    }

    fn matches(&self, searcher: &Searcher) -> bool {
        let readers = searcher.segment_readers();
        readers.len() == self.segments.len()
            && readers
                .iter()
                .zip(&self.segments)
                .all(|(r, (id, docs))| r.segment_id() == *id && r.max_doc() as usize == docs.len())
    }

    /// The catalog position of a document, if the catalog knows it.
    pub(crate) fn get(&self, address: DocAddress) -> Option<u32> {
        self.segments
            .get(address.segment_ord as usize)
            .and_then(|(_, docs)| docs.get(address.doc_id as usize))
            .copied()
            .filter(|&p| p != Self::UNKNOWN)
    }
}

/// Catalog positions of documents: the table of every document, or a lookup per document.
pub(crate) enum Positions<'s> {
    Table(&'s DocPositions),
    Keys {
        columns: Vec<Column<u64>>,
        keys: &'s KeyTable,
    },
}

impl Positions<'_> {
    pub(crate) fn get(&self, address: DocAddress) -> Option<u32> {
        match self {
            Positions::Table(table) => table.get(address),
            Positions::Keys { columns, keys } => columns
                .get(address.segment_ord as usize)?
                .first(address.doc_id)
                .and_then(|key| keys.get(key)),
        }
    }

    /// For ordering ties (unknown documents last).
    pub(crate) fn order(&self, address: DocAddress) -> u64 {
        self.get(address).map_or(u64::MAX, u64::from)
    }
}

#[cfg(test)]
mod tests;
