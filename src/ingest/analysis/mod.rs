//! Text analysis shared by indexing and querying, so both sides always agree:
//!
//! * `kb_text`: Latin/digit words (NFKC, lower-cased, English-stemmed) and CJK characters and
//!   character bigrams (each character and the bigram it starts share a position). Mixed runs
//!   such as `OKF规范` split into `okf` + `规范`; any CJK sub-word matches wherever the text
//!   contains it.
//! * `kb_words`: dictionary word segmentation of CJK runs (jieba, search mode, HMM off, the
//!   dictionary embedded in the binary), and nothing else: Latin words and numbers are
//!   `kb_text`'s (a text without CJK has no `kb_words` token at all, so English pages cost the
//!   index one analysis, not two).

pub(crate) const TEXT_ANALYZER: &str = "kb_text";
pub(crate) const WORDS_ANALYZER: &str = "kb_words";
/// The analyzer of a page's body: `kb_text` with section marks ([`SECTION_MARK`]).
pub(crate) const BODY_ANALYZER: &str = "kb_body";

/// The term that ends each section of a page's body in the `kb_body` analysis (a page of two
/// or more sections). No query has it: `kb_text` takes words and CJK characters only, and the
/// form feed that separates sections is neither.
pub(crate) const SECTION_MARK: &str = "\u{c}";

/// Tokens longer than this many bytes are dropped (they are hashes, data, not words).
const MAX_TOKEN_BYTES: usize = 64;

mod analyzers;
mod dictionary;
pub mod glossary;
mod query;
mod runs;
mod span_analyzer;
mod spans;
mod stem_cache;
mod tokens;

pub use analyzers::{
    body_analyzer, register, terms, text_analyzer, words_analyzer, KbTokenizer, VecTokenStream,
};
pub use dictionary::{load_dictionary, load_dictionary_at_first_cjk_query};
pub use query::{query_term_weights, query_terms, query_terms_and_all, query_words};
#[cfg(test)]
use runs::normalize_token;
use runs::{runs, Run};
pub use span_analyzer::{with_span_analyzer, SpanAnalyzer, WORD_CACHE_ENTRIES};
pub use spans::{text_token_spans, SpanKind};

/// True when the text has any CJK character (the words lane only adds value then).
pub(crate) fn has_cjk(text: &str) -> bool {
    !text.is_ascii() && text.chars().any(crate::text::is_cjk)
}

#[cfg(test)]
mod tests;
