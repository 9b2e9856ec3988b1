//! The text a question quotes, matched as written: a double-quoted phrase must stand in a
//! content-lane hit's body, its words in order and adjacent (CJK phrases as consecutive
//! bigrams: an exact substring), and a literal's words narrow the literal lane's candidates
//! ([`crate::search::lanes::literal`]). The phrases' tokens come analysed
//! ([`crate::search::query::Verbatim`]).

use std::collections::HashSet;

use tantivy::query::{BooleanQuery, Occur, PhraseQuery, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::Term;

use crate::error::IndexError;
use crate::index::search_index::SearchView;
use crate::search::query::Verbatim;

/// The query of the body that holds `phrase` as written: its tokens in order, adjacent;
/// `None` when it has no token.
fn phrase_query(body: Field, phrase: &Verbatim) -> Option<Box<dyn Query>> {
    let mut terms: Vec<(usize, Term)> = phrase
        .tokens
        .iter()
        .map(|(position, text)| (*position, Term::from_field_text(body, text)))
        .collect();
    match terms.len() {
        0 => None,
        1 => Some(Box::new(TermQuery::new(
            terms.remove(0).1,
            IndexRecordOption::Basic,
        ))),
        _ => Some(Box::new(PhraseQuery::new_with_offset(terms))),
    }
}

/// Catalog positions of the pages whose body contains every phrase. A phrase with one token
/// needs that token; a phrase with no token matches everything.
pub(crate) fn pages_holding_all(
    index: SearchView<'_>,
    phrases: &[Verbatim],
) -> Result<HashSet<u32>, IndexError> {
    let body = index.fields().body;
    let clauses: Vec<(Occur, Box<dyn Query>)> = phrases
        .iter()
        .filter_map(|phrase| phrase_query(body, phrase))
        .map(|query| (Occur::Must, query))
        .collect();
    if clauses.is_empty() {
        return Ok(index.all_positions().collect());
    }
    let positions = index.doc_positions()?;
    let docs = index.searcher().search(
        &BooleanQuery::new(clauses),
        &tantivy::collector::DocSetCollector,
    )?;
    Ok(docs.into_iter().filter_map(|a| positions.get(a)).collect())
}

/// The pages whose body holds the words of each of `literals` adjacent and in order (the
/// literal lane's candidates, which it reads for the literal itself), in catalog order, one
/// list per literal.
pub(crate) fn pages_holding_each(
    index: SearchView<'_>,
    literals: &[Verbatim],
) -> Result<Vec<Vec<u32>>, IndexError> {
    let body = index.fields().body;
    let mut out = Vec::with_capacity(literals.len());
    for literal in literals {
        let Some(query) = phrase_query(body, literal) else {
            out.push(Vec::new());
            continue;
        };
        let docs = index
            .searcher()
            .search(&query, &tantivy::collector::DocSetCollector)?;
        let positions = index.few_positions()?;
        let mut pages: Vec<u32> = docs.into_iter().filter_map(|a| positions.get(a)).collect();
        pages.sort_unstable();
        pages.dedup();
        out.push(pages);
    }
    Ok(out)
}
