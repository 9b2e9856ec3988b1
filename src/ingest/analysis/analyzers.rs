//! The tantivy analyzers: `kb_text`, `kb_body` and `kb_words` over the spans, their filters,
//! and the registration on an index.

use std::sync::Arc;

use jieba_rs::Jieba;
use tantivy::tokenizer::{RemoveLongFilter, TextAnalyzer, Token, TokenStream, Tokenizer};

use super::dictionary::jieba;
use super::spans::{body_tokens, text_tokens, word_tokens};
use super::stem_cache::CachedStemmer;
use super::tokens::Tokens;
use super::{has_cjk, BODY_ANALYZER, MAX_TOKEN_BYTES, TEXT_ANALYZER, WORDS_ANALYZER};

/// What a [`KbTokenizer`] makes of a text.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Analysis {
    /// `kb_text`.
    Text,
    /// `kb_body`: `kb_text` with section marks.
    Body,
    /// `kb_words`.
    Words,
}

/// A tokenizer over an eagerly computed token list.
#[derive(Clone)]
pub struct KbTokenizer {
    pub(super) analysis: Analysis,
    /// The segmenter of the words (`None`: jieba's whole dictionary).
    pub(super) segmenter: Option<Arc<Jieba>>,
}

pub struct VecTokenStream {
    pub(super) tokens: Tokens,
    pub(super) index: usize,
}

impl TokenStream for VecTokenStream {
    fn advance(&mut self) -> bool {
        if self.index < self.tokens.len {
            self.index += 1;
            true
        } else {
            false
        }
    }
    fn token(&self) -> &Token {
        &self.tokens.slots[self.index - 1]
    }
    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens.slots[self.index - 1]
    }
}

impl Tokenizer for KbTokenizer {
    type TokenStream<'a> = VecTokenStream;
    fn token_stream<'a>(&'a mut self, text: &'a str) -> VecTokenStream {
        let tokens = match self.analysis {
            Analysis::Text => text_tokens(text),
            Analysis::Body => body_tokens(text),
            // Without a CJK character there is nothing to segment: the dictionary is not
            // needed (loading it was an eighth of the CPU of an English bundle's build).
            Analysis::Words if !has_cjk(text) => Tokens::new(),
            Analysis::Words => {
                word_tokens(text, self.segmenter.as_deref().unwrap_or_else(|| jieba()))
            }
        };
        VecTokenStream { tokens, index: 0 }
    }
}

/// The `kb_text` analyzer.
pub fn text_analyzer() -> TextAnalyzer {
    with_text_filters(KbTokenizer {
        analysis: Analysis::Text,
        segmenter: None,
    })
}

/// The `kb_body` analyzer.
pub fn body_analyzer() -> TextAnalyzer {
    with_text_filters(KbTokenizer {
        analysis: Analysis::Body,
        segmenter: None,
    })
}

/// `tokenizer` with the token filters of `kb_text`.
pub(super) fn with_text_filters<T: Tokenizer>(tokenizer: T) -> TextAnalyzer {
    TextAnalyzer::builder(tokenizer)
        .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES))
        .filter(CachedStemmer)
        .build()
}

/// A tokenizer that makes one token of its whole (normalized) input, none of an input that
/// normalizes to nothing.
#[derive(Clone, Copy)]
pub(super) struct WholeTokenizer;

impl Tokenizer for WholeTokenizer {
    type TokenStream<'a> = VecTokenStream;
    fn token_stream<'a>(&'a mut self, text: &'a str) -> VecTokenStream {
        let mut tokens = Tokens::new();
        tokens.push(text, 0, text.len());
        VecTokenStream { tokens, index: 0 }
    }
}

/// The `kb_words` analyzer.
pub fn words_analyzer() -> TextAnalyzer {
    words_analyzer_with(None)
}

/// The `kb_words` analyzer segmenting with `segmenter` (`None`: jieba's whole dictionary).
pub(super) fn words_analyzer_with(segmenter: Option<Arc<Jieba>>) -> TextAnalyzer {
    TextAnalyzer::builder(KbTokenizer {
        analysis: Analysis::Words,
        segmenter,
    })
    .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES))
    .build()
}

/// Registers the analyzers on a tantivy index.
pub fn register(index: &tantivy::Index) {
    index.tokenizers().register(TEXT_ANALYZER, text_analyzer());
    index.tokenizers().register(BODY_ANALYZER, body_analyzer());
    index
        .tokenizers()
        .register(WORDS_ANALYZER, words_analyzer());
}

/// The terms an analyzer makes of `text`, in order, without duplicates.
pub fn terms(analyzer: &mut TextAnalyzer, text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut stream = analyzer.token_stream(text);
    while stream.advance() {
        let t = &stream.token().text;
        if !out.contains(t) {
            out.push(t.clone());
        }
    }
    out
}
