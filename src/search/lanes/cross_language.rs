//! The cross-language lane (`cross_language`, reported as `content_vector` evidence): the
//! pages whose sections are nearest the cross-language model's embedding of the question,
//! whatever language either is written in, each at its best section (no opening share).

use crate::error::IndexError;
use crate::search::lanes::content_vector::vector_hits;
use crate::search::lanes::io::{Hit, LaneInput};

/// The lane's pages.
pub fn run(input: &LaneInput<'_>) -> Result<Vec<Hit>, IndexError> {
    Ok(match (input.cross_vector.get(), input.kb.cross_vectors()) {
        (Some(query), Some(vectors)) => vector_hits(vectors, query, 0.0),
        _ => Vec::new(),
    })
}
