//! The persistent local index: a manifest (format version, tool version, knowledge-base id,
//! revision, fingerprints, counts), the document catalog, the tantivy full-text index and the
//! diagnostics of the build. Builds go to a temporary folder that is swapped in at the end, so a
//! reader never sees half an index.
//!
//! Layout of an index folder:
//!
//! ```text
//! CURRENT            name of the live generation folder (replaced atomically)
//! gen-<n>/manifest.json       format version, revision, fingerprints, counts (JSON)
//!         catalog.bin         the document catalog (read in place: catalog/store.rs)
//!         ingest-cache.bin    each file's parse, for incremental builds (cache.rs)
//!         diagnostics.json    the build's diagnostics
//!         search/             tantivy
//! ```

pub mod bm25;
mod build;
mod cache;
pub mod catalog;
pub mod search_index;

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::bundle::{self, BundleKind, Diagnostic};
use crate::error::IndexError;
use crate::ids;
use catalog::Catalog;
use search_index::SearchIndex;

/// Version of the on-disk index layout. Bump it whenever the layout changes.
pub const INDEX_FORMAT_VERSION: u64 = 7;

/// Counts recorded in the manifest.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    /// Files listed in the tree (bundle files plus listed virtual relation records).
    pub files: u64,
    /// Relation records kbtools renders itself (listed or not).
    #[serde(default)]
    pub virtual_files: u64,
    pub source_pages: u64,
    pub relations: u64,
    pub diagnostics: u64,
}

/// `manifest.json` of an index generation.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub format_version: u64,
    pub tool_version: String,
    pub knowledge_base_id: String,
    pub knowledge_base_name: String,
    pub bundle_kind: BundleKind,
    pub bundle_root: String,
    pub active_content_revision: u64,
    pub content_fingerprint: String,
    pub stat_fingerprint: String,
    pub counts: Counts,
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

/// The live generation folder of an index, if any.
pub fn current_generation(index_dir: &Path) -> Option<PathBuf> {
    let name = std::fs::read_to_string(index_dir.join("CURRENT")).ok()?;
    let name = name.trim();
    if name.is_empty() || name.contains('/') || name.contains("..") {
        return None;
    }
    Some(index_dir.join(name))
}

/// Reads the manifest of the live generation, checking its format version.
pub fn read_manifest(index_dir: &Path) -> Result<Option<Manifest>, IndexError> {
    let Some(generation) = current_generation(index_dir) else {
        return Ok(None);
    };
    let path = generation.join("manifest.json");
    let value: serde_json::Value = read_json(&path)?;
    let found = value
        .get("formatVersion")
        .and_then(|v| v.as_u64())
        .unwrap_or(0);
    if found != INDEX_FORMAT_VERSION {
        return Err(IndexError::FormatVersion {
            path: index_dir.display().to_string(),
            found,
            expected: INDEX_FORMAT_VERSION,
        });
    }
    serde_json::from_value(value)
        .map(Some)
        .map_err(|e| IndexError::Corrupt {
            path: path.display().to_string(),
            reason: e.to_string(),
        })
}

/// The `activeContentRevision` a live manifest records, whatever its format version.
fn last_revision(index_dir: &Path) -> Option<u64> {
    let path = current_generation(index_dir)?.join("manifest.json");
    let value: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    value.get("activeContentRevision")?.as_u64()
}

/// The default index folder of a bundle: `<cache>/kbtools/<folder name>-<hash of its path>`.
pub fn default_index_dir(bundle_root: &Path) -> PathBuf {
    let canonical = bundle_root
        .canonicalize()
        .unwrap_or_else(|_| bundle_root.to_path_buf());
    let mut hasher = Sha256::new();
    hasher.update(canonical.to_string_lossy().as_bytes());
    let hash: String = hasher.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
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
}

/// The live generation of `index_dir`, when it is of this format.
fn load_previous(index_dir: &Path) -> Option<Previous> {
    let manifest = read_manifest(index_dir).ok()??;
    let generation = current_generation(index_dir)?;
    Some(Previous {
        manifest,
        generation,
    })
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
    build::build(bundle_root, index_dir, options, progress)
}

/// Flushes a directory's entries (renames and new files) to disk; best effort.
fn sync_dir(dir: &Path) {
    if let Ok(handle) = std::fs::File::open(dir) {
        let _ = handle.sync_all();
    }
}

/// Makes `to` a copy of the folder `from` (hard links where the file system allows, copies
/// otherwise). Tantivy never modifies a file it has written, so linked files stay valid for
/// both generations.
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
        if !entry
            .file_type()
            .map_err(|e| IndexError::io(&source, e))?
            .is_file()
        {
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

/// Keeps the live generation and the one before it (a reader may still hold it open); removes
/// the rest and any temporary folder left by an interrupted build.
fn remove_old_generations(index_dir: &Path, live: &str) {
    let Ok(entries) = std::fs::read_dir(index_dir) else {
        return;
    };
    let mut generations: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == live || !name.starts_with("gen-") {
            continue;
        }
        let path = entry.path();
        if name.ends_with(".tmp") {
            // Another build may be writing it right now; leave young ones alone.
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age.as_secs() > 3600);
            if old {
                let _ = std::fs::remove_dir_all(&path);
            }
            continue;
        }
        let modified = entry
            .metadata()
            .and_then(|m| m.modified())
            .unwrap_or(std::time::UNIX_EPOCH);
        generations.push((modified, path));
    }
    generations.sort();
    generations.pop();
    for (_, path) in generations {
        let _ = std::fs::remove_dir_all(path);
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
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            today: crate::okf::utc_today(),
            read_limit: 10 * 1024 * 1024,
            search_deadline: std::time::Duration::from_secs(3),
        }
    }
}

/// An opened index: everything the six tools answer from.
pub struct KnowledgeBase {
    pub manifest: Manifest,
    pub catalog: Catalog,
    pub graph: crate::graph::RelationGraph,
    pub search: SearchIndex,
    pub bundle_root: PathBuf,
    pub options: ServeOptions,
}

impl KnowledgeBase {
    /// Opens the live generation of `index_dir`. `bundle_root` overrides the manifest's.
    pub fn open(
        index_dir: &Path,
        bundle_root: Option<&Path>,
        options: ServeOptions,
    ) -> Result<Self, IndexError> {
        let manifest = read_manifest(index_dir)?.ok_or_else(|| IndexError::Corrupt {
            path: index_dir.display().to_string(),
            reason: "no index here".into(),
        })?;
        let generation = current_generation(index_dir).ok_or_else(|| IndexError::Corrupt {
            path: index_dir.display().to_string(),
            reason: "CURRENT is missing".into(),
        })?;
        let catalog = open_catalog(&generation)?;
        if catalog.kb_id() != manifest.knowledge_base_id {
            return Err(IndexError::Corrupt {
                path: generation.display().to_string(),
                reason: "catalog and manifest disagree".into(),
            });
        }
        let search = SearchIndex::open(&generation.join("search"), catalog.key_table())?;
        let bundle_root = match bundle_root {
            Some(root) => root.canonicalize().map_err(|e| IndexError::io(root, e))?,
            None => PathBuf::from(&manifest.bundle_root),
        };
        Ok(KnowledgeBase {
            manifest,
            graph: crate::graph::RelationGraph::new(&catalog),
            catalog,
            search,
            bundle_root,
            options,
        })
    }

    /// Opens the index of `bundle_root` in `index_dir`, building it first when it is missing or
    /// when the bundle changed since it was built (a stat fingerprint check).
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
        let report = if fresh {
            None
        } else {
            Some(build(bundle_root, index_dir, build_options, progress)?)
        };
        Ok((Self::open(index_dir, Some(bundle_root), options)?, report))
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
        let generation = current_generation(index_dir).ok_or_else(|| IndexError::Corrupt {
            path: index_dir.display().to_string(),
            reason: "CURRENT is missing".into(),
        })?;
        read_json(&generation.join("diagnostics.json"))
    }
}
