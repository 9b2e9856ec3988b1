//! The assembly: a generation's catalog and ingest cache written whole from the files of a
//! build, in chunks.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

use rayon::prelude::*;
use serde::Serialize;

use super::{assembly_key, index_fingerprint, Files, Got, Page, Stamp, Written};
use crate::error::IndexError;
use crate::ids;
use crate::index::cache::{self, Cache, Entry, Sha};
use crate::index::catalog::store;
use crate::index::{
    open_catalog, search_index, while_creating, BuildingGeneration, Counts, CrcWriter, FileLock,
    Previous, BUILD_LOCK, CATALOG_FILE, INGEST_CACHE_FILE,
};
use crate::ingest::bundle::paths::PathClass;
use crate::ingest::bundle::{self, BundleKind, Code, Diagnostic, Job, ReadFile};
use crate::relation::Direction;

/// A file as the catalog stores it ([`CatalogFile`]'s encoding, borrowed).
#[derive(Serialize)]
pub(super) struct StoredFile<'a> {
    path: &'a str,
    disk: Option<&'a str>,
    class: PathClass,
    source_backed: bool,
    file_id: String,
    size: u64,
    sha256: &'a str,
    title: Option<&'a str>,
    frontmatter: &'a str,
    graph_of: Option<u32>,
    listed: bool,
    resource_revision: Option<u64>,
    index_key: Option<u64>,
}

/// A relation as the catalog stores it ([`super::catalog::CatalogRelation`]'s encoding).
#[derive(Serialize)]
pub(super) struct StoredRelation<'a> {
    from: u32,
    to: u32,
    relation_type: &'a str,
    direction: Direction,
    reason: Option<&'a str>,
}

/// A catalog position: a file read, or a relation record kbtools renders.
#[derive(Clone, Copy)]
pub(super) enum Slot {
    Read(u32),
    Virtual(u32),
}

/// Creates the folder of a generation being built and takes its lock (module docs of `index`):
/// the lock tells the next build that this folder is no leftover while this build runs.
pub(super) fn create_generation(tmp: &Path) -> Result<BuildingGeneration, IndexError> {
    let create = || {
        std::fs::create_dir_all(tmp).map_err(|e| IndexError::io(tmp, e))?;
        match FileLock::create(&tmp.join(BUILD_LOCK)) {
            Ok(lock) => Ok(BuildingGeneration {
                dir: tmp.to_path_buf(),
                published: false,
                _lock: lock,
            }),
            Err(e) => {
                let _ = std::fs::remove_dir(tmp);
                Err(e)
            }
        }
    };
    // Both steps under the index folder's creation lock: a build killed between them leaves a
    // folder without a lock file, which the next build can then tell from one being created.
    match tmp.parent() {
        Some(index_dir) => while_creating(index_dir, create).unwrap_or_else(create),
        None => create(),
    }
}

/// Writes `path` with `write`, then flushes it to disk.
pub(super) fn write_with(
    path: &Path,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<u32, IndexError> {
    write_unsynced(path, write)?.sync()
}

/// A file written and not yet synced ([`write_unsynced`]).
pub(super) struct Unsynced<'p> {
    path: &'p Path,
    file: std::fs::File,
    crc: u32,
}

impl Unsynced<'_> {
    /// Syncs the file; returns the CRC-32 of what was written.
    pub(super) fn sync(self) -> Result<u32, IndexError> {
        self.file
            .sync_all()
            .map_err(|e| IndexError::io(self.path, e))?;
        Ok(self.crc)
    }
}

/// Creates `path` and writes it with `write` (buffered, its CRC-32 made on the way), without
/// syncing it.
pub(super) fn write_unsynced<'p>(
    path: &'p Path,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<Unsynced<'p>, IndexError> {
    let file = std::fs::File::create(path).map_err(|e| IndexError::io(path, e))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, CrcWriter::new(file));
    write(&mut out).map_err(|e| IndexError::io(path, e))?;
    let (file, crc) = out
        .into_inner()
        .map_err(|e| IndexError::io(path, e.into_error()))?
        .into_parts();
    Ok(Unsynced { path, file, crc })
}

/// The assembly way: every file's parse through the bundle-wide steps, the catalog written
/// from them, and the ingest cache with every chunk (those of unchanged files copied).
pub(super) fn assemble(
    read: Vec<ReadFile>,
    kind: BundleKind,
    name: String,
    kb_id: &str,
    (cache, reuse): (Option<&Cache>, Option<&Cache>),
    previous: Option<&Previous>,
    stamp: Stamp<'_>,
) -> Result<Written, IndexError> {
    // The ingest cache's chunks first (the entries follow the catalog).
    let cache_path = stamp.tmp.join(INGEST_CACHE_FILE);
    let mut writer =
        cache::Writer::create(&cache_path).map_err(|e| IndexError::io(&cache_path, e))?;
    write_chunks(&read, reuse, &mut writer).map_err(|e| IndexError::io(&cache_path, e))?;

    let assembly = match &stamp.exclusions {
        Some(rules) => bundle::assemble_excluding(kind, &read, &|path| rules.excludes(path)),
        None => bundle::assemble(kind, &read),
    };
    let mut diagnostics = stamp.scan_diagnostics;
    diagnostics.extend(bundle::problem_diagnostics(
        read.iter()
            .map(|r| (r.disk.as_str(), r.problems.as_slice())),
    ));
    let derived_start = diagnostics.len();
    diagnostics.extend(assembly.diagnostics.iter().cloned());

    let (slots, position_of_read) = slots(&read, &assembly.virtual_files);
    let revisions = page_revisions(&read, &assembly, cache, previous, stamp.revision);
    let index_keys = index_keys(&read, &assembly, &slots, &mut diagnostics);
    let layout = Layout {
        read: &read,
        assembly: &assembly,
        kb_id,
        slots,
        position_of_read,
        revisions,
        index_keys,
    };

    // The catalog now, and its encoded blocks freed before the ingest cache's entries and the
    // pages to index are made (at 100,000 pages they were held together, 70 MiB); synced
    // beside the ingest cache.
    let parts = layout.catalog_parts(kind, &name);
    let source_pages = parts.source_page_count;
    let catalog_path = stamp.tmp.join(CATALOG_FILE);
    let catalog = write_unsynced(&catalog_path, |out| store::write(&parts, out))?;
    drop(parts);

    let virtuals = &assembly.virtual_files;
    let counts = Counts {
        files: (read.len() + virtuals.iter().filter(|f| f.listed).count()) as u64,
        virtual_files: virtuals.len() as u64,
        source_pages,
        relations: assembly.relations.len() as u64,
        diagnostics: diagnostics.len() as u64,
    };
    let (entries, pages) = layout.entries_and_pages();
    let indexed_pages = pages.iter().map(|p| (p.key, p.fingerprint)).collect();
    let derived = cache::Derived {
        key: assembly_key(
            kind,
            read.iter().map(|r| {
                (
                    r.path.as_str(),
                    r.disk.as_str(),
                    r.class,
                    Sha::of(&r.sha256),
                    r.detail.parsed,
                )
            }),
        ),
        diagnostics: cache::Derived::keep(&diagnostics[derived_start..]),
    };
    let total_files = layout.slots.len() as u64;
    // The catalog synced, and meanwhile the rest of the ingest cache written.
    let (catalog_written, cache_written) = rayon::join(
        || catalog.sync(),
        || {
            writer
                .finish(
                    kind,
                    stamp.made_ns,
                    || entries.iter().copied(),
                    Some(derived),
                )
                .map_err(|e| IndexError::io(&cache_path, e))
        },
    );
    let crcs = vec![
        (CATALOG_FILE, catalog_written?),
        (INGEST_CACHE_FILE, cache_written?),
    ];
    drop(entries);
    drop(layout);
    drop(assembly);
    drop(read);
    Ok(Written {
        total_files,
        name,
        kb_id: kb_id.to_string(),
        content_fingerprint: stamp.content_fingerprint,
        revision: stamp.revision,
        revision_changed: stamp.revision_changed,
        diagnostics,
        counts,
        indexed: indexed_pages,
        pages,
        all_pages: true,
        crcs,
    })
}

/// Catalog positions: the files read and the rendered records, in path order; and the
/// position of each file read.
fn slots(read: &[ReadFile], virtuals: &[bundle::VirtualFile]) -> (Vec<Slot>, Vec<u32>) {
    let mut slots = Vec::with_capacity(read.len() + virtuals.len());
    let mut position_of_read = vec![0u32; read.len()];
    let (mut i, mut v) = (0, 0);
    while i < read.len() || v < virtuals.len() {
        let take_read = v == virtuals.len()
            || (i < read.len() && read[i].path.as_str() < virtuals[v].path.as_str());
        if take_read {
            position_of_read[i] = slots.len() as u32;
            slots.push(Slot::Read(i as u32));
            i += 1;
        } else {
            slots.push(Slot::Virtual(v as u32));
            v += 1;
        }
    }
    (slots, position_of_read)
}

/// Each file's resource revision: a source page keeps its revision (from the previous build's
/// ingest cache, else its catalog) while its content does, and takes `revision` when it
/// changes; other files have none.
fn page_revisions(
    read: &[ReadFile],
    assembly: &bundle::Assembly,
    cache: Option<&Cache>,
    previous: Option<&Previous>,
    revision: u64,
) -> Vec<Option<u64>> {
    let previous_catalog;
    let mut previous_pages: HashMap<&str, (Sha<'_>, Option<u64>)> = HashMap::new();
    if let Some(cache) = cache {
        previous_pages = cache
            .entries()
            .filter(|e| e.resource_revision.is_some())
            .map(|e| (e.logical.unwrap_or(e.disk), (e.sha256, e.resource_revision)))
            .collect();
    } else if let Some(p) = previous {
        previous_catalog = open_catalog(&p.generation).ok();
        if let Some(catalog) = &previous_catalog {
            previous_pages = catalog
                .iter_files()
                .map(|f| (f.path.as_str(), (Sha::of(&f.sha256), f.resource_revision)))
                .collect();
        }
    }
    read.iter()
        .enumerate()
        .map(|(i, r)| {
            assembly.source_backed[i].then(|| match previous_pages.get(r.path.as_str()) {
                Some((sha, Some(rev))) if *sha == Sha::of(&r.sha256) => *rev,
                _ => revision,
            })
        })
        .collect()
}

/// Each file's search index key (source pages that parsed). Two pages with one key (a 64-bit
/// hash collision) cannot both be indexed: the first in path order is, the other is reported.
fn index_keys(
    read: &[ReadFile],
    assembly: &bundle::Assembly,
    slots: &[Slot],
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<Option<u64>> {
    let mut index_keys: Vec<Option<u64>> = vec![None; read.len()];
    let mut keys: HashMap<u64, u32> = HashMap::new();
    for slot in slots {
        let Slot::Read(i) = *slot else { continue };
        let r = &read[i as usize];
        if !(assembly.source_backed[i as usize] && r.detail.parsed) {
            continue;
        }
        let key = search_index::page_key(&r.path);
        if let Some(first) = keys.get(&key) {
            diagnostics.push(Diagnostic::new(
                Code::IndexCollision,
                r.path.clone(),
                None,
                format!(
                    "index key collides with {}; served but not searchable",
                    read[*first as usize].path
                ),
            ));
            continue;
        }
        keys.insert(key, i);
        index_keys[i as usize] = Some(key);
    }
    index_keys
}

/// Where each file of an assembly goes, and what the catalog and the ingest cache record of
/// it.
struct Layout<'a> {
    read: &'a [ReadFile],
    assembly: &'a bundle::Assembly,
    kb_id: &'a str,
    slots: Vec<Slot>,
    position_of_read: Vec<u32>,
    revisions: Vec<Option<u64>>,
    index_keys: Vec<Option<u64>>,
}

impl Layout<'_> {
    /// The catalog's parts: its blocks of files and relations (encoded in parallel), the first
    /// path of each block, the relations' starts, the index keys and the source-page flags.
    fn catalog_parts(&self, kind: BundleKind, name: &str) -> store::Parts<'static> {
        let (read, assembly, slots) = (self.read, self.assembly, &self.slots);
        // Relations by position (positions follow the path order of the files read, so they
        // stay sorted by source page).
        let relation_starts = store::relation_starts(
            slots.len(),
            assembly
                .relations
                .iter()
                .map(|r| self.position_of_read[r.from as usize]),
        );
        let blocks = slots.len().div_ceil(store::BLOCK);
        let block = |b: usize| &slots[b * store::BLOCK..((b + 1) * store::BLOCK).min(slots.len())];
        let file_blocks: Vec<Cow<'_, [u8]>> = (0..blocks)
            .into_par_iter()
            .map(|b| {
                let views: Vec<StoredFile<'_>> = block(b)
                    .iter()
                    .map(|slot| self.stored_file(*slot))
                    .collect();
                Cow::Owned(store::encode_block(&views))
            })
            .collect();
        let relation_blocks: Vec<Cow<'_, [u8]>> = (0..blocks)
            .into_par_iter()
            .map(|b| {
                let first = relation_starts[b * store::BLOCK] as usize;
                let end = relation_starts[((b + 1) * store::BLOCK).min(slots.len())] as usize;
                let views: Vec<StoredRelation<'_>> = assembly.relations[first..end]
                    .iter()
                    .map(|r| {
                        let text = assembly.text(read, r);
                        StoredRelation {
                            from: self.position_of_read[r.from as usize],
                            to: self.position_of_read[r.to as usize],
                            relation_type: text.relation_type,
                            direction: text.direction,
                            reason: text.reason,
                        }
                    })
                    .collect();
                Cow::Owned(store::encode_block(&views))
            })
            .collect();
        let path_of = |slot: &Slot| match *slot {
            Slot::Read(i) => read[i as usize].path.as_str(),
            Slot::Virtual(v) => assembly.virtual_files[v as usize].path.as_str(),
        };
        let mut keys: Vec<(u64, u32)> = self
            .index_keys
            .iter()
            .enumerate()
            .filter_map(|(i, k)| Some(((*k)?, self.position_of_read[i])))
            .collect();
        keys.sort_unstable();
        store::Parts {
            knowledge_base_id: self.kb_id.to_string(),
            knowledge_base_name: name.to_string(),
            kind,
            source_page_count: assembly.source_backed.iter().filter(|s| **s).count() as u64,
            distinct_relations: distinct_relations(&assembly.relations),
            first_paths: slots
                .chunks(store::BLOCK)
                .map(|c| path_of(&c[0]).to_string())
                .collect(),
            relation_starts,
            keys,
            flags: slots
                .iter()
                .map(|slot| match *slot {
                    Slot::Read(i) if assembly.source_backed[i as usize] => {
                        let history = read[i as usize].detail.history;
                        store::SOURCE_FLAG | if history { store::HISTORY_FLAG } else { 0 }
                    }
                    _ => 0,
                })
                .collect(),
            file_blocks,
            relation_blocks,
        }
    }

    /// The file at `slot` as the catalog stores it.
    fn stored_file(&self, slot: Slot) -> StoredFile<'_> {
        let kb_id = self.kb_id;
        match slot {
            Slot::Read(i) => {
                let i = i as usize;
                let r = &self.read[i];
                let source_backed = self.assembly.source_backed[i];
                StoredFile {
                    path: &r.path,
                    disk: Some(&r.disk),
                    class: r.class,
                    source_backed,
                    file_id: if source_backed {
                        ids::source_file_id(kb_id, &r.path)
                    } else {
                        ids::generated_file_id(kb_id, &r.path)
                    },
                    size: r.size,
                    sha256: &r.sha256,
                    title: Some(&self.assembly.titles[i]),
                    frontmatter: if source_backed {
                        &r.detail.frontmatter
                    } else {
                        ""
                    },
                    graph_of: None,
                    listed: true,
                    resource_revision: self.revisions[i],
                    index_key: self.index_keys[i],
                }
            }
            Slot::Virtual(v) => {
                let f = &self.assembly.virtual_files[v as usize];
                StoredFile {
                    path: &f.path,
                    disk: None,
                    class: PathClass::PerFileGraph,
                    source_backed: false,
                    file_id: ids::generated_file_id(kb_id, &f.path),
                    size: f.size,
                    sha256: &f.sha256,
                    title: Some(&f.title),
                    frontmatter: "",
                    graph_of: Some(self.position_of_read[f.page as usize]),
                    listed: f.listed,
                    resource_revision: None,
                    index_key: None,
                }
            }
        }
    }

    /// The ingest cache's entry of each file read, and the pages to index.
    fn entries_and_pages(&self) -> (Vec<Entry<'_>>, Vec<Page>) {
        let mut pages = Vec::new();
        let mut entries = Vec::with_capacity(self.read.len());
        for (i, r) in self.read.iter().enumerate() {
            let title = &self.assembly.titles[i];
            let indexed = self.index_keys[i].map(|key| {
                let fingerprint = index_fingerprint(&r.path, &r.sha256, title);
                pages.push(Page {
                    key,
                    fingerprint,
                    path: r.path.clone(),
                    title: title.clone(),
                    disk: Some(r.disk.clone()),
                    size: r.size,
                });
                (key, fingerprint)
            });
            entries.push(Entry {
                disk: &r.disk,
                logical: (r.path != r.disk).then_some(r.path.as_str()),
                class: r.class,
                size: r.size,
                mtime_ns: r.mtime_ns,
                sha256: Sha::of(&r.sha256),
                parsed: r.detail.parsed,
                problems: &r.problems,
                position: self.position_of_read[i],
                record_titled: self.assembly.record_titled[i],
                resource_revision: self.revisions[i],
                indexed,
            });
        }
        (entries, pages)
    }
}

/// The number of page pairs a relation joins (either way).
fn distinct_relations(relations: &[bundle::RelationRef]) -> u64 {
    let mut pairs: Vec<(u32, u32)> = relations
        .iter()
        .map(|r| (r.from.min(r.to), r.from.max(r.to)))
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    pairs.len() as u64
}

/// Writes the chunks of the ingest cache for `read`: a chunk whose files are all unchanged and
/// were one chunk of the previous cache is copied as stored; the others are encoded (in
/// parallel, a group at a time).
pub(super) fn write_chunks(
    read: &[ReadFile],
    cache: Option<&Cache>,
    writer: &mut cache::Writer,
) -> std::io::Result<()> {
    let ranges = cache::chunk_ranges(read.iter().map(|r| r.disk.as_str()));
    // The previous chunks by their first file.
    let previous: HashMap<&str, usize> = cache
        .map(|c| {
            (0..c.chunk_count())
                .filter(|&ch| !c.chunk_range(ch).is_empty())
                .map(|ch| (c.entry(c.chunk_range(ch).start).disk, ch))
                .collect()
        })
        .unwrap_or_default();
    let reusable = |range: &std::ops::Range<usize>| -> Option<usize> {
        let cache = cache?;
        let ch = *previous.get(read[range.start].disk.as_str())?;
        let old = cache.chunk_range(ch);
        (old.len() == range.len()
            && old.zip(range.clone()).all(|(e, i)| {
                let (entry, r) = (cache.entry(e), &read[i]);
                entry.disk == r.disk
                    && entry.path() == r.path
                    && entry.class == r.class
                    && entry.sha256 == Sha::of(&r.sha256)
                    && entry.size == r.size
                    && entry.parsed == r.detail.parsed
            }))
        .then_some(ch)
    };
    for group in ranges.chunks(64) {
        let encoded: Vec<Option<Vec<u8>>> = group
            .par_iter()
            .map(|range| {
                reusable(range).is_none().then(|| {
                    let details: Vec<&bundle::Detail> =
                        read[range.clone()].iter().map(|r| &r.detail).collect();
                    cache::encode_chunk(&details)
                })
            })
            .collect();
        for (range, bytes) in group.iter().zip(encoded) {
            match bytes {
                Some(bytes) => writer.chunk(range.len(), &bytes)?,
                None => {
                    let ch = reusable(range).expect("checked above");
                    let cache = cache.expect("a reused chunk has a cache");
                    writer.copy_chunks(cache, ch..ch + 1)?;
                }
            }
        }
    }
    Ok(())
}

/// Every file's parse: the fresh reads, and the cached ones decoded from their chunks (in
/// parallel). A file whose chunk does not decode is read again.
pub(super) fn all_files(files: Files<'_>, kind: BundleKind) -> Vec<ReadFile> {
    let Files {
        jobs,
        got,
        fresh,
        cache,
    } = files;
    // Every file read, in order (a full build's): the list as it is, not a second one beside it
    // (at 211,000 files, 80 MiB more at the build's peak).
    if got
        .iter()
        .enumerate()
        .all(|(i, g)| matches!(g, Got::Fresh(f) if *f == i))
    {
        return fresh;
    }
    let mut details: Vec<Option<bundle::Detail>> = Vec::new();
    if let Some(cache) = cache {
        let mut needed = vec![false; cache.chunk_count()];
        for g in &got {
            if let Got::Cached(e) = g {
                needed[cache.chunk_of(*e as usize)] = true;
            }
        }
        let chunks: Vec<Option<Vec<bundle::Detail>>> = (0..cache.chunk_count())
            .into_par_iter()
            .map(|c| needed[c].then(|| cache.chunk(c).ok()).flatten())
            .collect();
        details = Vec::with_capacity(cache.len());
        for (c, chunk) in chunks.into_iter().enumerate() {
            let range = cache.chunk_range(c);
            match chunk {
                Some(list) => details.extend(list.into_iter().map(Some)),
                None => details.extend(range.map(|_| None)),
            }
        }
    }
    let mut fresh: Vec<Option<ReadFile>> = fresh.into_iter().map(Some).collect();
    let mut read: Vec<Option<ReadFile>> = Vec::with_capacity(jobs.len());
    let mut again = Vec::new();
    for (i, g) in got.into_iter().enumerate() {
        match g {
            Got::Fresh(f) => read.push(fresh[f].take()),
            Got::Cached(e) => {
                let entry = cache.expect("a cached file has a cache").entry(e as usize);
                match details[e as usize].take() {
                    Some(detail) => read.push(Some(ReadFile {
                        path: jobs[i].path().to_string(),
                        disk: entry.disk.to_string(),
                        class: entry.class,
                        size: entry.size,
                        mtime_ns: entry.mtime_ns,
                        sha256: entry.sha256.text(),
                        problems: entry.problems.to_vec(),
                        detail,
                    })),
                    None => {
                        again.push(i);
                        read.push(None);
                    }
                }
            }
        }
    }
    drop(details);
    if !again.is_empty() {
        let to_read: Vec<&Job> = again.iter().map(|&i| &jobs[i]).collect();
        for (i, r) in again.iter().zip(bundle::read_files(kind, &to_read)) {
            read[*i] = Some(r);
        }
    }
    read.into_iter()
        .map(|r| r.expect("every file read or decoded"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::catalog::{CatalogFile, CatalogRelation};

    #[test]
    fn stored_views_encode_as_the_catalog_types() {
        let file = CatalogFile {
            path: "pages/a.md".into(),
            disk: Some("pages/a.md".into()),
            class: PathClass::Page,
            source_backed: true,
            file_id: "id".into(),
            size: 300,
            sha256: "ab".into(),
            title: Some("A".into()),
            frontmatter: crate::json_text::LazyObject::from_text(r#"{"tags":["x"]}"#.into()),
            graph_of: Some(7),
            listed: false,
            resource_revision: Some(4),
            index_key: Some(u64::MAX - 3),
        };
        let view = StoredFile {
            path: "pages/a.md",
            disk: Some("pages/a.md"),
            class: PathClass::Page,
            source_backed: true,
            file_id: "id".into(),
            size: 300,
            sha256: "ab",
            title: Some("A"),
            frontmatter: r#"{"tags":["x"]}"#,
            graph_of: Some(7),
            listed: false,
            resource_revision: Some(4),
            index_key: Some(u64::MAX - 3),
        };
        assert_eq!(
            postcard::to_stdvec(&[file]).unwrap(),
            postcard::to_stdvec(&[view]).unwrap()
        );
        let relation = CatalogRelation {
            from: 3,
            to: 70_000,
            relation_type: "references".into(),
            direction: Direction::Incoming,
            reason: Some("because".into()),
        };
        let view = StoredRelation {
            from: 3,
            to: 70_000,
            relation_type: "references",
            direction: Direction::Incoming,
            reason: Some("because"),
        };
        assert_eq!(
            postcard::to_stdvec(&relation).unwrap(),
            postcard::to_stdvec(&view).unwrap()
        );
    }
}
