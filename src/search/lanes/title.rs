//! The title lane: the pages whose title the question says almost all of. A title names what
//! a page is about, in a few words (`selector-type-no-unknown`, `Computed Properties`,
//! `Semantic versioning`); a question that holds most of those words asks about that page,
//! however many longer pages repeat them in their bodies (a changelog, a list of every rule,
//! an overview). The page lane cannot see this: there the title's words are added to the
//! body's and saturated with them, so a short title counts for little against a long body, and
//! a page with one rare title word ranks as well as one whose whole title is asked for.
//!
//! The lane ranks by *title coverage*: of the title's terms (by their IDF, so that `no` or
//! `the` weigh little), the share the question holds; a page counts when the question holds
//! at least `MIN_COVERAGE` of its title, and pages rank by the IDF the question matched,
//! times the coverage. The candidates are the best `CANDIDATES` of BM25 over title, path and
//! metadata (the `scope=metadata` lane). A page without a title is titled by its file stem; a
//! title's identifier label (`MD013` of `MD013 - Line length`) is left to the identifier lane.
//!
//! Measured (`kbtools eval`, nDCG@10 of the default mode, docs/ranking.md): the lane lifts
//! the rule reference (`stylelint-docs`) by 0.023, `focowiki-docs` by 0.006 and `vue-docs` by
//! 0.003; on SciFact, whose titles are long sentences, it costs 0.0015, and at coverage 1/2
//! instead of 2/3 it cost 0.006 there (a claim shares half the words of many titles).

use crate::error::IndexError;
use crate::index::search_index::SearchView;
use crate::kb::KnowledgeBase;
use crate::search::lanes::io::{ranked, Hit, LaneInput};
use crate::search::lanes::lexical;
use crate::search::query::AnalyzedQuery;

/// The least share of a title's weight the question must hold.
pub(crate) const MIN_COVERAGE: f64 = 2.0 / 3.0;

/// Candidates read from the metadata lane (200 gave the same nDCG@10 on the three dev sets,
/// SciFact and CMRC, at a higher cost: SciFact's median query 32.8 ms against 18.1 ms, debug
/// build, before the IDFs were read in one pass).
pub(crate) const CANDIDATES: usize = 50;

/// The lane's pages.
pub fn run(input: &LaneInput<'_>) -> Result<Vec<Hit>, IndexError> {
    Ok(ranked(covered_pages(input.kb, input.index, input.query)?))
}

/// The pages whose title the question covers, best first.
pub(crate) fn covered_pages(
    kb: &KnowledgeBase,
    index: SearchView<'_>,
    terms: &AnalyzedQuery,
) -> Result<Vec<u32>, IndexError> {
    if terms.terms.is_empty() {
        return Ok(Vec::new());
    }
    let candidates = lexical::metadata(index, terms, CANDIDATES)?;
    let pages: Vec<u32> = candidates.iter().map(|hit| hit.position).collect();
    let titles = index.title_terms(&pages, |position| {
        let file = kb.catalog.file(position);
        // An identifier label is the identifier lane's to match; the title lane weighs the
        // words beside it (`Line length` of `MD013 - Line length`).
        let title = match file.title.as_deref() {
            Some(title) if !title.trim().is_empty() => crate::index::catalog::title_words(title),
            _ => file_stem(&file.path),
        };
        crate::ingest::analysis::query_terms(title)
    })?;
    let mut covered: Vec<(u32, f64)> = Vec::new();
    for (&position, title_terms) in pages.iter().zip(&titles) {
        let (mut total, mut matched) = (0.0, 0.0);
        for (term, idf) in title_terms.iter() {
            let weight = f64::from(*idf);
            total += weight;
            if terms.terms.contains(term) {
                matched += weight;
            }
        }
        if total > 0.0 && matched / total >= MIN_COVERAGE {
            covered.push((position, matched * matched / total));
        }
    }
    // Equal scores by catalog position (path order), as every lane orders them.
    covered.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    Ok(covered.into_iter().map(|(position, _)| position).collect())
}

/// The file name of `path` without its Markdown extension.
pub(crate) fn file_stem(path: &str) -> &str {
    crate::search::query::strip_extension(path.rsplit('/').next().unwrap_or(path))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_file_stem_drops_the_folder_and_the_extension() {
        assert_eq!(
            super::file_stem("pages/rules/at-rule-no-unknown.md"),
            "at-rule-no-unknown"
        );
        assert_eq!(super::file_stem("notes.markdown"), "notes");
        assert_eq!(super::file_stem("pages/a.txt"), "a.txt");
    }
}
