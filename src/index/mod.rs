//! The persistent local index: a manifest (format version, tool version, knowledge-base id,
//! revision, fingerprints, counts, and a record of every other file), the document catalog, the
//! tantivy full-text index and the diagnostics of the build. Builds go to a temporary folder that
//! is swapped in at the end, so a reader never sees half an index.
//!
//! Layout of an index folder:
//!
//! ```text
//! CURRENT            name of the live generation folder (replaced atomically)
//! gen-<n>-<id>/manifest.json  format version, revision, fingerprints, counts, the size, time
//!                             and CRC-32 of every other file; its own CRC-32 last (JSON)
//!         catalog.bin         the document catalog (read in place: catalog/store.rs)
//!         ingest-cache.bin    each file's parse, for incremental builds (cache.rs)
//!         diagnostics.json    the build's diagnostics
//!         unindexed.json      (rare) keys of pages removed or replaced between the build's read
//!                             and its indexing: listed, not searchable; the next build indexes
//!                             them although the ingest cache counts them as indexed
//!         search/             tantivy
//! gen-<n>-<id>.tmp/           a generation being built (holds `.build.lock` while it is)
//! ```
//!
//! # Publishing, and what a crash leaves
//!
//! A build writes the new generation into `gen-<n>-<id>.tmp/`, holding an exclusive lock
//! (`flock`) on its `.build.lock` for as long as it runs; it records every file's size,
//! modification time and CRC-32 in the manifest, flushes the files, renames the folder to
//! `gen-<n>-<id>/`, writes `CURRENT.gen-<n>-<id>.tmp` and renames it over `CURRENT`. The rename
//! of `CURRENT` is the one moment the index changes: a build killed at any point before it leaves
//! the previous index live and untouched (the previous generation's files are never written:
//! the full-text index is copied as hard links, and tantivy only ever adds files), one killed
//! after it leaves the new one. What a killed build leaves behind — a `*.tmp` folder, a
//! finished generation `CURRENT` never named, a `CURRENT.*.tmp` file — is never read, and the
//! next build removes it: the kernel releases a dead process's lock, so a lock that can be taken
//! marks a leftover, while a build still running keeps its lock and its folder.
//!
//! A build also removes, when it begins, the generations older than the live one: a reader
//! still on one of them has had the time between two builds to move to the live one (it keeps
//! what it holds open, but cannot open more). The removal runs alongside the build's reading:
//! deleting a large generation is slow disk work, which the build need not wait for.
//!
//! # Checking what is opened
//!
//! A generation's files are written once and never modified, so a file whose size, time or
//! content differs from the manifest's record is damaged. The checks, from cheap to thorough:
//!
//! - **always** (every open, every `kbtools index` and refresh, even on an unchanged bundle):
//!   `CURRENT` names an existing generation; the manifest's own CRC-32; every recorded file
//!   exists with its recorded size, and a file whose modification time changed has its CRC-32
//!   computed (a copied index is checked in full once per open, never refused); the catalog's
//!   CRC-32 ([`catalog::store`]), the ingest cache's section CRC-32s when read ([`cache`]), and
//!   tantivy's own footer checks when a segment file is opened. This costs a `stat` per file,
//!   so a cold `kbtools --no-refresh call` stays a few milliseconds and `kbtools index` on an
//!   unchanged 100,000-page bundle does not read its 300 MB of index.
//! - **in full** ([`Verify::Full`]: every file's CRC-32): when a build records a file it wrote
//!   (files hard-linked from the previous generation keep the previous record, so a damaged
//!   one is never blessed), and when a long-running server (`kbtools serve`, `kbtools mcp`,
//!   [`crate::live`]) opens a generation, where the time is spent once per generation.
//!
//! What the always-on checks cannot see is a byte changed in place with the file's size and
//! modification time restored (bit rot under a file system that does not notice it): a server
//! refuses such a generation, a one-shot command may answer from it.
//!
//! A damaged generation is never served: opening it fails with [`IndexError::Corrupt`], naming
//! the file and what is wrong, and a build (`kbtools index`, or the refresh before a `kbtools
//! call` without `--no-refresh`) finds the damage and rebuilds from scratch, keeping the revision
//! numbers when the manifest is intact.

pub mod bm25;
mod build;
mod cache;
pub mod catalog;
mod manifest;
mod passages;
pub mod search_index;

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::bundle::{self, BundleKind, Diagnostic};
use crate::error::IndexError;
use crate::ids;
use catalog::Catalog;
pub(crate) use manifest::CrcWriter;
use manifest::{generation_manifest, manifest_bytes, record_files};
pub use manifest::{verify_generation, Counts, FileRecord, Manifest};
use search_index::SearchIndex;

/// Version of the on-disk index layout. Bump it whenever the layout changes.
pub const INDEX_FORMAT_VERSION: u64 = 15;

/// How thoroughly opening checks a generation's files (module docs, "Checking what is opened").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Verify {
    /// Sizes and modification times; the CRC-32 of a file whose time changed.
    #[default]
    Quick,
    /// The CRC-32 of every file.
    Full,
}

/// How to build.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// Sets the knowledge-base id instead of deriving it from the name.
    pub knowledge_base_id: Option<String>,
    /// Writer threads; 0 picks from the machine.
    pub threads: usize,
    /// Reads and indexes everything, reusing nothing of the previous generation but its
    /// revision numbers.
    pub full: bool,
    /// The most bytes a full build reads and still indexes each page as it reads it (more
    /// memory at once, less time); `None`: no limit. A larger build reads everything first,
    /// then the page texts again as it indexes them.
    pub streamed_bytes: Option<u64>,
}

/// What a build did.
#[derive(Debug, Clone)]
pub struct BuildReport {
    pub manifest: Manifest,
    pub diagnostics: Vec<Diagnostic>,
    pub revision_changed: bool,
    /// What the build had to do.
    pub work: BuildWork,
}

/// The work a build did: a full build reads and indexes everything; an incremental one only
/// what changed since the previous generation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BuildWork {
    /// True when the previous generation was reused (only changes read and indexed).
    pub incremental: bool,
    /// True when nothing changed and the live generation was kept as it is.
    pub unchanged: bool,
    /// Files read and parsed from the bundle.
    pub files_read: u64,
    /// Source pages added to the full-text index.
    pub pages_indexed: u64,
    /// Source pages removed from the full-text index (removed or changed pages).
    pub pages_removed: u64,
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, IndexError> {
    let bytes = std::fs::read(path).map_err(|e| IndexError::io(path, e))?;
    serde_json::from_slice(&bytes).map_err(|e| IndexError::Corrupt {
        path: path.display().to_string(),
        reason: e.to_string(),
    })
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), IndexError> {
    let mut file = std::fs::File::create(path).map_err(|e| IndexError::io(path, e))?;
    file.write_all(bytes).map_err(|e| IndexError::io(path, e))?;
    file.sync_all().map_err(|e| IndexError::io(path, e))
}

/// The generation folder `CURRENT` names, if it names one (whether or not it exists).
pub fn current_generation(index_dir: &Path) -> Option<PathBuf> {
    let name = std::fs::read_to_string(index_dir.join("CURRENT")).ok()?;
    let name = name.trim();
    valid_generation_name(name).then(|| index_dir.join(name))
}

/// A generation folder's name as `CURRENT` may hold it: `gen-…`, one path component.
fn valid_generation_name(name: &str) -> bool {
    name.starts_with("gen-")
        && !name.ends_with(".tmp")
        && !name.contains(['/', '\\', '\0'])
        && !name.contains("..")
        && !name.chars().any(char::is_control)
}

/// The live generation folder of an index: `None` when there is no `CURRENT` (no index yet), an
/// error naming `CURRENT` when it cannot be read or names no existing generation.
fn live_generation(index_dir: &Path) -> Result<Option<PathBuf>, IndexError> {
    let path = index_dir.join("CURRENT");
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(IndexError::io(&path, e)),
    };
    let damaged = |reason: String| IndexError::Corrupt {
        path: path.display().to_string(),
        reason,
    };
    let name = std::str::from_utf8(&bytes)
        .map_err(|_| damaged("it is not UTF-8".into()))?
        .trim();
    if !valid_generation_name(name) {
        return Err(damaged(format!("it names no generation ({name:?})")));
    }
    let generation = index_dir.join(name);
    if !generation.is_dir() {
        return Err(damaged(format!("it names {name}, which is missing")));
    }
    Ok(Some(generation))
}

/// Reads the manifest of the live generation, checking its format version and its checksum.
pub fn read_manifest(index_dir: &Path) -> Result<Option<Manifest>, IndexError> {
    let Some(generation) = live_generation(index_dir)? else {
        return Ok(None);
    };
    generation_manifest(index_dir, &generation).map(Some)
}

/// The highest `activeContentRevision` the index folder tells of, whatever the state of its
/// generations: the live manifest's (whatever its format version) and the revisions in the
/// generation folders' names, so that a rebuild after damage never reuses a revision.
fn last_revision(index_dir: &Path) -> Option<u64> {
    let from_manifest = current_generation(index_dir)
        .and_then(|g| std::fs::read(g.join("manifest.json")).ok())
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .and_then(|v| v.get("activeContentRevision")?.as_u64());
    let from_names = std::fs::read_dir(index_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            name.strip_prefix("gen-")?
                .split('-')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .max();
    from_manifest.max(from_names)
}

/// The default index folder of a bundle: `<cache>/kbtools/<folder name>-<hash of its path>`.
pub fn default_index_dir(bundle_root: &Path) -> PathBuf {
    let canonical = bundle_root
        .canonicalize()
        .unwrap_or_else(|_| bundle_root.to_path_buf());
    let mut hasher = Sha256::new();
    hasher.update(canonical.to_string_lossy().as_bytes());
    let hash = hex::encode(&hasher.finalize()[..8]);
    let name: String = canonical
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "bundle".into())
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    let base = dirs::cache_dir().unwrap_or_else(std::env::temp_dir);
    base.join("kbtools").join(format!("{name}-{hash}"))
}

/// What a build reuses of the live generation.
struct Previous {
    manifest: Manifest,
    generation: PathBuf,
    /// What is wrong with its files, if anything: then only its revision numbers are reused.
    damage: Option<IndexError>,
}

/// The live generation of `index_dir`, when it is of this format and its manifest is intact;
/// its files checked at `verify`.
fn load_previous(index_dir: &Path, verify: Verify) -> Option<Previous> {
    let generation = live_generation(index_dir).ok()??;
    let manifest = generation_manifest(index_dir, &generation).ok()?;
    let damage = verify_generation(&generation, &manifest, verify).err();
    Some(Previous {
        manifest,
        generation,
        damage,
    })
}

/// What a progress line says of a damaged index (the error's own text ends with the advice to
/// run `kbtools index`, which is what the caller is doing).
fn damage_line(error: &IndexError) -> String {
    match error {
        IndexError::Corrupt { path, reason } => format!("index at {path} is damaged ({reason})"),
        other => other.to_string(),
    }
}

/// The catalog of a generation folder, memory-mapped and checked.
fn open_catalog(generation: &Path) -> Result<Catalog, IndexError> {
    let path = generation.join(CATALOG_FILE);
    let bytes = catalog::store::Bytes::map(&path).map_err(|e| IndexError::io(&path, e))?;
    Catalog::open(bytes, &path.display().to_string()).map_err(|reason| IndexError::Corrupt {
        path: path.display().to_string(),
        reason,
    })
}

/// File names inside a generation folder.
const CATALOG_FILE: &str = "catalog.bin";
const INGEST_CACHE_FILE: &str = "ingest-cache.bin";
/// The lock a build holds on the generation it writes, until `CURRENT` names it.
const BUILD_LOCK: &str = ".build.lock";

/// What a reader is told when the index answers although its refresh failed with `error`.
fn stale_reason(error: &IndexError, revision: u64) -> String {
    let text = error.to_string();
    let read_only = match error {
        IndexError::Io { source, .. } => source.kind() == std::io::ErrorKind::ReadOnlyFilesystem,
        _ => false,
    } || text.contains("Read-only file system");
    let why = if read_only {
        format!("the index folder is read-only ({text})")
    } else {
        text
    };
    format!(
        "the bundle changed, but the index could not be rebuilt: {why}; answering from the index as built (revision {revision}), which is stale: fix that and run `kbtools index` again"
    )
}

/// An exclusive `flock` on a file: released when dropped, or by the kernel when the process
/// dies, however it dies.
struct FileLock {
    _file: std::fs::File,
}

/// The folder of a generation being built, with its lock: removed when dropped before
/// [`BuildingGeneration::published`] (a build that fails, on a full disk for one, leaves
/// nothing behind; one killed leaves what `remove_leftovers` takes next time).
struct BuildingGeneration {
    dir: PathBuf,
    published: bool,
    _lock: FileLock,
}

impl BuildingGeneration {
    /// The folder was renamed to `dir` (removed there should the build still fail).
    fn moved_to(&mut self, dir: &Path) {
        self.dir = dir.to_path_buf();
    }

    /// `CURRENT` names the folder: it stays.
    fn published(&mut self) {
        self.published = true;
    }
}

impl Drop for BuildingGeneration {
    fn drop(&mut self) {
        if !self.published {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

#[cfg(unix)]
mod flock {
    use rustix::fs::{flock, FlockOperation};

    /// Takes an exclusive lock on `file` without waiting; false when another holds it.
    pub fn try_exclusive(file: &std::fs::File) -> bool {
        flock(file, FlockOperation::NonBlockingLockExclusive).is_ok()
    }

    /// Takes an exclusive lock on `file`, waiting for it; false when it cannot be taken.
    pub fn exclusive(file: &std::fs::File) -> bool {
        flock(file, FlockOperation::LockExclusive).is_ok()
    }
}

/// The lock of an index folder taken around creating a generation folder and its
/// [`BUILD_LOCK`], and by [`remove_leftovers`] before it takes a `.tmp` folder without a lock
/// file for a leftover: holding it, such a folder is never one whose build is creating it, but
/// one whose build was killed between the two steps.
const CREATE_LOCK: &str = ".create.lock";

/// Runs `f` holding the creation lock of `index_dir` (which must exist); `None`, without
/// running `f`, when the lock cannot be taken.
fn while_creating<R>(index_dir: &Path, f: impl FnOnce() -> R) -> Option<R> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(index_dir.join(CREATE_LOCK))
        .ok()?;
    #[cfg(unix)]
    let locked = flock::exclusive(&file);
    #[cfg(not(unix))]
    let locked = false;
    if !locked {
        return None;
    }
    let out = f();
    drop(file);
    Some(out)
}

impl FileLock {
    /// Creates `path` and locks it.
    fn create(path: &Path) -> Result<FileLock, IndexError> {
        let file = std::fs::File::create(path).map_err(|e| IndexError::io(path, e))?;
        #[cfg(unix)]
        if !flock::try_exclusive(&file) {
            return Err(IndexError::io(
                path,
                std::io::Error::other("locked by another build"),
            ));
        }
        Ok(FileLock { _file: file })
    }
}

/// Whether the build that wrote the generation folder `dir` is gone: its lock file exists and
/// can be locked (a running build holds it). `None` when there is no lock file to tell.
fn build_gone(dir: &Path) -> Option<bool> {
    let file = std::fs::File::open(dir.join(BUILD_LOCK)).ok()?;
    #[cfg(unix)]
    {
        Some(flock::try_exclusive(&file))
    }
    #[cfg(not(unix))]
    {
        drop(file);
        None
    }
}

/// Builds (or rebuilds) the index of `bundle_root` in `index_dir`. `progress` receives one line
/// per stage.
///
/// The build is incremental when the live generation is of this format: files whose path, size
/// and modification time did not change are not read again (their parse comes from the ingest
/// cache), the full-text index of the live generation is copied (hard links) and only the pages
/// added, changed or removed are deleted from or added to it. An unchanged bundle (same stat
/// fingerprint) keeps the live generation as it is. `BuildOptions::full` reads everything.
pub fn build(
    bundle_root: &Path,
    index_dir: &Path,
    options: &BuildOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<BuildReport, IndexError> {
    build::build(bundle_root, index_dir, options, Verify::Quick, progress)
}

/// Flushes a directory's entries (renames and new files) to disk; best effort.
fn sync_dir(dir: &Path) {
    if let Ok(handle) = std::fs::File::open(dir) {
        let _ = handle.sync_all();
    }
}

/// Makes `to` a copy of the folder `from` and of its folders (hard links where the file
/// system allows, copies otherwise). Tantivy never modifies a file it has written, so linked
/// files stay valid for both generations.
fn link_dir(from: &Path, to: &Path) -> Result<(), IndexError> {
    std::fs::create_dir_all(to).map_err(|e| IndexError::io(to, e))?;
    for entry in std::fs::read_dir(from).map_err(|e| IndexError::io(from, e))? {
        let entry = entry.map_err(|e| IndexError::io(from, e))?;
        let name = entry.file_name();
        let lossy = name.to_string_lossy();
        if lossy.starts_with(".tantivy-") && lossy.ends_with(".lock") {
            continue;
        }
        let source = entry.path();
        let target = to.join(&name);
        let file_type = entry.file_type().map_err(|e| IndexError::io(&source, e))?;
        if file_type.is_dir() {
            link_dir(&source, &target)?;
            continue;
        }
        if !file_type.is_file() {
            continue;
        }
        if std::fs::hard_link(&source, &target).is_err() {
            std::fs::copy(&source, &target).map_err(|e| IndexError::io(&target, e))?;
        }
    }
    Ok(())
}

mod erased {
    pub trait Json {
        fn to_json(&self) -> Vec<u8>;
    }
    impl<T: serde::Serialize> Json for T {
        fn to_json(&self) -> Vec<u8> {
            let mut bytes = serde_json::to_vec(self).unwrap_or_default();
            bytes.push(b'\n');
            bytes
        }
    }
}

/// Removes what builds killed before they finished left in `index_dir` (module docs), and, when
/// `prune`, the finished generations older than the one `CURRENT` names, as long as it names it
/// (one published meanwhile leaves them to the next build), but `in_use` (the generation the
/// calling build reads from, which a build publishing meanwhile may have made an older one). A
/// folder or file of a build still running is left alone, and so is the generation `CURRENT`
/// names (a build killed just after naming it left its lock file there).
fn remove_leftovers(index_dir: &Path, prune: bool, in_use: Option<&Path>) {
    let Ok(entries) = std::fs::read_dir(index_dir) else {
        return;
    };
    let named = current_generation(index_dir)
        .and_then(|g| g.file_name().map(|n| n.to_string_lossy().into_owned()));
    let old = |entry: &std::fs::DirEntry| {
        entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age.as_secs() > 3600)
    };
    let mut generations: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if let Some(generation) = name
            .strip_prefix("CURRENT.")
            .and_then(|n| n.strip_suffix(".tmp"))
        {
            // Written by a build that holds the lock of the generation it names.
            let holder = [
                index_dir.join(generation),
                index_dir.join(format!("{generation}.tmp")),
            ];
            if holder.iter().all(|dir| build_gone(dir) != Some(false)) {
                let _ = std::fs::remove_file(&path);
            }
            continue;
        }
        if Some(&name) == named.as_ref() || !name.starts_with("gen-") {
            continue;
        }
        let gone = build_gone(&path);
        if name.ends_with(".tmp") {
            // A build being written, or a killed build's. Without a lock file it is a build
            // killed as it began (once no build is creating one), or an older kbtools' (only
            // an old one is taken for a leftover when the creation lock cannot be taken).
            let unlocked_leftover = || {
                while_creating(index_dir, || path.is_dir() && build_gone(&path).is_none())
                    .unwrap_or_else(|| old(&entry))
            };
            if gone == Some(true) || (gone.is_none() && unlocked_leftover()) {
                let _ = std::fs::remove_dir_all(&path);
            }
            continue;
        }
        match gone {
            // Finished by a build killed before `CURRENT` named it, or after.
            Some(true) => {
                let _ = std::fs::remove_dir_all(&path);
            }
            // Being published right now.
            Some(false) => {}
            None => {
                let modified = entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .unwrap_or(std::time::UNIX_EPOCH);
                generations.push((modified, path));
            }
        }
    }
    if !prune {
        return;
    }
    let Some(live) = named.map(|name| index_dir.join(name)) else {
        return;
    };
    let Ok(published) = std::fs::metadata(&live).and_then(|m| m.modified()) else {
        return;
    };
    for (modified, path) in generations {
        if modified < published
            && Some(path.as_path()) != in_use
            && current_generation(index_dir).as_ref() == Some(&live)
        {
            let _ = std::fs::remove_dir_all(path);
        }
    }
}

/// How an opened knowledge base answers.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// "Today" for OKF freshness (UTC date unless pinned).
    pub today: time::Date,
    /// Reads above this many bytes get 413 (DECISIONS 12).
    pub read_limit: u64,
    /// A search still running after this answers 504 `SEARCH_TIMEOUT` (the online default is
    /// 3 s), never a partial or empty success.
    pub search_deadline: std::time::Duration,
    /// How thoroughly opening checks the generation's files: [`Verify::Quick`] for one-shot
    /// commands, [`Verify::Full`] for long-running servers.
    pub verify: Verify,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            today: crate::okf::utc_today(),
            read_limit: 10 * 1024 * 1024,
            search_deadline: std::time::Duration::from_secs(3),
            verify: Verify::Quick,
        }
    }
}

/// An opened index: everything the six tools answer from.
pub struct KnowledgeBase {
    pub manifest: Manifest,
    pub catalog: Catalog,
    pub search: SearchIndex,
    pub bundle_root: PathBuf,
    /// The bundle root held open, files read relative to it (`None` when it could not be
    /// opened: each read then tries again).
    pub bundle_dir: Option<bundle::beneath::BundleRoot>,
    pub options: ServeOptions,
    /// Why this index is known to be older than the bundle (its refresh failed), when it is.
    pub stale: Option<String>,
}

impl KnowledgeBase {
    /// The relation graph of the source pages, read from the catalog (nothing is built).
    pub fn graph(&self) -> crate::graph::CatalogGraph<'_> {
        crate::graph::CatalogGraph::new(&self.catalog)
    }

    /// Opens the live generation of `index_dir`, checking its files at `options.verify`
    /// (module docs): a damaged generation is an [`IndexError::Corrupt`] naming the file.
    /// `bundle_root` overrides the manifest's.
    pub fn open(
        index_dir: &Path,
        bundle_root: Option<&Path>,
        options: ServeOptions,
    ) -> Result<Self, IndexError> {
        let generation = live_generation(index_dir)?.ok_or_else(|| IndexError::Corrupt {
            path: index_dir.display().to_string(),
            reason: "no index here (CURRENT is missing)".into(),
        })?;
        let manifest = generation_manifest(index_dir, &generation)?;
        verify_generation(&generation, &manifest, options.verify)?;
        let catalog = open_catalog(&generation)?;
        if catalog.kb_id() != manifest.knowledge_base_id {
            return Err(IndexError::Corrupt {
                path: generation.display().to_string(),
                reason: "catalog and manifest disagree".into(),
            });
        }
        let search_dir = generation.join("search");
        let search = SearchIndex::open(&search_dir, catalog.key_table())
            .and_then(|search| {
                if options.verify == Verify::Full {
                    // Checked in full: a server, which answers from this generation for long.
                    search.read_doc_positions()?;
                }
                Ok(search)
            })
            .map_err(|e| IndexError::Corrupt {
                path: search_dir.display().to_string(),
                reason: e.to_string(),
            })?;
        let bundle_root = match bundle_root {
            Some(root) => root.canonicalize().map_err(|e| IndexError::io(root, e))?,
            None => PathBuf::from(&manifest.bundle_root),
        };
        Ok(KnowledgeBase {
            manifest,
            catalog,
            search,
            bundle_dir: bundle::beneath::BundleRoot::open(&bundle_root).ok(),
            bundle_root,
            options,
            stale: None,
        })
    }

    /// Opens the index of `bundle_root` in `index_dir`, building it first when it is missing,
    /// damaged (checked at `options.verify`), or when the bundle changed since it was built (a
    /// stat fingerprint check).
    pub fn open_or_build(
        bundle_root: &Path,
        index_dir: &Path,
        build_options: &BuildOptions,
        options: ServeOptions,
        progress: &mut dyn FnMut(&str),
    ) -> Result<(Self, Option<BuildReport>), IndexError> {
        // A damaged index is rebuilt (never served); one of another format version is refused.
        let manifest = match read_manifest(index_dir) {
            Err(IndexError::Corrupt { .. }) => None,
            other => other?,
        };
        let fresh = match &manifest {
            Some(m) => {
                let walked = bundle::walk::walk(bundle_root);
                bundle::walk::stat_fingerprint(&walked) == m.stat_fingerprint
                    && build_options
                        .knowledge_base_id
                        .as_ref()
                        .is_none_or(|id| *id == m.knowledge_base_id)
            }
            None => false,
        };
        if fresh {
            match Self::open(index_dir, Some(bundle_root), options.clone()) {
                Ok(kb) => return Ok((kb, None)),
                Err(e @ IndexError::Corrupt { .. }) => {
                    progress(&format!("{}; rebuilding it", damage_line(&e)))
                }
                Err(e) => return Err(e),
            }
        }
        let report = match build::build(
            bundle_root,
            index_dir,
            build_options,
            options.verify,
            progress,
        ) {
            Ok(report) => report,
            // A refresh that cannot be written (a full disk, a read-only index folder) does not
            // take the index down: the live generation, when it opens, answers, said stale.
            Err(e @ (IndexError::Io { .. } | IndexError::Tantivy(_))) if manifest.is_some() => {
                let mut kb = match Self::open(index_dir, Some(bundle_root), options) {
                    Ok(kb) => kb,
                    Err(_) => return Err(e),
                };
                kb.stale = Some(stale_reason(&e, kb.manifest.active_content_revision));
                return Ok((kb, None));
            }
            Err(e) => return Err(e),
        };
        Ok((
            Self::open(index_dir, Some(bundle_root), options)?,
            Some(report),
        ))
    }

    pub fn kb_id(&self) -> &str {
        &self.manifest.knowledge_base_id
    }

    /// The revision, or `None` when the knowledge base has no readable content.
    pub fn revision(&self) -> Option<u64> {
        (self.catalog.source_page_count() > 0).then_some(self.manifest.active_content_revision)
    }

    /// The diagnostics of the build of this index.
    pub fn diagnostics(index_dir: &Path) -> Result<Vec<Diagnostic>, IndexError> {
        let generation = live_generation(index_dir)?.ok_or_else(|| IndexError::Corrupt {
            path: index_dir.display().to_string(),
            reason: "no index here (CURRENT is missing)".into(),
        })?;
        let manifest = generation_manifest(index_dir, &generation)?;
        let path = generation.join("diagnostics.json");
        let recorded = manifest.files.iter().find(|f| f.path == "diagnostics.json");
        let bytes = std::fs::read(&path).map_err(|e| IndexError::io(&path, e))?;
        if recorded
            .is_none_or(|r| r.size != bytes.len() as u64 || r.crc32 != crc32fast::hash(&bytes))
        {
            return Err(IndexError::Corrupt {
                path: path.display().to_string(),
                reason: "checksum mismatch".into(),
            });
        }
        serde_json::from_slice(&bytes).map_err(|e| IndexError::Corrupt {
            path: path.display().to_string(),
            reason: e.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `*.tmp` generation whose build still holds its lock is left alone; once the lock is
    /// released (the build died), the next clean-up removes it, and the `CURRENT.*.tmp` naming
    /// it.
    #[test]
    fn leftovers_of_a_running_build_stay_and_those_of_a_dead_one_go() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("gen-2-abcd.tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        let lock = FileLock::create(&tmp.join(BUILD_LOCK)).unwrap();
        let current_tmp = dir.path().join("CURRENT.gen-2-abcd.tmp");
        std::fs::write(&current_tmp, "gen-2-abcd").unwrap();
        // Another build's folder that has no lock file yet (being created: the creation lock
        // held meanwhile) stays too; one without a lock file that no build is creating (killed
        // between the two steps) goes.
        let fresh = dir.path().join("gen-3-ef01.tmp");
        let killed = dir.path().join("gen-3-dead.tmp");
        std::fs::create_dir_all(&killed).unwrap();
        let (created_tx, created_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let creator = {
            let (index_dir, fresh) = (dir.path().to_path_buf(), fresh.clone());
            std::thread::spawn(move || {
                let lock = while_creating(&index_dir, || {
                    std::fs::create_dir_all(&fresh).unwrap();
                    created_tx.send(()).unwrap();
                    std::thread::sleep(std::time::Duration::from_millis(200));
                    FileLock::create(&fresh.join(BUILD_LOCK)).unwrap()
                })
                .unwrap();
                done_rx.recv().unwrap();
                drop(lock);
            })
        };
        created_rx.recv().unwrap();
        remove_leftovers(dir.path(), false, None);
        assert!(tmp.is_dir() && current_tmp.is_file() && fresh.is_dir());
        assert!(!killed.exists());
        drop(lock);
        remove_leftovers(dir.path(), false, None);
        assert!(!tmp.exists() && !current_tmp.exists());
        assert!(fresh.is_dir());
        done_tx.send(()).unwrap();
        creator.join().unwrap();
        remove_leftovers(dir.path(), false, None);
        assert!(!fresh.exists());

        // A build killed after naming its generation in CURRENT left its lock file there: the
        // live generation stays; a finished generation CURRENT never named goes.
        let live = dir.path().join("gen-4-aaaa");
        let orphan = dir.path().join("gen-5-bbbb");
        for generation in [&live, &orphan] {
            std::fs::create_dir_all(generation).unwrap();
            drop(FileLock::create(&generation.join(BUILD_LOCK)).unwrap());
        }
        std::fs::write(dir.path().join("CURRENT"), "gen-4-aaaa").unwrap();
        remove_leftovers(dir.path(), false, None);
        assert!(live.is_dir() && !orphan.exists());
    }

    /// A build's pruning removes the finished generations older than the live one, and nothing
    /// newer (one published meanwhile) nor anything when there is no live generation.
    #[test]
    fn pruning_removes_the_generations_older_than_the_live_one() {
        let dir = tempfile::tempdir().unwrap();
        let now = std::time::SystemTime::now();
        let generation = |name: &str, age_s: u64| {
            let path = dir.path().join(name);
            std::fs::create_dir_all(&path).unwrap();
            std::fs::write(path.join("manifest.json"), "{}").unwrap();
            let time = now - std::time::Duration::from_secs(age_s);
            std::fs::File::open(&path)
                .unwrap()
                .set_modified(time)
                .unwrap();
            path
        };
        let oldest = generation("gen-1-aaaa", 300);
        let older = generation("gen-2-bbbb", 200);
        let live = generation("gen-3-cccc", 100);
        let newer = generation("gen-4-dddd", 0);
        remove_leftovers(dir.path(), true, None);
        assert!(
            oldest.is_dir() && older.is_dir(),
            "no CURRENT: nothing is pruned"
        );
        std::fs::write(dir.path().join("CURRENT"), "gen-3-cccc").unwrap();
        remove_leftovers(dir.path(), false, None);
        assert!(oldest.is_dir() && older.is_dir(), "no pruning asked for");
        // The generation a build reads from stays, even when it is no longer the live one.
        remove_leftovers(dir.path(), true, Some(&older));
        assert!(!oldest.exists() && older.is_dir());
        remove_leftovers(dir.path(), true, None);
        assert!(!older.exists());
        assert!(live.is_dir() && newer.is_dir());
    }
}
