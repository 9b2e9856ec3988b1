//! The assembly: a generation's catalog and ingest cache written whole from the files of a
//! build, in chunks.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

use rayon::prelude::*;
use serde::Serialize;

use super::{assembly_key, index_fingerprint, Page, Stamp, Written};
use crate::bundle::paths::PathClass;
use crate::bundle::{self, BundleKind, Code, Diagnostic, ReadFile};
use crate::error::IndexError;
use crate::ids;
use crate::index::cache::{self, Cache, Entry, Sha};
use crate::index::catalog::store;
use crate::index::{
    open_catalog, search_index, while_creating, BuildingGeneration, Counts, CrcWriter, FileLock,
    Previous, BUILD_LOCK, CATALOG_FILE, INGEST_CACHE_FILE,
};
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

    let assembly = bundle::assemble(kind, &read);
    let mut diagnostics = stamp.scan_diagnostics;
    diagnostics.extend(bundle::problem_diagnostics(
        read.iter()
            .map(|r| (r.disk.as_str(), r.problems.as_slice())),
    ));
    let derived_start = diagnostics.len();
    diagnostics.extend(assembly.diagnostics.iter().cloned());

    // Catalog positions: the files read and the rendered records, in path order.
    let virtuals = &assembly.virtual_files;
    let mut slots = Vec::with_capacity(read.len() + virtuals.len());
    let mut position_of_read = vec![0u32; read.len()];
    let mut position_of_virtual = vec![0u32; virtuals.len()];
    {
        let (mut i, mut v) = (0, 0);
        while i < read.len() || v < virtuals.len() {
            let take_read = v == virtuals.len()
                || (i < read.len() && read[i].path.as_str() < virtuals[v].path.as_str());
            if take_read {
                position_of_read[i] = slots.len() as u32;
                slots.push(Slot::Read(i as u32));
                i += 1;
            } else {
                position_of_virtual[v] = slots.len() as u32;
                slots.push(Slot::Virtual(v as u32));
                v += 1;
            }
        }
    }

    // Revisions: a source page keeps its revision while its content does.
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
    let mut revisions: Vec<Option<u64>> = Vec::with_capacity(read.len());
    for (i, r) in read.iter().enumerate() {
        revisions.push(assembly.source_backed[i].then(
            || match previous_pages.get(r.path.as_str()) {
                Some((sha, Some(rev))) if *sha == Sha::of(&r.sha256) => *rev,
                _ => stamp.revision,
            },
        ));
    }
    drop(previous_pages);

    // Index keys: two pages with one key (a 64-bit hash collision) cannot both be indexed: the
    // first in path order is.
    let mut index_keys: Vec<Option<u64>> = vec![None; read.len()];
    let mut keys: HashMap<u64, u32> = HashMap::new();
    for slot in &slots {
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
    drop(keys);

    // Relations by position (positions follow the path order of the files read, so they stay
    // sorted by source page).
    let relation_starts = store::relation_starts(
        slots.len(),
        assembly
            .relations
            .iter()
            .map(|r| position_of_read[r.from as usize]),
    );
    let distinct_relations = {
        let mut pairs: Vec<(u32, u32)> = assembly
            .relations
            .iter()
            .map(|r| (r.from.min(r.to), r.from.max(r.to)))
            .collect();
        pairs.sort_unstable();
        pairs.dedup();
        pairs.len() as u64
    };

    let blocks = slots.len().div_ceil(store::BLOCK);
    let stored_file = |slot: Slot| -> StoredFile<'_> {
        match slot {
            Slot::Read(i) => {
                let i = i as usize;
                let r = &read[i];
                let source_backed = assembly.source_backed[i];
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
                    title: Some(&assembly.titles[i]),
                    frontmatter: if source_backed {
                        &r.detail.frontmatter
                    } else {
                        ""
                    },
                    graph_of: None,
                    listed: true,
                    resource_revision: revisions[i],
                    index_key: index_keys[i],
                }
            }
            Slot::Virtual(v) => {
                let f = &virtuals[v as usize];
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
                    graph_of: Some(position_of_read[f.page as usize]),
                    listed: f.listed,
                    resource_revision: None,
                    index_key: None,
                }
            }
        }
    };
    let file_blocks: Vec<Cow<'_, [u8]>> = (0..blocks)
        .into_par_iter()
        .map(|b| {
            let views: Vec<StoredFile<'_>> = slots
                [b * store::BLOCK..((b + 1) * store::BLOCK).min(slots.len())]
                .iter()
                .map(|slot| stored_file(*slot))
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
                    let text = assembly.text(&read, r);
                    StoredRelation {
                        from: position_of_read[r.from as usize],
                        to: position_of_read[r.to as usize],
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
        Slot::Virtual(v) => virtuals[v as usize].path.as_str(),
    };
    let mut key_table: Vec<(u64, u32)> = index_keys
        .iter()
        .enumerate()
        .filter_map(|(i, k)| Some(((*k)?, position_of_read[i])))
        .collect();
    key_table.sort_unstable();
    let source_pages = assembly.source_backed.iter().filter(|s| **s).count() as u64;
    let parts = store::Parts {
        knowledge_base_id: kb_id.to_string(),
        knowledge_base_name: name.clone(),
        kind,
        source_page_count: source_pages,
        distinct_relations,
        first_paths: slots
            .chunks(store::BLOCK)
            .map(|c| path_of(&c[0]).to_string())
            .collect(),
        relation_starts,
        keys: key_table,
        flags: slots
            .iter()
            .map(|slot| match *slot {
                Slot::Read(i) if assembly.source_backed[i as usize] => store::SOURCE_FLAG,
                _ => 0,
            })
            .collect(),
        file_blocks,
        relation_blocks,
    };

    // The catalog now, and its encoded blocks freed before the ingest cache's entries and the
    // pages to index are made (at 100,000 pages they were held together, 70 MiB); synced
    // beside the ingest cache.
    let catalog_path = stamp.tmp.join(CATALOG_FILE);
    let catalog = write_unsynced(&catalog_path, |out| store::write(&parts, out))?;
    drop(parts);

    let counts = Counts {
        files: (read.len() + virtuals.iter().filter(|f| f.listed).count()) as u64,
        virtual_files: virtuals.len() as u64,
        source_pages,
        relations: assembly.relations.len() as u64,
        diagnostics: diagnostics.len() as u64,
    };
    let mut pages = Vec::new();
    let mut indexed_pages = Vec::new();
    let mut entries = Vec::with_capacity(read.len());
    for (i, r) in read.iter().enumerate() {
        let indexed = index_keys[i].map(|key| {
            let fingerprint = index_fingerprint(&r.path, &r.sha256, &assembly.titles[i]);
            pages.push(Page {
                key,
                fingerprint,
                path: r.path.clone(),
                title: assembly.titles[i].clone(),
                disk: Some(r.disk.clone()),
                size: r.size,
            });
            indexed_pages.push((key, fingerprint));
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
            position: position_of_read[i],
            record_titled: assembly.record_titled[i],
            resource_revision: revisions[i],
            indexed,
        });
    }
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
    let total_files = slots.len() as u64;
    drop(slots);
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
    drop(assembly);
    drop(read);
    Ok(Written {
        total_files,
        name,
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
