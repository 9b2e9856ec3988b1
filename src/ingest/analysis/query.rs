//! A query's terms: the `kb_text` terms without question words and stop words, jieba's words
//! of its CJK runs, and each term's weight (non-CJK terms of a mixed query up, question
//! framing down).

use std::sync::OnceLock;

use tantivy::tokenizer::TokenStream;

use crate::text::is_cjk;

use super::analyzers::{terms, text_analyzer, words_analyzer_with};
use super::dictionary::{jieba, query_dictionary};
use super::has_cjk;
use super::runs::{runs, Run};
use super::stem_cache::stem_into;

/// Question words and particles of Chinese queries. Answer passages do not hold them, so query
/// bigrams that overlap one (as jieba segments the query) only add noise.
pub(super) const QUERY_STOP_WORDS: [&str; 22] = [
    "什么",
    "哪",
    "哪个",
    "哪些",
    "哪里",
    "哪儿",
    "哪一",
    "谁",
    "吗",
    "呢",
    "怎么",
    "怎样",
    "怎么样",
    "如何",
    "为什么",
    "为何",
    "几",
    "多少",
    "是",
    "的",
    "了",
    "吧",
];

/// English words of the way questions are asked: question words, pronouns, auxiliaries,
/// articles and prepositions. A question holds them where the page that answers it need not
/// ("How do I …", "Why does my …"), and in a small knowledge base their document frequency is
/// too low for BM25's IDF to discount them.
pub(super) const ENGLISH_QUERY_STOP_WORDS: [&str; 84] = [
    "a", "about", "all", "am", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by",
    "can", "could", "did", "do", "does", "doing", "for", "from", "had", "has", "have", "having",
    "he", "her", "here", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "just",
    "me", "might", "my", "myself", "of", "on", "or", "our", "ours", "please", "she", "should",
    "so", "some", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this",
    "those", "to", "us", "was", "we", "were", "what", "when", "where", "which", "who", "whom",
    "why", "will", "with", "would", "you", "your", "yours", "i'm",
];

/// Whether `word` (a query's Latin word as written) is an English question or function word.
pub(super) fn is_english_stop_word(word: &str) -> bool {
    word.len() <= 8 && ENGLISH_QUERY_STOP_WORDS.contains(&word.to_ascii_lowercase().as_str())
}

/// The `kb_text` terms of a query: like [`terms`], without English question and function words
/// and without the CJK bigrams that overlap a question word or particle (an all-stop-word query
/// keeps its terms).
pub fn query_terms(text: &str) -> Vec<String> {
    let (kept, all) = kept_and_all_terms(text);
    if kept.is_empty() {
        all
    } else {
        kept
    }
}

/// [`query_terms`] and every `kb_text` term of `text` (as [`terms`] reads them, stop words
/// included), from one pass of the analyzer.
pub fn query_terms_and_all(text: &str) -> (Vec<String>, Vec<String>) {
    let (kept, all) = kept_and_all_terms(text);
    if kept.is_empty() {
        (all.clone(), all)
    } else {
        (kept, all)
    }
}

/// The `kb_text` terms of `text` without its stop words, and all of them.
fn kept_and_all_terms(text: &str) -> (Vec<String>, Vec<String>) {
    let mut analyzer = text_analyzer();
    let mut stop_spans: Vec<(usize, usize)> = Vec::new();
    if has_cjk(text) {
        let own = query_dictionary(text);
        let segmenter = own.as_deref().unwrap_or_else(|| jieba());
        for run in runs(text) {
            if let Run::Cjk(s, e) = run {
                for word in segmenter.cut(&text[s..e], false) {
                    if QUERY_STOP_WORDS.contains(&word.word) {
                        stop_spans.push((s + word.byte_start, s + word.byte_end));
                    }
                }
            }
        }
    }
    let mut kept: Vec<String> = Vec::new();
    let mut all: Vec<String> = Vec::new();
    let mut stream = analyzer.token_stream(text);
    while stream.advance() {
        let t = stream.token();
        let stopped = stop_spans
            .iter()
            .any(|&(s, e)| t.offset_from < e && s < t.offset_to)
            || text
                .get(t.offset_from..t.offset_to)
                .is_some_and(is_english_stop_word);
        if !all.contains(&t.text) {
            all.push(t.text.clone());
        }
        if !stopped && !kept.contains(&t.text) {
            kept.push(t.text.clone());
        }
    }
    (kept, all)
}

/// The `kb_words` terms of a query, without question words and particles (an all-stop-word
/// query keeps its terms).
pub fn query_words(text: &str) -> Vec<String> {
    let all = terms(&mut words_analyzer_with(query_dictionary(text)), text);
    let kept: Vec<String> = all
        .iter()
        .filter(|t| !QUERY_STOP_WORDS.contains(&t.as_str()))
        .cloned()
        .collect();
    if kept.is_empty() {
        all
    } else {
        kept
    }
}

/// How much a non-CJK term (a Latin word, a number) weighs in a query that also has CJK text.
/// A two-character Chinese word, the typical length, yields three `kb_text` terms (two
/// characters and their bigram) where a Latin word yields one; without this weight a rare name
/// or number in a Chinese question is outvoted by the common characters around it. Checked on
/// the CMRC 2018 trial split (0.9889 -> 0.9894 at 2, 3 and 4 alike); 3 follows from the count.
pub(super) const NON_CJK_TERM_WEIGHT: f32 = 3.0;

/// English words that frame a question without naming its subject: "Why do I *get* a
/// warning", "Is there a *way* to", "I *want* to", "*Tell* me". Unlike the stop words above
/// they can be the subject ("the way pages are split"), so a query keeps them, at
/// [`QUESTION_FRAME_WEIGHT`]. At full weight a small knowledge base's IDF makes them a
/// question's rarest words (`get` is on one of markdownlint's 60 pages) and ranks the page
/// that happens to hold them. "make" and "instead" were tried too and left out: they raised the
/// lexical figures but cost stylelint-docs and vue-docs with the semantic lanes on.
pub(super) const QUESTION_FRAME_WORDS: [&str; 18] = [
    "get",
    "got",
    "want",
    "need",
    "way",
    "like",
    "something",
    "anything",
    "thing",
    "happen",
    "tell",
    "know",
    "possible",
    "able",
    "still",
    "really",
    "also",
    "even",
];

/// The query weight of a [`QUESTION_FRAME_WORDS`] term. 0.1 and 0 measured alike (0.25 kept
/// markdownlint's loss); a small weight keeps a question made only of them answerable.
pub(super) const QUESTION_FRAME_WEIGHT: f32 = 0.1;

/// Whether `term` (an analysed query term: lowercased and stemmed) is a question-framing word.
pub(super) fn is_question_frame_term(term: &str) -> bool {
    static STEMS: OnceLock<Vec<String>> = OnceLock::new();
    STEMS
        .get_or_init(|| {
            QUESTION_FRAME_WORDS
                .iter()
                .map(|word| {
                    let mut stem = (*word).to_string();
                    stem_into(&mut stem);
                    stem
                })
                .collect()
        })
        .iter()
        .any(|stem| stem == term)
}

/// The query weight of each of `terms` (from [`query_terms`]): 1, `NON_CJK_TERM_WEIGHT` for
/// a non-CJK term of a query that also has CJK terms, times `QUESTION_FRAME_WEIGHT` for a
/// question-framing word.
pub fn query_term_weights(terms: &[String]) -> Vec<f32> {
    let has_cjk_term = |t: &String| t.chars().any(is_cjk);
    let mixed = terms.iter().any(has_cjk_term);
    terms
        .iter()
        .map(|t| {
            let weight = if mixed && !has_cjk_term(t) {
                NON_CJK_TERM_WEIGHT
            } else {
                1.0
            };
            if is_question_frame_term(t) {
                weight * QUESTION_FRAME_WEIGHT
            } else {
                weight
            }
        })
        .collect()
}
