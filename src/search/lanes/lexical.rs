//! The page lane (`lexical`): BM25F over a page's weighted fields with the question's
//! `kb_text` terms (per term, the fields' normalized frequencies are weighted and summed, then
//! saturated once), and its `scope=metadata` form over title, path and metadata. Its hits keep
//! their documents: the passage lane ([`super::passage`]) scores their sections after it.

use crate::error::IndexError;
use crate::index::search_index::{PageHit, SearchView};
use crate::search::bm25::{self, BM25};
use crate::search::lanes::io::{LaneInput, LANE_DEPTH};
use crate::search::query::{AnalyzedQuery, Scope};

/// Field weights of the page lane. Tuned with `kbtools eval` on the SciFact train split and
/// the CMRC 2018 trial split only.
const LEXICAL_FIELDS: [(&str, f32); 4] =
    [("body", 1.0), ("title", 2.0), ("meta", 0.5), ("path", 0.3)];
/// Field weights of the page lane with `scope=metadata` (no body).
const METADATA_FIELDS: [(&str, f32); 3] = [("title", 1.0), ("path", 0.5), ("meta", 1.0)];

/// The lane's pages, best first, with their documents.
pub fn run(input: &LaneInput<'_>) -> Result<Vec<PageHit>, IndexError> {
    match input.scope {
        Scope::Metadata => metadata(input.index, input.query, LANE_DEPTH),
        _ => fielded(input.index, &LEXICAL_FIELDS, input.query, LANE_DEPTH),
    }
}

/// The best `limit` pages by BM25F over title, path and metadata only (the lane with
/// `scope=metadata`, and the title lane's candidates).
pub(crate) fn metadata(
    index: SearchView<'_>,
    query: &AnalyzedQuery,
    limit: usize,
) -> Result<Vec<PageHit>, IndexError> {
    fielded(index, &METADATA_FIELDS, query, limit)
}

/// BM25F over `kb_text` fields: the query's terms in every field, frequencies weighted and
/// length-normalized per field, then saturated once per term.
fn fielded(
    index: SearchView<'_>,
    fields: &[(&str, f32)],
    query: &AnalyzedQuery,
    limit: usize,
) -> Result<Vec<PageHit>, IndexError> {
    let fields: Vec<(tantivy::schema::Field, bm25::FieldParams)> =
        bm25::weighted_fields(&index, fields)
            .into_iter()
            .map(|(_, field, params)| (field, params))
            .collect();
    let (terms, weights) = (&query.terms, &query.weights);
    let searcher = index.searcher();
    let top = index.with_collection(|collection| {
        bm25::top_docs_bm25f(
            searcher, &fields, terms, weights, BM25.k1, limit, collection,
        )
    })?;
    Ok(bm25::hits(top))
}
