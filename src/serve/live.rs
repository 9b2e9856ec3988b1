//! Live knowledge bases for the servers: a [`LiveKnowledgeBase`] hands out snapshots of the
//! index's live generation and switches to a rebuilt (or newly published) one between requests;
//! its [`Health`] is what a load balancer reads. The watcher that rebuilds on changes
//! (`--watch`) is [`crate::serve::watch`], re-exported here.
//!
//! The switch: an index folder names its live generation in `CURRENT`, which a build replaces
//! atomically once the new generation is complete. [`LiveKnowledgeBase::get`] looks at
//! `CURRENT`'s metadata on every call (one `lstat`, not following a link) and reads it again
//! only when that changed (or a second has passed): a regular file, at most 256 bytes, never
//! through a link, a FIFO or a device. When it names another generation, one call opens it and
//! swaps the shared `Arc` under a write lock. A request takes one snapshot at its start and
//! answers from it to its end, so a response is from one revision or the other, never a mix; a
//! snapshot still in use keeps its generation open after the switch. A `CURRENT` that cannot be
//! read or names no generation, and a generation that does not open (damaged, removed, another
//! format version, another knowledge-base id, or, following a published folder, one without its
//! own copy of the bundle or one that leads outside the folder) are not switched to: the old
//! one keeps answering, health says `stale`, and the problem is logged once.
//!
//! The library never prints: everything worth saying goes to a [`Log`] the caller supplies.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use crate::error::IndexError;
use crate::index;
use crate::kb::{BundleFrom, KnowledgeBase, ServeOptions};
pub use crate::serve::watch::{BundleWatcher, WatchError, WatchMode, WatchOptions};

/// How much a log line matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Progress: a rebuild started or finished, a switch to a new revision.
    Progress,
    /// Something went wrong and the server keeps answering from what it has.
    Warning,
}

/// Where a live knowledge base and a watcher say what happens (the CLI prints it on stderr).
pub type Log = Arc<dyn Fn(Level, &str) + Send + Sync>;

/// A log that drops everything.
pub fn silent() -> Log {
    Arc::new(|_, _| {})
}

crate::wire::wire_enum! {
    /// Whether a knowledge base answers from the generation `CURRENT` names.
    pub enum HealthState {
        /// It does.
        Ready = "ready",
        /// `CURRENT` names a newer one, being opened; requests meanwhile answer from the
        /// previous one.
        Switching = "switching",
        /// `CURRENT` names one that did not open, or cannot be read or names none (logged); the
        /// previous one keeps answering.
        Stale = "stale",
    }
}

/// What a load balancer's health check reads of a live knowledge base
/// (`GET /openapi/v2/health`).
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    pub knowledge_base_id: String,
    pub active_content_revision: u64,
    /// The generation answering (`None` for a knowledge base that follows no index folder).
    pub generation: Option<String>,
    pub state: HealthState,
    /// How far the server's background embedding has come, when it embeds
    /// ([`crate::serve::background`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedding: Option<EmbeddingHealth>,
}

crate::wire::wire_enum! {
    /// Where a server's background embedding stands.
    pub enum EmbeddingState {
        /// Not looked at yet: the live generation may lack vectors.
        Pending = "pending",
        /// Embedding the pages the live generation lacks; searches meanwhile run over the
        /// pages that have vectors.
        Running = "running",
        /// The live generation has every vector the installed models make (or no model is
        /// installed: there is nothing to embed).
        Done = "done",
        /// The last background build failed (logged); lexical answers go on.
        Failed = "failed",
    }
}

/// The health answer's `embedding`.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddingHealth {
    pub state: EmbeddingState,
    /// Passage windows embedded of those the running (or last) build embeds.
    pub windows_done: u64,
    pub windows_total: u64,
    /// Seconds left at the rate so far (`None` until the first chunk is done).
    pub seconds_left: Option<u64>,
    /// Why the last background build failed.
    pub error: Option<String>,
}

/// A background embedding's state, shared by its thread (which sets it) and the health answer
/// (which reads it).
#[derive(Debug)]
pub struct EmbeddingStatus {
    state: Mutex<(EmbeddingState, Option<String>)>,
    /// The build's counters ([`index::BuildOptions::embed_progress`]).
    pub progress: Arc<index::vectors::EmbedProgress>,
}

impl Default for EmbeddingStatus {
    fn default() -> Self {
        EmbeddingStatus {
            state: Mutex::new((EmbeddingState::Pending, None)),
            progress: Arc::default(),
        }
    }
}

impl EmbeddingStatus {
    /// Sets the state, with why it failed.
    pub fn set(&self, state: EmbeddingState, error: Option<String>) {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner) = (state, error);
    }

    pub fn state(&self) -> EmbeddingState {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).0
    }

    /// The health answer's `embedding`.
    pub fn health(&self) -> EmbeddingHealth {
        use std::sync::atomic::Ordering::Relaxed;
        let (state, error) = self
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let p = &self.progress;
        let left = p.seconds_left.load(Relaxed);
        EmbeddingHealth {
            state,
            windows_done: p.windows_done.load(Relaxed),
            windows_total: p.windows_total.load(Relaxed),
            seconds_left: (state == EmbeddingState::Running && left != u64::MAX).then_some(left),
            error,
        }
    }
}

/// A failed generation is tried again at most this often by [`LiveKnowledgeBase::get`].
const RETRY_FAILED_AFTER: Duration = Duration::from_secs(30);

/// `CURRENT` is read again after this long even when its metadata looks the same (a file
/// rewritten in place within one tick of the file system's clock keeps its times).
const REREAD_CURRENT_AFTER: Duration = Duration::from_secs(1);

/// Where a live knowledge base reopens from.
struct Source {
    index_dir: PathBuf,
    bundle_root: Option<PathBuf>,
    options: ServeOptions,
    /// Following a published folder (the first generation carried its own copy of the bundle):
    /// every later one must too, and is read only from it.
    published: bool,
}

/// What `CURRENT` named when last read: the generation folder, or why it names none.
type Named = Result<PathBuf, String>;

/// `CURRENT` as last read, and its metadata then.
struct Pointer {
    stamp: Option<Stamp>,
    read_at: Instant,
    named: Named,
    /// A bad `CURRENT` is logged once per reason.
    logged: bool,
}

/// What tells that `CURRENT` changed: its metadata, not following a link.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    /// Device, inode and change time, where there are.
    identity: (u64, u64, i64, i64),
    is_file: bool,
}

impl Stamp {
    fn of(path: &Path) -> Option<Stamp> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        #[cfg(unix)]
        let identity = {
            use std::os::unix::fs::MetadataExt;
            (meta.dev(), meta.ino(), meta.ctime(), meta.ctime_nsec())
        };
        #[cfg(not(unix))]
        let identity = (0, 0, 0, 0);
        Some(Stamp {
            len: meta.len(),
            modified: meta.modified().ok(),
            identity,
            is_file: meta.is_file(),
        })
    }
}

/// The knowledge base requests answer from, and the generation folder it was opened from.
struct Snapshot {
    kb: Arc<KnowledgeBase>,
    /// `None` when not known (the next check opens whatever `CURRENT` names).
    generation: Option<PathBuf>,
}

/// A generation that did not open: not tried again before `at + RETRY_FAILED_AFTER` (unless a
/// caller asks for it), and logged once.
struct Failed {
    generation: PathBuf,
    at: Instant,
}

/// A knowledge base that follows its index folder: [`get`](Self::get) returns a snapshot of the
/// live generation, switching to a rebuilt one first when `CURRENT` names another.
pub struct LiveKnowledgeBase {
    /// `None` for a fixed knowledge base (never switches).
    source: Option<Source>,
    /// The knowledge-base id served; a generation with another id is not switched to (every
    /// file id and cursor a client holds would change meaning).
    kb_id: String,
    current: RwLock<Snapshot>,
    /// Held while a generation is opened, so only one thread opens at a time.
    reload: Mutex<Option<Failed>>,
    /// `CURRENT` as last read (`None`: not yet).
    pointer: Mutex<Option<Pointer>>,
    log: Log,
    /// The background embedding of its index, when the server runs one.
    embedding: std::sync::OnceLock<Arc<EmbeddingStatus>>,
}

impl LiveKnowledgeBase {
    /// A knowledge base that never switches (tests, and servers over an index that has no
    /// folder to follow).
    pub fn fixed(kb: KnowledgeBase) -> Self {
        LiveKnowledgeBase {
            source: None,
            kb_id: kb.kb_id().to_string(),
            current: RwLock::new(Snapshot {
                kb: Arc::new(kb),
                generation: None,
            }),
            reload: Mutex::new(None),
            pointer: Mutex::new(None),
            log: silent(),
            embedding: std::sync::OnceLock::new(),
        }
    }

    /// Opens the live generation of `index_dir`, checking every file of it, and follows it.
    /// `bundle_root` overrides the manifest's, as in [`KnowledgeBase::open`].
    pub fn open(
        index_dir: &Path,
        bundle_root: Option<&Path>,
        options: ServeOptions,
        log: Log,
    ) -> Result<Self, IndexError> {
        let options = ServeOptions {
            verify: index::Verify::Full,
            ..options
        };
        let generation = index::current_generation(index_dir);
        let kb = KnowledgeBase::open(index_dir, bundle_root, options)?;
        // A build that swapped CURRENT while we opened: the next check opens again.
        let generation =
            generation.filter(|g| index::current_generation(index_dir).as_ref() == Some(g));
        Ok(Self::following(kb, generation, index_dir, bundle_root, log))
    }

    /// Follows `index_dir` from `kb`, already opened from it (by [`KnowledgeBase::open`] or
    /// [`KnowledgeBase::open_or_build`] with the same `bundle_root`).
    pub fn from_opened(
        kb: KnowledgeBase,
        index_dir: &Path,
        bundle_root: Option<&Path>,
        log: Log,
    ) -> Self {
        // The generation CURRENT names now is the one `kb` came from when its manifest says so;
        // otherwise (a build since) the first check opens the live one.
        let same = matches!(index::read_manifest(index_dir), Ok(Some(m))
            if m.active_content_revision == kb.manifest.active_content_revision
                && m.knowledge_base_id == kb.manifest.knowledge_base_id);
        let generation = index::current_generation(index_dir).filter(|_| same);
        Self::following(kb, generation, index_dir, bundle_root, log)
    }

    fn following(
        kb: KnowledgeBase,
        generation: Option<PathBuf>,
        index_dir: &Path,
        bundle_root: Option<&Path>,
        log: Log,
    ) -> Self {
        // Every generation switched to has all its files checked: a server opens a generation
        // once and answers from it for long (index module docs, "Checking what is opened").
        let source = Source {
            index_dir: index_dir.to_path_buf(),
            bundle_root: bundle_root.map(Path::to_path_buf),
            options: ServeOptions {
                verify: index::Verify::Full,
                ..kb.options.clone()
            },
            published: kb.is_published(),
        };
        LiveKnowledgeBase {
            source: Some(source),
            kb_id: kb.kb_id().to_string(),
            current: RwLock::new(Snapshot {
                kb: Arc::new(kb),
                generation,
            }),
            reload: Mutex::new(None),
            pointer: Mutex::new(None),
            log,
            embedding: std::sync::OnceLock::new(),
        }
    }

    /// The knowledge-base id served (fixed for the life of the server).
    pub fn kb_id(&self) -> &str {
        &self.kb_id
    }

    /// Reports `status` in [`Self::health`] (a background embedding of its index; the first
    /// one given stays).
    pub fn track_embedding(&self, status: Arc<EmbeddingStatus>) {
        let _ = self.embedding.set(status);
    }

    /// The index folder followed, if any.
    pub fn index_dir(&self) -> Option<&Path> {
        self.source.as_ref().map(|s| s.index_dir.as_path())
    }

    /// A snapshot of the live knowledge base, after switching to a rebuilt generation when
    /// `CURRENT` names another one. Answer a whole request from the one snapshot.
    pub fn get(&self) -> Arc<KnowledgeBase> {
        if self.source.is_some() {
            self.check(false);
        }
        self.snapshot()
    }

    /// Switches to the generation `CURRENT` names now, waiting for a switch another thread is
    /// making. True when it switched. A generation that does not open is tried again here
    /// (never more than once per call); the old one keeps answering.
    pub fn refresh(&self) -> bool {
        self.source.is_some() && self.check(true)
    }

    /// The health of this knowledge base, after the switch a request would make (so a load
    /// balancer's probes move an idle replica to a new generation too).
    pub fn health(&self) -> Health {
        let kb = self.get();
        let live = self.live_generation();
        let named = self.source.as_ref().map(|s| self.named(s));
        let state = match &named {
            Some(Err(_)) => HealthState::Stale,
            Some(Ok(named)) if live.as_ref() != Some(named) => match self.reload.try_lock() {
                Ok(failed) if failed.as_ref().is_some_and(|f| &f.generation == named) => {
                    HealthState::Stale
                }
                _ => HealthState::Switching,
            },
            _ => HealthState::Ready,
        };
        Health {
            knowledge_base_id: self.kb_id.clone(),
            active_content_revision: kb.manifest.active_content_revision,
            generation: live.as_deref().map(display_name),
            state,
            embedding: self.embedding.get().map(|e| e.health()),
        }
    }

    /// The snapshot answered from now, without looking at `CURRENT`.
    pub fn snapshot(&self) -> Arc<KnowledgeBase> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .kb
            .clone()
    }

    fn live_generation(&self) -> Option<PathBuf> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .generation
            .clone()
    }

    /// The generation `CURRENT` names, read again only when its metadata changed (or
    /// [`REREAD_CURRENT_AFTER`] passed); why it names none, logged once.
    fn named(&self, source: &Source) -> Named {
        let path = source.index_dir.join("CURRENT");
        let stamp = Stamp::of(&path);
        let mut pointer = self.pointer.lock().unwrap_or_else(PoisonError::into_inner);
        let fresh = pointer
            .as_ref()
            .is_some_and(|p| p.stamp == stamp && p.read_at.elapsed() < REREAD_CURRENT_AFTER);
        if !fresh {
            let named = match index::read_current(&source.index_dir) {
                Ok(Some(name)) => Ok(source.index_dir.join(name)),
                Ok(None) => Err(format!("{} is missing", path.display())),
                Err(e) => Err(e.to_string()),
            };
            let logged = match pointer.take() {
                Some(old) => old.logged && old.named == named,
                None => false,
            };
            *pointer = Some(Pointer {
                stamp,
                read_at: Instant::now(),
                named,
                logged,
            });
        }
        let Some(pointer) = pointer.as_mut() else {
            return Err("CURRENT was not read".into());
        };
        if let (Err(reason), false) = (&pointer.named, pointer.logged) {
            pointer.logged = true;
            (self.log)(
                Level::Warning,
                &format!(
                    "cannot follow {}: {reason}; still answering from revision {}",
                    self.kb_id,
                    self.snapshot().manifest.active_content_revision
                ),
            );
        }
        pointer.named.clone()
    }

    /// Opens and swaps in the generation `CURRENT` names when it is not the live one. A request
    /// (`wait` false) never waits for another thread's open: it answers from the snapshot there
    /// is, and skips a generation that failed recently.
    fn check(&self, wait: bool) -> bool {
        let Some(source) = &self.source else {
            return false;
        };
        let Ok(named) = self.named(source) else {
            return false;
        };
        if self.live_generation().as_ref() == Some(&named) {
            return false;
        }
        let mut failed = if wait {
            self.reload.lock().unwrap_or_else(PoisonError::into_inner)
        } else {
            match self.reload.try_lock() {
                Ok(guard) => guard,
                Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => return false,
            }
        };
        // Another thread may have switched while this one waited.
        if self.live_generation().as_ref() == Some(&named) {
            return false;
        }
        let failed_before = failed.as_ref().is_some_and(|f| f.generation == named);
        if failed_before
            && !wait
            && failed
                .as_ref()
                .is_some_and(|f| f.at.elapsed() < RETRY_FAILED_AFTER)
        {
            return false;
        }
        let from = if source.published {
            BundleFrom::Copy
        } else {
            BundleFrom::Given(source.bundle_root.as_deref())
        };
        let opened = KnowledgeBase::open_generation(&named, from, source.options.clone())
            .map_err(|e| e.to_string())
            .and_then(|kb| {
                if kb.kb_id() == self.kb_id {
                    Ok(kb)
                } else {
                    Err(format!(
                        "it is knowledge base {} and this server serves {}; restart the server to \
                     serve the new id",
                        kb.kb_id(),
                        self.kb_id
                    ))
                }
            });
        match opened {
            Ok(kb) => {
                let revision = kb.manifest.active_content_revision;
                let snapshot = Snapshot {
                    kb: Arc::new(kb),
                    generation: Some(named.clone()),
                };
                let old = std::mem::replace(
                    &mut *self.current.write().unwrap_or_else(PoisonError::into_inner),
                    snapshot,
                );
                let previous = old.kb.manifest.active_content_revision;
                // Closing the old generation (when no request holds it) happens outside the lock.
                drop(old);
                *failed = None;
                (self.log)(
                    Level::Progress,
                    &format!(
                        "switched {} to {} (revision {previous} -> {revision})",
                        self.kb_id,
                        display_name(&named)
                    ),
                );
                true
            }
            Err(reason) => {
                if !failed_before {
                    (self.log)(
                        Level::Warning,
                        &format!(
                            "cannot switch {} to {}: {reason}; still answering from revision {}",
                            self.kb_id,
                            named.display(),
                            self.snapshot().manifest.active_content_revision
                        ),
                    );
                }
                *failed = Some(Failed {
                    generation: named,
                    at: Instant::now(),
                });
                false
            }
        }
    }
}

fn display_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}
