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
//! A full build indexes each page as it is read, with the text of the same parse, while the
//! other files are still being read: the search index writer's threads work during the reading
//! instead of after it (at 100,000 pages: 17.5 s -> 14.9 s, peak memory 711 -> 943 MiB, the
//! parse of every file and the writer's arenas being held together). A page is indexed under the
//! title its document record (the document packets are read first) or its own text gives it;
//! once the bundle-wide steps have decided, a page indexed under another path or title, or
//! that is no source page, is deleted, and the source pages not indexed so are read again and
//! indexed ([`finish_streamed`]). An update (or a full build over
//! [`BuildOptions::streamed_bytes`]) reads page texts again when it indexes the pages, a batch at
//! a time, so a large bundle's texts are never all held.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

use rayon::prelude::*;
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::cache::{self, Cache, Entry, Sha};
use super::catalog::{store, Catalog, CatalogFile};
use super::search_index::{self, IndexedPage};
use super::*;
use crate::bundle::paths::PathClass;
use crate::bundle::{Job, ReadFile};

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
/// document packets, per-file graphs). Equal keys give equal source pages, relations, rendered
/// relation records (when the titles are equal too), catalog positions and diagnostics.
fn assembly_key<'a>(
    kind: BundleKind,
    files: impl Iterator<Item = (&'a str, &'a str, PathClass, Sha<'a>, bool)>,
) -> String {
    let mut hasher = bundle::walk::BufferedSha256::new();
    hasher.update(format!("{kind:?}\n").as_bytes());
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

/// A test hook for the crash tests (`tests/slow/crash_safety.rs`): with `KBTOOLS_CRASH_AT=<point>`
/// in the environment, the process aborts at that point of the publish step, as a crash there
/// would stop it.
fn crash_point(point: &str) {
    if std::env::var_os("KBTOOLS_CRASH_AT").is_some_and(|at| at == point) {
        std::process::abort();
    }
}

/// Why `index_dir` cannot hold the index of the bundle at `canonical_root`: it is the bundle's
/// folder, or a folder inside it that the walk reads (not hidden), so builds would write their
/// files into the bundle.
fn index_inside_bundle(canonical_root: &Path, index_dir: &Path) -> Option<String> {
    // The index folder's absolute path: its longest existing ancestor canonical, the rest as is.
    let absolute = std::path::absolute(index_dir).ok()?;
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    let canonical = loop {
        match existing.canonicalize() {
            Ok(c) => break c,
            Err(_) => {
                rest.push(existing.file_name()?.to_os_string());
                existing = existing.parent()?;
            }
        }
    };
    let full = rest
        .iter()
        .rev()
        .fold(canonical, |path, part| path.join(part));
    let inside = full.strip_prefix(canonical_root).ok()?;
    let hidden = inside
        .components()
        .next()
        .is_some_and(|c| c.as_os_str().to_string_lossy().starts_with('.'));
    if hidden {
        return None;
    }
    let what = if inside.as_os_str().is_empty() {
        "is the bundle's own folder"
    } else {
        "lies inside the bundle"
    };
    Some(format!(
        "the index folder {} {what} ({}): kbtools would write its files into the bundle; pass an --index folder outside it (or a hidden one inside it, such as .kbtools-index), or leave --index out for the default under the cache directory",
        index_dir.display(),
        canonical_root.display()
    ))
}

/// Builds (or rebuilds) the index of `bundle_root` in `index_dir`, checking the live generation
/// at `verify` first; see [`super::build`].
pub(super) fn build(
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
    let walked = bundle::walk::walk(bundle_root);
    std::fs::create_dir_all(index_dir).map_err(|e| IndexError::io(index_dir, e))?;

    // The live generation, its files checked (module docs of `index`, "Checking what is
    // opened").
    let previous = load_previous(index_dir, verify);
    if previous.is_none() {
        if let Err(e @ IndexError::Corrupt { .. }) = read_manifest(index_dir) {
            progress(&format!("{}; building it anew", damage_line(&e)));
        }
    }

    // Unchanged (same files, sizes and modification times): the live generation stays, and
    // nothing but its manifest is read (and its files' sizes and times checked).
    if let Some(p) = previous
        .as_ref()
        .filter(|p| p.damage.is_none() && !options.full)
    {
        let manifest = &p.manifest;
        let same_kb = options
            .knowledge_base_id
            .as_ref()
            .is_none_or(|id| *id == manifest.knowledge_base_id);
        if same_kb
            && manifest.bundle_root == canonical_root.to_string_lossy()
            && manifest.stat_fingerprint == bundle::walk::stat_fingerprint(&walked)
        {
            progress("unchanged since the last build");
            return Ok(BuildReport {
                manifest: manifest.clone(),
                diagnostics: read_json(&p.generation.join("diagnostics.json")).unwrap_or_default(),
                revision_changed: false,
                work: BuildWork {
                    unchanged: true,
                    ..BuildWork::default()
                },
            });
        }
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

    // A file is taken from the cache when its path, class, size and modification time match an
    // entry made long enough before the cache; the others are read, in parallel.
    let bundle::Scan {
        jobs,
        diagnostics: scan_diagnostics,
        stat_fingerprint,
        ..
    } = scan;
    let mut got = Vec::with_capacity(jobs.len());
    let mut to_read = Vec::new();
    {
        // Both in logical path order: a merge.
        let trusted_before = reuse.map_or(0, |c| c.made_ns() - RACY_WINDOW_NS);
        let entries = reuse.map_or(0, |c| c.len());
        let mut next = 0;
        for job in &jobs {
            let mut hit = None;
            if let Some(cache) = reuse {
                while next < entries && cache.entry(next).path() < job.path() {
                    next += 1;
                }
                if next < entries {
                    let entry = cache.entry(next);
                    if entry.path() == job.path()
                        && entry.disk == job.file.relative
                        && entry.size == job.file.size
                        && entry.mtime_ns == job.file.mtime_ns
                        && entry.mtime_ns < trusted_before
                        && entry.class == job.class
                    {
                        hit = Some(next as u32);
                    }
                }
            }
            match hit {
                Some(e) => got.push(Got::Cached(e)),
                None => {
                    got.push(Got::Fresh(to_read.len()));
                    to_read.push(job);
                }
            }
        }
    }
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
    let (fresh, added) = match &streamed {
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
            let (written, outcome) = patch(
                &files,
                plan,
                scan_diagnostics,
                content_fingerprint,
                (revision, revision_changed),
                made_ns,
                &tmp,
                |written| {
                    progress(&read_summary(files_read, written));
                    update_search(written, &search_dir, progress)
                },
            )?;
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
            let written = assemble(
                read,
                kind,
                name,
                &naming.kb_id,
                (cache.as_ref(), reuse),
                previous.as_ref(),
                scan_diagnostics,
                content_fingerprint,
                (revision, revision_changed),
                made_ns,
                &tmp,
            )?;
            // The parse of every file is gone: its memory goes back before indexing.
            release_free_memory();
            (written, tmp, generation)
        }
    };
    drop(cache);
    if searched.is_none() {
        progress(&read_summary(files_read, &written));
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

    let json = |v: &dyn erased::Json| v.to_json();
    write_file(&tmp.join("diagnostics.json"), &json(&diagnostics))?;
    let files = record_files(&tmp, previous.as_ref(), &crcs)?;
    let manifest = Manifest {
        format_version: INDEX_FORMAT_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        knowledge_base_id: naming.kb_id,
        knowledge_base_name: name,
        bundle_kind: kind,
        bundle_root: canonical_root.to_string_lossy().into_owned(),
        active_content_revision: revision,
        content_fingerprint,
        stat_fingerprint,
        counts,
        files,
    };
    write_file(&tmp.join("manifest.json"), &manifest_bytes(&manifest))?;
    sync_dir(&search_dir);
    sync_dir(&tmp);
    crash_point("written");
    // The publish: the generation under its name, then `CURRENT` naming it (the one moment the
    // index changes), each flushed before the next step.
    let live = index_dir.join(&live_name);
    std::fs::rename(&tmp, &live).map_err(|e| IndexError::io(&live, e))?;
    if let Some(lock) = lock.as_mut() {
        lock.moved_to(&live);
    }
    sync_dir(index_dir);
    crash_point("renamed");
    let current_tmp = index_dir.join(format!("CURRENT.{live_name}.tmp"));
    let published = write_file(&current_tmp, live_name.as_bytes()).and_then(|()| {
        crash_point("current-written");
        std::fs::rename(&current_tmp, index_dir.join("CURRENT"))
            .map_err(|e| IndexError::io(index_dir.join("CURRENT"), e))
    });
    if let Err(e) = published {
        // The generation folder goes with `lock`; this file too (a full disk stays full else).
        let _ = std::fs::remove_file(&current_tmp);
        return Err(e);
    }
    if let Some(lock) = lock.as_mut() {
        lock.published();
    }
    sync_dir(index_dir);
    crash_point("published");
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

/// The progress line once every file is read and the catalog made.
fn read_summary(files_read: u64, written: &Written) -> String {
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

/// Returns the memory freed so far to the system: the allocator keeps it otherwise, and the
/// search index writer, which comes next, would add its own on top of it.
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: glibc's malloc_trim only hands free pages of its heaps back to the system.
        unsafe {
            libc::malloc_trim(0);
        }
    }
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

/// A file as the catalog stores it ([`CatalogFile`]'s encoding, borrowed).
#[derive(Serialize)]
struct StoredFile<'a> {
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
struct StoredRelation<'a> {
    from: u32,
    to: u32,
    relation_type: &'a str,
    direction: &'a str,
    reason: Option<&'a str>,
}

/// A catalog position: a file read, or a relation record kbtools renders.
#[derive(Clone, Copy)]
enum Slot {
    Read(u32),
    Virtual(u32),
}

/// Creates the folder of a generation being built and takes its lock (module docs of `index`):
/// the lock tells the next build that this folder is no leftover while this build runs.
fn create_generation(tmp: &Path) -> Result<BuildingGeneration, IndexError> {
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
fn write_with(
    path: &Path,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<u32, IndexError> {
    let file = std::fs::File::create(path).map_err(|e| IndexError::io(path, e))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, CrcWriter::new(file));
    write(&mut out).map_err(|e| IndexError::io(path, e))?;
    let (file, crc) = out
        .into_inner()
        .map_err(|e| IndexError::io(path, e.into_error()))?
        .into_parts();
    file.sync_all().map_err(|e| IndexError::io(path, e))?;
    Ok(crc)
}

/// The assembly way: every file's parse through the bundle-wide steps, the catalog written
/// from them, and the ingest cache with every chunk (those of unchanged files copied).
#[allow(clippy::too_many_arguments)]
fn assemble(
    read: Vec<ReadFile>,
    kind: BundleKind,
    name: String,
    kb_id: &str,
    (cache, reuse): (Option<&Cache>, Option<&Cache>),
    previous: Option<&Previous>,
    scan_diagnostics: Vec<Diagnostic>,
    content_fingerprint: String,
    (revision, revision_changed): (u64, bool),
    made_ns: i128,
    tmp: &Path,
) -> Result<Written, IndexError> {
    // The ingest cache's chunks first (the entries follow the catalog).
    let cache_path = tmp.join(INGEST_CACHE_FILE);
    let mut writer =
        cache::Writer::create(&cache_path).map_err(|e| IndexError::io(&cache_path, e))?;
    write_chunks(&read, reuse, &mut writer).map_err(|e| IndexError::io(&cache_path, e))?;

    let assembly = bundle::assemble(kind, &read);
    let mut diagnostics = scan_diagnostics;
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
                _ => revision,
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
        diagnostics: diagnostics[derived_start..]
            .iter()
            .map(|d| (d.path.clone(), d.line, d.message.clone()))
            .collect(),
    };
    let total_files = slots.len() as u64;
    drop(slots);
    // The catalog, and meanwhile the rest of the ingest cache.
    let (catalog_written, cache_written) = rayon::join(
        || write_with(&tmp.join(CATALOG_FILE), |out| store::write(&parts, out)),
        || {
            writer
                .finish(kind, made_ns, || entries.iter().copied(), Some(derived))
                .map_err(|e| IndexError::io(&cache_path, e))
        },
    );
    let crcs = vec![
        (CATALOG_FILE, catalog_written?),
        (INGEST_CACHE_FILE, cache_written?),
    ];
    drop(parts);
    drop(assembly);
    drop(read);
    Ok(Written {
        total_files,
        name,
        content_fingerprint,
        revision,
        revision_changed,
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
fn write_chunks(
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

/// A patch of the previous generation: the files that changed (read again, with a checksum
/// that differs) and their previous catalog entries.
struct PatchPlan<'a> {
    previous: &'a Previous,
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
fn patch_plan<'a>(
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
#[allow(clippy::too_many_arguments)]
fn patch<T>(
    files: &Files<'_>,
    plan: PatchPlan<'_>,
    scan_diagnostics: Vec<Diagnostic>,
    content_fingerprint: String,
    (revision, revision_changed): (u64, bool),
    made_ns: i128,
    tmp: &Path,
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
    let mut updated: HashMap<usize, Entry<'_>> = HashMap::new();
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
    let mut pages = Vec::new();
    let mut by_block: HashMap<usize, Vec<(u32, CatalogFile)>> = HashMap::new();
    for (i, f, old) in changed.iter() {
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

    // The catalog: every block as stored but those of changed files.
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
    let parts = store::Parts {
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
    };
    for (i, f, _) in &changed {
        let c = cache.chunk_of(*i);
        if let Some(details) = chunks.get_mut(&c) {
            details[i - cache.chunk_range(c).start] = files.fresh[*f].detail.clone();
        }
    }
    let entries =
        || (0..cache.len()).map(|i| updated.get(&i).copied().unwrap_or_else(|| cache.entry(i)));
    let mut diagnostics = scan_diagnostics;
    diagnostics.extend(bundle::problem_diagnostics(
        entries()
            .filter(|e| !e.problems.is_empty())
            .map(|e| (e.disk, e.problems)),
    ));
    diagnostics.extend(
        derived
            .diagnostics
            .iter()
            .map(|(path, line, message)| Diagnostic::new(path.clone(), *line, message.clone())),
    );

    // The catalog, and meanwhile the ingest cache: every chunk as stored but those of changed
    // files.
    let write_cache = || -> Result<u32, IndexError> {
        let cache_path = tmp.join(INGEST_CACHE_FILE);
        let io = |e| IndexError::io(&cache_path, e);
        let mut writer = cache::Writer::create(&cache_path).map_err(io)?;
        // Runs of unchanged chunks copied, the others encoded.
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
    };
    let indexed = entries().filter_map(|e| e.indexed).collect();
    let counts = Counts {
        diagnostics: diagnostics.len() as u64,
        ..previous.manifest.counts.clone()
    };
    let mut written = Written {
        total_files: store.header().file_count as u64,
        name: previous.manifest.knowledge_base_name.clone(),
        content_fingerprint,
        revision,
        revision_changed,
        diagnostics,
        counts,
        indexed,
        pages,
        all_pages: false,
        crcs: Vec::new(),
    };
    // `meanwhile` (the search index's update) needs neither file: it runs while they are
    // written and flushed, which is mostly waiting on the disk.
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

/// Every indexed page of the catalog at `path`.
fn pages_of_catalog(path: &Path) -> Result<Vec<Page>, IndexError> {
    let bytes = store::Bytes::map(path).map_err(|e| IndexError::io(path, e))?;
    let catalog = Catalog::open(bytes, &path.display().to_string()).map_err(|reason| {
        IndexError::Corrupt {
            path: path.display().to_string(),
            reason,
        }
    })?;
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
fn index_pages(
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

/// A page a full build indexed as it read it: its key, and the path and title it was indexed
/// under.
struct Added {
    key: u64,
    path: String,
    title: String,
}

/// Reads the files of `jobs` (a full build's), indexing each page with `writer` as soon as it
/// is read, under the title the bundle-wide steps will most likely give it: the document
/// packets are read first for their records' titles. [`finish_streamed`] checks each page
/// against what the bundle-wide steps decided.
fn read_and_index(
    kind: BundleKind,
    jobs: &[&Job],
    writer: &search_index::Writer,
) -> Result<(Vec<ReadFile>, Vec<Added>), IndexError> {
    // Document packets first (a page's record title is its index title), then the pages;
    // the other files (most of a bundle's bytes: term routes, graph records) are read
    // alongside, so that both cores work while the packets are parsed.
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
            match writer.add_one(&page) {
                Ok(()) => added.lock().unwrap_or_else(|e| e.into_inner()).push(Added {
                    key,
                    path: file.path.clone(),
                    title,
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
    let ((packet_files, page_files), other_files) =
        rayon::join(read_packets_and_pages, read_others);
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
/// when it is one of `pages` under the same path and title, and is deleted otherwise (a page
/// the bundle-wide steps titled or keyed otherwise, or did not take as a source page); the
/// pages not indexed that way are read again and indexed now.
fn finish_streamed(
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
            .is_some_and(|p| p.path == a.path && p.title == a.title);
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
fn add_pages(
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
fn incremental_search(
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
    use crate::index::catalog::CatalogRelation;

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
                fingerprint: [0; 16],
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
        let writer = search_index::Writer::create(&search, 1).unwrap();
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
                path: path.into(),
                title: title.into(),
            });
        };
        // Read as expected; under another title; twice (the one key of two paths); and a page
        // that is no source page.
        add("pages/a.md", "Alpha");
        add("pages/b.md", "Record title");
        add("pages/c.md", "Gamma");
        add("pages/c.md", "Gamma");
        add("pages/nav.md", "Navigation");
        let (count, unread) = finish_streamed(root.path(), writer, added, &pages).unwrap();
        assert_eq!((count, unread.len()), (3, 0));
        assert_eq!(titled(&search, "Alpha"), (1, 3));
        assert_eq!(titled(&search, "Beta").0, 1);
        assert_eq!(titled(&search, "Gamma").0, 1);
        for gone in ["Record title", "Navigation"] {
            assert_eq!(titled(&search, gone).0, 0, "{gone}");
        }
    }

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
            direction: "incoming".into(),
            reason: Some("because".into()),
        };
        let view = StoredRelation {
            from: 3,
            to: 70_000,
            relation_type: "references",
            direction: "incoming",
            reason: Some("because"),
        };
        assert_eq!(
            postcard::to_stdvec(&relation).unwrap(),
            postcard::to_stdvec(&view).unwrap()
        );
    }
}
