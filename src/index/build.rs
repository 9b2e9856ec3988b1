//! Building an index generation: ingest (reusing the ingest cache), the catalog, the ingest
//! cache for the next build, the full-text index, then the swap.
//!
//! Two ways to the catalog:
//!
//! - **assembly** (a full build, or a change that touches the bundle's structure): every file's
//!   parse (read, or decoded from the ingest cache) goes through the bundle-wide steps
//!   ([`bundle::assemble`]) and the catalog is written block by block from it;
//! - **patch** (only files that shape nothing but themselves changed — a page's text, say):
//!   the previous catalog is copied, each block as stored, except the blocks of the changed
//!   files, which are decoded, updated and encoded again. The ingest cache records what the
//!   assembly depended on ([`assembly_key`]), so a patch is taken only when an assembly would
//!   give the same result.
//!
//! A full build indexes each page as it is read, with the text of the same parse: the search
//! index writer's threads work during the reading instead of after it (at 100,000 pages:
//! 17.5 s -> 14.9 s). The pages' segments are then written, and the writer's arenas freed,
//! before the other files (the records) are read and the catalog made, so that the arenas and
//! those parses are not held together. A page is indexed under the
//! title its document record (the document packets are read first) or its own text gives it;
//! once the bundle-wide steps have decided, a page indexed under another path or title, or
//! that is no source page, is deleted, and the source pages not indexed so are read again and
//! indexed ([`finish_streamed`]). An update (or a full build over
//! [`BuildOptions::streamed_bytes`]) reads page texts again when it indexes the pages, a batch at
//! a time, so a large bundle's texts are never all held.
//!
//! This file plans and runs a build; the assembly is [`assemble`], the patch [`patch`], and the
//! search index's pages, streamed or updated, [`stream`].

use std::collections::HashMap;
use std::path::Path;

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::cache::{self, Cache, Entry, Sha};
use super::manifest::{manifest_bytes, record_files};
use super::search_index;
use super::{
    damage_line, erased, last_revision, load_previous, lock_for_writing, read_manifest,
    remove_leftovers, sync_dir, write_file, BuildOptions, BuildReport, BuildWork, Counts, Manifest,
    Previous, Verify, BUILD_LOCK, CATALOG_FILE, INDEX_FORMAT_VERSION, INGEST_CACHE_FILE,
};
use crate::bundle::paths::PathClass;
use crate::bundle::{self, BundleKind, Code, Diagnostic, Job, ReadFile};
use crate::error::IndexError;
use crate::ids;

mod assemble;
mod patch;
mod prepare;
mod publish;
mod semantic;
mod stream;

use assemble::{assemble, create_generation};
use patch::{patch, patch_plan};
use prepare::{index_inside_bundle, split_by_cache, unchanged};
use publish::{crash_point, publish};
use stream::{finish_streamed, incremental_search, index_pages, pages_of_catalog, read_and_index};

/// Modification times this close before the cache was made are not trusted (ns).
const RACY_WINDOW_NS: i128 = 2_000_000_000;
/// Source pages whose texts are read and indexed at once (by file size).
const BATCH_BYTES: u64 = 64 << 20;

/// A source page to index.
struct Page {
    key: u64,
    /// [`index_fingerprint`].
    fingerprint: [u8; 16],
    path: String,
    title: String,
    disk: Option<String>,
    size: u64,
}

/// What the full-text index holds of a page: its path, content and title. A page whose
/// fingerprint changed is indexed again.
fn index_fingerprint(path: &str, sha256: &str, title: &str) -> [u8; 16] {
    let mut hasher = Sha256::new();
    for part in [path, sha256, title] {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    let mut out = [0u8; 16];
    out.copy_from_slice(&hasher.finalize()[..16]);
    out
}

/// What the bundle-wide steps of a bundle depend on besides the files' own titles: every
/// file's paths, class and whether it parsed, and the content of every record file (routers,
/// document packets, per-file graphs), and the [`super::DERIVATION_VERSION`] of the steps.
/// Equal keys give equal source pages, relations, rendered
/// relation records (when the titles are equal too), catalog positions and diagnostics.
fn assembly_key<'a>(
    kind: BundleKind,
    files: impl Iterator<Item = (&'a str, &'a str, PathClass, Sha<'a>, bool)>,
) -> String {
    let mut hasher = bundle::walk::BufferedSha256::new();
    hasher.update(format!("{kind:?}\n{}\n", super::DERIVATION_VERSION).as_bytes());
    for (path, disk, class, sha256, parsed) in files {
        hasher.update(path.as_bytes());
        hasher.update(&[0]);
        hasher.update(disk.as_bytes());
        hasher.update(&[0, cache::class_code(class), u8::from(parsed)]);
        if bundle::is_record_class(class) {
            sha256.with_text(|text| hasher.update(text.as_bytes()));
        }
        hasher.update(b"\n");
    }
    hex::encode(hasher.finalize())
}

/// A file of this build: its previous entry (unchanged, not read) or its fresh read.
enum Got {
    Cached(u32),
    Fresh(usize),
}

/// The files of this build and where each one's parse is.
struct Files<'c> {
    jobs: Vec<Job>,
    got: Vec<Got>,
    fresh: Vec<ReadFile>,
    cache: Option<&'c Cache>,
}

impl Files<'_> {
    fn sha256(&self, i: usize) -> Sha<'_> {
        match self.got[i] {
            Got::Cached(e) => self.entry(e).sha256,
            Got::Fresh(f) => Sha::of(&self.fresh[f].sha256),
        }
    }

    fn parsed(&self, i: usize) -> bool {
        match self.got[i] {
            Got::Cached(e) => self.entry(e).parsed,
            Got::Fresh(f) => self.fresh[f].detail.parsed,
        }
    }

    fn entry(&self, e: u32) -> Entry<'_> {
        self.cache
            .expect("a cached file has a cache")
            .entry(e as usize)
    }

    fn content_fingerprint(&self, kind: BundleKind) -> String {
        let mut hasher = bundle::ContentHasher::new(kind);
        for (i, job) in self.jobs.iter().enumerate() {
            self.sha256(i)
                .with_text(|sha256| hasher.add(job.path(), sha256));
        }
        hasher.finish()
    }

    fn assembly_key(&self, kind: BundleKind) -> String {
        assembly_key(
            kind,
            (0..self.jobs.len()).map(|i| {
                let job = &self.jobs[i];
                (
                    job.path(),
                    job.file.relative.as_str(),
                    job.class,
                    self.sha256(i),
                    self.parsed(i),
                )
            }),
        )
    }
}

/// What a build wrote besides the search index, and what indexing needs.
struct Written {
    name: String,
    /// Catalog files (listed or not).
    total_files: u64,
    content_fingerprint: String,
    revision: u64,
    revision_changed: bool,
    diagnostics: Vec<Diagnostic>,
    counts: Counts,
    /// (key, fingerprint) of every indexed page (for the search index: which pages changed).
    indexed: Vec<(u64, [u8; 16])>,
    /// Every indexed page (assembly), or the pages whose fingerprint changed (patch).
    pages: Vec<Page>,
    all_pages: bool,
    /// The CRC-32 of the files written (the catalog and the ingest cache), made as they were
    /// written: the manifest records them without reading the files again.
    crcs: Vec<(&'static str, u32)>,
}

/// What a generation records beside its files, whichever way they are written (assembled or
/// patched): the scan's diagnostics, the content fingerprint, the revision and whether it
/// changed, when the build started reading, and the folder being written.
struct Stamp<'a> {
    scan_diagnostics: Vec<Diagnostic>,
    content_fingerprint: String,
    revision: u64,
    revision_changed: bool,
    made_ns: i128,
    tmp: &'a Path,
}

/// What the revision and the generation folder depend on.
struct Naming<'a> {
    index_dir: &'a Path,
    previous: Option<&'a Previous>,
    kb_id: String,
}

impl Naming<'_> {
    /// (revision, changed) for content with this fingerprint.
    fn revision(&self, content_fingerprint: &str) -> (u64, bool) {
        match self.previous {
            Some(p)
                if p.manifest.content_fingerprint == content_fingerprint
                    && p.manifest.knowledge_base_id == self.kb_id =>
            {
                (p.manifest.active_content_revision, false)
            }
            Some(p) => (p.manifest.active_content_revision + 1, true),
            // An index of another format (or a damaged one) still tells the last revision, so
            // that cursors issued against it are refused after the rebuild.
            None => (last_revision(self.index_dir).map_or(1, |r| r + 1), true),
        }
    }
}

/// The keys of the pages a build listed but could not read again for indexing (removed or
/// replaced during the build), when there are any.
const UNINDEXED_FILE: &str = "unindexed.json";

/// A page that could not be read again for indexing: its key and its file.
type Unread = (u64, String);

pub(crate) use semantic::fits as semantic_fits;

/// Builds (or rebuilds) the index of `bundle_root` in `index_dir`, checking the live generation
/// at `verify` first; see [`super::build`].
pub(crate) fn build(
    bundle_root: &Path,
    index_dir: &Path,
    options: &BuildOptions,
    verify: Verify,
    progress: &mut dyn FnMut(&str),
) -> Result<BuildReport, IndexError> {
    progress(&format!("reading {}", bundle_root.display()));
    if !bundle_root.is_dir() {
        // scan names the problem.
        bundle::scan(bundle_root, bundle::walk::Walk::default())?;
    }
    let canonical_root = bundle_root
        .canonicalize()
        .map_err(|e| IndexError::io(bundle_root, e))?;
    if let Some(problem) = index_inside_bundle(&canonical_root, index_dir) {
        return Err(IndexError::Bundle(problem));
    }
    // Files read from here on are not trusted next time if modified within the racy window
    // before this instant.
    let made_ns = bundle::walk::now_ns();
    let exclude = super::exclusions(options, read_manifest(index_dir).ok().flatten().as_ref());
    let walked = bundle::walk::walk_excluding(bundle_root, &exclude);
    std::fs::create_dir_all(index_dir).map_err(|e| IndexError::io(index_dir, e))?;
    // One build of an index folder at a time, from reading the live generation to publishing:
    // the revision is numbered under the lock (`WRITE_LOCK`).
    let _writing = lock_for_writing(index_dir, &mut || {
        progress(&format!(
            "waiting for another build of {} to finish",
            index_dir.display()
        ));
    });

    // The live generation, its files checked (module docs of `index`, "Checking what is
    // opened").
    let previous = load_previous(index_dir, verify);
    if previous.is_none() {
        if let Err(e @ IndexError::Corrupt { .. }) = read_manifest(index_dir) {
            progress(&format!("{}; building it anew", damage_line(&e)));
        }
    }

    // Unchanged (same files, sizes and modification times): the live generation stays.
    if let Some(report) = unchanged(previous.as_ref(), options, &canonical_root, &walked) {
        progress("unchanged since the last build");
        return Ok(report);
    }
    // A damaged live generation gives its revision numbers (its manifest is intact) and nothing
    // else: everything is read and indexed again.
    let damaged = match previous.as_ref().and_then(|p| p.damage.as_ref()) {
        Some(damage) => {
            progress(&format!("{}; building it anew", damage_line(damage)));
            true
        }
        None => false,
    };
    let full = options.full || damaged;
    // What killed builds left behind goes before this build adds its own folder, and the
    // generations older than the live one go meanwhile (module docs of `index`).
    let cleanup = {
        let index_dir = index_dir.to_path_buf();
        let in_use = previous.as_ref().map(|p| p.generation.clone());
        std::thread::spawn(move || remove_leftovers(&index_dir, true, in_use.as_deref()))
    };
    // The scan, and meanwhile the previous build's files (their revisions always, their parse
    // unless `full`) and what its search index holds (to bring it up to date).
    let (scan, (cache, indexed_before)) = rayon::join(
        || bundle::scan(bundle_root, walked),
        || {
            let cache = previous
                .as_ref()
                .and_then(|p| Cache::open(&p.generation.join(INGEST_CACHE_FILE)).ok());
            let indexed = cache.as_ref().filter(|_| !full).map(|c| {
                let mut indexed = indexed_of(c);
                // Pages the previous build could not read again for indexing are not in its
                // index.
                let unindexed = previous
                    .as_ref()
                    .and_then(|p| std::fs::read(p.generation.join(UNINDEXED_FILE)).ok())
                    .and_then(|bytes| serde_json::from_slice::<Vec<u64>>(&bytes).ok());
                for key in unindexed.unwrap_or_default() {
                    indexed.remove(&key);
                }
                indexed
            });
            (cache, indexed)
        },
    );
    let scan = scan?;
    let kind = scan.kind;
    // A cache of another kind of bundle is of no use.
    let cache = cache.filter(|c| c.kind() == kind);
    let reuse = cache.as_ref().filter(|_| !full);
    let indexed_before = indexed_before.filter(|_| reuse.is_some());
    if reuse.is_some() {
        // An update indexes a few pages, and a Chinese one needs the segmenter's dictionary:
        // loaded meanwhile. (Not at a lower priority: indexing waits for it, and on a busy
        // machine a thread at nice 19 can take seconds for a tenth of a second of work.)
        std::thread::spawn(crate::analysis::load_dictionary);
    }

    // Files the ingest cache answers, and the others, read in parallel.
    let bundle::Scan {
        jobs,
        diagnostics: scan_diagnostics,
        stat_fingerprint,
        ..
    } = scan;
    let (got, to_read) = split_by_cache(&jobs, reuse);
    let threads = if options.threads == 0 {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(4)
    } else {
        options.threads
    };
    let id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let generation_name = |revision: u64| format!("gen-{revision}-{id}");
    // Held from the generation folder's creation until `CURRENT` names it.
    let mut lock = None;
    // A full build indexes each page as it is read (module docs): its generation folder,
    // named for revision 0 until the revision is known, and its search index writer come first.
    let mut streamed = None;
    let bytes_to_read: u64 = to_read.iter().map(|job| job.file.size).sum();
    if reuse.is_none()
        && options
            .streamed_bytes
            .is_none_or(|most| bytes_to_read <= most)
    {
        let tmp = index_dir.join(format!("{}.tmp", generation_name(0)));
        lock = Some(create_generation(&tmp)?);
        let search_dir = tmp.join("search");
        std::fs::create_dir_all(&search_dir).map_err(|e| IndexError::io(&search_dir, e))?;
        let writer = search_index::Writer::create(&search_dir, threads)?;
        streamed = Some((tmp, writer));
    }
    let (fresh, added) = match &mut streamed {
        Some((_, writer)) => read_and_index(kind, &to_read, writer)?,
        None => (bundle::read_files(kind, &to_read), Vec::new()),
    };
    drop(to_read);
    let files = Files {
        jobs,
        got,
        fresh,
        cache: reuse,
    };
    let files_read = files.fresh.len() as u64;

    let mut naming = Naming {
        index_dir,
        previous: previous.as_ref(),
        kb_id: String::new(),
    };
    // An update's plan and its content fingerprint (each a pass over every file) side by side.
    let (plan, update_fingerprint) = match reuse.zip(previous.as_ref()) {
        Some((c, p)) => rayon::join(
            || patch_plan(&files, c, p, bundle_root, &canonical_root, options),
            || Some(files.content_fingerprint(kind)),
        ),
        None => (None, None),
    };
    // The previous search index brought up to date into `search_dir` (`None`: no previous one
    // to update).
    let update_search = |written: &Written, search_dir: &Path, progress: &mut dyn FnMut(&str)| {
        let p = previous.as_ref()?;
        let before = indexed_before.as_ref()?;
        Some(incremental_search(
            bundle_root,
            before,
            written,
            &p.generation.join("search"),
            search_dir,
            threads,
            progress,
        ))
    };
    // That update when it was made while a patch wrote the catalog (`None`: not made yet).
    let mut searched = None;
    let (written, tmp, live_name) = match plan.zip(update_fingerprint) {
        Some((plan, content_fingerprint)) => {
            naming.kb_id = plan.previous.manifest.knowledge_base_id.clone();
            let (revision, revision_changed) = naming.revision(&content_fingerprint);
            let name = generation_name(revision);
            let tmp = index_dir.join(format!("{name}.tmp"));
            lock = Some(create_generation(&tmp)?);
            let search_dir = tmp.join("search");
            let stamp = Stamp {
                scan_diagnostics,
                content_fingerprint,
                revision,
                revision_changed,
                made_ns,
                tmp: &tmp,
            };
            let (written, outcome) = patch(&files, plan, stamp, |written| {
                progress(&read_summary(kind, files_read, written));
                update_search(written, &search_dir, progress)
            })?;
            searched = Some(outcome);
            // Every file's stat and path: freed meanwhile, not waited for.
            let Files {
                jobs, got, fresh, ..
            } = files;
            drop_later((jobs, got, fresh));
            (written, tmp, name)
        }
        None => {
            let read = all_files(files, kind);
            let name = bundle::knowledge_base_name(bundle_root, &read);
            naming.kb_id = options
                .knowledge_base_id
                .clone()
                .unwrap_or_else(|| ids::knowledge_base_id(&name));
            let content_fingerprint = bundle::content_fingerprint(
                kind,
                read.iter().map(|r| (r.path.as_str(), r.sha256.as_str())),
            );
            let (revision, revision_changed) = naming.revision(&content_fingerprint);
            let generation = generation_name(revision);
            let tmp = match &streamed {
                Some((tmp, _)) => tmp.clone(),
                None => {
                    let tmp = index_dir.join(format!("{generation}.tmp"));
                    lock = Some(create_generation(&tmp)?);
                    tmp
                }
            };
            let stamp = Stamp {
                scan_diagnostics,
                content_fingerprint,
                revision,
                revision_changed,
                made_ns,
                tmp: &tmp,
            };
            let written = assemble(
                read,
                kind,
                name,
                &naming.kb_id,
                (cache.as_ref(), reuse),
                previous.as_ref(),
                stamp,
            )?;
            // The parse of every file is gone: its memory goes back before indexing.
            crate::memory::release_free();
            (written, tmp, generation)
        }
    };
    drop(cache);
    if searched.is_none() {
        progress(&read_summary(kind, files_read, &written));
    }

    // The search index: the previous one brought up to date when the ingest cache was used,
    // else built anew.
    let search_dir = tmp.join("search");
    let mut work = BuildWork {
        files_read,
        ..BuildWork::default()
    };
    let mut incremental_done = false;
    // Pages that could not be read again for indexing (deleted or replaced during the build).
    let mut unread = Vec::new();
    let outcome = searched.unwrap_or_else(|| update_search(&written, &search_dir, progress));
    if let Some(outcome) = outcome {
        match outcome {
            Ok((indexed, removed, not_read)) => {
                unread = not_read;
                work.incremental = true;
                work.pages_indexed = indexed;
                work.pages_removed = removed;
                incremental_done = true;
            }
            Err(e) => {
                progress(&format!(
                    "cannot update the previous search index ({e}); building it anew"
                ));
                let _ = std::fs::remove_dir_all(&search_dir);
            }
        }
    }
    let Written {
        name,
        content_fingerprint,
        revision,
        revision_changed,
        diagnostics,
        counts,
        pages,
        all_pages,
        crcs,
        ..
    } = written;
    if !incremental_done {
        std::fs::create_dir_all(&search_dir).map_err(|e| IndexError::io(&search_dir, e))?;
        let pages = if all_pages {
            pages
        } else {
            pages_of_catalog(&tmp.join(CATALOG_FILE))?
        };
        progress(&format!("indexing {} pages", pages.len()));
        (work.pages_indexed, unread) = match streamed.take() {
            Some((_, writer)) => finish_streamed(bundle_root, writer, added, &pages)?,
            None => {
                let pages: Vec<&Page> = pages.iter().collect();
                index_pages(bundle_root, &search_dir, true, &[], &pages, threads)?
            }
        };
    }
    if !unread.is_empty() {
        // The ingest cache counts those pages as indexed: the next build takes this list's
        // word over it and indexes them.
        let keys: Vec<u64> = unread.iter().map(|(key, _)| *key).collect();
        write_file(
            &tmp.join(UNINDEXED_FILE),
            &serde_json::to_vec(&keys).unwrap_or_default(),
        )?;
    }
    let mut diagnostics = diagnostics;
    diagnostics.extend(unread.into_iter().map(|(_, path)| {
        Diagnostic::new(
            Code::Unreadable,
            path,
            None,
            "cannot read again for indexing (removed or replaced during the build): listed \
             but not searchable until the next build"
                .into(),
        )
    }));
    let counts = Counts {
        diagnostics: diagnostics.len() as u64,
        ..counts
    };

    let mut crcs = crcs;
    let mut vector_stage = |which: semantic::Vectorizer, work: &mut BuildWork| {
        if !semantic::wanted(which, options, previous.as_ref()) {
            return Ok(None);
        }
        let (record, crc, vector_work) = semantic::stage(
            which,
            bundle_root,
            &tmp,
            previous.as_ref(),
            options,
            threads,
            progress,
        )?;
        crcs.push((which.file(), crc));
        match which {
            semantic::Vectorizer::Content => work.vectors = vector_work,
            semantic::Vectorizer::Cross => work.cross_vectors = vector_work,
        }
        Ok::<_, IndexError>(Some(record))
    };
    let semantic = vector_stage(semantic::Vectorizer::Content, &mut work)?;
    let cross_language = vector_stage(semantic::Vectorizer::Cross, &mut work)?;
    let json = |v: &dyn erased::Json| v.to_json();
    write_file(&tmp.join("diagnostics.json"), &json(&diagnostics))?;
    let files = record_files(&tmp, previous.as_ref(), &crcs)?;
    let manifest = Manifest {
        format_version: INDEX_FORMAT_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        derivation_version: super::DERIVATION_VERSION,
        semantic_off: semantic::semantic_off(options, previous.as_ref().map(|p| &p.manifest)),
        exclude,
        knowledge_base_id: naming.kb_id,
        knowledge_base_name: name,
        bundle_kind: kind,
        bundle_root: canonical_root.to_string_lossy().into_owned(),
        active_content_revision: revision,
        content_fingerprint,
        stat_fingerprint,
        counts,
        semantic,
        cross_language,
        files,
    };
    write_file(&tmp.join("manifest.json"), &manifest_bytes(&manifest))?;
    sync_dir(&search_dir);
    sync_dir(&tmp);
    crash_point("written");
    let live = publish(index_dir, &tmp, &live_name, &mut lock)?;
    let _ = std::fs::remove_file(live.join(BUILD_LOCK));
    drop(lock);
    let _ = cleanup.join();
    progress(&format!(
        "index ready at {} (revision {revision})",
        live.display()
    ));
    Ok(BuildReport {
        manifest,
        diagnostics,
        revision_changed,
        work,
    })
}

/// The progress line once every file is read and the catalog made. A plain folder's count is
/// its pages, as its user counts them (the relation records kbtools renders for each are no
/// files of theirs).
fn read_summary(kind: BundleKind, files_read: u64, written: &Written) -> String {
    if kind == BundleKind::PlainFolder {
        return format!(
            "read {} of {} pages ({} relations, {} diagnostics)",
            files_read,
            written.counts.source_pages,
            written.counts.relations,
            written.diagnostics.len()
        );
    }
    format!(
        "read {} of {} files ({} source pages, {} relations, {} diagnostics)",
        files_read,
        written.total_files,
        written.counts.source_pages,
        written.counts.relations,
        written.diagnostics.len()
    )
}

/// Drops `value` on a thread of its own: freeing the lists of a large bundle's files takes tens
/// of milliseconds that a build need not wait for (a command exits without waiting for it).
fn drop_later<T: Send + 'static>(value: T) {
    std::thread::spawn(move || drop(value));
}

/// Key → fingerprint of every indexed page of `cache`.
fn indexed_of(cache: &Cache) -> HashMap<u64, [u8; 16]> {
    cache.entries().filter_map(|e| e.indexed).collect()
}

/// Every file's parse: the fresh reads, and the cached ones decoded from their chunks (in
/// parallel). A file whose chunk does not decode is read again.
fn all_files(files: Files<'_>, kind: BundleKind) -> Vec<ReadFile> {
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
