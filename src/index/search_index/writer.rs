//! Writing the search index: one writer session per build, fed pages from several threads,
//! committed once.

use std::path::Path;

use tantivy::schema::{Field, Schema};
use tantivy::{Index, TantivyDocument, Term};

use super::{exact_path_keys, exact_term, field, page_schema, IndexedPage};
use crate::error::IndexError;
use crate::ingest::analysis::{self};

/// Writer memory per indexing thread (bytes) of an update. Tantivy flushes a segment when a
/// thread's arena is full, so this bounds the build's memory, not what it can index.
const WRITER_BYTES_PER_THREAD: usize = 64_000_000;
/// Writer memory per indexing thread of a full build. A full build merges nothing (merging
/// rewrote most of the postings once more: a fifth of a 100,000-page build), so each arena
/// fill is a segment of the finished index: larger arenas, fewer segments for queries to
/// visit (100,000 pages of ~3 KB: four). A full build holds the parse of every file while
/// it indexes (`build` module docs), which bounds the arenas: at 192 MB a 100,000-page build
/// peaked at 1.07-1.19 GB, at 128 MB at 0.93-0.97 GB, with as many segments.
const FULL_BUILD_BYTES_PER_THREAD: usize = 128_000_000;

/// Deleted documents kept in all before the segments holding them are merged.
const MAX_DELETED: u32 = 2_000;

/// One writer session over the search index: pages are added batch by batch, and
/// [`Writer::finish`] commits them all at once.
pub struct Writer {
    pages: Session,
    /// key, title, path, meta, body, body_w, exact_path, exact_title.
    fields: [Field; 9],
}

/// One tantivy index's writer of a [`Writer`] session.
struct Session {
    index: Index,
    writer: tantivy::IndexWriter<TantivyDocument>,
}

impl Session {
    fn new(index: Index, threads: usize, bytes_per_thread: usize) -> Result<Self, IndexError> {
        analysis::register(&index);
        let writer = index
            .writer_with_num_threads::<TantivyDocument>(threads, threads * bytes_per_thread)?;
        Ok(Session { index, writer })
    }

    /// Commits, then merges the segments whose deleted documents are more than a fifth of
    /// them (a changed page deletes its document) or `MAX_DELETED` in all:
    /// rewriting a large segment for one changed page would cost more than the rest of the
    /// build. Deleted documents stay in their segments until then (BM25 counts only live ones:
    /// `bm25::alive_doc_freq`, live field norms).
    fn finish(mut self) -> Result<(), IndexError> {
        self.writer.commit()?;
        // The segment metas are dropped before the merge: tantivy keeps the files of every
        // segment whose meta is still alive, so the merged segments' files would stay behind.
        let to_merge: Vec<_> = {
            let metas = self.index.searchable_segment_metas()?;
            let deleted_now: u32 = metas.iter().map(|m| m.num_deleted_docs()).sum();
            metas
                .iter()
                .filter(|m| {
                    m.has_deletes()
                        && (deleted_now > MAX_DELETED || m.num_deleted_docs() * 5 > m.max_doc())
                })
                .map(|m| m.id())
                .collect()
        };
        if !to_merge.is_empty() {
            self.writer.merge(&to_merge).wait()?;
            self.writer.garbage_collect_files().wait()?;
        }
        self.writer.wait_merging_threads()?;
        Ok(())
    }
}

/// The fields `names` of `schema`, in order.
fn named_fields<const N: usize>(
    schema: &Schema,
    names: [&str; N],
) -> Result<[Field; N], IndexError> {
    let mut out = [Field::from_field_id(0); N];
    for (slot, name) in out.iter_mut().zip(names) {
        *slot = field(schema, name)?;
    }
    Ok(out)
}

const PAGE_FIELDS: [&str; 9] = [
    "key",
    "title",
    "path",
    "meta",
    "body",
    "body_w",
    "exact_path",
    "exact_title",
    "name",
];

impl Writer {
    /// A session writing a new index into `dir` (which must exist and be empty).
    pub fn create(dir: &Path, threads: usize) -> Result<Self, IndexError> {
        let pages = Index::create_in_dir(dir, page_schema())?;
        let writer = Self::with_index(pages, threads, FULL_BUILD_BYTES_PER_THREAD)?;
        writer
            .pages
            .writer
            .set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
        Ok(writer)
    }

    /// A session updating the index in `dir` (a copy of a previous generation's): the documents
    /// of the `deleted` keys are deleted first.
    pub fn update(dir: &Path, deleted: &[u64], threads: usize) -> Result<Self, IndexError> {
        let pages = Index::open_in_dir(dir)?;
        if pages.schema() != page_schema() {
            return Err(IndexError::Tantivy(
                "the previous index has another schema".into(),
            ));
        }
        let writer = Self::with_index(pages, threads, WRITER_BYTES_PER_THREAD)?;
        // Tantivy's log merge policy, merging the small segments updates add once there are 12
        // of them (its default, 8, came after a handful of updates of a small bundle, each
        // adding one or two, and rewrote the segments holding deleted documents with them).
        let mut policy = tantivy::merge_policy::LogMergePolicy::default();
        policy.set_min_num_segments(12);
        writer.pages.writer.set_merge_policy(Box::new(policy));
        for k in deleted {
            writer.delete(*k);
        }
        Ok(writer)
    }

    fn with_index(
        pages: Index,
        threads: usize,
        bytes_per_thread: usize,
    ) -> Result<Self, IndexError> {
        let threads = threads.clamp(1, 8);
        let fields = named_fields(&pages.schema(), PAGE_FIELDS)?;
        Ok(Writer {
            pages: Session::new(pages, threads, bytes_per_thread)?,
            fields,
        })
    }

    /// Adds the documents of `pages` (indexed by the writer's threads while the caller reads
    /// the next batch).
    pub fn add(&mut self, pages: &[IndexedPage<'_>]) -> Result<(), IndexError> {
        for page in pages {
            self.add_one(page)?;
        }
        Ok(())
    }

    /// Adds the documents of one page; callable from several threads at once.
    pub(crate) fn add_one(&self, page: &IndexedPage<'_>) -> Result<(), IndexError> {
        let [key, title, path_f, meta, body, body_w, exact_path, exact_title, name] = self.fields;
        let mut d = TantivyDocument::default();
        d.add_u64(key, page.key);
        d.add_text(title, page.title);
        let path_words = page
            .path
            .strip_prefix("pages/")
            .unwrap_or(page.path)
            .replace(['/', '_', '-', '.'], " ");
        d.add_text(path_f, &path_words);
        d.add_text(meta, &page.text.metadata);
        d.add_text(body, &page.text.body);
        // The words analyzer makes no token of a text without CJK: the field left out indexes
        // the same (no terms, a zero field norm) without a second copy of the body in the
        // document, which waits in the writer's queue (up to 10,000 documents) with the first.
        if analysis::has_cjk(&page.text.body) {
            d.add_text(body_w, &page.text.body);
        }
        for k in exact_path_keys(page.path) {
            d.add_u64(exact_path, exact_term(&k));
        }
        d.add_u64(exact_title, exact_term(&crate::text::exact_key(page.title)));
        let title = Some(page.title).filter(|t| !t.is_empty());
        for n in crate::index::catalog::page_names(page.path, title) {
            d.add_u64(name, exact_term(&n));
        }
        self.pages.writer.add_document(d)?;
        Ok(())
    }

    /// Deletes the documents of the page `key` added so far in this session (and before it):
    /// pages added after this call stay.
    pub(crate) fn delete(&self, key: u64) {
        self.pages
            .writer
            .delete_term(Term::from_field_u64(self.fields[0], key));
    }

    /// Writes the pages added so far as segments (a tantivy commit of the unpublished index),
    /// which frees the arenas of the writer's threads; the session goes on.
    pub fn flush(&mut self) -> Result<(), IndexError> {
        self.pages.writer.commit()?;
        Ok(())
    }

    /// Commits the session (`Session::finish`).
    pub fn finish(self) -> Result<(), IndexError> {
        self.pages.finish()
    }
}
