//! A build's first steps: where the index may not go (inside the bundle), whether the live
//! generation is unchanged, and which files the ingest cache answers.

use std::path::Path;

use super::{Got, RACY_WINDOW_NS};
use crate::bundle::{self, Job};
use crate::index::cache::Cache;
use crate::index::{read_json, BuildOptions, BuildReport, BuildWork, Previous};

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
