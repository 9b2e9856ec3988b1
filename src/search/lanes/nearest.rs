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
//! The near titles cost a Levenshtein automaton per word, prefix and field, about a KiB a
//! state: only the first 8 words (`MOST_FUZZY_WORDS`) of 32 characters at most get them,
//! within an estimated 16 MiB a search (`MOST_FUZZY_BYTES`), and at most 4 searches of a
//! process build them at once (`MOST_AT_ONCE`; a search waits for its turn up to its
//! deadline, then answers `SEARCH_TIMEOUT`).
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

/// The query words that get automata for the near titles: its first ones.
pub(crate) const MOST_FUZZY_WORDS: usize = 8;

/// A longer word gets no automata: no title word is a few edits from it, and its automata
/// would be the largest.
pub(crate) const MOST_FUZZY_CHARS: usize = 32;

/// The estimated memory of one search's automata ([`automaton_bytes`]), at most: 16 MiB, the
/// automata of eight words of eleven letters (`punctuatoin`'s four prefixes take 2 MiB).
pub(crate) const MOST_FUZZY_BYTES: usize = 16 << 20;

/// The searches of a process that build automata at once, at most.
pub(crate) const MOST_AT_ONCE: usize = 4;

/// The searches building automata now ([`MOST_AT_ONCE`]).
static FUZZY_SLOTS: Slots = Slots::new(MOST_AT_ONCE);

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
    // A search that waits past its deadline for a turn looks for no near title: the search
    // then answers `SEARCH_TIMEOUT`.
    let slot = match fuzzy.is_empty() {
        true => None,
        false => FUZZY_SLOTS.take(kb.options.search_deadline),
    };
    let near: Vec<u32> = match slot {
        Some(_slot) => near_titles(input.index, &fuzzy, MAX_RESULTS)?
            .into_iter()
            .map(|hit| hit.position)
            .filter(|&p| keep(p))
            .take(MOST)
            .collect(),
        None => Vec::new(),
    };
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
/// letters long at least; one edit, two from eight letters. Only the first
/// [`MOST_FUZZY_WORDS`] words of at most [`MOST_FUZZY_CHARS`] characters, and no word whose
/// automata would take the estimate past [`MOST_FUZZY_BYTES`], nor any after it.
fn fuzzy_terms(terms: &[String]) -> Vec<(String, u8)> {
    let mut out: Vec<(String, u8)> = Vec::new();
    let mut bytes = 0;
    let words = terms
        .iter()
        .filter(|t| !crate::ingest::analysis::has_cjk(t))
        .map(|t| t.chars().collect::<Vec<char>>())
        .filter(|chars| (4..=MOST_FUZZY_CHARS).contains(&chars.len()))
        .take(MOST_FUZZY_WORDS);
    for chars in words {
        let edits = if chars.len() >= 8 { 2 } else { 1 };
        let mut word: Vec<(String, u8)> = Vec::new();
        for cut in 0..=3 {
            let Some(len) = chars.len().checked_sub(cut).filter(|&l| l >= 4) else {
                break;
            };
            let prefix: String = chars[..len].iter().collect();
            if !out.iter().chain(&word).any(|(t, _)| *t == prefix) {
                word.push((prefix, edits));
            }
        }
        let cost: usize = word
            .iter()
            .map(|(t, e)| automaton_bytes(t.chars().count(), *e))
            .sum();
        if bytes + cost > MOST_FUZZY_BYTES {
            break;
        }
        bytes += cost;
        out.extend(word);
    }
    out
}

/// The estimated memory of the automata of a term of `chars` characters within `edits` (a
/// transposition one edit), in its two fields (title, path): a DFA state holds 256 transitions
/// of 4 bytes, and the states grow linearly with the length (7 a character and 8 for one edit,
/// 28 a character for two: `levenshtein_automata` 0.2 counts 36 and 176 states for words of 4
/// and 24 letters at one edit, 103 and 663 at two).
pub(crate) fn automaton_bytes(chars: usize, edits: u8) -> usize {
    let states = match edits {
        0 => chars + 1,
        1 => 7 * chars + 8,
        _ => 28 * chars,
    };
    2 * states * 1024
}

/// A count of turns (a counting semaphore): at most its size held at once.
pub(crate) struct Slots {
    held: std::sync::Mutex<usize>,
    freed: std::sync::Condvar,
    size: usize,
}

/// A turn of [`Slots`], given back when dropped.
pub(crate) struct Slot<'a>(&'a Slots);

impl Slots {
    pub(crate) const fn new(size: usize) -> Slots {
        Slots {
            held: std::sync::Mutex::new(0),
            freed: std::sync::Condvar::new(),
            size,
        }
    }

    /// A turn, waiting for one up to `wait`; `None` when none came.
    pub(crate) fn take(&self, wait: std::time::Duration) -> Option<Slot<'_>> {
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let (mut held, _) = self
            .freed
            .wait_timeout_while(held, wait, |held| *held >= self.size)
            .unwrap_or_else(|e| e.into_inner());
        if *held >= self.size {
            return None;
        }
        *held += 1;
        Some(Slot(self))
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut held = self.0.held.lock().unwrap_or_else(|e| e.into_inner());
        *held = held.saturating_sub(1);
        self.0.freed.notify_one();
    }
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

    /// 30 words of 17 letters (a 510-character query no lane matched): the old fallback built
    /// 120 terms' automata in two fields each, about 110 MiB.
    #[test]
    fn a_long_query_builds_few_automata_within_the_budget() {
        let letters: Vec<char> = ('a'..='z').collect();
        let terms: Vec<String> = (0..30)
            .map(|i| (0..17).map(|j| letters[(i * 7 + j * 3) % 26]).collect())
            .collect();
        let found = super::fuzzy_terms(&terms);
        let bytes: usize = found
            .iter()
            .map(|(t, e)| super::automaton_bytes(t.chars().count(), *e))
            .sum();
        assert!(bytes <= super::MOST_FUZZY_BYTES, "{bytes} bytes");
        let words: std::collections::BTreeSet<&str> = found.iter().map(|(t, _)| &t[..4]).collect();
        assert!(words.len() <= super::MOST_FUZZY_WORDS, "{found:?}");
        assert!(found.len() <= 4 * super::MOST_FUZZY_WORDS, "{found:?}");
        // The first words are the ones looked for.
        assert_eq!(found[0].0, terms[0]);
        // A word longer than the most gets none.
        assert!(super::fuzzy_terms(&["a".repeat(super::MOST_FUZZY_CHARS + 1)]).is_empty());
    }

    #[test]
    fn no_more_searches_build_automata_at_once_than_the_slots() {
        let slots = super::Slots::new(2);
        let wait = std::time::Duration::from_millis(1);
        let first = slots.take(wait).expect("a free slot");
        let _second = slots.take(wait).expect("a free slot");
        assert!(slots.take(wait).is_none());
        drop(first);
        assert!(slots.take(wait).is_some());
    }
}
