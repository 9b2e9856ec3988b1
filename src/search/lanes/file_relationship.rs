//! The `file_relationship` lane, the offline counterpart of the online search over relationship
//! documents. Every relation the seeds' walks traverse is scored by how much of the query its
//! text holds: the body IDF of each distinct query term in the reached page's title or the
//! relation's reason, as a share of the IDF of all the query's terms (analysed like the lexical
//! lane). The reached page is offered that share of the seed's file score times the lane's
//! weight, damped by depth and by its relation count like [`super::file_graph`]; it keeps the
//! best offer. The work is bounded by the walks (≤ seeds × (fanout + fanout²) steps); nothing
//! is read from disk.

use rustc_hash::FxHashMap;

use crate::error::IndexError;
use crate::search::lanes::file_graph::hub_damping;
use crate::search::lanes::io::{GraphInput, Offers};
use crate::search::weights::WEIGHTS;

/// Which query terms a text contains, analysed like the lexical lane (`kb_text`). `kb_text`
/// tokens never span whitespace, so text is analysed one whitespace-separated chunk at a time,
/// each distinct chunk once per query: titles and reason sentences repeat their words, so most
/// relations cost a few hash lookups. A chunk's tokens are its token spans through the thread's
/// span analyzer (the same terms as the analyzer's, see [`crate::ingest::analysis::SpanAnalyzer`]),
/// which remembers the terms of words across queries.
struct TermMatcher<'q, 'c> {
    term_index: FxHashMap<&'q str, usize>,
    chunks: FxHashMap<&'c str, Vec<usize>>,
}

impl<'q, 'c> TermMatcher<'q, 'c> {
    fn new(terms: &'q [String]) -> Self {
        TermMatcher {
            term_index: terms
                .iter()
                .enumerate()
                .map(|(i, t)| (t.as_str(), i))
                .collect(),
            chunks: FxHashMap::default(),
        }
    }

    /// Adds to `out` the indices of the query terms in `text` that it does not hold yet.
    fn add_matches(&mut self, text: &'c str, out: &mut Vec<usize>) {
        for chunk in text.split_whitespace() {
            let found = match self.chunks.entry(chunk) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    let mut found = Vec::new();
                    let term_index = &self.term_index;
                    crate::ingest::analysis::with_span_analyzer(|spans| {
                        crate::ingest::analysis::text_token_spans(chunk, |from, to, _| {
                            let Some(term) = spans.term(&chunk[from..to]) else {
                                return;
                            };
                            if let Some(&i) = term_index.get(term.as_ref()) {
                                if !found.contains(&i) {
                                    found.push(i);
                                }
                            }
                        });
                    });
                    e.insert(found)
                }
            };
            for &i in found.iter() {
                if !out.contains(&i) {
                    out.push(i);
                }
            }
        }
    }
}

/// The lane's offers: a share of each seed's score to each page its walk reaches by a relation
/// whose text holds query terms, the seed marked with each.
pub fn run(input: &GraphInput<'_>) -> Result<Offers, IndexError> {
    let (kb, walks, terms) = (input.kb, input.walks, &input.query.terms);
    let mut out = Offers::default();
    if walks.iter().all(|(_, steps)| steps.is_empty()) {
        return Ok(out);
    }
    if terms.is_empty() {
        return Ok(out);
    }
    let w = &WEIGHTS;
    let mut idf: Vec<f64> = Vec::with_capacity(terms.len());
    for term in terms {
        idf.push(f64::from(input.index.idf(term)?));
    }
    let total: f64 = idf.iter().sum();
    if total <= 0.0 {
        return Ok(out);
    }
    let mut matcher = TermMatcher::new(terms);
    let mut shares: FxHashMap<u32, f64> = FxHashMap::default();
    let mut found: Vec<usize> = Vec::new();
    for ((seed, steps), &seed_score) in walks.iter().zip(input.seed_scores) {
        for step in steps {
            if !kb.catalog.is_source(step.to) {
                continue;
            }
            let share = *shares.entry(step.relation).or_insert_with(|| {
                let rel = kb.catalog.relation(step.relation);
                found.clear();
                if let Some(title) = &kb.catalog.file(rel.to).title {
                    matcher.add_matches(title, &mut found);
                }
                if let Some(reason) = &rel.reason {
                    matcher.add_matches(reason, &mut found);
                }
                found.iter().map(|&i| idf[i]).sum::<f64>() / total
            });
            if share > 0.0 {
                let offer = input.weight * seed_score * share
                    / w.graph_depth.powi(i32::from(step.depth) - 1)
                    / hub_damping(kb, step.to, w.hub);
                out.marked.push(*seed);
                out.offers.push((step.to, offer));
            }
        }
    }
    Ok(out)
}
