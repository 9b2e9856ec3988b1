//! The `exact_title` lane: the pages whose title is the question (both normalized:
//! `crate::text::exact_key`).

use crate::error::IndexError;
use crate::search::lanes::exact_path::exact;
use crate::search::lanes::io::{page_hits, Hit, LaneInput};

/// The lane's pages.
pub fn run(input: &LaneInput<'_>) -> Result<Vec<Hit>, IndexError> {
    let field = input.index.fields().exact_title;
    Ok(page_hits(&exact(
        input.index,
        field,
        &input.query.exact_key,
    )?))
}
