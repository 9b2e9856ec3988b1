//! `SpanAnalyzer`: the `kb_text` terms of single spans (excerpts, titles), short words
//! remembered.

use std::borrow::Cow;
use std::cell::RefCell;

use tantivy::tokenizer::{TextAnalyzer, TokenStream};

use super::analyzers::{with_text_filters, WholeTokenizer};

/// The `kb_text` term of one token span (from [`super::text_token_spans`]): the span normalized, then
/// through the analyzer's filters, exactly as the analyzer makes it; `None` when the analyzer
/// drops the token. With it a caller can analyse each distinct span once.
///
/// The terms of short ASCII words are remembered (up to [`WORD_CACHE_ENTRIES`], then forgotten
/// all at once): texts share their words, and stemming one costs far more than a lookup. Other
/// spans (CJK characters and bigrams, mostly) are too many and too varied to be worth it.
pub struct SpanAnalyzer {
    pub(super) analyzer: TextAnalyzer,
    /// hashbrown's for `entry_ref`: a remembered word is found with one lookup, and a new one
    /// stored without a second (std's map needs `contains_key`, then `get`: two hashes and two
    /// comparisons of each word of each excerpt).
    pub(super) words: hashbrown::HashMap<Box<str>, Option<Box<str>>, rustc_hash::FxBuildHasher>,
}

/// ASCII words a [`SpanAnalyzer`] remembers at most.
pub const WORD_CACHE_ENTRIES: usize = 1 << 16;
/// Longest ASCII word (bytes) whose term is remembered.
pub(super) const CACHED_WORD_BYTES: usize = 24;

impl Default for SpanAnalyzer {
    fn default() -> Self {
        SpanAnalyzer {
            analyzer: with_text_filters(WholeTokenizer),
            words: hashbrown::HashMap::default(),
        }
    }
}

impl SpanAnalyzer {
    pub fn term(&mut self, span: &str) -> Option<Cow<'_, str>> {
        if span.len() > CACHED_WORD_BYTES || !span.is_ascii() {
            let mut stream = self.analyzer.token_stream(span);
            return stream
                .advance()
                .then(|| Cow::Owned(std::mem::take(&mut stream.token_mut().text)));
        }
        let SpanAnalyzer { analyzer, words } = self;
        if words.len() >= WORD_CACHE_ENTRIES {
            words.clear();
        }
        words
            .entry_ref(span)
            .or_insert_with(|| {
                let mut stream = analyzer.token_stream(span);
                stream
                    .advance()
                    .then(|| stream.token().text.as_str().into())
            })
            .as_deref()
            .map(Cow::Borrowed)
    }
}

thread_local! {
    static SPAN_ANALYZER: RefCell<SpanAnalyzer> = RefCell::new(SpanAnalyzer::default());
}

/// Runs `f` with this thread's [`SpanAnalyzer`] (and the words it remembers); `f` must not
/// call this again.
pub fn with_span_analyzer<R>(f: impl FnOnce(&mut SpanAnalyzer) -> R) -> R {
    SPAN_ANALYZER.with_borrow_mut(f)
}
