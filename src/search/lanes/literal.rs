//! The code a question quotes without quote marks: `a::before`, `compose:clean`,
//! `_graph/by-file`, `app.config.globalProperties`, `log.md`, `watch(foo`. The analysis splits
//! such a literal into words (`a`, `before`) that the other lanes weigh one by one, and common
//! ones (`before`, `config`, `md`) weigh little; but the page that shows the literal as written
//! is usually the one the question is about (the rule whose example it is, the page that
//! documents the route or the command). The lane (`literal`, reported as `lexical` evidence of
//! the content) ranks the pages whose text holds the query's literals as
//! written, by the summed rarity of the literals each holds.
//!
//! A literal (`crate::search::query::literals`) is a run of the query between spaces (and CJK text) with at least two words
//! joined by something else than a hyphen or an apostrophe: hyphenated names are the
//! identifier lane's (`at-rule-no-unknown`), and `doesn't` or `team's` are prose. Runs of
//! single letters (`e.g.`, `U.S.`) are prose too.
//!
//! A literal no page holds that ends in a name after its last slash (`jest/lowercase-name`: a
//! plugin's rule as a configuration names it, while the docs say `lowercase-name`) is read as
//! that name (`tail_name`).

use rustc_hash::FxHashMap;

use crate::error::IndexError;
use crate::index::search_index::SearchView;
use crate::kb::KnowledgeBase;
use crate::search::lanes::io::{ranked, Hit, LaneInput};
use crate::search::phrases;
use crate::search::query::{AnalyzedQuery, Verbatim};

/// A literal whose words stand together in more pages than this is read in none: it is too
/// common to tell pages apart, and reading them would cost the query.
const MOST_CANDIDATES: usize = 200;

/// The lane's pages, best first: by the summed rarity (`ln(1 + N / n)`, `n` the pages that hold
/// it) of the literals each holds as written (ASCII case aside), ties by catalog position. The
/// index narrows each literal to the pages where its words stand together (`a::before` and
/// `a:before` are both "a before" there); each of those pages' text is then searched for the
/// literal itself.
pub fn pages(
    kb: &KnowledgeBase,
    searcher: &tantivy::Searcher,
    query: &str,
) -> Result<Vec<u32>, IndexError> {
    let literals = AnalyzedQuery::of(query).literals;
    holding(kb, kb.search.view(searcher), &literals)
}

/// The lane's pages.
pub fn run(input: &LaneInput<'_>) -> Result<Vec<Hit>, IndexError> {
    Ok(ranked(holding(
        input.kb,
        input.index,
        &input.query.literals,
    )?))
}

/// The source pages among `pages` (the pages where a literal's words stand together) whose text
/// holds `literal` as written, ASCII case aside; none when they are more than
/// [`MOST_CANDIDATES`]. `texts` keeps the pages' texts read so far.
fn held_by(
    kb: &KnowledgeBase,
    pages: &[u32],
    literal: &str,
    texts: &mut FxHashMap<u32, Option<String>>,
) -> Vec<u32> {
    if pages.len() > MOST_CANDIDATES {
        return Vec::new();
    }
    let needle = literal.to_ascii_lowercase();
    pages
        .iter()
        .copied()
        .filter(|&page| kb.catalog.is_source(page))
        .filter(|&page| {
            texts
                .entry(page)
                .or_insert_with(|| {
                    kb.indexed_content(kb.catalog.file(page))
                        .map(|text| text.to_ascii_lowercase())
                })
                .as_deref()
                .is_some_and(|text| text.contains(&needle))
        })
        .collect()
}

/// What follows a literal's last slash when it is a name of two words or more joined by hyphens
/// or underscores (`lowercase-name` of `jest/lowercase-name`, `no_unused` of `rules/no_unused`).
pub(crate) fn tail_name(literal: &str) -> Option<&str> {
    let tail = literal.rsplit_once('/')?.1;
    let words = tail.split(['-', '_']).filter(|w| !w.is_empty()).count();
    let name = tail
        .chars()
        .all(|c| c.is_alphanumeric() || c == '-' || c == '_');
    (name && words >= 2).then_some(tail)
}

/// The pages that hold `literals`, best first ([`pages`]).
fn holding(
    kb: &KnowledgeBase,
    index: SearchView<'_>,
    literals: &[Verbatim],
) -> Result<Vec<u32>, IndexError> {
    if literals.is_empty() {
        return Ok(Vec::new());
    }
    let candidates = phrases::pages_holding_each(index, literals)?;
    let total = index.num_docs().max(1) as f64;
    let mut texts: FxHashMap<u32, Option<String>> = FxHashMap::default();
    let mut scores: FxHashMap<u32, f64> = FxHashMap::default();
    for (literal, pages) in literals.iter().zip(&candidates) {
        let mut holding = held_by(kb, pages, &literal.text, &mut texts);
        if holding.is_empty() {
            if let Some(tail) = tail_name(&literal.text) {
                let tail = Verbatim::of(tail.to_string());
                let pages = phrases::pages_holding_each(index, std::slice::from_ref(&tail))?;
                holding = held_by(kb, &pages[0], &tail.text, &mut texts);
            }
        }
        if holding.is_empty() {
            continue;
        }
        let rarity = (1.0 + total / holding.len() as f64).ln();
        for page in holding {
            *scores.entry(page).or_default() += rarity;
        }
    }
    let mut ranked: Vec<(u32, f64)> = scores.into_iter().collect();
    ranked.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    Ok(ranked.into_iter().map(|(page, _)| page).collect())
}

#[cfg(test)]
mod tests {
    use super::tail_name;

    #[test]
    fn a_tail_name_is_a_named_thing_after_the_last_slash() {
        assert_eq!(tail_name("jest/lowercase-name"), Some("lowercase-name"));
        assert_eq!(
            tail_name("@scope/plugin/no_unused_vars"),
            Some("no_unused_vars")
        );
        assert_eq!(tail_name("_graph/by-file"), Some("by-file"));
        assert_eq!(tail_name("src/main.rs"), None);
        assert_eq!(tail_name("jest/all"), None);
        assert_eq!(tail_name("a::before"), None);
    }
}
