//! Embedding in the background (docs/semantic.md): a server opens its index built deferred
//! (the lexical generation, with the vectors the previous generation and the embedding cache
//! hold) and answers at once; a [`BackgroundEmbedding`] thread then builds, at low priority,
//! the generation with every vector whenever the live one lacks some (at start, and after each
//! `--watch` rebuild), and the live knowledge base switches to it at the next request. How far
//! it has come is in the health answer ([`crate::serve::live::EmbeddingHealth`]) and the log;
//! a failed build is logged and reported there, and the server answers on from what it has.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::index::{self, BuildOptions, Embedding};
use crate::serve::live::{EmbeddingState, EmbeddingStatus, Level, LiveKnowledgeBase, Log};

/// How often the thread looks whether `CURRENT` names a generation it has not looked at (a
/// `--watch` rebuild, another process's build).
const LOOK_EVERY: Duration = Duration::from_secs(2);

/// The thread's niceness: the embedding takes the cores requests leave.
const NICENESS: i32 = 10;

/// A server's background embedding of one index folder. Dropping it stops the thread between
/// two builds (a build under way is abandoned when the process exits; the embedding cache keeps
/// what it finished).
pub struct BackgroundEmbedding {
    status: Arc<EmbeddingStatus>,
    stop: Arc<AtomicBool>,
    wake: Sender<()>,
    thread: Option<JoinHandle<()>>,
}

/// What the thread works with.
struct Embedder {
    bundle_root: PathBuf,
    index_dir: PathBuf,
    options: BuildOptions,
    live: Arc<LiveKnowledgeBase>,
    status: Arc<EmbeddingStatus>,
    stop: Arc<AtomicBool>,
    log: Log,
}

impl BackgroundEmbedding {
    /// Starts embedding what the live generation of `index_dir` lacks, building with `options`
    /// made to embed now, and reports it in `live`'s health.
    pub fn start(
        bundle_root: &Path,
        index_dir: &Path,
        options: BuildOptions,
        live: Arc<LiveKnowledgeBase>,
        log: Log,
    ) -> std::io::Result<Self> {
        let status = Arc::new(EmbeddingStatus::default());
        live.track_embedding(status.clone());
        let options = BuildOptions {
            embedding: Embedding::Now,
            embed_progress: Some(status.progress.clone()),
            ..options
        };
        let stop = Arc::new(AtomicBool::new(false));
        let (wake, woken) = mpsc::channel();
        let embedder = Embedder {
            bundle_root: bundle_root.to_path_buf(),
            index_dir: index_dir.to_path_buf(),
            options,
            live,
            status: status.clone(),
            stop: stop.clone(),
            log,
        };
        let thread = std::thread::Builder::new()
            .name("kbtools-embed".into())
            .spawn(move || embedder.run(woken))?;
        Ok(BackgroundEmbedding {
            status,
            stop,
            wake,
            thread: Some(thread),
        })
    }

    /// Where it stands (the health answer's `embedding`).
    pub fn status(&self) -> &Arc<EmbeddingStatus> {
        &self.status
    }

    /// Stops it and waits for the thread (for tests: a build under way is waited for).
    pub fn shutdown(mut self) {
        self.signal_stop();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }

    fn signal_stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.wake.send(());
    }
}

impl Drop for BackgroundEmbedding {
    fn drop(&mut self) {
        self.signal_stop();
    }
}

impl Embedder {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Looks at each generation `CURRENT` names once: builds with every vector when it lacks
    /// some, until told to stop.
    fn run(self, woken: mpsc::Receiver<()>) {
        // Only this thread (and the threads its builds start) yields to the requests.
        let _ = rustix::process::nice(NICENESS);
        let mut looked_at: Option<PathBuf> = None;
        while !self.stopped() {
            let current = index::current_generation(&self.index_dir);
            if current.is_some() && current != looked_at {
                looked_at = self.embed_if_needed().or(current);
            }
            match woken.recv_timeout(LOOK_EVERY) {
                Ok(()) | Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
    }

    /// Builds when the live generation lacks vectors the installed models make; the generation
    /// `CURRENT` names afterwards (`None`: nothing was built).
    fn embed_if_needed(&self) -> Option<PathBuf> {
        let manifest = index::read_manifest(&self.index_dir).ok().flatten()?;
        if index::semantic_fits(&self.options, &manifest) {
            self.status.set(EmbeddingState::Done, None);
            return None;
        }
        let _one_at_a_time = crate::serve::watch::BUILD_LOCK
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if self.stopped() {
            return None;
        }
        self.status.set(EmbeddingState::Running, None);
        let pending = manifest.semantic.as_ref().map_or(0, |s| s.pages_without);
        (self.log)(
            Level::Progress,
            &format!(
                "embedding in the background ({pending} pages without vectors); answering meanwhile from revision {}",
                manifest.active_content_revision
            ),
        );
        let started = Instant::now();
        match crate::serve::watch::build_logged(
            &self.bundle_root,
            &self.index_dir,
            &self.options,
            &self.log,
            &self.stop,
        ) {
            Ok(report) => {
                (self.log)(
                    Level::Progress,
                    &format!(
                        "embedded in the background in {:.1} s (revision {}); switching to it",
                        started.elapsed().as_secs_f64(),
                        report.manifest.active_content_revision
                    ),
                );
                // Done once requests answer from it.
                self.live.refresh();
                self.status.set(EmbeddingState::Done, None);
            }
            Err(e) => {
                self.status.set(EmbeddingState::Failed, Some(e.to_string()));
                (self.log)(
                    Level::Warning,
                    &format!(
                        "embedding in the background failed: {e}; answering on from revision {}",
                        self.live.snapshot().manifest.active_content_revision
                    ),
                );
            }
        }
        index::current_generation(&self.index_dir)
    }
}
