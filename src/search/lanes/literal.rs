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
//!
//! A query's literals cost it one pass over each candidate page, for all of them at once (an
//! Aho-Corasick automaton, ASCII case aside): only its first [`MOST_LITERALS`] are read, and
//! one query reads at most [`BUDGET_READS`] times the read limit of page text; pages past it
//! are skipped, and the search then reports the `lexical` family degraded.

use std::collections::BTreeMap;

use aho_corasick::AhoCorasick;
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

/// The literals of a query the lane reads: its first ones (a question quotes one or two; more
/// tell pages apart no better, and each costs the query its candidates).
pub const MOST_LITERALS: usize = 8;

/// The page text one query reads, in read limits (`ServeOptions::read_limit`, 10 MiB by
/// default: 40 MiB); pages past it are skipped.
pub const BUDGET_READS: u64 = 4;

/// What the lane read for a query, and what it found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// The pages that hold the literals, best first.
    pub pages: Vec<u32>,
    /// The literals read (at most [`MOST_LITERALS`]).
    pub literals: usize,
    /// The literals past [`MOST_LITERALS`], not read.
    pub literals_dropped: usize,
    /// The bytes of page text read, each page's once a pass (a literal no page holds may need
    /// a second pass, for its name after the last slash).
    pub bytes_read: u64,
    /// The pages read.
    pub pages_read: usize,
    /// The candidate pages skipped because the query's budget had run out.
    pub pages_skipped: usize,
}

impl Scan {
    /// Whether the lane did part of its work only (literals or pages left out).
    pub fn cut_short(&self) -> bool {
        self.literals_dropped > 0 || self.pages_skipped > 0
    }
}

/// The lane's pages, best first: by the summed rarity (`ln(1 + N / n)`, `n` the pages that hold
/// it) of the literals each holds as written (ASCII case aside), ties by catalog position. The
/// index narrows each literal to the pages where its words stand together (`a::before` and
/// `a:before` are both "a before" there); each of those pages' text is then searched for the
/// literals themselves.
pub fn pages(
    kb: &KnowledgeBase,
    searcher: &tantivy::Searcher,
    query: &str,
) -> Result<Vec<u32>, IndexError> {
    Ok(scan(kb, searcher, query, budget(kb))?.pages)
}

/// What the lane reads and finds for `query` within `budget` bytes of page text ([`pages`]).
pub fn scan(
    kb: &KnowledgeBase,
    searcher: &tantivy::Searcher,
    query: &str,
    budget: u64,
) -> Result<Scan, IndexError> {
    let literals = AnalyzedQuery::of(query).literals;
    holding(kb, kb.search.view(searcher), &literals, budget)
}

/// The bytes of page text one query reads in `kb` at most.
pub fn budget(kb: &KnowledgeBase) -> u64 {
    kb.options.read_limit.saturating_mul(BUDGET_READS)
}

/// The lane's pages; a scan cut short says so to the search (`LaneInput::cut_short`).
pub fn run(input: &LaneInput<'_>) -> Result<Vec<Hit>, IndexError> {
    let scan = holding(
        input.kb,
        input.index,
        &input.query.literals,
        budget(input.kb),
    )?;
    if scan.cut_short() {
        input.cut_short.mark();
    }
    Ok(ranked(scan.pages))
}

/// Reads candidate pages within a budget of bytes.
struct Reader<'a> {
    kb: &'a KnowledgeBase,
    left: u64,
    scan: Scan,
}

impl Reader<'_> {
    /// For each of `needles`, the source pages among its `candidates` (the pages where its
    /// words stand together) whose text holds it as written, ASCII case aside; none for a
    /// needle with more than [`MOST_CANDIDATES`]. Each page is read once, and searched once for
    /// all the needles it is a candidate of; a page larger than what is left of the budget is
    /// skipped.
    fn held(&mut self, needles: &[&str], candidates: &[Vec<u32>]) -> Vec<Vec<u32>> {
        let mut found: Vec<Vec<u32>> = vec![Vec::new(); needles.len()];
        let mut wanted: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for (needle, pages) in candidates.iter().enumerate() {
            if pages.len() > MOST_CANDIDATES {
                continue;
            }
            for &page in pages.iter().filter(|&&p| self.kb.catalog.is_source(p)) {
                wanted.entry(page).or_default().push(needle);
            }
        }
        if wanted.is_empty() {
            return found;
        }
        // Two needles the same but for ASCII case (two literals' names after the slash) are
        // one pattern.
        let same: Vec<usize> = needles
            .iter()
            .map(|n| needles.iter().position(|m| m.eq_ignore_ascii_case(n)))
            .map(|first| first.unwrap_or_default())
            .collect();
        let Ok(automaton) = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(needles)
        else {
            return found;
        };
        for (page, needles) in wanted {
            let file = self.kb.catalog.file(page);
            if file.size > self.kb.options.read_limit {
                // Not readable (a read of it answers 413): it holds nothing, and costs nothing.
                continue;
            }
            if file.size > self.left {
                self.scan.pages_skipped += 1;
                continue;
            }
            self.left -= file.size;
            self.scan.bytes_read += file.size;
            self.scan.pages_read += 1;
            let Some(text) = self.kb.indexed_content(file) else {
                continue;
            };
            let mut held = vec![false; found.len()];
            let mut missing = needles.len();
            for hit in automaton.find_overlapping_iter(text.as_bytes()) {
                let pattern = same[hit.pattern().as_usize()];
                for &needle in needles.iter().filter(|&&n| same[n] == pattern) {
                    if !held[needle] {
                        held[needle] = true;
                        missing -= 1;
                    }
                }
                if missing == 0 {
                    break;
                }
            }
            for needle in needles.into_iter().filter(|&n| held[n]) {
                found[needle].push(page);
            }
        }
        found
    }
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

/// The pages that hold the first [`MOST_LITERALS`] of `literals`, best first ([`pages`]),
/// reading at most `budget` bytes of page text: the literals as written in one pass, then the
/// names after the last slash of those no page holds in another.
fn holding(
    kb: &KnowledgeBase,
    index: SearchView<'_>,
    literals: &[Verbatim],
    budget: u64,
) -> Result<Scan, IndexError> {
    let read = &literals[..literals.len().min(MOST_LITERALS)];
    let mut reader = Reader {
        kb,
        left: budget,
        scan: Scan {
            literals: read.len(),
            literals_dropped: literals.len() - read.len(),
            ..Scan::default()
        },
    };
    if read.is_empty() {
        return Ok(reader.scan);
    }
    let candidates = phrases::pages_holding_each(index, read)?;
    let needles: Vec<&str> = read.iter().map(|l| l.text.as_str()).collect();
    let mut holders = reader.held(&needles, &candidates);
    let tails: Vec<(usize, Verbatim)> = read
        .iter()
        .enumerate()
        .filter(|(at, _)| holders[*at].is_empty())
        .filter_map(|(at, l)| Some((at, Verbatim::of(tail_name(&l.text)?.to_string()))))
        .collect();
    if !tails.is_empty() {
        let verbatims: Vec<Verbatim> = tails.iter().map(|(_, v)| v.clone()).collect();
        let candidates = phrases::pages_holding_each(index, &verbatims)?;
        let needles: Vec<&str> = verbatims.iter().map(|v| v.text.as_str()).collect();
        let found = reader.held(&needles, &candidates);
        for ((at, _), pages) in tails.iter().zip(found) {
            holders[*at] = pages;
        }
    }
    let total = index.num_docs().max(1) as f64;
    let mut scores: FxHashMap<u32, f64> = FxHashMap::default();
    for holding in holders.into_iter().filter(|h| !h.is_empty()) {
        let rarity = (1.0 + total / holding.len() as f64).ln();
        for page in holding {
            *scores.entry(page).or_default() += rarity;
        }
    }
    let mut ranked: Vec<(u32, f64)> = scores.into_iter().collect();
    ranked.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    reader.scan.pages = ranked.into_iter().map(|(page, _)| page).collect();
    Ok(reader.scan)
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
