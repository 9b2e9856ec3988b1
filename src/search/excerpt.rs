//! Excerpts: the `sourceExcerpt` of a hit, the fragment of its body around the best passage
//! for the query's terms (what tantivy's `SnippetGenerator` picks, computed from token spans).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use tantivy::Term;

use crate::index::search_index::{stats, SearchView};
use crate::ingest::analysis::{self};
use crate::search::query::AnalyzedQuery;

/// Bytes of body text around the best passage that an excerpt covers before trimming.
pub(super) const EXCERPT_WINDOW_BYTES: usize = 900;
/// Characters an excerpt holds at most (the API allows 1,200: rules#excerpts).
pub(crate) const EXCERPT_MAX_CHARS: usize = 600;

/// Makes `sourceExcerpt`s for the hits of one query.
pub(crate) struct Excerpter {
    /// Query term → weight.
    pub(super) terms: BTreeMap<String, f32>,
    pub(super) max_num_chars: usize,
}

/// What a token span of a body is to the excerpter.
#[derive(Clone, Copy)]
enum SpanClass {
    /// The analyzer drops it: it is no token.
    Dropped,
    /// A token that is no query term.
    Plain,
    /// A query term, with its weight.
    Term(f32),
}

/// `text` lower-cased (as `str::to_lowercase`), without a copy when no ASCII letter or
/// non-ASCII character could change.
fn lowercase(text: &str) -> std::borrow::Cow<'_, str> {
    if text
        .bytes()
        .all(|b| b.is_ascii() && !b.is_ascii_uppercase())
    {
        std::borrow::Cow::Borrowed(text)
    } else {
        std::borrow::Cow::Owned(text.to_lowercase())
    }
}

/// A candidate passage: the tokens from `start` on that fit the window.
struct Fragment {
    score: f32,
    start: usize,
    stop: usize,
}

impl Excerpter {
    /// An excerpter for the question's `kb_text` terms in the body (what tantivy's
    /// `SnippetGenerator` would highlight: each term the body field holds, weighted
    /// `1 / (1 + document frequency)`); `None` when the question has no term.
    pub(crate) fn for_query(index: SearchView<'_>, query: &AnalyzedQuery) -> Option<Excerpter> {
        let terms = &query.all_terms;
        if terms.is_empty() {
            return None;
        }
        // As `SnippetGenerator::create` weighs terms (1 / (1 + document frequency)), with the
        // frequency among live documents: an incremental build keeps deleted ones around.
        let deleted = index.deleted();
        let body = index.fields().body;
        let mut weights = BTreeMap::new();
        for term in terms {
            let df = stats::alive_doc_freq(
                index.searcher(),
                &deleted,
                &Term::from_field_text(body, term),
            )
            .ok()?;
            if df > 0 {
                weights.insert(term.clone(), 1.0 / (1.0 + df as f32));
            }
        }
        Some(Excerpter {
            terms: weights,
            max_num_chars: EXCERPT_WINDOW_BYTES,
        })
    }

    /// Plain text around the best-matching passage of `body` (a page's indexed body text, see
    /// [`crate::ingest::bundle::indexed_body_text`]); the start of the body when no body term matched.
    pub fn excerpt(&self, body: &str) -> Option<String> {
        let fragment = self.best_fragment(body);
        let text = if fragment.trim().is_empty() {
            crate::text::truncate_chars(body, EXCERPT_MAX_CHARS).to_string()
        } else {
            fragment.to_string()
        };
        let text = crate::text::collapse_whitespace(&text);
        let text = crate::text::truncate_chars(&text, EXCERPT_MAX_CHARS).to_string();
        (!text.is_empty()).then_some(text)
    }

    /// The best-matching passage of `text` (a section), or `None` when no query term is in it.
    pub(crate) fn excerpt_matching(&self, text: &str) -> Option<String> {
        let fragment = self.best_fragment(text);
        if fragment.trim().is_empty() {
            return None;
        }
        let text = crate::text::collapse_whitespace(fragment);
        let text = crate::text::truncate_chars(&text, EXCERPT_MAX_CHARS).to_string();
        (!text.is_empty()).then_some(text)
    }

    /// The passage tantivy's `SnippetGenerator::snippet` picks (its fragment): the body's
    /// `kb_text` tokens are cut into consecutive windows of at most `max_num_chars` bytes, each
    /// scored by the summed weights of its query-term tokens, and the best window wins (the
    /// first of equal ones); empty when no token is a query term. Each distinct token span is
    /// classified once per page, with the thread's span analyzer (which remembers the terms of
    /// the words of earlier pages).
    pub(super) fn best_fragment<'b>(&self, text: &'b str) -> &'b str {
        analysis::with_span_analyzer(|analyzer| self.best_fragment_with(text, analyzer))
    }

    fn best_fragment_with<'b>(
        &self,
        text: &'b str,
        analyzer: &mut analysis::SpanAnalyzer,
    ) -> &'b str {
        let mut classes: rustc_hash::FxHashMap<&'b str, SpanClass> =
            rustc_hash::FxHashMap::with_capacity_and_hasher(1024, Default::default());
        let mut fragments: Vec<Fragment> = Vec::new();
        let mut fragment = Fragment {
            score: 0.0,
            start: 0,
            stop: 0,
        };
        analysis::text_token_spans(text, |from, to, _| {
            let span = &text[from..to];
            let class = *classes
                .entry(span)
                .or_insert_with(|| match analyzer.term(span) {
                    None => SpanClass::Dropped,
                    Some(term) => self
                        .terms
                        .get(lowercase(&term).as_ref())
                        .map_or(SpanClass::Plain, |&w| SpanClass::Term(w)),
                });
            if let SpanClass::Dropped = class {
                return;
            }
            if to - fragment.start > self.max_num_chars {
                let next = Fragment {
                    score: 0.0,
                    start: from,
                    stop: from,
                };
                let done = std::mem::replace(&mut fragment, next);
                if done.score > 0.0 {
                    fragments.push(done);
                }
            }
            fragment.stop = to;
            if let SpanClass::Term(weight) = class {
                fragment.score += weight;
            }
        });
        if fragment.score > 0.0 {
            fragments.push(fragment);
        }
        let best = fragments.iter().max_by(|left, right| {
            match left
                .score
                .partial_cmp(&right.score)
                .unwrap_or(Ordering::Equal)
            {
                Ordering::Equal => (right.start, right.stop).cmp(&(left.start, left.stop)),
                other => other,
            }
        });
        best.map_or("", |f| &text[f.start..f.stop])
    }
}

/// The terms of `query` (as the index analyzes them: lower-cased, English words stemmed,
/// Chinese as words and bigrams; no stop or question words, no single Chinese character) that
/// stand in at most half of the knowledge base's pages: the ones worth marking in a result's
/// text for a person ("npm" on every page of npm's docs marks nothing). Rarest first; empty
/// when the index cannot say.
pub fn rare_terms(kb: &crate::kb::KnowledgeBase, query: &str) -> Vec<String> {
    let analyzed = AnalyzedQuery::of(query);
    let pages = kb.catalog.source_page_count().max(1);
    let searcher = kb.search.searcher();
    let index = kb.search.view(&searcher);
    let deleted = index.deleted();
    let body = index.fields().body;
    let mut rare: Vec<(u64, String)> = analyzed
        .terms
        .iter()
        .filter(|term| !analysis::has_cjk(term) || term.chars().count() >= 2)
        .filter_map(|term| {
            let df = stats::alive_doc_freq(
                index.searcher(),
                &deleted,
                &Term::from_field_text(body, term),
            )
            .ok()?;
            (df > 0 && df * 2 <= pages).then(|| (df, term.clone()))
        })
        .collect();
    rare.sort();
    rare.dedup_by(|a, b| a.1 == b.1);
    rare.into_iter().map(|(_, term)| term).collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use tantivy::schema::Field;
    use tantivy::snippet::SnippetGenerator;

    use super::*;
    use crate::ingest::analysis;

    #[test]
    fn excerpts_pick_the_snippet_generator_fragment() {
        let vocabulary = [
            "renewal",
            "renewals",
            "Renewing",
            "notice",
            "the",
            "of",
            "知识库",
            "续费",
            "通知",
            "续",
            "API",
            "ＡＰＩ",
            "v2",
            "—",
            ",",
            "\n\n",
            "ﬁne",
            "한국어",
        ];
        let long = "z".repeat(70);
        let mut next = crate::test_rng::xorshift(0x9e37_79b9_7f4a_7c15);
        let weights: BTreeMap<String, f32> = [("renew", 0.25f32), ("notic", 0.5), ("续费", 0.125)]
            .into_iter()
            .map(|(t, w)| (t.to_string(), w))
            .collect();
        let mut found = 0;
        for case in 0..300 {
            let words = (next() % 400) as usize;
            let mut text = String::new();
            for _ in 0..words {
                let w = next() as usize % (vocabulary.len() + 1);
                text.push_str(vocabulary.get(w).copied().unwrap_or(long.as_str()));
                if !next().is_multiple_of(3) {
                    text.push(' ');
                }
            }
            let max_num_chars = [900, 40, 7][case % 3];
            let excerpter = Excerpter {
                terms: weights.clone(),
                max_num_chars,
            };
            let mut generator = SnippetGenerator::new(
                weights.clone(),
                analysis::text_analyzer(),
                Field::from_field_id(0),
                max_num_chars,
            );
            generator.set_max_num_chars(max_num_chars);
            let fragment = excerpter.best_fragment(&text);
            assert_eq!(
                fragment,
                generator.snippet(&text).fragment(),
                "case {case}: {text}"
            );
            found += usize::from(!fragment.is_empty());
        }
        assert!(found > 200, "{found}");
    }
}
