//! The CJK word lane (`jieba`): BM25 over the body's dictionary words (`body_w`) with the
//! question's dictionary words, and over the body's `kb_text` terms (character bigrams, so
//! that a word the dictionary splits differently still matches, and the Latin words and
//! numbers, which `body_w` does not hold) with its `kb_text` terms.

use crate::error::IndexError;
use crate::search::bm25;
use crate::search::lanes::io::{page_hits, Hit, LaneInput, LANE_DEPTH};

/// Field weights of the lane.
const WORD_FIELDS: [(&str, f32); 2] = [("body_w", 0.5), ("body", 1.0)];

/// The lane's pages, best first.
pub fn run(input: &LaneInput<'_>) -> Result<Vec<Hit>, IndexError> {
    let (index, query) = (input.index, input.query);
    let queries: Vec<bm25::FieldQuery<'_>> = bm25::weighted_fields(&index, &WORD_FIELDS)
        .into_iter()
        .map(|(words, field, params)| bm25::FieldQuery {
            field,
            params,
            terms: if words { &query.words } else { &query.terms },
            term_weights: if words { &[] } else { &query.weights },
        })
        .collect();
    let searcher = index.searcher();
    let top = index
        .with_collection(|collection| bm25::top_docs(searcher, &queries, LANE_DEPTH, collection))?;
    Ok(page_hits(&bm25::hits(top)))
}
