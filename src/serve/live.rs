//! Live knowledge bases for the servers: a [`LiveKnowledgeBase`] hands out snapshots of the
//! index's live generation and switches to a rebuilt one between requests; a [`BundleWatcher`]
//! rebuilds the index when the bundle changes (`--watch`).
//!
//! The switch: an index folder names its live generation in `CURRENT`, which a build replaces
//! atomically once the new generation is complete. [`LiveKnowledgeBase::get`] reads `CURRENT`
//! (about a microsecond, so it does on every call) and, when it names another generation, opens
//! it and swaps the shared `Arc` under a write lock. A request takes one snapshot at its start
//! and answers from it to its end, so a response is from one revision or the other, never a
//! mix; a snapshot still in use keeps its generation open after the switch. A generation that
//! does not open (damaged, removed, another format version, another knowledge-base id) is not
//! switched to: the old one keeps answering and the problem is logged once.
//!
//! The watch: file-system events (the `notify` crate) or, when a watcher cannot be had (inotify
//! limits on a huge tree), a poll of the bundle's stat fingerprint, feed one builder thread that
//! waits until the bundle has been quiet for a moment, compares the stat fingerprint with the
//! live manifest's, rebuilds with [`index::build`] when they differ, and switches the live
//! knowledge base. One builder per bundle, and one build at a time in the whole process.
//!
//! The library never prints: everything worth saying goes to a [`Log`] the caller supplies.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use notify::Watcher as _;

use crate::error::IndexError;
use crate::index::{self, BuildOptions};
use crate::ingest::bundle::walk;
use crate::kb::{KnowledgeBase, ServeOptions};

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
        /// `CURRENT` names one that did not open (logged); the previous one keeps answering.
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
}

/// A failed generation is tried again at most this often by [`LiveKnowledgeBase::get`].
const RETRY_FAILED_AFTER: Duration = Duration::from_secs(30);

/// Where a live knowledge base reopens from.
struct Source {
    index_dir: PathBuf,
    bundle_root: Option<PathBuf>,
    options: ServeOptions,
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
    log: Log,
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
            log: silent(),
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
        };
        LiveKnowledgeBase {
            source: Some(source),
            kb_id: kb.kb_id().to_string(),
            current: RwLock::new(Snapshot {
                kb: Arc::new(kb),
                generation,
            }),
            reload: Mutex::new(None),
            log,
        }
    }

    /// The knowledge-base id served (fixed for the life of the server).
    pub fn kb_id(&self) -> &str {
        &self.kb_id
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
        let named = self
            .source
            .as_ref()
            .and_then(|s| index::current_generation(&s.index_dir));
        let state = match &named {
            Some(named) if live.as_ref() != Some(named) => match self.reload.try_lock() {
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

    /// Opens and swaps in the generation `CURRENT` names when it is not the live one. A request
    /// (`wait` false) never waits for another thread's open: it answers from the snapshot there
    /// is, and skips a generation that failed recently.
    fn check(&self, wait: bool) -> bool {
        let Some(source) = &self.source else {
            return false;
        };
        let Some(named) = index::current_generation(&source.index_dir) else {
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
        let opened = KnowledgeBase::open(
            &source.index_dir,
            source.bundle_root.as_deref(),
            source.options.clone(),
        )
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

/// How a [`BundleWatcher`] waits and looks.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// A rebuild starts once the bundle has been quiet this long...
    pub debounce: Duration,
    /// ...or this long after the first change, when changes keep coming.
    pub max_delay: Duration,
    /// How often the fallback poll walks the bundle.
    pub poll_interval: Duration,
    /// Poll even when file-system events are available.
    pub force_polling: bool,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions {
            debounce: Duration::from_millis(500),
            max_delay: Duration::from_secs(10),
            poll_interval: Duration::from_secs(3),
            force_polling: false,
        }
    }
}

/// How a watcher learns about changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchMode {
    /// File-system events.
    Events,
    /// A periodic walk comparing the stat fingerprint.
    Polling,
}

/// Why a watcher could not start.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error("cannot watch {path}: {source}")]
    Root {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "the index folder {index} is inside the bundle {bundle}, so every build would change \
         the bundle; use an index folder outside it (or a hidden one)"
    )]
    IndexInsideBundle { index: String, bundle: String },
    #[error("cannot start the watch thread: {0}")]
    Thread(std::io::Error),
}

/// What the builder thread hears.
enum Signal {
    /// Something under the bundle changed.
    Changed,
    /// The event watcher stopped covering the whole tree; poll from now on.
    Poll(String),
    Stop,
}

/// One build at a time in the whole process (several watched bundles share the machine).
static BUILD_LOCK: Mutex<()> = Mutex::new(());

/// Watches a bundle folder and rebuilds its index when files change, then switches the live
/// knowledge base. Dropping it stops watching (a build under way finishes in the background);
/// [`shutdown`](Self::shutdown) also waits for it.
pub struct BundleWatcher {
    mode: WatchMode,
    stop: Arc<AtomicBool>,
    signals: Sender<Signal>,
    builder: Option<JoinHandle<()>>,
    _events: Option<notify::RecommendedWatcher>,
}

/// What the builder thread works with.
struct Builder {
    root: PathBuf,
    index_dir: PathBuf,
    build_options: BuildOptions,
    live: Option<Arc<LiveKnowledgeBase>>,
    options: WatchOptions,
    stop: Arc<AtomicBool>,
    log: Log,
    poller: Option<JoinHandle<()>>,
    signals: Sender<Signal>,
}

impl BundleWatcher {
    /// Starts watching `bundle_root` (events, or polling when no event watcher can be had);
    /// rebuilds `index_dir` with `build_options` on changes and refreshes `live`. The first
    /// check runs right away, so a change made before the watch started is not missed.
    pub fn start(
        bundle_root: &Path,
        index_dir: &Path,
        build_options: BuildOptions,
        live: Option<Arc<LiveKnowledgeBase>>,
        options: WatchOptions,
        log: Log,
    ) -> Result<Self, WatchError> {
        let root = bundle_root
            .canonicalize()
            .map_err(|source| WatchError::Root {
                path: bundle_root.display().to_string(),
                source,
            })?;
        // Events from an index folder inside the bundle must not trigger rebuilds.
        let _ = std::fs::create_dir_all(index_dir);
        let index_canonical = index_dir
            .canonicalize()
            .unwrap_or_else(|_| index_dir.to_path_buf());
        if index_canonical
            .strip_prefix(&root)
            .is_ok_and(|relative| !hidden(relative))
        {
            return Err(WatchError::IndexInsideBundle {
                index: index_canonical.display().to_string(),
                bundle: root.display().to_string(),
            });
        }
        let stop = Arc::new(AtomicBool::new(false));
        let (signals, receiver) = mpsc::channel();

        let mut events = None;
        let mut mode = WatchMode::Polling;
        if !options.force_polling {
            match event_watcher(&root, &index_canonical, signals.clone()) {
                Ok(watcher) => {
                    events = Some(watcher);
                    mode = WatchMode::Events;
                }
                Err(e) => log(
                    Level::Warning,
                    &format!(
                        "cannot watch {} for file events ({e}); polling it every {} s instead",
                        root.display(),
                        options.poll_interval.as_secs_f64()
                    ),
                ),
            }
        }
        let mut builder = Builder {
            root,
            index_dir: index_dir.to_path_buf(),
            build_options,
            live,
            options,
            stop: stop.clone(),
            log,
            poller: None,
            signals: signals.clone(),
        };
        if mode == WatchMode::Polling {
            builder.start_polling().map_err(WatchError::Thread)?;
        }
        let handle = std::thread::Builder::new()
            .name("kbtools-watch".into())
            .spawn(move || builder.run(receiver))
            .map_err(WatchError::Thread)?;
        Ok(BundleWatcher {
            mode,
            stop,
            signals,
            builder: Some(handle),
            _events: events,
        })
    }

    /// How changes are noticed.
    pub fn mode(&self) -> WatchMode {
        self.mode
    }

    /// Stops watching and waits for a build under way to finish.
    pub fn shutdown(mut self) {
        self.signal_stop();
        if let Some(handle) = self.builder.take() {
            let _ = handle.join();
        }
    }

    fn signal_stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.signals.send(Signal::Stop);
    }
}

impl Drop for BundleWatcher {
    fn drop(&mut self) {
        self.signal_stop();
    }
}

/// A recursive file-system watcher on `root` that signals changes outside hidden entries and
/// the index folder; access events (the builder's own reads) are ignored.
fn event_watcher(
    root: &Path,
    index_dir: &Path,
    signals: Sender<Signal>,
) -> notify::Result<notify::RecommendedWatcher> {
    let root_owned = root.to_path_buf();
    let index_owned = index_dir.to_path_buf();
    let limit_reported = AtomicBool::new(false);
    let handler = move |event: notify::Result<notify::Event>| match event {
        Ok(event) => {
            if matches!(event.kind, notify::EventKind::Access(_)) {
                return;
            }
            let relevant = event.need_rescan()
                || event.paths.is_empty()
                || event
                    .paths
                    .iter()
                    .any(|p| counts(p, &root_owned, &index_owned));
            if relevant {
                let _ = signals.send(Signal::Changed);
            }
        }
        Err(e) => {
            if matches!(e.kind, notify::ErrorKind::MaxFilesWatch) {
                if !limit_reported.swap(true, Ordering::SeqCst) {
                    let _ = signals.send(Signal::Poll(e.to_string()));
                }
            } else {
                // Events may have been lost: let the fingerprint decide.
                let _ = signals.send(Signal::Changed);
            }
        }
    };
    let config = notify::Config::default().with_follow_symlinks(false);
    let mut watcher = notify::RecommendedWatcher::new(handler, config)?;
    watcher.watch(root, notify::RecursiveMode::Recursive)?;
    Ok(watcher)
}

/// True when a change at `path` may change the index: inside the root, outside the index
/// folder, and not under a hidden entry (the walk skips those).
fn counts(path: &Path, root: &Path, index_dir: &Path) -> bool {
    if path.starts_with(index_dir) {
        return false;
    }
    match path.strip_prefix(root) {
        Ok(relative) => !hidden(relative),
        // The root itself moved or an event names another spelling of it.
        Err(_) => true,
    }
}

/// True when a relative path is under a hidden entry (`.git/…`), which the walk skips.
fn hidden(relative: &Path) -> bool {
    relative
        .components()
        .any(|c| c.as_os_str().to_str().is_some_and(|s| s.starts_with('.')))
}

/// The stat fingerprint of what a build would read (`exclude`: [`index::exclusions`]).
fn fingerprint(root: &Path, exclude: &[String]) -> String {
    walk::stat_fingerprint(&walk::walk_excluding(root, exclude))
}

impl Builder {
    fn say(&self, level: Level, line: &str) {
        if !self.stop.load(Ordering::SeqCst) {
            (self.log)(level, line);
        }
    }

    /// The `--exclude` patterns of this index's builds.
    fn exclusions(&self) -> Vec<String> {
        let manifest = index::read_manifest(&self.index_dir).ok().flatten();
        index::exclusions(&self.build_options, manifest.as_ref())
    }

    fn start_polling(&mut self) -> std::io::Result<()> {
        if self.poller.is_some() {
            return Ok(());
        }
        let root = self.root.clone();
        let exclude = self.exclusions();
        let stop = self.stop.clone();
        let signals = self.signals.clone();
        let interval = self.options.poll_interval.max(Duration::from_millis(50));
        let handle = std::thread::Builder::new()
            .name("kbtools-poll".into())
            .spawn(move || {
                let mut last = fingerprint(&root, &exclude);
                while !stop.load(Ordering::SeqCst) {
                    let started = Instant::now();
                    while started.elapsed() < interval {
                        if stop.load(Ordering::SeqCst) {
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(50).min(interval));
                    }
                    let now = fingerprint(&root, &exclude);
                    if now != last {
                        last = now;
                        if signals.send(Signal::Changed).is_err() {
                            return;
                        }
                    }
                }
            })?;
        self.poller = Some(handle);
        Ok(())
    }

    /// Waits for changes, lets them settle, rebuilds; until told to stop.
    fn run(mut self, signals: mpsc::Receiver<Signal>) {
        // The first round checks right away for changes made before the watch started.
        let mut pending = true;
        loop {
            if !pending {
                match signals.recv() {
                    Ok(Signal::Changed) => {}
                    Ok(Signal::Poll(reason)) => {
                        self.fall_back_to_polling(&reason);
                        continue;
                    }
                    Ok(Signal::Stop) | Err(_) => break,
                }
            }
            pending = false;
            // Debounce: quiet for `debounce`, or `max_delay` after the first change.
            let first = Instant::now();
            loop {
                let left = self.options.max_delay.saturating_sub(first.elapsed());
                let wait = self.options.debounce.min(left);
                if wait.is_zero() {
                    break;
                }
                match signals.recv_timeout(wait) {
                    Ok(Signal::Changed) => {}
                    Ok(Signal::Poll(reason)) => self.fall_back_to_polling(&reason),
                    Ok(Signal::Stop) | Err(RecvTimeoutError::Disconnected) => {
                        self.finish();
                        return;
                    }
                    Err(RecvTimeoutError::Timeout) => break,
                }
            }
            if self.stop.load(Ordering::SeqCst) {
                break;
            }
            self.rebuild_if_changed();
        }
        self.finish();
    }

    fn finish(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(poller) = self.poller.take() {
            let _ = poller.join();
        }
    }

    fn fall_back_to_polling(&mut self, reason: &str) {
        match self.start_polling() {
            Ok(()) => self.say(
                Level::Warning,
                &format!(
                    "file events no longer cover all of {} ({reason}); polling it every {} s too",
                    self.root.display(),
                    self.options.poll_interval.as_secs_f64()
                ),
            ),
            Err(e) => self.say(
                Level::Warning,
                &format!("cannot start polling {}: {e}", self.root.display()),
            ),
        }
    }

    /// Rebuilds when the bundle's stat fingerprint differs from the live manifest's, then
    /// switches the live knowledge base. A failed build is logged; the old index keeps
    /// answering.
    fn rebuild_if_changed(&mut self) {
        let manifest = index::read_manifest(&self.index_dir).ok().flatten();
        let exclude = index::exclusions(&self.build_options, manifest.as_ref());
        let now = fingerprint(&self.root, &exclude);
        let built = manifest.map(|m| m.stat_fingerprint);
        if built.as_deref() != Some(now.as_str()) {
            let _one_at_a_time = BUILD_LOCK.lock().unwrap_or_else(PoisonError::into_inner);
            if self.stop.load(Ordering::SeqCst) {
                return;
            }
            self.say(
                Level::Progress,
                &format!("{} changed; rebuilding the index", self.root.display()),
            );
            let started = Instant::now();
            let log = self.log.clone();
            let stop = self.stop.clone();
            let mut progress = |line: &str| {
                if !stop.load(Ordering::SeqCst) {
                    log(Level::Progress, line);
                }
            };
            match index::build(
                &self.root,
                &self.index_dir,
                &self.build_options,
                &mut progress,
            ) {
                Ok(report) => self.say(
                    Level::Progress,
                    &format!(
                        "rebuilt the index in {:.2} s (revision {}, {} diagnostics)",
                        started.elapsed().as_secs_f64(),
                        report.manifest.active_content_revision,
                        report.diagnostics.len()
                    ),
                ),
                Err(e) => {
                    let serving = self.live.as_ref().map_or_else(String::new, |live| {
                        format!(
                            "; still answering from revision {}",
                            live.snapshot().manifest.active_content_revision
                        )
                    });
                    self.say(
                        Level::Warning,
                        &format!(
                            "rebuilding the index of {} failed: {e}{serving}",
                            self.root.display()
                        ),
                    );
                    return;
                }
            }
        }
        // Also picks up a build another process made.
        if let Some(live) = &self.live {
            live.refresh();
        }
    }
}
