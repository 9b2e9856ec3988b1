//! The watch (`--watch`): a [`BundleWatcher`] rebuilds the index when the bundle changes and
//! switches the live knowledge base. File-system events (the `notify` crate) or, when a watcher
//! cannot be had (inotify limits on a huge tree), a poll of the bundle's stat fingerprint, feed
//! one builder thread that waits until the bundle has been quiet for a moment, compares the stat
//! fingerprint with the live manifest's, rebuilds with [`index::build`] when they differ, and
//! switches the live knowledge base. One builder per bundle, and one build at a time in the
//! whole process.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use notify::Watcher as _;

use crate::index::{self, BuildOptions};
use crate::ingest::bundle::walk;
use crate::serve::live::{Level, LiveKnowledgeBase, Log};

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
pub(crate) static BUILD_LOCK: Mutex<()> = Mutex::new(());

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
/// `index::build` of `root` into `index_dir`, its progress lines on `log` until `stop` is set
/// (a server shutting down says nothing more): what a watcher's rebuild and a background
/// embedding run.
pub(crate) fn build_logged(
    root: &Path,
    index_dir: &Path,
    options: &BuildOptions,
    log: &Log,
    stop: &AtomicBool,
) -> Result<index::BuildReport, crate::error::IndexError> {
    let mut progress = |line: &str| {
        if !stop.load(Ordering::SeqCst) {
            log(Level::Progress, line);
        }
    };
    index::build(root, index_dir, options, &mut progress)
}

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
            match build_logged(
                &self.root,
                &self.index_dir,
                &self.build_options,
                &self.log,
                &self.stop,
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
