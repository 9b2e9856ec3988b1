//! The persistent local index: a manifest (format version, tool version, knowledge-base id,
//! revision, fingerprints, counts), the document catalog, the tantivy full-text index and the
//! diagnostics of the build. Builds go to a temporary folder that is swapped in at the end, so a
//! reader never sees half an index.
//!
//! Layout of an index folder:
//!
//! ```text
//! CURRENT            name of the live generation folder (replaced atomically)
//! gen-<n>/manifest.json, catalog.json, diagnostics.json, search/ (tantivy)
//! ```

pub mod bm25;
pub mod catalog;
pub mod search_index;

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::bundle::{self, BundleKind, Diagnostic};
use crate::error::IndexError;
use crate::ids;
use catalog::{Catalog, CatalogData, CatalogFile, CatalogRelation};
use search_index::{IndexedPage, SearchIndex};

/// Version of the on-disk index layout. Bump it whenever the layout changes.
pub const INDEX_FORMAT_VERSION: u64 = 4;

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

/// Builds (or rebuilds) the index of `bundle_root` in `index_dir`. `progress` receives one line
/// per stage.
pub fn build(
    bundle_root: &Path,
    index_dir: &Path,
    options: &BuildOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<BuildReport, IndexError> {
    progress(&format!("reading {}", bundle_root.display()));
    let ingested = bundle::ingest(bundle_root)?;
    progress(&format!(
        "read {} files ({} source pages, {} relations, {} diagnostics)",
        ingested.files.len(),
        ingested.files.iter().filter(|f| f.source_backed).count(),
        ingested.relations.len(),
        ingested.diagnostics.len()
    ));
    let read_count = ingested.files.iter().filter(|f| f.disk.is_some()).count() as u64;
    std::fs::create_dir_all(index_dir).map_err(|e| IndexError::io(index_dir, e))?;

    // The previous generation decides the revision and each page's resource revision.
    let previous = match read_manifest(index_dir) {
        Ok(Some(manifest)) => current_generation(index_dir)
            .and_then(|g| read_json::<CatalogData>(&g.join("catalog.json")).ok())
            .map(|catalog| (manifest, catalog)),
        _ => None,
    };
    let kb_id = options
        .knowledge_base_id
        .clone()
        .unwrap_or_else(|| ids::knowledge_base_id(&ingested.name));
    let (revision, revision_changed) = match &previous {
        Some((m, _))
            if m.content_fingerprint == ingested.content_fingerprint
                && m.knowledge_base_id == kb_id =>
        {
            (m.active_content_revision, false)
        }
        Some((m, _)) => (m.active_content_revision + 1, true),
        // An index of another format (or a damaged one) still tells the last revision, so that
        // cursors issued against it are refused after the rebuild.
        None => (last_revision(index_dir).map_or(1, |r| r + 1), true),
    };
    let previous_pages: HashMap<&str, (&str, Option<u64>)> = previous
        .as_ref()
        .map(|(_, c)| {
            c.files
                .iter()
                .map(|f| (f.path.as_str(), (f.sha256.as_str(), f.resource_revision)))
                .collect()
        })
        .unwrap_or_default();

    let mut files = Vec::with_capacity(ingested.files.len());
    let mut texts = Vec::new();
    for (i, f) in ingested.files.into_iter().enumerate() {
        let file_id = if f.source_backed {
            ids::source_file_id(&kb_id, &f.path)
        } else {
            ids::generated_file_id(&kb_id, &f.path)
        };
        let resource_revision =
            f.source_backed
                .then(|| match previous_pages.get(f.path.as_str()) {
                    Some((sha, Some(rev))) if *sha == f.sha256 => *rev,
                    _ => revision,
                });
        if let Some(text) = f.text {
            texts.push((i as u32, text));
        }
        files.push(CatalogFile {
            path: f.path,
            disk: f.disk,
            class: f.class,
            source_backed: f.source_backed,
            file_id,
            size: f.size,
            sha256: f.sha256,
            title: f.title,
            frontmatter: f.frontmatter,
            virtual_content: f.virtual_content,
            listed: f.listed,
            resource_revision,
        });
    }
    let position: HashMap<&str, u32> = files
        .iter()
        .enumerate()
        .map(|(i, f)| (f.path.as_str(), i as u32))
        .collect();
    let relations: Vec<CatalogRelation> = ingested
        .relations
        .iter()
        .filter_map(|r| {
            Some(CatalogRelation {
                from: *position.get(r.from.as_str())?,
                to: *position.get(r.to.as_str())?,
                relation_type: r.relation_type.clone(),
                direction: r.direction.clone(),
                reason: r.reason.clone(),
            })
        })
        .collect();
    let data = CatalogData {
        knowledge_base_id: kb_id.clone(),
        knowledge_base_name: ingested.name.clone(),
        kind: ingested.kind,
        files,
        relations,
    };

    // Write the new generation beside the live one, then swap.
    let generation_name = format!(
        "gen-{revision}-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let tmp = index_dir.join(format!("{generation_name}.tmp"));
    let search_dir = tmp.join("search");
    std::fs::create_dir_all(&search_dir).map_err(|e| IndexError::io(&search_dir, e))?;
    progress(&format!("indexing {} pages", texts.len()));
    let pages: Vec<IndexedPage<'_>> = texts
        .iter()
        .map(|(i, text)| {
            let file = &data.files[*i as usize];
            IndexedPage {
                position: *i,
                path: &file.path,
                title: file.title.as_deref().unwrap_or(""),
                text,
            }
        })
        .collect();
    let threads = if options.threads == 0 {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(4)
    } else {
        options.threads
    };
    search_index::write(&search_dir, &pages, threads)?;
    let work = BuildWork {
        incremental: false,
        unchanged: false,
        files_read: read_count,
        pages_indexed: pages.len() as u64,
        pages_removed: 0,
    };
    drop(pages);

    let canonical_root = bundle_root
        .canonicalize()
        .map_err(|e| IndexError::io(bundle_root, e))?;
    let manifest = Manifest {
        format_version: INDEX_FORMAT_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        knowledge_base_id: kb_id,
        knowledge_base_name: ingested.name,
        bundle_kind: ingested.kind,
        bundle_root: canonical_root.to_string_lossy().into_owned(),
        active_content_revision: revision,
        content_fingerprint: ingested.content_fingerprint,
        stat_fingerprint: ingested.stat_fingerprint,
        counts: Counts {
            files: data.files.iter().filter(|f| f.listed).count() as u64,
            virtual_files: data.files.iter().filter(|f| f.disk.is_none()).count() as u64,
            source_pages: data.files.iter().filter(|f| f.source_backed).count() as u64,
            relations: data.relations.len() as u64,
            diagnostics: ingested.diagnostics.len() as u64,
        },
    };
    let json = |v: &dyn erased::Json| v.to_json();
    write_file(&tmp.join("catalog.json"), &json(&data))?;
    write_file(&tmp.join("diagnostics.json"), &json(&ingested.diagnostics))?;
    write_file(&tmp.join("manifest.json"), &json(&manifest))?;
    let live = index_dir.join(&generation_name);
    std::fs::rename(&tmp, &live).map_err(|e| IndexError::io(&live, e))?;
    let current_tmp = index_dir.join(format!("CURRENT.{generation_name}.tmp"));
    write_file(&current_tmp, generation_name.as_bytes())?;
    std::fs::rename(&current_tmp, index_dir.join("CURRENT"))
        .map_err(|e| IndexError::io(index_dir.join("CURRENT"), e))?;
    remove_old_generations(index_dir, &generation_name);
    progress(&format!(
        "index ready at {} (revision {revision})",
        live.display()
    ));
    Ok(BuildReport {
        manifest,
        diagnostics: ingested.diagnostics,
        revision_changed,
        work,
    })
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
        let data: CatalogData = read_json(&generation.join("catalog.json"))?;
        if data.knowledge_base_id != manifest.knowledge_base_id {
            return Err(IndexError::Corrupt {
                path: generation.display().to_string(),
                reason: "catalog and manifest disagree".into(),
            });
        }
        let search = SearchIndex::open(&generation.join("search"))?;
        let bundle_root = match bundle_root {
            Some(root) => root.canonicalize().map_err(|e| IndexError::io(root, e))?,
            None => PathBuf::from(&manifest.bundle_root),
        };
        let catalog = Catalog::new(data);
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
