//! The search index's pages: indexed as a full build reads them (streamed, checked against the
//! assembly afterwards), or the changed ones of an update.

use std::collections::HashMap;
use std::path::Path;

use rayon::prelude::*;

use super::{index_fingerprint, Page, Unread, Written, BATCH_BYTES};
use crate::error::IndexError;
use crate::index::catalog::{store, Catalog};
use crate::index::search_index::IndexedPage;
use crate::index::{link_dir, search_index};
use crate::ingest::bundle;
use crate::ingest::bundle::paths::PathClass;
use crate::ingest::bundle::{BundleKind, Job, ReadFile};

/// The catalog a build just wrote at `path`.
pub(super) fn open_written_catalog(path: &Path) -> Result<Catalog, IndexError> {
    let bytes = store::Bytes::map(path).map_err(|e| IndexError::io(path, e))?;
    Catalog::open(bytes, &path.display().to_string()).map_err(|reason| IndexError::Corrupt {
        path: path.display().to_string(),
        reason,
    })
}

/// Every indexed page of the catalog at `path`.
pub(super) fn pages_of_catalog(path: &Path) -> Result<Vec<Page>, IndexError> {
    let catalog = open_written_catalog(path)?;
    Ok(catalog
        .iter_files()
        .filter_map(|f| {
            let key = f.index_key?;
            let title = f.title.clone().unwrap_or_default();
            Some(Page {
                key,
                fingerprint: index_fingerprint(&f.path, &f.sha256, &title),
                path: f.path.clone(),
                title,
                disk: f.disk.clone(),
                size: f.size,
            })
        })
        .collect())
}

/// Indexes `pages` into the search index in `dir` (a new one when `create`, after deleting
/// `deleted` otherwise), reading their texts again from the bundle a batch at a time into one
/// writer session (one commit: a commit per batch flushed small segments that then had to be
/// merged). Returns how many pages were indexed.
pub(super) fn index_pages(
    bundle_root: &Path,
    dir: &Path,
    create: bool,
    deleted: &[u64],
    pages: &[&Page],
    threads: usize,
) -> Result<(u64, Vec<Unread>), IndexError> {
    let mut writer = if create {
        search_index::Writer::create(dir, threads)?
    } else {
        search_index::Writer::update(dir, deleted, threads)?
    };
    let indexed = add_pages(bundle_root, &mut writer, pages)?;
    writer.finish()?;
    Ok(indexed)
}

/// A page a full build indexed as it read it: its key, and the [`index_fingerprint`] of the
/// path, content and title it was indexed under (not the path and title themselves: at
/// 100,000 pages their copies were 15 MiB held from the reading to the end of the build).
pub(super) struct Added {
    key: u64,
    fingerprint: [u8; 16],
}

/// The pages' bytes above which a full build writes their segments before it reads the other
/// files (at SciFact's 8 MB the flush and the lost overlap cost a tenth of the build's time;
/// at 30,000 generated pages' 99 MB it took 140 MiB off the peak).
const FLUSH_PAGE_BYTES: u64 = 32 << 20;

/// Reads the files of `jobs` (a full build's), indexing each page with `writer` as soon as it
/// is read, under the title the bundle-wide steps will most likely give it: the document
/// packets are read first for their records' titles. The pages of a large bundle are written
/// as segments before the other files are read. [`finish_streamed`] checks each page against
/// what the bundle-wide steps decided.
pub(super) fn read_and_index(
    kind: BundleKind,
    jobs: &[&Job],
    writer: &mut search_index::Writer,
) -> Result<(Vec<ReadFile>, Vec<Added>), IndexError> {
    // Document packets first (a page's record title is its index title), then the pages; the
    // other files (most of a bundle's bytes: term routes, graph records) alongside or after.
    let mut packets = Vec::new();
    let mut pages = Vec::new();
    let mut others = Vec::new();
    for (i, job) in jobs.iter().enumerate() {
        match job.class {
            PathClass::DocumentPacket => packets.push(i),
            // Whatever a record can make a source page.
            class if bundle::is_source_page(class, true) => pages.push(i),
            _ => others.push(i),
        }
    }
    let added = std::sync::Mutex::new(Vec::new());
    let failed = std::sync::Mutex::new(None);
    let shared = &*writer;
    let read_packets_and_pages = || {
        let packet_jobs: Vec<&Job> = packets.iter().map(|&i| jobs[i]).collect();
        let packet_files = bundle::read_files(kind, &packet_jobs);
        // Path -> record title, the first record of a path (in path order of the packets)
        // winning.
        let mut records: HashMap<&str, Option<&str>> = HashMap::new();
        for file in &packet_files {
            for (path, title) in file.detail.record.iter().flat_map(|r| r.document_titles()) {
                records.entry(path).or_insert(title);
            }
        }
        let on_page = |file: &ReadFile, text: bundle::PageText| {
            let record = records.get(file.path.as_str());
            if !file.detail.parsed || !bundle::is_source_page(file.class, record.is_some()) {
                return;
            }
            let title = bundle::resolve_title(record.copied().flatten(), &file.path, &file.detail);
            let key = search_index::page_key(&file.path);
            let page = IndexedPage {
                key,
                path: &file.path,
                title: &title,
                text: &text,
            };
            match shared.add_one(&page) {
                Ok(()) => added.lock().unwrap_or_else(|e| e.into_inner()).push(Added {
                    key,
                    fingerprint: index_fingerprint(&file.path, &file.sha256, &title),
                }),
                Err(e) => {
                    failed
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .get_or_insert(e);
                }
            }
        };
        let page_jobs: Vec<&Job> = pages.iter().map(|&i| jobs[i]).collect();
        let page_files = bundle::read_files_with_pages(kind, &page_jobs, &on_page);
        (packet_files, page_files)
    };
    let read_others = || {
        let other_jobs: Vec<&Job> = others.iter().map(|&i| jobs[i]).collect();
        bundle::read_files(kind, &other_jobs)
    };
    let page_bytes: u64 = pages.iter().map(|&i| jobs[i].file.size).sum();
    let ((packet_files, page_files), other_files) = if page_bytes > FLUSH_PAGE_BYTES {
        // The pages' segments are written, and the writer's arenas freed, before the other
        // files are read: the arenas and those files' parses (most of a bundle's records) are
        // never held together.
        let read = read_packets_and_pages();
        crate::memory::purging_at_once(|| writer.flush())?;
        (read, read_others())
    } else {
        // Small arenas: the other files are read alongside, so that both cores work while the
        // packets are parsed.
        rayon::join(read_packets_and_pages, read_others)
    };
    if let Some(e) = failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    // Back in the jobs' order.
    let mut files: Vec<Option<ReadFile>> = (0..jobs.len()).map(|_| None).collect();
    for (indices, read) in [
        (packets, packet_files),
        (pages, page_files),
        (others, other_files),
    ] {
        for (i, file) in indices.into_iter().zip(read) {
            files[i] = Some(file);
        }
    }
    let files = files
        .into_iter()
        .map(|f| f.expect("every job read"))
        .collect();
    Ok((files, added.into_inner().unwrap_or_else(|e| e.into_inner())))
}

/// Completes a full build's search index: a page indexed while read ([`read_and_index`]) stays
/// when it is one of `pages` under the same path, content and title, and is deleted otherwise (a page
/// the bundle-wide steps titled or keyed otherwise, or did not take as a source page); the
/// pages not indexed that way are read again and indexed now.
pub(super) fn finish_streamed(
    bundle_root: &Path,
    mut writer: search_index::Writer,
    added: Vec<Added>,
    pages: &[Page],
) -> Result<(u64, Vec<Unread>), IndexError> {
    let expected: HashMap<u64, &Page> = pages.iter().map(|p| (p.key, p)).collect();
    // Key -> (indexed as expected, times indexed).
    let mut seen: HashMap<u64, (bool, u32)> = HashMap::with_capacity(added.len());
    for a in &added {
        let as_expected = expected
            .get(&a.key)
            .is_some_and(|p| p.fingerprint == a.fingerprint);
        let entry = seen.entry(a.key).or_insert((true, 0));
        entry.0 &= as_expected;
        entry.1 += 1;
    }
    drop(expected);
    let mut kept = std::collections::HashSet::with_capacity(seen.len());
    for (key, (as_expected, times)) in seen {
        if as_expected && times == 1 {
            kept.insert(key);
        } else {
            writer.delete(key);
        }
    }
    let rest: Vec<&Page> = pages.iter().filter(|p| !kept.contains(&p.key)).collect();
    let (count, unread) = add_pages(bundle_root, &mut writer, &rest)?;
    writer.finish()?;
    Ok((kept.len() as u64 + count, unread))
}

/// Adds `pages` to `writer`, reading their texts again from the bundle a batch at a time.
/// Returns how many pages were indexed and the pages that could not be read.
pub(super) fn add_pages(
    bundle_root: &Path,
    writer: &mut search_index::Writer,
    pages: &[&Page],
) -> Result<(u64, Vec<Unread>), IndexError> {
    let mut count = 0;
    let mut unread = Vec::new();
    let mut start = 0;
    loop {
        let mut end = start;
        let mut bytes = 0;
        while end < pages.len() && (end == start || bytes + pages[end].size <= BATCH_BYTES) {
            bytes += pages[end].size;
            end += 1;
        }
        let batch = &pages[start..end];
        let texts: Vec<Option<bundle::PageText>> = batch
            .par_iter()
            .map(|p| {
                p.disk
                    .as_deref()
                    .and_then(|disk| bundle::read_page_text(bundle_root, disk, &p.path))
            })
            .collect();
        unread.extend(
            batch
                .iter()
                .zip(&texts)
                .filter(|(_, text)| text.is_none())
                .map(|(p, _)| (p.key, p.disk.clone().unwrap_or_else(|| p.path.clone()))),
        );
        let docs: Vec<IndexedPage<'_>> = batch
            .iter()
            .zip(&texts)
            .filter_map(|(p, text)| {
                Some(IndexedPage {
                    key: p.key,
                    path: &p.path,
                    title: &p.title,
                    text: text.as_ref()?,
                })
            })
            .collect();
        count += docs.len() as u64;
        writer.add(&docs)?;
        start = end;
        if start >= pages.len() {
            return Ok((count, unread));
        }
    }
}

/// Brings a copy of the previous generation's search index up to date: the pages removed or
/// changed (content, title or path) are deleted, the added and changed ones indexed. Returns
/// (pages indexed, pages removed).
pub(super) fn incremental_search(
    bundle_root: &Path,
    before: &HashMap<u64, [u8; 16]>,
    written: &Written,
    previous_search: &Path,
    search_dir: &Path,
    threads: usize,
    progress: &mut dyn FnMut(&str),
) -> Result<(u64, u64, Vec<Unread>), IndexError> {
    let now: HashMap<u64, [u8; 16]> = written.indexed.iter().copied().collect();
    let mut deleted: Vec<u64> = before
        .iter()
        .filter(|(key, fingerprint)| now.get(key) != Some(fingerprint))
        .map(|(key, _)| *key)
        .collect();
    deleted.sort_unstable();
    let changed: Vec<&Page> = written
        .pages
        .iter()
        .filter(|p| before.get(&p.key) != Some(&p.fingerprint))
        .collect();
    let removed = deleted.len() as u64;
    link_dir(previous_search, search_dir)?;
    if changed.is_empty() && deleted.is_empty() {
        return Ok((0, 0, Vec::new()));
    }
    progress(&format!(
        "updating the search index: {} pages to index, {} to remove",
        changed.len(),
        deleted.len()
    ));
    let (indexed, unread) = index_pages(
        bundle_root,
        search_dir,
        false,
        &deleted,
        &changed,
        threads.min(2),
    )?;
    Ok((indexed, removed, unread))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Documents of the index in `dir` with `title` (exact title key), and in all.
    fn titled(dir: &Path, title: &str) -> (usize, u64) {
        let index = tantivy::Index::open_in_dir(dir).unwrap();
        let field = index.schema().get_field("exact_title").unwrap();
        let searcher = index.reader().unwrap().searcher();
        let key = search_index::exact_term(&crate::text::exact_key(title));
        let term = tantivy::Term::from_field_u64(field, key);
        let query = tantivy::query::TermQuery::new(term, tantivy::schema::IndexRecordOption::Basic);
        let hits = searcher.search(&query, &tantivy::collector::Count).unwrap();
        (hits, searcher.num_docs())
    }

    #[test]
    fn pages_indexed_while_read_are_checked_against_the_assembly() {
        // As a build does it (the pages' segments written before the assembly decides), and
        // with every page still in the writer's arenas.
        for flushed in [true, false] {
            check_streamed_pages(flushed);
        }
    }

    fn check_streamed_pages(flushed: bool) {
        // The pages' content, as read and as the assembly saw it.
        const SHA: &str = "0a1b";
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("pages")).unwrap();
        let page = |name: &str, title: &str| {
            let path = format!("pages/{name}.md");
            std::fs::write(
                root.path().join(&path),
                format!("# {title}\n\ntext of {name}\n"),
            )
            .unwrap();
            Page {
                key: search_index::page_key(&path),
                fingerprint: index_fingerprint(&path, SHA, title),
                path: path.clone(),
                title: title.into(),
                disk: Some(path),
                size: 20,
            }
        };
        // What the bundle-wide steps decided: three source pages.
        let pages = vec![page("a", "Alpha"), page("b", "Beta"), page("c", "Gamma")];
        let search = root.path().join("search");
        std::fs::create_dir(&search).unwrap();
        let mut writer = search_index::Writer::create(&search, 1).unwrap();
        let text = bundle::PageText {
            metadata: String::new(),
            body: "text".into(),
        };
        let mut added = Vec::new();
        let mut add = |path: &str, title: &str| {
            let key = search_index::page_key(path);
            let page = IndexedPage {
                key,
                path,
                title,
                text: &text,
            };
            writer.add_one(&page).unwrap();
            added.push(Added {
                key,
                fingerprint: index_fingerprint(path, SHA, title),
            });
        };
        // Read as expected; under another title; twice (the one key of two paths); and a page
        // that is no source page.
        add("pages/a.md", "Alpha");
        add("pages/b.md", "Record title");
        add("pages/c.md", "Gamma");
        add("pages/c.md", "Gamma");
        add("pages/nav.md", "Navigation");
        if flushed {
            writer.flush().unwrap();
        }
        let (count, unread) = finish_streamed(root.path(), writer, added, &pages).unwrap();
        assert_eq!((count, unread.len()), (3, 0));
        assert_eq!(titled(&search, "Alpha"), (1, 3));
        assert_eq!(titled(&search, "Beta").0, 1);
        assert_eq!(titled(&search, "Gamma").0, 1);
        for gone in ["Record title", "Navigation"] {
            assert_eq!(titled(&search, gone).0, 0, "{gone} (flushed: {flushed})");
        }
    }
}
