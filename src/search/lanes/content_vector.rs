//! The semantic lane (`content_vector`): the pages whose passage windows are nearest the
//! question's embedding (`crate::search::semantic`), each at its best window, a share of
//! which is its page's opening window's cosine ([`crate::search::weights::Weights::opening`]).
//! The window's section is the hit's: its excerpt comes from it.

use crate::error::IndexError;
use crate::index::vectors::Vectors;
use crate::search::cosine;
use crate::search::lanes::io::{Hit, LaneInput, Section, LANE_DEPTH};
use crate::search::weights::WEIGHTS;

/// The lane's pages.
pub fn run(input: &LaneInput<'_>) -> Result<Vec<Hit>, IndexError> {
    Ok(match (input.query_vector.get(), input.kb.vectors()) {
        (Some(query), Some(vectors)) => vector_hits(vectors, query, WEIGHTS.opening),
        _ => Vec::new(),
    })
}

/// The pages by their best passage window ([`cosine::best_windows`]), each with that window's
/// section and cosine.
pub(crate) fn vector_hits(vectors: &Vectors, query: &[f32], opening: f32) -> Vec<Hit> {
    cosine::best_windows(vectors, query, LANE_DEPTH, WEIGHTS.min_cosine, opening)
        .into_iter()
        .enumerate()
        .map(|(rank, h)| Hit {
            position: h.position,
            rank: rank as u32,
            section: Some(Section(h.section)),
            cosine: h.score,
        })
        .collect()
}
