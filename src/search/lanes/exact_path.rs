//! The `exact_path` lane: the pages whose path, with or without `pages/`, is the question
//! (both normalized: `crate::text::exact_key`; the index holds each key's hash).

use tantivy::query::TermQuery;
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::Term;

use crate::error::IndexError;
use crate::index::search_index::{exact_term, PageHit, SearchView};
use crate::search::lanes::io::{page_hits, Hit, LaneInput};

/// The lane's pages.
pub fn run(input: &LaneInput<'_>) -> Result<Vec<Hit>, IndexError> {
    let field = input.index.fields().exact_path;
    Ok(page_hits(&exact(
        input.index,
        field,
        &input.query.exact_key,
    )?))
}

/// The pages whose exact key in `field` is `key`.
pub(crate) fn exact(
    index: SearchView<'_>,
    field: Field,
    key: &str,
) -> Result<Vec<PageHit>, IndexError> {
    let term = Term::from_field_u64(field, exact_term(key));
    let query = TermQuery::new(term, IndexRecordOption::Basic);
    index.top_docs(&query, 1000)
}
