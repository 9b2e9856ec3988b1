//! An opened knowledge base: the live generation of an index (its manifest, catalog and search
//! index, from `index/`), the bundle it answers about, and how it answers. The six tools, the
//! search engine and the servers take a [`KnowledgeBase`]; `index/` builds and opens the files,
//! `graph.rs` reads the relations, and this module puts them together (above both).

use std::path::{Path, PathBuf};

mod content;

use crate::error::IndexError;
use crate::index::catalog::Catalog;
use crate::index::search_index::SearchIndex;
use crate::index::{
    self, check_generation_folder, damage_line, generation_manifest, live_generation, open_catalog,
    read_manifest, stale_reason, verify_generation, BuildOptions, BuildReport, Manifest, Verify,
};
use crate::ingest::bundle::{self, Diagnostic};

/// How an opened knowledge base answers.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// "Today" for OKF freshness (UTC date unless pinned).
    pub today: time::Date,
    /// Reads above this many bytes get 413 (rules#read-limit).
    pub read_limit: u64,
    /// A search still running after this answers 504 `SEARCH_TIMEOUT` (the online default is
    /// 3 s), never a partial or empty success.
    pub search_deadline: std::time::Duration,
    /// How thoroughly opening checks the generation's files: [`Verify::Quick`] for one-shot
    /// commands, [`Verify::Full`] for long-running servers.
    pub verify: Verify,
    /// Whether `hybrid` runs the semantic lane when the index has vectors and the model is
    /// installed (`kbtools eval` turns it off to compare).
    pub semantic: bool,
    /// Where the embedding model is; `None`: `KBTOOLS_MODEL_DIR`, else the user's data folder.
    pub model_dir: Option<PathBuf>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            today: crate::okf::utc_today(),
            read_limit: 10 * 1024 * 1024,
            search_deadline: std::time::Duration::from_secs(3),
            verify: Verify::Quick,
            semantic: true,
            model_dir: None,
        }
    }
}

/// Where an opened generation reads the bundle's files from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BundleFrom<'a> {
    /// A published generation's own copy; another generation's from this folder, else from the
    /// folder its manifest names.
    Given(Option<&'a Path>),
    /// The generation's own copy only: a generation without one is refused (a server that
    /// follows a published folder never reads outside it).
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    Copy,
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
    /// Whether the bundle files are a published generation's own copy ([`Self::is_published`]).
    published: bool,
    /// The semantic lane's vectors, when the generation has them ([`Self::vectors`]).
    vectors: LazyVectors,
    /// The cross-language lane's vectors, when the generation has them.
    cross_vectors: LazyVectors,
    /// The rules of the files the build left out, made at the first read of a generated file
    /// (`None`: there are none).
    exclusions: std::sync::OnceLock<Option<bundle::exclusions::Exclusions>>,
    /// The scripts of the source pages, found at the first search that weighs them
    /// (`crate::search::fusion`).
    pub(crate) page_scripts: std::sync::OnceLock<crate::search::PageScripts>,
}

/// A generation's vectors file, read at its first use: a call whose semantic lanes do not run
/// (`file` mode, no model installed) never reads it (SciFact's two files, 24 MB, were half of a
/// cold `file`-mode call). A server reads it at open ([`Verify::Full`]), where a damaged file
/// is refused with the rest of the generation; read later, a file that does not decode leaves
/// its lane unavailable.
struct LazyVectors {
    path: Option<PathBuf>,
    read: std::sync::OnceLock<Option<index::vectors::Vectors>>,
}

impl LazyVectors {
    /// The vectors at `path` (`None`: the generation has none), read now when `now`.
    fn open(path: Option<PathBuf>, now: bool) -> Result<Self, IndexError> {
        let read = std::sync::OnceLock::new();
        if let (Some(path), true) = (&path, now) {
            let _ = read.set(Some(index::vectors::Vectors::read(path)?));
        }
        Ok(LazyVectors { path, read })
    }

    fn get(&self) -> Option<&index::vectors::Vectors> {
        let path = self.path.as_ref()?;
        self.read
            .get_or_init(|| index::vectors::Vectors::read(path).ok())
            .as_ref()
    }

    /// Whether the file has been read.
    fn is_read(&self) -> bool {
        self.read.get().is_some()
    }
}

impl KnowledgeBase {
    /// The relation graph of the source pages, read from the catalog (nothing is built).
    pub fn graph(&self) -> crate::graph::CatalogGraph<'_> {
        crate::graph::CatalogGraph::new(&self.catalog)
    }

    /// The rules of the files the build left out (its `--exclude` patterns and the bundle's
    /// `.kbignore`), `None` when there are none.
    pub(crate) fn exclusions(&self) -> Option<&bundle::exclusions::Exclusions> {
        self.exclusions
            .get_or_init(|| {
                bundle::exclusions::Exclusions::new(
                    &self.bundle_root,
                    &self.manifest.exclude,
                    &mut Vec::new(),
                )
            })
            .as_ref()
    }

    /// The semantic lane's vectors, when the generation has them (read at the first call).
    pub fn vectors(&self) -> Option<&index::vectors::Vectors> {
        self.vectors.get()
    }

    /// The cross-language lane's vectors, when the generation has them (read at the first
    /// call).
    pub(crate) fn cross_vectors(&self) -> Option<&index::vectors::Vectors> {
        self.cross_vectors.get()
    }

    /// Whether either vectors file has been read.
    pub fn vectors_read(&self) -> bool {
        self.vectors.is_read() || self.cross_vectors.is_read()
    }

    /// Opens the live generation of `index_dir`, checking its files at `options.verify`
    /// (module docs): a damaged generation is an [`IndexError::Corrupt`] naming the file.
    /// `bundle_root` overrides the manifest's, except for a published generation
    /// (`index::replica`), which reads its own copy of the bundle, always.
    pub fn open(
        index_dir: &Path,
        bundle_root: Option<&Path>,
        options: ServeOptions,
    ) -> Result<Self, IndexError> {
        let generation = live_generation(index_dir)?.ok_or_else(|| IndexError::Corrupt {
            path: index_dir.display().to_string(),
            reason: "no index here (CURRENT is missing)".into(),
        })?;
        Self::open_generation(&generation, BundleFrom::Given(bundle_root), options)
    }

    /// Opens the generation folder `generation` (of an index folder), reading the bundle files
    /// as `from` says.
    pub(crate) fn open_generation(
        generation: &Path,
        from: BundleFrom<'_>,
        options: ServeOptions,
    ) -> Result<Self, IndexError> {
        let folder = check_generation_folder(generation)?;
        // A published generation answers what it indexed: its own copy, opened following no
        // link, so nothing it reads lies outside the published folder.
        let copy = index::replica::open_copy(generation)?;
        if copy.is_none() && from == BundleFrom::Copy {
            return Err(IndexError::Corrupt {
                path: generation.display().to_string(),
                reason: "it carries no copy of the bundle (bundle/), and this server serves a \
                         published folder, whose generations `kbtools index --publish` writes \
                         with one: publish it again"
                    .into(),
            });
        }
        let manifest = generation_manifest(generation.parent().unwrap_or(generation), generation)?;
        verify_generation(generation, &manifest, options.verify)?;
        let catalog = open_catalog(generation)?;
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
        let now = options.verify == Verify::Full;
        let vectors_of = |recorded: bool, file: &str| {
            LazyVectors::open(recorded.then(|| generation.join(file)), now)
        };
        let vectors = vectors_of(manifest.semantic.is_some(), index::vectors::VECTORS_FILE)?;
        let cross_vectors = vectors_of(
            manifest.cross_language.is_some(),
            index::vectors::CROSS_VECTORS_FILE,
        )?;
        let published = copy.is_some();
        let (bundle_root, bundle_dir) = match (copy, from) {
            (Some(copy), _) => {
                // Its files were opened by their path: the folder must still be the one checked
                // before (not swapped for a link meanwhile).
                if check_generation_folder(generation)? != folder {
                    return Err(IndexError::Corrupt {
                        path: generation.display().to_string(),
                        reason: "it was replaced while it was being opened".into(),
                    });
                }
                (copy.path().to_path_buf(), Some(copy))
            }
            (None, from) => {
                let root = match from {
                    BundleFrom::Given(Some(root)) => {
                        root.canonicalize().map_err(|e| IndexError::io(root, e))?
                    }
                    _ => PathBuf::from(&manifest.bundle_root),
                };
                (root.clone(), bundle::beneath::BundleRoot::open(&root).ok())
            }
        };
        Ok(KnowledgeBase {
            vectors,
            cross_vectors,
            manifest,
            catalog,
            search,
            bundle_dir,
            bundle_root,
            options,
            stale: None,
            exclusions: std::sync::OnceLock::new(),
            page_scripts: std::sync::OnceLock::new(),
            published,
        })
    }

    /// Whether it reads a published generation's own copy of the bundle (`index::replica`):
    /// then only through [`Self::bundle_dir`], which follows no link.
    pub fn is_published(&self) -> bool {
        self.published
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
        Self::open_or_build_ahead(
            bundle_root,
            index_dir,
            build_options,
            options,
            progress,
            |_| (),
        )
        .map(|(kb, report, _)| (kb, report))
    }

    /// [`Self::open_or_build`], running `ahead` on the index as soon as it opens, while the
    /// bundle is still being checked (a one-shot call's answer): its result comes back when the
    /// index turns out fresh, and is dropped (`None`) when the bundle changed and the index was
    /// rebuilt. `ahead` must only read (the six tools do).
    pub fn open_or_build_ahead<T>(
        bundle_root: &Path,
        index_dir: &Path,
        build_options: &BuildOptions,
        options: ServeOptions,
        progress: &mut dyn FnMut(&str),
        ahead: impl FnOnce(&KnowledgeBase) -> T,
    ) -> Result<(Self, Option<BuildReport>, Option<T>), IndexError> {
        // A damaged index is rebuilt (never served); one of another format version is refused.
        let manifest = match read_manifest(index_dir) {
            Err(IndexError::Corrupt { .. }) => None,
            other => other?,
        };
        // The index opens (and `ahead` runs) while the bundle is walked: a call that finds it
        // fresh (nearly every call) waits for the longer of the two, not their sum. The walk
        // has threads of its own, so that `ahead`'s parallel work does not queue behind it.
        let (fresh, opened) = match &manifest {
            Some(m) => std::thread::scope(|scope| {
                let check = scope.spawn(|| {
                    let exclude = index::exclusions(build_options, Some(m));
                    let walk = || bundle::walk::walk_excluding(bundle_root, &exclude);
                    // One thread more than the cores: the walk is the longer of the two, and
                    // its share of the cores while `ahead` runs beside it grows with its threads
                    // (SciFact's one-shot call, interleaved runs: 5–6% faster than one thread a
                    // core; twice the cores was no better).
                    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
                    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads + 1);
                    let walked = match pool.build() {
                        Ok(pool) => pool.install(walk),
                        Err(_) => walk(),
                    };
                    index::up_to_date(build_options, m, &bundle::walk::stat_fingerprint(&walked))
                });
                let opened = Self::open(index_dir, Some(bundle_root), options.clone()).map(|kb| {
                    let early = ahead(&kb);
                    (kb, early)
                });
                let fresh = check
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                (fresh, Some(opened))
            }),
            None => (false, None),
        };
        match opened {
            Some(Ok((kb, early))) if fresh => return Ok((kb, None, Some(early))),
            Some(Err(e @ IndexError::Corrupt { .. })) if fresh => {
                progress(&format!("{}; rebuilding it", damage_line(&e)));
            }
            Some(Err(e)) if fresh => return Err(e),
            _ => {}
        }
        let report = match index::build_verified(
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
                return Ok((kb, None, None));
            }
            Err(e) => return Err(e),
        };
        Ok((
            Self::open(index_dir, Some(bundle_root), options)?,
            Some(report),
            None,
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
