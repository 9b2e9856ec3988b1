//! The English Snowball stemmer with a per-thread memory of the stems it made.

use std::cell::RefCell;
use std::sync::OnceLock;

use tantivy::tokenizer::{Token, TokenFilter, TokenStream, Tokenizer};

/// The English Snowball stemmer (frostem, as tantivy's `Stemmer` applies it), remembering the
/// stems of the words it saw on this thread: words repeat (Zipf), and a lookup costs a fraction
/// of stemming. Stemming is a pure function of the word, so the tokens are the same.
#[derive(Clone, Copy)]
pub(super) struct CachedStemmer;

/// Words whose stems a thread remembers; the memory is dropped when it grows past this.
pub(super) const STEM_CACHE_WORDS: usize = 200_000;

thread_local! {
    static STEMS: RefCell<rustc_hash::FxHashMap<String, String>> =
        RefCell::new(rustc_hash::FxHashMap::default());
}

pub(super) fn stem_into(word: &mut String) {
    static STEMMER: OnceLock<frostem::Stemmer> = OnceLock::new();
    let stemmer = STEMMER.get_or_init(|| frostem::Stemmer::new(frostem::Algorithm::English));
    // Every rule of the English stemmer needs an ASCII letter: CJK characters and bigrams,
    // numbers and other scripts come out as they went in.
    if !word.bytes().any(|b| b.is_ascii_alphabetic()) {
        return;
    }
    STEMS.with(|stems| {
        let mut stems = stems.borrow_mut();
        if let Some(stem) = stems.get(word.as_str()) {
            word.clear();
            word.push_str(stem);
            return;
        }
        let stem = stemmer.stem(word).into_owned();
        if stems.len() >= STEM_CACHE_WORDS {
            stems.clear();
        }
        stems.insert(std::mem::replace(word, stem.clone()), stem);
    });
}

impl TokenFilter for CachedStemmer {
    type Tokenizer<T: Tokenizer> = CachedStemmerFilter<T>;

    fn transform<T: Tokenizer>(self, tokenizer: T) -> CachedStemmerFilter<T> {
        CachedStemmerFilter { inner: tokenizer }
    }
}

#[derive(Clone)]
pub(super) struct CachedStemmerFilter<T> {
    pub(super) inner: T,
}

impl<T: Tokenizer> Tokenizer for CachedStemmerFilter<T> {
    type TokenStream<'a> = CachedStemmerStream<T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        CachedStemmerStream {
            tail: self.inner.token_stream(text),
        }
    }
}

pub(super) struct CachedStemmerStream<T> {
    pub(super) tail: T,
}

impl<T: TokenStream> TokenStream for CachedStemmerStream<T> {
    fn advance(&mut self) -> bool {
        if !self.tail.advance() {
            return false;
        }
        stem_into(&mut self.tail.token_mut().text);
        true
    }

    fn token(&self) -> &Token {
        self.tail.token()
    }

    fn token_mut(&mut self) -> &mut Token {
        self.tail.token_mut()
    }
}
