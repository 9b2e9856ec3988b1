//! What a process loads before its first question, by how long it answers: the library's one
//! warm-up, which every long-running door (`kbtools mcp`, `kbtools serve`) and every batch
//! (`kbtools eval`) calls instead of loading the word dictionary and the models itself. A
//! one-shot command answers one question and loads what it needs when it needs it.

use crate::kb::KnowledgeBase;

/// How a process answers, which decides what is worth loading before the first question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarmUp {
    /// A server: the embedding model now, when the index has vectors (its load takes a few
    /// tenths of a second, which the first search would otherwise wait for); the word
    /// dictionary at the first query with CJK text, so a server never asked in Chinese does not
    /// hold its memory.
    Server,
    /// A batch of many queries (`kbtools eval`): the whole word dictionary now, before any
    /// query is timed.
    Batch,
}

/// Loads what `how` says of `kb`'s search before its first question.
pub fn warm_up(kb: &KnowledgeBase, how: WarmUp) {
    match how {
        WarmUp::Server => {
            crate::ingest::analysis::load_dictionary_at_first_cjk_query();
            let _ = crate::search::semantic(kb);
        }
        WarmUp::Batch => crate::ingest::analysis::load_dictionary(),
    }
}
