//! What a search returns when no lane found anything: a question asked in the knowledge base's
//! other language, or in words no page uses, should not meet an empty list (issue 39: "never
//! an empty answer to a real question"). In order:
//!
//! 1. **Near titles**: pages whose title or path holds a word within one edit of a query word
//!    of four letters or more or of its prefixes (two edits from eight letters: `configration`,
//!    `punctuatoin`), by how many such words they hold.
//! 2. **Entry pages**, when the query is a question (`MIN_QUESTION_TERMS` terms or more after
//!    stop words): the knowledge base's `index` and `README` pages, then the pages with the
//!    most relations (what the knowledge base links to and from most), shallow ones first. They
//!    answer nothing by themselves; they are where a reader who found nothing starts.
//!
//! The lane (`nearest`, reported as `lexical` evidence of the path) runs only when no other
//! lane found a page. The search says so ([`Nearest`]): `search_files` answers as the contract
//! has a search with items (`ok`, no message, no next actions: DECISIONS item 29), the items'
//! evidence (`path`, no excerpt) and a line of the compact text say they are the nearest pages,
//! not matches. A query of one unknown word, a
//! quoted phrase no page holds and filters that leave nothing stay `no_candidates`: they asked
//! for something precise that is not there.

use tantivy::query::{BooleanQuery, FuzzyTermQuery, Occur, Query};
use tantivy::Term;

use crate::error::IndexError;
use crate::index::search_index::{PageHit, SearchView};
use crate::kb::KnowledgeBase;
use crate::search::lanes::io::LaneInput;
use crate::search::lanes::title::file_stem;
use crate::search::query::MAX_RESULTS;

/// Pages a fallback returns.
pub(crate) const MOST: usize = 10;

/// Terms (after stop words) that make a query a question, for the entry pages.
pub(crate) const MIN_QUESTION_TERMS: usize = 3;

/// Which fallback found the candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nearest {
    /// Pages whose title or path is a few edits from a query word.
    Titles,
    /// The knowledge base's entry pages.
    Entries,
}

/// The fallback pages of a query no lane matched (best first) that pass `keep`, with the kind
/// that found them; `None` when there are none.
pub fn run(
    input: &LaneInput<'_>,
    keep: &dyn Fn(u32) -> bool,
) -> Result<Option<(Vec<u32>, Nearest)>, IndexError> {
    let (kb, query) = (input.kb, input.query);
    if !query.phrases.is_empty() {
        return Ok(None);
    }
    let keep = |position: u32| kb.catalog.is_source(position) && keep(position);
    let fuzzy = fuzzy_terms(&query.terms);
    let near: Vec<u32> = near_titles(input.index, &fuzzy, MAX_RESULTS)?
        .into_iter()
        .map(|hit| hit.position)
        .filter(|&p| keep(p))
        .take(MOST)
        .collect();
    let (pages, kind) = if !near.is_empty() {
        (near, Nearest::Titles)
    } else if query.terms.len() >= MIN_QUESTION_TERMS {
        (entry_pages(kb, &keep), Nearest::Entries)
    } else {
        return Ok(None);
    };
    if pages.is_empty() {
        return Ok(None);
    }
    Ok(Some((pages, kind)))
}

/// The pages whose title or path holds a word within `edits` of one of `terms` (each with its
/// own number of edits, a transposition one edit), best first by how many of the terms they
/// hold so.
fn near_titles(
    index: SearchView<'_>,
    terms: &[(String, u8)],
    limit: usize,
) -> Result<Vec<PageHit>, IndexError> {
    let path = index.required_field("path")?;
    let title = index.fields().title;
    let clauses: Vec<(Occur, Box<dyn Query>)> = terms
        .iter()
        .flat_map(|(term, edits)| {
            [title, path].map(|field| {
                let term = Term::from_field_text(field, term);
                let query: Box<dyn Query> = Box::new(FuzzyTermQuery::new(term, *edits, true));
                (Occur::Should, query)
            })
        })
        .collect();
    if clauses.is_empty() {
        return Ok(Vec::new());
    }
    index.top_docs(&BooleanQuery::new(clauses), limit)
}

/// The words a misspelled query word may be in a title or path, each with its edits: the word
/// and its prefixes down to three letters shorter (the index holds stems: `punctuation` is
/// `punctuat`, so `punctuatoin` is three edits from it and its prefix `punctuat` none), four
/// letters long at least; one edit, two from eight letters.
fn fuzzy_terms(terms: &[String]) -> Vec<(String, u8)> {
    let mut out: Vec<(String, u8)> = Vec::new();
    for term in terms
        .iter()
        .filter(|t| !crate::ingest::analysis::has_cjk(t))
    {
        let chars: Vec<char> = term.chars().collect();
        if chars.len() < 4 {
            continue;
        }
        let edits = if chars.len() >= 8 { 2 } else { 1 };
        for cut in 0..=3 {
            let Some(len) = chars.len().checked_sub(cut).filter(|&l| l >= 4) else {
                break;
            };
            let prefix: String = chars[..len].iter().collect();
            if !out.iter().any(|(t, _)| *t == prefix) {
                out.push((prefix, edits));
            }
        }
    }
    out
}

/// The entry pages that pass `keep`: `index` and `README` pages, then by relation count, then
/// by depth in the tree, then by path; at most [`MOST`].
fn entry_pages(kb: &KnowledgeBase, keep: &dyn Fn(u32) -> bool) -> Vec<u32> {
    let mut pages: Vec<(bool, std::cmp::Reverse<usize>, usize, u32)> = (0..kb.catalog.file_count()
        as u32)
        .filter(|&p| keep(p))
        .map(|p| {
            let path = &kb.catalog.file(p).path;
            let stem = file_stem(path).to_ascii_lowercase();
            let relations = kb.catalog.relation_range(p).map_or(0, |r| r.len());
            let depth = path.matches('/').count();
            (
                !(stem == "index" || stem == "readme"),
                std::cmp::Reverse(relations),
                depth,
                p,
            )
        })
        .collect();
    pages.sort_unstable();
    pages.into_iter().take(MOST).map(|(.., p)| p).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_word_and_its_prefixes_are_looked_for_with_their_edits() {
        let terms = ["punctuatoin", "line", "abc", "知识"].map(String::from);
        let found = super::fuzzy_terms(&terms);
        let want = [
            ("punctuatoin", 2),
            ("punctuatoi", 2),
            ("punctuato", 2),
            ("punctuat", 2),
            ("line", 1),
        ]
        .map(|(t, e)| (t.to_string(), e));
        assert_eq!(found, want);
    }
}
