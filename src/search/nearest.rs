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
//! The search says so ([`Nearest`]): `search_files` keeps `searchStatus: "ok"` (there are
//! items) with a message and `resultSummary.meaning` that call them the nearest pages, not
//! matches, and the five next actions of an empty search. A query of one unknown word, a
//! quoted phrase no page holds and filters that leave nothing stay `no_candidates`: they asked
//! for something precise that is not there.

use tantivy::Searcher;

use super::{Candidate, Lane, LaneSet, Query};
use crate::error::IndexError;
use crate::kb::KnowledgeBase;
use crate::search::page_lanes::QueryTerms;

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

/// The fallback candidates of a query no lane matched, with the kind that found them; `None`
/// when there are none.
pub fn candidates(
    kb: &KnowledgeBase,
    searcher: &Searcher,
    query: &Query<'_>,
    terms: &QueryTerms,
) -> Result<Option<(Vec<Candidate>, Nearest)>, IndexError> {
    if !crate::text::quoted_phrases(query.text).is_empty() {
        return Ok(None);
    }
    let keep = |position: u32| kb.catalog.is_source(position) && (query.keep)(position);
    let fuzzy = fuzzy_terms(&terms.terms);
    let near: Vec<u32> = kb
        .search
        .near_titles(searcher, &fuzzy, super::MAX_RESULTS)?
        .into_iter()
        .map(|hit| hit.position)
        .filter(|&p| keep(p))
        .take(MOST)
        .collect();
    let (pages, kind) = if !near.is_empty() {
        (near, Nearest::Titles)
    } else if terms.terms.len() >= MIN_QUESTION_TERMS {
        (entry_pages(kb, &keep), Nearest::Entries)
    } else {
        return Ok(None);
    };
    if pages.is_empty() {
        return Ok(None);
    }
    let count = pages.len();
    let candidates = pages
        .into_iter()
        .enumerate()
        .map(|(rank, position)| {
            let mut lanes = LaneSet::default();
            lanes.insert(Lane::Nearest);
            Candidate {
                position,
                // Positive, falling with the rank: a score orders the list and never rises.
                score: (count - rank) as f64 / count as f64 * 0.01,
                lanes,
                content: false,
                section: None,
                explained: query.explain.then(Default::default),
            }
        })
        .collect();
    Ok(Some((candidates, kind)))
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
            let stem = super::title::file_stem(path).to_ascii_lowercase();
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
