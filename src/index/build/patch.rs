//! The patch of the previous generation: only the changed files' catalog entries and cache
//! chunks rewritten.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

use super::assemble::write_with;
use super::{index_fingerprint, Files, Got, Page, Stamp, Written};
use crate::error::IndexError;
use crate::ids;
use crate::index::cache::{Cache, Entry, Sha};
use crate::index::catalog::{store, Catalog, CatalogFile};
use crate::index::{
    cache, open_catalog, BuildOptions, Counts, Previous, CATALOG_FILE, INGEST_CACHE_FILE,
};
use crate::ingest::bundle;
use crate::ingest::bundle::paths::PathClass;
use crate::ingest::bundle::BundleKind;

/// A patch of the previous generation: the files that changed (read again, with a checksum
/// that differs) and their previous catalog entries.
pub(super) struct PatchPlan<'a> {
    pub(super) previous: &'a Previous,
    catalog: Catalog,
    /// (file index, fresh index, previous catalog file) of each changed file.
    changed: Vec<(usize, usize, CatalogFile)>,
    /// The details of the cache chunks that hold changed files.
    chunks: HashMap<usize, Vec<bundle::Detail>>,
    derived: cache::Derived,
}

/// The patch of the previous generation for `files`, when one gives what an assembly would:
/// a bundle with the same assembly key (same files, record files, parse outcomes), the same
/// knowledge base, and no title changed.
pub(super) fn patch_plan<'a>(
    files: &Files<'_>,
    cache: &Cache,
    previous: &'a Previous,
    bundle_root: &Path,
    canonical_root: &Path,
    options: &BuildOptions,
) -> Option<PatchPlan<'a>> {
    if cache.kind() != BundleKind::Focowiki
        || previous.manifest.bundle_root != canonical_root.to_string_lossy()
        || files.jobs.len() != cache.len()
    {
        return None;
    }
    let derived = cache.derived()?;
    // Same files in the same order (the key says so too; this maps file i to entry i).
    let same_files = files.jobs.iter().zip(cache.entries()).all(|(job, entry)| {
        job.path() == entry.path() && job.file.relative == entry.disk && job.class == entry.class
    });
    if !same_files || files.assembly_key(BundleKind::Focowiki) != derived.key {
        return None;
    }
    // The knowledge base keeps its name and id.
    let kb_id = &previous.manifest.knowledge_base_id;
    if options
        .knowledge_base_id
        .as_ref()
        .is_some_and(|id| id != kb_id)
    {
        return None;
    }
    let catalog = open_catalog(&previous.generation).ok()?;
    if catalog.kb_id() != kb_id {
        return None;
    }
    let mut changed = Vec::new();
    for (i, got) in files.got.iter().enumerate() {
        let Got::Fresh(f) = *got else { continue };
        let entry = cache.entry(i);
        let r = &files.fresh[f];
        if Sha::of(&r.sha256) == entry.sha256 {
            continue;
        }
        if r.path == "index.md" && r.class == PathClass::RootIndex {
            let name = bundle::name_from(bundle_root, Some(&r.detail));
            let id = options
                .knowledge_base_id
                .clone()
                .unwrap_or_else(|| ids::knowledge_base_id(&name));
            if name != previous.manifest.knowledge_base_name || id != *kb_id {
                return None;
            }
        }
        let old = catalog.get(entry.position)?.clone();
        if old.path != r.path || old.disk.as_deref() != Some(r.disk.as_str()) {
            return None;
        }
        // A page that became a history, or stopped being one, changes the catalog's flags.
        if catalog.is_history(entry.position) != r.detail.history {
            return None;
        }
        // A title taken from a document record stays (the records did not change).
        if !entry.record_titled {
            let title = bundle::resolve_title(None, &r.path, &r.detail);
            if old.title.as_deref() != Some(title.as_str()) {
                return None;
            }
        }
        changed.push((i, f, old));
    }
    let mut chunks = HashMap::new();
    for (i, _, _) in &changed {
        let c = cache.chunk_of(*i);
        if let std::collections::hash_map::Entry::Vacant(slot) = chunks.entry(c) {
            slot.insert(cache.chunk(c).ok()?);
        }
    }
    Some(PatchPlan {
        previous,
        derived: derived.clone(),
        catalog,
        changed,
        chunks,
    })
}

/// The patch way: the previous catalog and ingest cache copied, block by block, with the
/// changed files updated; `meanwhile` runs on this thread while they are written.
pub(super) fn patch<T>(
    files: &Files<'_>,
    plan: PatchPlan<'_>,
    stamp: Stamp<'_>,
    meanwhile: impl FnOnce(&Written) -> T,
) -> Result<(Written, T), IndexError> {
    let cache = files.cache.expect("a patch has a cache");
    let PatchPlan {
        previous,
        catalog,
        changed,
        mut chunks,
        derived,
    } = plan;
    let store = catalog.store();

    // Entries: the previous ones, but the stat of every file read again and what changed of the
    // changed files.
    let mut updated = read_again(files, cache);
    let (pages, by_block) = apply_changes(files, &changed, &mut updated, stamp.revision);
    let parts = patched_parts(store, by_block);
    for (i, f, _) in &changed {
        let c = cache.chunk_of(*i);
        if let Some(details) = chunks.get_mut(&c) {
            details[i - cache.chunk_range(c).start] = files.fresh[*f].detail.clone();
        }
    }
    let entries =
        || (0..cache.len()).map(|i| updated.get(&i).copied().unwrap_or_else(|| cache.entry(i)));
    let mut diagnostics = stamp.scan_diagnostics;
    diagnostics.extend(bundle::problem_diagnostics(
        entries()
            .filter(|e| !e.problems.is_empty())
            .map(|e| (e.disk, e.problems)),
    ));
    diagnostics.extend(derived.diagnostics());

    let indexed = entries().filter_map(|e| e.indexed).collect();
    let counts = Counts {
        diagnostics: diagnostics.len() as u64,
        ..previous.manifest.counts.clone()
    };
    let mut written = Written {
        total_files: store.header().file_count as u64,
        name: previous.manifest.knowledge_base_name.clone(),
        kb_id: previous.manifest.knowledge_base_id.clone(),
        content_fingerprint: stamp.content_fingerprint,
        revision: stamp.revision,
        revision_changed: stamp.revision_changed,
        diagnostics,
        counts,
        indexed,
        pages,
        all_pages: false,
        crcs: Vec::new(),
    };
    // The catalog, and meanwhile the ingest cache: every chunk as stored but those of changed
    // files. `meanwhile` (the search index's update) needs neither file: it runs while they
    // are written and flushed, which is mostly waiting on the disk.
    let (tmp, made_ns) = (stamp.tmp, stamp.made_ns);
    let write_cache = || write_cache(cache, &chunks, entries, &derived, (tmp, made_ns));
    let (outcome, (catalog_written, cache_written)) = std::thread::scope(|scope| {
        let writes = scope.spawn(|| {
            rayon::join(
                || write_with(&tmp.join(CATALOG_FILE), |out| store::write(&parts, out)),
                write_cache,
            )
        });
        let outcome = meanwhile(&written);
        let writes = writes
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (outcome, writes)
    });
    written.crcs = vec![
        (CATALOG_FILE, catalog_written?),
        (INGEST_CACHE_FILE, cache_written?),
    ];
    Ok((written, outcome))
}

/// Changed catalog records by catalog block: (position, record).
type ByBlock = HashMap<usize, Vec<(u32, CatalogFile)>>;

/// The ingest cache's entry of each file read again: the previous one with the new stat.
fn read_again<'c>(files: &'c Files<'_>, cache: &'c Cache) -> HashMap<usize, Entry<'c>> {
    let mut updated = HashMap::new();
    for (i, got) in files.got.iter().enumerate() {
        if let Got::Fresh(f) = *got {
            let r = &files.fresh[f];
            let entry = Entry {
                size: r.size,
                mtime_ns: r.mtime_ns,
                problems: &r.problems,
                ..cache.entry(i)
            };
            updated.insert(i, entry);
        }
    }
    updated
}

/// What a changed file is now, in its entry and its catalog record (a source page takes
/// `revision`); the pages to index again, and the changed records by catalog block.
fn apply_changes<'c>(
    files: &'c Files<'_>,
    changed: &[(usize, usize, CatalogFile)],
    updated: &mut HashMap<usize, Entry<'c>>,
    revision: u64,
) -> (Vec<Page>, ByBlock) {
    let mut pages = Vec::new();
    let mut by_block = ByBlock::new();
    for (i, f, old) in changed {
        let r = &files.fresh[*f];
        let entry = updated.get_mut(i).expect("a changed file was read");
        let mut file = old.clone();
        file.size = r.size;
        file.sha256 = r.sha256.clone();
        if file.source_backed {
            file.frontmatter =
                crate::json_text::LazyObject::from_text(r.detail.frontmatter.clone());
            file.resource_revision = Some(revision);
        }
        entry.sha256 = Sha::of(&r.sha256);
        entry.resource_revision = file.resource_revision;
        if let Some(key) = file.index_key {
            let title = file.title.clone().unwrap_or_default();
            let fingerprint = index_fingerprint(&file.path, &file.sha256, &title);
            entry.indexed = Some((key, fingerprint));
            pages.push(Page {
                key,
                fingerprint,
                path: file.path.clone(),
                title,
                disk: file.disk.clone(),
                size: file.size,
            });
        }
        by_block
            .entry(entry.position as usize / store::BLOCK)
            .or_default()
            .push((entry.position, file));
    }
    (pages, by_block)
}

/// The catalog's parts: every block as stored but those of changed files.
fn patched_parts(store: &store::Store, by_block: ByBlock) -> store::Parts<'_> {
    let blocks = store.block_count();
    let mut file_blocks: Vec<Cow<'_, [u8]>> = (0..blocks)
        .map(|b| Cow::Borrowed(store.raw_file_block(b)))
        .collect();
    for (b, list) in by_block {
        let mut block = store.file_block(b).into_vec();
        for (position, file) in list {
            block[position as usize % store::BLOCK] = file;
        }
        file_blocks[b] = Cow::Owned(store::encode_block(&block));
    }
    let header = store.header();
    store::Parts {
        knowledge_base_id: header.knowledge_base_id.clone(),
        knowledge_base_name: header.knowledge_base_name.clone(),
        kind: header.kind,
        source_page_count: header.source_page_count,
        distinct_relations: header.distinct_relations,
        first_paths: store.first_paths().to_vec(),
        relation_starts: store.relation_starts(),
        keys: store.keys(),
        flags: store.flags(),
        file_blocks,
        relation_blocks: (0..blocks)
            .map(|b| Cow::Borrowed(store.raw_relation_block(b)))
            .collect(),
    }
}

/// The ingest cache of a patch in the generation folder `tmp`: runs of unchanged chunks
/// copied, the changed ones (`chunks`) encoded, then `entries`; its CRC-32.
fn write_cache<'e, E: ExactSizeIterator<Item = Entry<'e>>>(
    cache: &Cache,
    chunks: &HashMap<usize, Vec<bundle::Detail>>,
    entries: impl Fn() -> E,
    derived: &cache::Derived,
    (tmp, made_ns): (&Path, i128),
) -> Result<u32, IndexError> {
    let cache_path = tmp.join(INGEST_CACHE_FILE);
    let io = |e| IndexError::io(&cache_path, e);
    let mut writer = cache::Writer::create(&cache_path).map_err(io)?;
    let mut c = 0;
    while c < cache.chunk_count() {
        match chunks.get(&c) {
            None => {
                let mut end = c + 1;
                while end < cache.chunk_count() && !chunks.contains_key(&end) {
                    end += 1;
                }
                writer.copy_chunks(cache, c..end).map_err(io)?;
                c = end;
            }
            Some(details) => {
                let details: Vec<&bundle::Detail> = details.iter().collect();
                writer
                    .chunk(details.len(), &cache::encode_chunk(&details))
                    .map_err(io)?;
                c += 1;
            }
        }
    }
    writer
        .finish(
            BundleKind::Focowiki,
            made_ns,
            entries,
            Some(derived.clone()),
        )
        .map_err(io)
}
