//! A build's first steps: the bundle walked and the index folder locked, where the index may
//! not go (inside the bundle), whether the live generation is unchanged, the scan beside the
//! previous build's ingest cache, and which files that cache answers.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::{Build, Got, RACY_WINDOW_NS, UNINDEXED_FILE};
use crate::error::IndexError;
use crate::index::cache::Cache;
use crate::index::generations::FileLock;
use crate::index::{
    damage_line, load_previous, lock_for_writing, read_json, read_manifest, BuildOptions,
    BuildReport, BuildWork, Previous, Verify, INGEST_CACHE_FILE,
};
use crate::ingest::bundle::{self, Diagnostic, Job};

/// Why `index_dir` cannot hold the index of the bundle at `canonical_root`: it is the bundle's
/// folder, or a folder inside it that the walk reads (not hidden), so builds would write their
/// files into the bundle.
pub(super) fn index_inside_bundle(canonical_root: &Path, index_dir: &Path) -> Option<String> {
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

/// The report of a build that finds the live generation `previous` unchanged (same files, sizes
/// and modification times, and not asked to build in full): nothing but its manifest is read
/// (and its files' sizes and times checked).
pub(super) fn unchanged(
    previous: Option<&Previous>,
    options: &BuildOptions,
    canonical_root: &Path,
    walked: &bundle::walk::Walk,
) -> Option<BuildReport> {
    let p = previous.filter(|p| p.damage.is_none() && !options.full)?;
    let manifest = &p.manifest;
    let same = manifest.bundle_root == canonical_root.to_string_lossy()
        && crate::index::up_to_date(options, manifest, &bundle::walk::stat_fingerprint(walked));
    same.then(|| BuildReport {
        manifest: manifest.clone(),
        diagnostics: read_json(&p.generation.join("diagnostics.json")).unwrap_or_default(),
        revision_changed: false,
        work: BuildWork {
            unchanged: true,
            ..BuildWork::default()
        },
    })
}

/// Which of `jobs` the ingest cache `reuse` answers (its entry) and which must be read: a file
/// is taken from the cache when its path, class, size and modification time match an entry made
/// long enough before the cache.
pub(super) fn split_by_cache<'j>(
    jobs: &'j [Job],
    reuse: Option<&Cache>,
) -> (Vec<Got>, Vec<&'j Job>) {
    let mut got = Vec::with_capacity(jobs.len());
    let mut to_read = Vec::new();
    // Both in logical path order: a merge.
    let trusted_before = reuse.map_or(0, |c| c.made_ns() - RACY_WINDOW_NS);
    let entries = reuse.map_or(0, |c| c.len());
    let mut next = 0;
    for job in jobs {
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
    (got, to_read)
}

/// How a build began: the live generation is up to date, or there is work to do.
pub(super) enum Begun<'a> {
    Unchanged(BuildReport),
    Started(Start<'a>),
}

/// What a build holds once it has the index folder: the walk, the lock, the live generation.
pub(super) struct Start<'a> {
    pub(super) bundle_root: &'a Path,
    pub(super) canonical_root: PathBuf,
    pub(super) index_dir: &'a Path,
    pub(super) options: &'a BuildOptions,
    pub(super) made_ns: i128,
    pub(super) exclude: Vec<String>,
    pub(super) walked: bundle::walk::Walk,
    /// One build of an index folder at a time, until this build ends.
    pub(super) writing: Option<FileLock>,
    pub(super) previous: Option<Previous>,
    /// Every file read and indexed again (asked for, or the live generation is damaged).
    pub(super) full: bool,
}

/// The previous build's files and what its search index holds, when this build may use them.
pub(super) struct Scanned {
    pub(super) jobs: Vec<Job>,
    pub(super) scan_diagnostics: Vec<Diagnostic>,
    pub(super) cache: Option<Cache>,
    /// Whether the ingest cache answers for unchanged files (not a full build).
    pub(super) reuse: bool,
    /// Key → fingerprint of what the previous search index holds (to bring it up to date).
    pub(super) indexed_before: Option<HashMap<u64, [u8; 16]>>,
}

/// The bundle checked and walked, the index folder locked, the live generation read; the
/// report of that generation when nothing changed since it was built.
pub(super) fn begin<'a>(
    bundle_root: &'a Path,
    index_dir: &'a Path,
    options: &'a BuildOptions,
    verify: Verify,
    progress: &mut dyn FnMut(&str),
) -> Result<Begun<'a>, IndexError> {
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
    let made_ns = bundle::walk::now_ns();
    let exclude =
        crate::index::exclusions(options, read_manifest(index_dir).ok().flatten().as_ref());
    let walked = bundle::walk::walk_excluding(bundle_root, &exclude);
    std::fs::create_dir_all(index_dir).map_err(|e| IndexError::io(index_dir, e))?;
    // One build of an index folder at a time, from reading the live generation to publishing:
    // the revision is numbered under the lock (`WRITE_LOCK`).
    let writing = lock_for_writing(index_dir, &mut || {
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
        return Ok(Begun::Unchanged(report));
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
    Ok(Begun::Started(Start {
        bundle_root,
        canonical_root,
        index_dir,
        options,
        made_ns,
        exclude,
        walked,
        writing,
        previous,
        full: options.full || damaged,
    }))
}

/// The scan, and meanwhile the previous build's files (their revisions always, their parse
/// unless `full`) and what its search index holds (to bring it up to date).
pub(super) fn scan(start: Start<'_>) -> Result<(Build<'_>, Scanned), IndexError> {
    let Start {
        bundle_root,
        canonical_root,
        index_dir,
        options,
        made_ns,
        exclude,
        walked,
        previous,
        full,
        ..
    } = start;
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
    let bundle::Scan {
        kind,
        jobs,
        diagnostics: scan_diagnostics,
        stat_fingerprint,
        ..
    } = scan?;
    // A cache of another kind of bundle is of no use.
    let cache = cache.filter(|c| c.kind() == kind);
    let reuse = cache.is_some() && !full;
    if reuse {
        // An update indexes a few pages, and a Chinese one needs the segmenter's dictionary:
        // loaded meanwhile. (Not at a lower priority: indexing waits for it, and on a busy
        // machine a thread at nice 19 can take seconds for a tenth of a second of work.)
        std::thread::spawn(crate::ingest::analysis::load_dictionary);
    }
    let threads = if options.threads == 0 {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(4)
    } else {
        options.threads
    };
    let build = Build {
        bundle_root,
        canonical_root,
        index_dir,
        options,
        previous,
        made_ns,
        exclude,
        kind,
        stat_fingerprint,
        threads,
        id: uuid::Uuid::new_v4().simple().to_string()[..8].to_string(),
    };
    let scanned = Scanned {
        jobs,
        scan_diagnostics,
        cache,
        reuse,
        indexed_before: indexed_before.filter(|_| reuse),
    };
    Ok((build, scanned))
}

/// Key → fingerprint of every indexed page of `cache`.
fn indexed_of(cache: &Cache) -> HashMap<u64, [u8; 16]> {
    cache.entries().filter_map(|e| e.indexed).collect()
}
