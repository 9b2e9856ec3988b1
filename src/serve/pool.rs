//! The step the async doors add to the recipe of [`crate::door`]: a call answered on tokio's
//! blocking pool from one snapshot of a live knowledge base, taken there (switching to a rebuilt
//! generation opens it, which must never hold an async thread), so that a response is from one
//! revision from start to end.

use std::sync::Arc;

use crate::kb::KnowledgeBase;
use crate::serve::live::LiveKnowledgeBase;

/// Why the pool gave no answer: the work panicked outside the tool (a tool's own panic is its
/// `INTERNAL_ERROR` answer) or the runtime is shutting down.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Unanswered(#[from] tokio::task::JoinError);

/// Runs `answer` on the blocking pool with a snapshot of `kb` taken there.
pub(crate) async fn on_snapshot<T: Send + 'static>(
    kb: Arc<LiveKnowledgeBase>,
    answer: impl FnOnce(&KnowledgeBase) -> T + Send + 'static,
) -> Result<T, Unanswered> {
    Ok(tokio::task::spawn_blocking(move || answer(&kb.get())).await?)
}
