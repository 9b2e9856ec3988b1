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
//! .write.lock                  held by the one build of the folder running (builds wait)
//! ```
//!
//! # Publishing, and what a crash leaves
//!
//! Builds of one index folder run one at a time: each holds an exclusive lock on `.write.lock`
//! from before it reads the live generation until it has published its own (a second build waits,
//! then finds the first one's generation live), so a revision number is taken from the generation
//! published last and never given to two generations.
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
//!   `CURRENT` is a regular file (not a link, at most 256 bytes) naming a generation that is a
//!   folder of the index folder (not a link); the manifest's own CRC-32; every recorded file
//!   exists, a regular file reached through no link, with its recorded size, and a file whose modification time changed has its CRC-32
//!   computed (a copied index is checked in full once per open, never refused); the catalog's
//!   CRC-32 ([`catalog::store`]), the ingest cache's section CRC-32s when read (`cache`), and
//!   tantivy's own footer checks when a segment file is opened. This costs a `stat` per file,
//!   so a cold `kbtools --no-refresh call` stays a few milliseconds and `kbtools index` on an
//!   unchanged 100,000-page bundle does not read its 300 MB of index.
//! - **in full** ([`Verify::Full`]: every file's CRC-32): when a build records a file it wrote
//!   (files hard-linked from the previous generation keep the previous record, so a damaged
//!   one is never blessed), and when a long-running server (`kbtools serve`, `kbtools mcp`,
//!   `crate::serve::live`) opens a generation, where the time is spent once per generation.
//!
//! What the always-on checks cannot see is a byte changed in place with the file's size and
//! modification time restored (bit rot under a file system that does not notice it): a server
//! refuses such a generation, a one-shot command may answer from it.
//!
//! A damaged generation is never served: opening it fails with [`IndexError::Corrupt`], naming
//! the file and what is wrong, and a build (`kbtools index`, or the refresh before a `kbtools
//! call` without `--no-refresh`) finds the damage and rebuilds from scratch, keeping the revision
//! numbers when the manifest is intact.

mod build;
mod cache;
pub mod catalog;
mod embed_cache;
mod generations;
mod manifest;
pub mod replica;
pub mod search_index;
pub mod vectors;

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::IndexError;
use crate::ingest::bundle::Diagnostic;
pub(crate) use manifest::generation_manifest;
pub(crate) use manifest::CrcWriter;
pub use manifest::{verify_generation, Counts, FileRecord, Manifest};

/// [`build`], checking the previous generation's files at a given `Verify` before reusing them.
pub(crate) use build::build as build_verified;
/// `CURRENT` read as a server follows it (`serve::live`).
#[cfg(feature = "server")]
pub(crate) use generations::read_current;
pub(crate) use generations::{
    check_generation_folder, damage_line, erased, last_revision, link_dir, live_generation,
    load_previous, lock_for_writing, open_catalog, remove_leftovers, stale_reason, sync_dir,
    while_creating, BuildingGeneration, FileLock, Previous, BUILD_LOCK, CATALOG_FILE,
    INGEST_CACHE_FILE,
};
pub use generations::{current_generation, default_index_dir, read_manifest};

/// Version of the on-disk index layout. Bump it whenever the layout changes.
pub const INDEX_FORMAT_VERSION: u64 = 16;

/// Version of what a build derives from files that did not change (a plain folder's relations
/// from its links, …). Bump it when that changes: a build over the same files then assembles
/// the catalog again (keeping the vectors and the pages' index) instead of keeping the last
/// generation, so an index made by an older kbtools gets the new derivation without `--full`.
/// 1: links resolved by their path's end (a folder copied out of another layout).
/// 2: histories (changelogs, release notes) flagged in the catalog.
pub(crate) const DERIVATION_VERSION: u64 = 2;

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
    /// Whether the generation has the semantic lane's vectors ([`vectors`]).
    pub semantic: Semantic,
    /// Where the embedding model is (`--model-dir`); `None`: `KBTOOLS_MODEL_DIR`, else the
    /// user's data folder.
    pub model_dir: Option<std::path::PathBuf>,
    /// Files to leave out (`--exclude`, gitignore patterns), besides the folder's `.kbignore`
    /// (and a plain folder's `.gitignore`); `None`: those the index was built with
    /// ([`exclusions`]).
    pub exclude: Option<Vec<String>>,
    /// Whether the pages the vectors lack are embedded now or left for a later build.
    pub embedding: Embedding,
    /// Told how far embedding has come (a server's health reads it).
    pub embed_progress: Option<std::sync::Arc<vectors::EmbedProgress>>,
}

/// When a build embeds the pages its vectors lack (docs/semantic.md, "Embedding in the
/// background").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Embedding {
    /// Before the generation is published: `kbtools index`, and a server's background build.
    #[default]
    Now,
    /// Never: the generation takes the vectors the previous one and the embedding cache hold,
    /// and the other pages are published without (counted in the manifest's `pagesWithout`)
    /// for a later build to embed. What query commands and a server's first build do, so that
    /// nothing waits for the model. A generation with pages left so is up to date for a
    /// deferred build, not for one that embeds now.
    Deferred,
}

/// The `--exclude` patterns a build applies: `options.exclude` when given, else those the
/// index was built with (its manifest keeps them, so that a later command that builds without
/// naming them neither drops them nor takes the index for stale).
pub fn exclusions(options: &BuildOptions, manifest: Option<&Manifest>) -> Vec<String> {
    match (&options.exclude, manifest) {
        (Some(given), _) => given.clone(),
        (None, Some(manifest)) => manifest.exclude.clone(),
        (None, None) => Vec::new(),
    }
}

/// Whether the generation of `manifest` has the vectors `options` want (an unchanged bundle
/// then needs no build).
pub(crate) fn semantic_fits(options: &BuildOptions, manifest: &Manifest) -> bool {
    build::semantic_fits(options, manifest)
}

/// Whether the generation of `manifest` is what a build with `options` makes of files whose
/// stat fingerprint is `stat_fingerprint` ([`crate::ingest::bundle::walk::stat_fingerprint`]): the same
/// files, the same derivation, the vectors wanted, the same knowledge-base id. A build then
/// keeps it, and a query command opens it as it is.
pub(crate) fn up_to_date(
    options: &BuildOptions,
    manifest: &Manifest,
    stat_fingerprint: &str,
) -> bool {
    manifest.stat_fingerprint == stat_fingerprint
        && options
            .exclude
            .as_ref()
            .is_none_or(|e| *e == manifest.exclude)
        && manifest.derivation_version == DERIVATION_VERSION
        && semantic_fits(options, manifest)
        && options
            .knowledge_base_id
            .as_ref()
            .is_none_or(|id| *id == manifest.knowledge_base_id)
}

/// Whether a build makes the semantic lane's vectors.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Semantic {
    /// As the previous generation had them (an index built with vectors keeps them through
    /// every refresh until it is rebuilt without them).
    #[default]
    Keep,
    /// With vectors (`--semantic`): the model must be installed.
    On,
    /// Without (`--no-semantic`); the index remembers it ([`Manifest::semantic_off`]), so that
    /// [`Semantic::Auto`] builds keep it without.
    Off,
    /// With vectors when the semantic lane's model is installed (or the previous generation had
    /// them), unless the index was built `--no-semantic` (and not `--semantic` since): what
    /// `kbtools index` and the first build of a query command or server do, so that installing
    /// the models turns the semantic lanes on.
    Auto,
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
    /// The semantic lane's vectors: kept, read, embedded.
    pub vectors: vectors::VectorWork,
    /// The cross-language lane's.
    pub cross_vectors: vectors::VectorWork,
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
