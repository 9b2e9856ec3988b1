//! The step the async doors add to the recipe of [`crate::door`]: a call answered on tokio's
//! blocking pool from one snapshot of a live knowledge base, taken there (switching to a rebuilt
//! generation opens it, which must never hold an async thread), so that a response is from one
//! revision from start to end.
//!
//! At most `--max-concurrent-calls` calls run at once in a process (the others wait their turn, in order):
//! a call is CPU work, so more at once would not answer sooner, and each holds its answer while
//! it makes it (a large page several times over), so that many at once would hold memory in
//! proportion to the requests that arrived together.

use std::sync::{Arc, OnceLock};

use tokio::sync::Semaphore;

use crate::kb::KnowledgeBase;
use crate::serve::live::LiveKnowledgeBase;

/// Why the pool gave no answer: the work panicked outside the tool (a tool's own panic is its
/// `INTERNAL_ERROR` answer) or the runtime is shutting down.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Unanswered(#[from] tokio::task::JoinError);

static CALLS: OnceLock<Arc<Semaphore>> = OnceLock::new();

/// The default of [`limit_calls`]: the number of CPUs (at least 2).
pub(crate) fn default_max_calls() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .max(2)
}

/// Sets the most calls that run at once (`--max-concurrent-calls`); only the first setting, made
/// before the first call, counts. Returns false when it came too late.
pub(crate) fn limit_calls(n: usize) -> bool {
    CALLS
        .set(Arc::new(Semaphore::new(n.clamp(1, Semaphore::MAX_PERMITS))))
        .is_ok()
}

fn calls() -> &'static Arc<Semaphore> {
    CALLS.get_or_init(|| Arc::new(Semaphore::new(default_max_calls())))
}

/// Runs `answer` on the blocking pool with a snapshot of `kb` taken there, once one of the
/// places of [`limit_calls`] is free; the place is held until the work ends, even when its caller
/// has stopped waiting (a request that timed out).
pub(crate) async fn on_snapshot<T: Send + 'static>(
    kb: Arc<LiveKnowledgeBase>,
    answer: impl FnOnce(&KnowledgeBase) -> T + Send + 'static,
) -> Result<T, Unanswered> {
    let place = calls().clone().acquire_owned().await.ok();
    Ok(tokio::task::spawn_blocking(move || {
        let _place = place;
        answer(&kb.get())
    })
    .await?)
}
