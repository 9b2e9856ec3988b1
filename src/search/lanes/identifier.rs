//! The pages a query names: a rule reference, an API reference or a vault names its pages by
//! identifiers (`md013.md`, `rules/at-rule-no-unknown.md`, `guide/components/v-model.md`, a
//! title `MD013 - Line length`), and a question that says `MD013` or `at-rule-whitelist` asks
//! about that page, whatever else repeats the identifier (a changelog, a list of every rule, a
//! README). The lane (`identifier`, reported as `lexical` evidence of the path)
//! returns them with the weight of an exact path, so that they rank first after the exact
//! hits.
//!
//! A name counts when the whole query is a page's file stem (`configure`, `md013.md`), or when
//! a word of the query is an identifier (`crate::index::catalog::is_identifier`: a digit, a
//! hyphen or an underscore among letters) that is a page's stem or the identifier its title
//! starts with (`crate::search::query::identifiers`), and the name names at most
//! `MOST_PAGES_A_NAME` pages (a page and its translations; not `index`, which every folder
//! has).

use tantivy::query::TermQuery;
use tantivy::schema::IndexRecordOption;
use tantivy::Term;

use crate::error::IndexError;
use crate::index::search_index::{exact_term, PageHit, SearchView};
use crate::kb::KnowledgeBase;
use crate::search::lanes::io::{ranked, Hit, LaneInput};
use crate::search::query::identifiers;

/// Most pages one name may name and still be taken as naming them.
pub(crate) const MOST_PAGES_A_NAME: usize = 4;

/// The lane's pages.
pub fn run(input: &LaneInput<'_>) -> Result<Vec<Hit>, IndexError> {
    Ok(ranked(pages_of(
        input.kb,
        input.index,
        &input.query.identifiers,
    )?))
}

/// The source pages `query` names, in the order it names them.
pub fn named_pages(
    kb: &KnowledgeBase,
    searcher: &tantivy::Searcher,
    query: &str,
) -> Result<Vec<u32>, IndexError> {
    pages_of(kb, kb.search.view(searcher), &identifiers(query))
}

/// The source pages of `names`, in their order (the names are looked up in the index, where
/// a build put each page's names).
fn pages_of(
    kb: &KnowledgeBase,
    index: SearchView<'_>,
    names: &[String],
) -> Result<Vec<u32>, IndexError> {
    let mut pages = Vec::new();
    for name in names {
        let named = pages_named(index, name, MOST_PAGES_A_NAME)?;
        if named.len() > MOST_PAGES_A_NAME {
            continue;
        }
        for hit in named {
            if kb.catalog.is_source(hit.position) && !pages.contains(&hit.position) {
                pages.push(hit.position);
            }
        }
    }
    Ok(pages)
}

/// The pages named `name` (lower case; [`crate::index::catalog::page_names`]), at most
/// `most + 1` of them (a caller that takes at most `most` knows more were there).
fn pages_named(index: SearchView<'_>, name: &str, most: usize) -> Result<Vec<PageHit>, IndexError> {
    let term = Term::from_field_u64(index.fields().name, exact_term(name));
    let query = TermQuery::new(term, IndexRecordOption::Basic);
    index.top_docs(&query, most + 1)
}
