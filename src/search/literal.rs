//! The code a question quotes without quote marks: `a::before`, `compose:clean`,
//! `_graph/by-file`, `app.config.globalProperties`, `log.md`, `watch(foo`. The analysis splits
//! such a literal into words (`a`, `before`) that the other lanes weigh one by one, and common
//! ones (`before`, `config`, `md`) weigh little; but the page that shows the literal as written
//! is usually the one the question is about (the rule whose example it is, the page that
//! documents the route or the command). The lane [`super::Lane::Literal`] (reported as
//! `lexical` evidence of the content) ranks the pages whose text holds the query's literals as
//! written, by the summed rarity of the literals each holds.
//!
//! A literal is a run of the query between spaces (and CJK text) with at least two words
//! joined by something else than a hyphen or an apostrophe: hyphenated names are the
//! identifier lane's (`at-rule-no-unknown`), and `doesn't` or `team's` are prose. Runs of
//! single letters (`e.g.`, `U.S.`) are prose too.

use crate::error::IndexError;
use crate::kb::KnowledgeBase;
use rustc_hash::FxHashMap;

/// Characters that end a literal where the text has no space (CJK punctuation, brackets and
/// quotes that hold it).
fn is_boundary(c: char) -> bool {
    c.is_whitespace()
        || crate::text::is_cjk(c)
        || "，。？！、；：（）【】「」『』“”‘’《》".contains(c)
}

/// Characters trimmed from a literal's ends: sentence punctuation and what quotes or wraps it.
fn is_wrapping(c: char) -> bool {
    matches!(
        c,
        ',' | ';' | '!' | '?' | '"' | '\'' | '`' | '(' | ')' | '[' | ']' | '{' | '}'
    )
}

/// The literals of `query`, in order, without duplicates.
pub(crate) fn literals(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for run in query.split(is_boundary) {
        let mut run = run.trim_matches(is_wrapping);
        // A sentence's end, or a colon after a name ("max-nesting-depth: how do I …").
        while let Some(rest) = run.strip_suffix(['.', ':']) {
            run = rest.trim_end_matches(is_wrapping);
        }
        if is_literal(run) && !out.iter().any(|l| l == run) {
            out.push(run.to_string());
        }
    }
    out
}

/// Whether `run` holds two words or more joined by something else than hyphens and
/// apostrophes, and is not a run of single letters.
fn is_literal(run: &str) -> bool {
    let words: Vec<&str> = run
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    if words.len() < 2 || words.iter().all(|w| w.chars().count() == 1) {
        return false;
    }
    let inner = run
        .trim_matches(|c: char| !c.is_alphanumeric())
        .chars()
        .filter(|c| !c.is_alphanumeric());
    inner.into_iter().any(|c| !matches!(c, '-' | '\'' | '’'))
}

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
    let literals = literals(query);
    if literals.is_empty() {
        return Ok(Vec::new());
    }
    let candidates = kb.search.literal_candidates(searcher, &literals)?;
    let total = kb.search.num_docs().max(1) as f64;
    let mut texts: FxHashMap<u32, Option<String>> = FxHashMap::default();
    let mut scores: FxHashMap<u32, f64> = FxHashMap::default();
    for (literal, pages) in literals.iter().zip(&candidates) {
        if pages.len() > MOST_CANDIDATES {
            continue;
        }
        let needle = literal.to_ascii_lowercase();
        let holding: Vec<u32> = pages
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
            .collect();
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
    use super::literals;

    #[test]
    fn literals_are_code_the_question_quotes() {
        assert_eq!(
            literals("How do I require a::before instead of a:before?"),
            ["a::before", "a:before"]
        );
        assert_eq!(
            literals("What does `compose:clean` remove, and is _graph/by-file kept?"),
            ["compose:clean", "_graph/by-file"]
        );
        assert_eq!(
            literals("怎么用 app.config.globalProperties 挂一个 $http？"),
            ["app.config.globalProperties"]
        );
        assert_eq!(literals("Where is log.md written."), ["log.md"]);
    }

    #[test]
    fn names_prose_and_single_words_are_no_literals() {
        assert!(
            literals("at-rule-no-unknown doesn't allow my team's @include, e.g. U.S.").is_empty()
        );
        assert!(literals("max-nesting-depth: how do I stop counting?").is_empty());
        assert!(literals("write .5em and #y3 with 50ms").is_empty());
    }
}
