//! The tantivy full-text index of source pages: schema, writing, and the lexical lanes of
//! `search_files` (BM25 over weighted fields, the dictionary-word lane, exact path and title).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use tantivy::collector::TopDocs;
use tantivy::columnar::Column;
use tantivy::query::{BooleanQuery, FuzzyTermQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, INDEXED,
};
use tantivy::{DocAddress, Index, IndexReader, ReloadPolicy, Searcher, Term};

use super::bm25;
use super::catalog::store::KeyTable;
use crate::analysis::{self, BODY_ANALYZER, TEXT_ANALYZER, WORDS_ANALYZER};
use crate::bundle::PageText;
use crate::error::IndexError;

mod excerpt;
mod writer;

use excerpt::EXCERPT_WINDOW_BYTES;
pub use excerpt::{Excerpter, EXCERPT_MAX_CHARS};
pub use writer::Writer;

/// Field weights of the `lexical` lane (BM25F: per term, the fields' normalized frequencies
/// are weighted and summed, then saturated once). Tuned with `kbtools eval` on the SciFact train
/// split and the CMRC 2018 trial split only.
const LEXICAL_FIELDS: [(&str, f32); 4] =
    [("body", 1.0), ("title", 2.0), ("meta", 0.5), ("path", 0.3)];
/// Field weights of the `lexical` lane with `scope=metadata` (no body).
const METADATA_FIELDS: [(&str, f32); 3] = [("title", 1.0), ("path", 0.5), ("meta", 1.0)];
/// Field weights of the `jieba` lane: dictionary words of the body's CJK text, with the body's
/// `kb_text` terms (character bigrams, so that a word the dictionary splits differently still
/// matches, and the Latin words and numbers, which `body_w` does not hold).
const WORD_FIELDS: [(&str, f32); 2] = [("body_w", 0.5), ("body", 1.0)];
/// BM25 parameters (the classic defaults; the train splits are flat around them).
pub(super) const BM25: bm25::FieldParams = bm25::FieldParams {
    weight: 1.0,
    k1: 1.2,
    b: 0.75,
};

#[derive(Clone, Copy)]
struct Fields {
    title: Field,
    body: Field,
    exact_path: Field,
    exact_title: Field,
    name: Field,
}

pub use super::passages::{PassageHit, Passages, Section};

/// A query's `kb_text` terms and their weights ([`analysis::query_terms`],
/// [`analysis::query_term_weights`]): analysed once per query (a CJK query is segmented by
/// jieba) and shared by every lane that reads them.
pub struct QueryTerms {
    pub terms: Vec<String>,
    pub weights: Vec<f32>,
}

impl QueryTerms {
    pub fn of(query: &str) -> Self {
        let terms = analysis::query_terms(query);
        let weights = analysis::query_term_weights(&terms);
        QueryTerms { terms, weights }
    }

    /// These terms and the English words the glossary lends the question's Chinese words
    /// ([`analysis::glossary`]), each Chinese word's at [`BORROWED_WEIGHT`] split among its
    /// alternatives; a term the question has already keeps its own weight.
    pub fn with_borrowed(mut self, query: &str) -> Self {
        for alternatives in analysis::glossary::borrowed(query) {
            let share = BORROWED_WEIGHT / alternatives.len() as f32;
            for english in alternatives {
                for term in analysis::query_terms(english) {
                    if !self.terms.contains(&term) {
                        // A question-framing word ("need") weighs as little borrowed as asked.
                        let weight = analysis::query_term_weights(std::slice::from_ref(&term));
                        self.weights.push(share * weight[0]);
                        self.terms.push(term);
                    }
                }
            }
        }
        self
    }
}

/// What a Chinese word's English words weigh in a question, together.
pub const BORROWED_WEIGHT: f32 = 1.0;

/// A hit of one lane: the catalog position, the lane score and where the document is.
#[derive(Debug, Clone, Copy)]
pub struct LaneHit {
    pub position: u32,
    pub score: f32,
    pub address: DocAddress,
}

/// What one source page contributes to the index.
pub struct IndexedPage<'a> {
    /// The page's stable key ([`page_key`]).
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

fn field(schema: &Schema, name: &str) -> Result<Field, IndexError> {
    schema
        .get_field(name)
        .map_err(|_| IndexError::Tantivy(format!("field `{name}` is missing")))
}

/// The exact-path keys of a page: its full path and its path without `pages/`, normalized.
pub fn exact_path_keys(path: &str) -> Vec<String> {
    let mut keys = vec![crate::text::exact_key(path)];
    if let Some(rest) = path.strip_prefix("pages/") {
        keys.push(crate::text::exact_key(rest));
    }
    keys
}

/// The stable key of a source page in the index: the first 8 bytes of the SHA-256 of its path.
/// Catalog positions shift when pages come and go; keys do not, so an incremental build can
/// delete and add single pages.
pub fn page_key(path: &str) -> u64 {
    hash64(path)
}

/// The indexed term of an exact-lane key (from [`crate::text::exact_key`]). Two keys share a
/// term only when their SHA-256 digests share the first 64 bits.
pub fn exact_term(key: &str) -> u64 {
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
    pages: Part,
    schema: Schema,
    fields: Fields,
    /// Page key → catalog position (the catalog's table, read in place).
    positions: KeyTable,
}

/// One open tantivy index of a [`SearchIndex`], with what its queries read once.
struct Part {
    reader: IndexReader,
    /// The catalog position of every document of the open generation, per segment, read on
    /// first use (a one-shot call maps its hits and nothing else).
    doc_positions: std::sync::OnceLock<DocPositions>,
    /// Average field lengths, computed on first use.
    average_lengths: std::sync::Mutex<HashMap<Field, f32>>,
    /// The sections' statistics of the opened segments, read on first use.
    section_stats: std::sync::OnceLock<super::passages::SectionStats>,
    /// The deleted documents of the opened segments, read on first use: every document
    /// frequency and count subtracts them, and finding them scans each segment with deletes.
    deleted: std::sync::OnceLock<Deleted>,
    /// What queries look up again and again in the opened segments, which never change.
    memo: Memo,
}

/// Statistics of the opened segments kept for the queries after: the title lane looks up the
/// IDF of every term of its 50 candidates' titles (a fifth of a warm SciFact query, with the
/// titles' analysis), and the next questions meet most of those pages and terms again.
#[derive(Default)]
struct Memo {
    /// The opened segments' ids, read once.
    segments: std::sync::OnceLock<Vec<tantivy::index::SegmentId>>,
    /// Body-field term → IDF ([`SearchIndex::idfs`]); emptied when it reaches
    /// [`IDF_MEMO_ENTRIES`].
    idfs: std::sync::Mutex<rustc_hash::FxHashMap<String, f32>>,
    /// Catalog position → its title's terms and their IDFs ([`SearchIndex::title_terms`]); at
    /// most one entry per page.
    titles: std::sync::Mutex<rustc_hash::FxHashMap<u32, TitleTerms>>,
}

/// The IDFs a memo keeps at most (about 5 MB of words).
const IDF_MEMO_ENTRIES: usize = 100_000;

/// A page's title terms, each with its IDF in the body field.
pub type TitleTerms = std::sync::Arc<[(String, f32)]>;

/// `mutex` locked; a memo a panicking thread left is still whole (each insert is one call).
fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
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

/// The deleted documents of each segment ([`bm25::deleted_docs`]), with the segments' ids.
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
    fn reads_opened(&self, searcher: &Searcher) -> bool {
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
    fn doc_positions<'s>(
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
    fn few_positions<'s>(
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
    fn deleted<'s>(&'s self, searcher: &Searcher) -> std::borrow::Cow<'s, [Vec<tantivy::DocId>]> {
        let opened = self.deleted.get_or_init(|| {
            let opened = self.reader.searcher();
            Deleted {
                segments: segment_ids(&opened),
                docs: bm25::deleted_docs(&opened),
            }
        });
        if opened.segments == segment_ids(searcher) {
            std::borrow::Cow::Borrowed(&opened.docs)
        } else {
            std::borrow::Cow::Owned(bm25::deleted_docs(searcher))
        }
    }

    /// The sections' statistics of `searcher`'s segments: those of the opened segments read
    /// once (the reader never reloads), or read now for another set of segments.
    fn section_stats(
        &self,
        searcher: &Searcher,
        title: Field,
        body: Field,
    ) -> Result<super::passages::SectionStats, IndexError> {
        let opened = self.reader.searcher();
        if segment_ids(&opened) != segment_ids(searcher) {
            return super::passages::SectionStats::read(searcher, title, body);
        }
        if let Some(stats) = self.section_stats.get() {
            return Ok(*stats);
        }
        let stats = super::passages::SectionStats::read(&opened, title, body)?;
        let _ = self.section_stats.set(stats);
        Ok(stats)
    }

    /// The average length of `field`, computed once (the reader never reloads).
    fn average_field_length(&self, searcher: &Searcher, field: Field) -> Result<f32, IndexError> {
        if let Some(v) = self
            .average_lengths
            .lock()
            .ok()
            .and_then(|m| m.get(&field).copied())
        {
            return Ok(v);
        }
        let v = bm25::average_field_length(searcher, field)?;
        if let Ok(mut m) = self.average_lengths.lock() {
            m.insert(field, v);
        }
        Ok(v)
    }

    /// Runs `score` with this index's collection statistics (ties ordered by catalog
    /// position).
    fn with_collection<T>(
        &self,
        searcher: &Searcher,
        keys: &KeyTable,
        score: impl FnOnce(&bm25::Collection<'_>) -> Result<T, IndexError>,
    ) -> Result<T, IndexError> {
        let positions = self.few_positions(searcher, keys)?;
        let order = |a: DocAddress| positions.order(a);
        let average = |f: Field| self.average_field_length(searcher, f);
        score(&bm25::Collection {
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
            fields,
            schema,
            positions,
        })
    }

    /// A searcher of the pages' index.
    pub fn searcher(&self) -> Searcher {
        self.pages.reader.searcher()
    }

    /// Reads the catalog position of every document now (a long-running server: each query then
    /// maps its candidates by table lookups, where a one-shot call reads the few it needs).
    pub fn read_doc_positions(&self) -> Result<(), IndexError> {
        self.pages
            .doc_positions(&self.pages.reader.searcher(), &self.positions)
            .map(drop)
    }

    fn run(
        &self,
        searcher: &Searcher,
        query: &dyn Query,
        limit: usize,
    ) -> Result<Vec<LaneHit>, IndexError> {
        let top = searcher.search(query, &TopDocs::with_limit(limit.max(1)).order_by_score())?;
        let positions = self.pages.few_positions(searcher, &self.positions)?;
        let mut top: Vec<bm25::TopDoc> = top
            .into_iter()
            .map(|(score, address)| bm25::TopDoc {
                score,
                address,
                order: positions.order(address),
            })
            .collect();
        // Equal scores rank by catalog position (path order), not by where the writer threads
        // put the documents: ranks feed the fusion.
        top.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(a.order.cmp(&b.order))
                .then(a.address.cmp(&b.address))
        });
        Ok(Self::hits(top))
    }

    /// The hits of scored documents (best first, equal scores by catalog position) that the
    /// catalog knows.
    fn hits(top: Vec<bm25::TopDoc>) -> Vec<LaneHit> {
        top.into_iter()
            .filter_map(|d| {
                Some(LaneHit {
                    position: u32::try_from(d.order).ok().filter(|&p| p != u32::MAX)?,
                    score: d.score,
                    address: d.address,
                })
            })
            .collect()
    }

    /// Schema fields with their BM25 parameters and whether they hold dictionary words (`*_w`);
    /// unknown names are skipped.
    fn weighted(&self, fields: &[(&str, f32)]) -> Vec<(bool, Field, bm25::FieldParams)> {
        fields
            .iter()
            .filter_map(|(name, weight)| {
                let field = self.schema.get_field(name).ok()?;
                let params = bm25::FieldParams {
                    weight: *weight,
                    ..BM25
                };
                Some((name.ends_with("_w"), field, params))
            })
            .collect()
    }

    fn lane(
        &self,
        searcher: &Searcher,
        fields: &[(&str, f32)],
        query_text: &str,
        text: &QueryTerms,
        limit: usize,
    ) -> Result<Vec<LaneHit>, IndexError> {
        let weighted = self.weighted(fields);
        let word_terms = if weighted.iter().any(|(words, _, _)| *words) {
            analysis::query_words(query_text)
        } else {
            Vec::new()
        };
        let queries: Vec<bm25::FieldQuery<'_>> = weighted
            .into_iter()
            .map(|(words, field, params)| bm25::FieldQuery {
                field,
                params,
                terms: if words { &word_terms } else { &text.terms },
                term_weights: if words { &[] } else { &text.weights },
            })
            .collect();
        let top = self
            .pages
            .with_collection(searcher, &self.positions, |collection| {
                bm25::top_docs(searcher, &queries, limit, collection)
            })?;
        Ok(Self::hits(top))
    }

    /// BM25F over `kb_text` fields: the query's terms in every field, frequencies weighted and
    /// length-normalized per field, then saturated once per term.
    fn fielded(
        &self,
        searcher: &Searcher,
        fields: &[(&str, f32)],
        query: &QueryTerms,
        limit: usize,
    ) -> Result<Vec<LaneHit>, IndexError> {
        let fields: Vec<(Field, bm25::FieldParams)> = self
            .weighted(fields)
            .into_iter()
            .map(|(_, field, params)| (field, params))
            .collect();
        let (terms, weights) = (&query.terms, &query.weights);
        let top = self
            .pages
            .with_collection(searcher, &self.positions, |collection| {
                bm25::top_docs_bm25f(
                    searcher, &fields, terms, weights, BM25.k1, limit, collection,
                )
            })?;
        Ok(Self::hits(top))
    }

    /// The `lexical` lane: BM25F over the weighted fields with the `kb_text` analysis.
    pub fn lexical(
        &self,
        searcher: &Searcher,
        query: &QueryTerms,
        limit: usize,
    ) -> Result<Vec<LaneHit>, IndexError> {
        self.fielded(searcher, &LEXICAL_FIELDS, query, limit)
    }

    /// The `lexical` lane with `scope=metadata`: title, path and metadata only.
    pub fn metadata(
        &self,
        searcher: &Searcher,
        query: &QueryTerms,
        limit: usize,
    ) -> Result<Vec<LaneHit>, IndexError> {
        self.fielded(searcher, &METADATA_FIELDS, query, limit)
    }

    /// The `jieba` lane: BM25 with dictionary-word analysis (of `query_text`) and the query's
    /// `kb_text` terms.
    pub fn words(
        &self,
        searcher: &Searcher,
        query_text: &str,
        query: &QueryTerms,
        limit: usize,
    ) -> Result<Vec<LaneHit>, IndexError> {
        self.lane(searcher, &WORD_FIELDS, query_text, query, limit)
    }

    /// Catalog positions of the pages whose body contains every phrase, in order and adjacent
    /// (CJK phrases as consecutive bigrams: an exact substring). A phrase with one token needs
    /// that token; a phrase with no token matches everything.
    pub fn phrase_matches(
        &self,
        searcher: &Searcher,
        phrases: &[String],
    ) -> Result<std::collections::HashSet<u32>, IndexError> {
        let clauses: Vec<(Occur, Box<dyn Query>)> = phrases
            .iter()
            .filter_map(|phrase| self.phrase_query(phrase))
            .map(|query| (Occur::Must, query))
            .collect();
        if clauses.is_empty() {
            return Ok(self.positions.positions().collect());
        }
        let positions = self.pages.doc_positions(searcher, &self.positions)?;
        let docs = searcher.search(
            &BooleanQuery::new(clauses),
            &tantivy::collector::DocSetCollector,
        )?;
        Ok(docs.into_iter().filter_map(|a| positions.get(a)).collect())
    }

    /// The query of the body that holds `phrase` as written: its terms in order, adjacent (one
    /// term per position: the longest token there, CJK bigrams over unigrams); `None` when it
    /// has no term.
    fn phrase_query(&self, phrase: &str) -> Option<Box<dyn Query>> {
        let mut longest: Vec<(usize, usize, String)> = Vec::new();
        let mut analyzer = analysis::text_analyzer();
        let mut stream = analyzer.token_stream(phrase);
        while stream.advance() {
            let t = stream.token();
            let span = t.offset_to - t.offset_from;
            match longest.last_mut() {
                Some(last) if last.0 == t.position => {
                    if span > last.1 {
                        *last = (t.position, span, t.text.clone());
                    }
                }
                _ => longest.push((t.position, span, t.text.clone())),
            }
        }
        let mut terms: Vec<(usize, Term)> = longest
            .into_iter()
            .map(|(position, _, text)| (position, Term::from_field_text(self.fields.body, &text)))
            .collect();
        match terms.len() {
            0 => None,
            1 => Some(Box::new(TermQuery::new(
                terms.remove(0).1,
                IndexRecordOption::Basic,
            ))),
            _ => Some(Box::new(tantivy::query::PhraseQuery::new_with_offset(
                terms,
            ))),
        }
    }

    /// The pages whose body holds the words of each of `literals` adjacent and in order (the
    /// candidates of [`crate::search::literal`], which reads them for the literal itself), in
    /// catalog order, one list per literal.
    pub fn literal_candidates(
        &self,
        searcher: &Searcher,
        literals: &[String],
    ) -> Result<Vec<Vec<u32>>, IndexError> {
        let mut out = Vec::with_capacity(literals.len());
        for literal in literals {
            let Some(query) = self.phrase_query(literal) else {
                out.push(Vec::new());
                continue;
            };
            let docs = searcher.search(&query, &tantivy::collector::DocSetCollector)?;
            let positions = self.pages.few_positions(searcher, &self.positions)?;
            let mut pages: Vec<u32> = docs.into_iter().filter_map(|a| positions.get(a)).collect();
            pages.sort_unstable();
            pages.dedup();
            out.push(pages);
        }
        Ok(out)
    }

    fn exact(
        &self,
        searcher: &Searcher,
        field: Field,
        key: &str,
    ) -> Result<Vec<LaneHit>, IndexError> {
        let term = Term::from_field_u64(field, exact_term(key));
        let query = TermQuery::new(term, IndexRecordOption::Basic);
        self.run(searcher, &query, 1000)
    }

    /// The `exact_path` lane: pages whose path (with or without `pages/`) equals the query.
    pub fn exact_path(&self, searcher: &Searcher, key: &str) -> Result<Vec<LaneHit>, IndexError> {
        self.exact(searcher, self.fields.exact_path, key)
    }

    /// The pages named `name` (lower case; [`crate::index::catalog::page_names`]), at most
    /// `most + 1` of them (a caller that takes at most `most` knows more were there).
    pub fn pages_named(
        &self,
        searcher: &Searcher,
        name: &str,
        most: usize,
    ) -> Result<Vec<LaneHit>, IndexError> {
        let term = Term::from_field_u64(self.fields.name, exact_term(name));
        let query = TermQuery::new(term, IndexRecordOption::Basic);
        self.run(searcher, &query, most + 1)
    }

    /// The pages whose title or path holds a word within `edits` of one of `terms` (each with
    /// its own number of edits, a transposition one edit), best first by how many of the terms
    /// they hold so: the fallback of a search that found nothing ([`crate::search::nearest`]).
    pub fn near_titles(
        &self,
        searcher: &Searcher,
        terms: &[(String, u8)],
        limit: usize,
    ) -> Result<Vec<LaneHit>, IndexError> {
        let path = field(&self.schema, "path")?;
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms
            .iter()
            .flat_map(|(term, edits)| {
                [self.fields.title, path].map(|field| {
                    let term = Term::from_field_text(field, term);
                    let query: Box<dyn Query> = Box::new(FuzzyTermQuery::new(term, *edits, true));
                    (Occur::Should, query)
                })
            })
            .collect();
        if clauses.is_empty() {
            return Ok(Vec::new());
        }
        self.run(searcher, &BooleanQuery::new(clauses), limit)
    }

    /// The `exact_title` lane: pages whose title equals the query.
    pub fn exact_title(&self, searcher: &Searcher, key: &str) -> Result<Vec<LaneHit>, IndexError> {
        self.exact(searcher, self.fields.exact_title, key)
    }

    /// An excerpter for the query's `kb_text` terms in the body (what tantivy's
    /// `SnippetGenerator` would highlight: each term the body field holds, weighted
    /// `1 / (1 + document frequency)`); `None` when the query has no term.
    pub fn excerpter(&self, searcher: &Searcher, query_text: &str) -> Option<Excerpter> {
        let terms = analysis::terms(&mut analysis::text_analyzer(), query_text);
        if terms.is_empty() {
            return None;
        }
        // As `SnippetGenerator::create` weighs terms (1 / (1 + document frequency)), with the
        // frequency among live documents: an incremental build keeps deleted ones around.
        let deleted = self.pages.deleted(searcher);
        let mut weights = BTreeMap::new();
        for term in terms {
            let df = bm25::alive_doc_freq(
                searcher,
                &deleted,
                &Term::from_field_text(self.fields.body, &term),
            )
            .ok()?;
            if df > 0 {
                weights.insert(term, 1.0 / (1.0 + df as f32));
            }
        }
        Some(Excerpter {
            terms: weights,
            max_num_chars: EXCERPT_WINDOW_BYTES,
        })
    }

    /// The passage lane over the page lane's `candidates` ([`super::passages`]): BM25 over
    /// their heading sections with the lexical lane's query terms and weights.
    pub fn passages(
        &self,
        searcher: &Searcher,
        query: &QueryTerms,
        candidates: &[LaneHit],
    ) -> Result<Passages, IndexError> {
        let stats = self
            .pages
            .section_stats(searcher, self.fields.title, self.fields.body)?;
        let index = super::passages::Index {
            searcher,
            title: self.fields.title,
            body: self.fields.body,
            stats,
            deleted: &self.pages.deleted(searcher),
        };
        super::passages::score(&index, &query.terms, &query.weights, BM25, candidates)
    }

    /// The BM25 inverse document frequency of a `kb_text` term over the `body` field (as the
    /// lexical lane weighs it), for scoring text that is not in the index.
    pub fn idf(&self, searcher: &Searcher, term: &str) -> Result<f32, IndexError> {
        Ok(self
            .idfs(searcher, &[term])?
            .first()
            .copied()
            .unwrap_or_default())
    }

    /// [`Self::idf`] of each of `terms`, the index's deleted documents read once for all.
    pub fn idfs(&self, searcher: &Searcher, terms: &[&str]) -> Result<Vec<f32>, IndexError> {
        if !self.pages.reads_opened(searcher) {
            return self.idfs_read(searcher, terms);
        }
        let mut idfs = vec![0.0; terms.len()];
        let mut missing = Vec::new();
        {
            let memo = lock(&self.pages.memo.idfs);
            for (i, term) in terms.iter().enumerate() {
                match memo.get(*term) {
                    Some(&idf) => idfs[i] = idf,
                    None => missing.push(i),
                }
            }
        }
        if missing.is_empty() {
            return Ok(idfs);
        }
        let looked_up: Vec<&str> = missing.iter().map(|&i| terms[i]).collect();
        let read = self.idfs_read(searcher, &looked_up)?;
        let mut memo = lock(&self.pages.memo.idfs);
        if memo.len() + read.len() > IDF_MEMO_ENTRIES {
            memo.clear();
        }
        for (&i, idf) in missing.iter().zip(read) {
            idfs[i] = idf;
            memo.insert(terms[i].to_string(), idf);
        }
        Ok(idfs)
    }

    /// Each of `pages`' title terms (`terms_of`: the analysed title of a page) with its IDF
    /// ([`Self::idfs`]), remembered per page for the opened segments.
    pub fn title_terms(
        &self,
        searcher: &Searcher,
        pages: &[u32],
        terms_of: impl Fn(u32) -> Vec<String>,
    ) -> Result<Vec<TitleTerms>, IndexError> {
        let opened = self.pages.reads_opened(searcher);
        let mut known: Vec<Option<TitleTerms>> = if opened {
            let memo = lock(&self.pages.memo.titles);
            pages.iter().map(|page| memo.get(page).cloned()).collect()
        } else {
            vec![None; pages.len()]
        };
        let missing: Vec<(usize, Vec<String>)> = known
            .iter()
            .enumerate()
            .filter(|(_, terms)| terms.is_none())
            .map(|(i, _)| (i, terms_of(pages[i])))
            .collect();
        if !missing.is_empty() {
            let mut distinct: Vec<&str> = missing
                .iter()
                .flat_map(|(_, terms)| terms.iter().map(String::as_str))
                .collect();
            distinct.sort_unstable();
            distinct.dedup();
            let idfs = self.idfs(searcher, &distinct)?;
            let idf = |term: &str| distinct.binary_search(&term).map_or(0.0, |at| idfs[at]);
            let made: Vec<(usize, TitleTerms)> = missing
                .iter()
                .map(|(i, terms)| {
                    let weighted: TitleTerms = terms.iter().map(|t| (t.clone(), idf(t))).collect();
                    (*i, weighted)
                })
                .collect();
            let mut memo = opened.then(|| lock(&self.pages.memo.titles));
            for (i, weighted) in made {
                if let Some(memo) = memo.as_mut() {
                    memo.insert(pages[i], weighted.clone());
                }
                known[i] = Some(weighted);
            }
        }
        Ok(known.into_iter().map(Option::unwrap_or_default).collect())
    }

    /// [`Self::idfs`] read from the segments.
    fn idfs_read(&self, searcher: &Searcher, terms: &[&str]) -> Result<Vec<f32>, IndexError> {
        let total = searcher.num_docs().max(1) as f32;
        let deleted = self.pages.deleted(searcher);
        terms
            .iter()
            .map(|term| {
                let df = bm25::alive_doc_freq(
                    searcher,
                    &deleted,
                    &Term::from_field_text(self.fields.body, term),
                )? as f32;
                Ok((1.0 + (total - df + 0.5) / (df + 0.5)).ln())
            })
            .collect()
    }

    /// Number of indexed pages.
    pub fn num_docs(&self) -> u64 {
        self.searcher().num_docs()
    }
}

/// The catalog position of every document, per segment (`u32::MAX`: a document whose key the
/// catalog does not know), with the segments' ids to tell whether a searcher has the same
/// segments.
#[derive(Clone)]
struct DocPositions {
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
    fn get(&self, address: DocAddress) -> Option<u32> {
        self.segments
            .get(address.segment_ord as usize)
            .and_then(|(_, docs)| docs.get(address.doc_id as usize))
            .copied()
            .filter(|&p| p != Self::UNKNOWN)
    }
}

/// Catalog positions of documents: the table of every document, or a lookup per document.
enum Positions<'s> {
    Table(&'s DocPositions),
    Keys {
        columns: Vec<Column<u64>>,
        keys: &'s KeyTable,
    },
}

impl Positions<'_> {
    fn get(&self, address: DocAddress) -> Option<u32> {
        match self {
            Positions::Table(table) => table.get(address),
            Positions::Keys { columns, keys } => columns
                .get(address.segment_ord as usize)?
                .first(address.doc_id)
                .and_then(|key| keys.get(key)),
        }
    }

    /// For ordering ties (unknown documents last).
    fn order(&self, address: DocAddress) -> u64 {
        self.get(address).map_or(u64::MAX, u64::from)
    }
}

#[cfg(test)]
mod tests;
