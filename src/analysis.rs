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

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use jieba_rs::Jieba;
use tantivy::tokenizer::{
    RemoveLongFilter, TextAnalyzer, Token, TokenFilter, TokenStream, Tokenizer,
};
use unicode_normalization::UnicodeNormalization;

use crate::text::{is_cjk, is_han};

pub const TEXT_ANALYZER: &str = "kb_text";
pub const WORDS_ANALYZER: &str = "kb_words";
/// The analyzer of a page's body: `kb_text` with section marks ([`SECTION_MARK`]).
pub const BODY_ANALYZER: &str = "kb_body";

/// The term that ends each section of a page's body in the `kb_body` analysis (a page of two
/// or more sections). No query has it: `kb_text` takes words and CJK characters only, and the
/// form feed that separates sections is neither.
pub const SECTION_MARK: &str = "\u{c}";

/// Tokens longer than this many bytes are dropped (they are hashes, data, not words).
const MAX_TOKEN_BYTES: usize = 64;

static JIEBA: OnceLock<Jieba> = OnceLock::new();

fn jieba() -> &'static Jieba {
    JIEBA.get_or_init(Jieba::new)
}

/// Loads the word segmenter's dictionary now (a tenth of a second), so that a caller can have
/// it loaded on another thread while it does other work.
pub fn load_dictionary() {
    jieba();
}

/// Set by [`load_dictionary_at_first_cjk_query`].
static LOAD_AT_FIRST_CJK_QUERY: AtomicBool = AtomicBool::new(false);

/// For a long-running process (a server): the first query with CJK text has jieba's whole
/// dictionary loaded on another thread, for the queries after it (that query, and those until
/// the dictionary is in, segment with the words they hold, alike). A server that is never asked
/// in Chinese does not hold the dictionary's memory.
pub fn load_dictionary_at_first_cjk_query() {
    LOAD_AT_FIRST_CJK_QUERY.store(true, Ordering::Relaxed);
}

/// jieba's dictionary, as `Jieba::new` loads it (a copy: `src/analysis/SOURCE.txt`).
const JIEBA_DICT: &str = include_str!("analysis/jieba-dict.txt");
/// The sum of [`JIEBA_DICT`]'s frequencies: jieba scores a word by its frequency over this.
const JIEBA_DICT_TOTAL: u64 = 60_101_964;
/// A word no text given to jieba holds (a noncharacter; jieba sees CJK runs only, and a text
/// holding it gets the whole dictionary), carrying the frequencies of the words a
/// [`query_dictionary`] leaves out.
const FILLER_WORD: &str = "\u{fdd0}";

/// The lines of [`JIEBA_DICT`] whose word starts with `first`: a binary search, the lines being
/// sorted by word.
fn dictionary_lines(first: char) -> impl Iterator<Item = &'static str> {
    let mut buffer = [0u8; 4];
    let prefix = first.encode_utf8(&mut buffer).as_bytes();
    let bytes = JIEBA_DICT.as_bytes();
    let line_end = |start: usize| {
        bytes[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |p| start + p)
    };
    let word = |start: usize, end: usize| {
        let line = &bytes[start..end];
        &line[..line.iter().position(|&b| b == b' ').unwrap_or(line.len())]
    };
    // Lines starting before `low` have words below `prefix`, those starting at or after `high`
    // do not; `low` is a line's start.
    let (mut low, mut high) = (0, bytes.len());
    while low < high {
        let middle = low + (high - low) / 2;
        let start = bytes[low..middle]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(low, |p| low + p + 1);
        let end = line_end(start);
        if word(start, end) < prefix {
            low = (end + 1).min(bytes.len());
        } else {
            high = start;
        }
    }
    let prefix = prefix.to_vec();
    JIEBA_DICT[low..]
        .lines()
        .take_while(move |line| line.as_bytes().starts_with(&prefix))
}

/// A segmenter for `text` alone, or `None` when this process has jieba's whole dictionary
/// loaded already (or `text` has no CJK, which jieba never sees): the dictionary words found in `text`, plus [`FILLER_WORD`] bringing the total
/// frequency to the whole dictionary's. jieba looks up only substrings of what it segments, and
/// scores them by frequency over the total, so this segments `text` and every part of it as the
/// whole dictionary does: a one-shot `kbtools call` with a Chinese query pays for the words it
/// has, not for loading 349,045 (a tenth of a second). The last text's segmenter is kept, for
/// the several analyses of one query.
fn query_dictionary(text: &str) -> Option<Arc<Jieba>> {
    static LAST: Mutex<Option<(String, Arc<Jieba>)>> = Mutex::new(None);
    if JIEBA.get().is_some() || !has_cjk(text) {
        return None;
    }
    if LOAD_AT_FIRST_CJK_QUERY.swap(false, Ordering::Relaxed) {
        std::thread::spawn(load_dictionary);
    }
    let mut last = LAST.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((last_text, segmenter)) = last.as_ref() {
        if last_text == text {
            return Some(Arc::clone(segmenter));
        }
    }
    let segmenter = Arc::new(dictionary_within(text)?);
    *last = Some((text.to_string(), Arc::clone(&segmenter)));
    Some(segmenter)
}

/// A segmenter of the dictionary words inside `text` (see [`query_dictionary`]).
fn dictionary_within(text: &str) -> Option<Jieba> {
    if text.contains(FILLER_WORD) {
        return None;
    }
    // Each character of the text with where it is: a word is inside when it starts at one of
    // its first character's places.
    let mut places: Vec<(char, usize)> = text.char_indices().map(|(i, c)| (c, i)).collect();
    places.sort_unstable();
    let mut dictionary = String::new();
    let mut total = 0u64;
    for same in places.chunk_by(|a, b| a.0 == b.0) {
        for line in dictionary_lines(same[0].0) {
            let mut fields = line.split(' ');
            let (Some(word), Some(frequency)) = (fields.next(), fields.next()) else {
                continue;
            };
            let inside = same.iter().any(|&(_, at)| text[at..].starts_with(word));
            if let (true, Ok(frequency)) = (inside, frequency.parse::<u64>()) {
                total += frequency;
                dictionary.push_str(line);
                dictionary.push('\n');
            }
        }
    }
    let filler = JIEBA_DICT_TOTAL.saturating_sub(total);
    dictionary.push_str(&format!("{FILLER_WORD} {filler} x\n"));
    // The lines are the dictionary's own, so this cannot fail; if it did, the whole dictionary
    // would answer (slowly, but alike).
    Jieba::with_dict(&mut dictionary.as_bytes()).ok()
}

/// NFKC, then each character lower-cased (not `str::to_lowercase`, whose final sigma differs).
#[cfg(test)]
fn normalize_token(raw: &str) -> String {
    let mut out = String::new();
    normalize_into(raw, &mut out);
    out
}

/// [`normalize_token`] of `raw`, appended to `out`.
fn normalize_into(raw: &str, out: &mut String) {
    // ASCII is its own NFKC form; text already in NFKC (the quick check says so for almost all
    // text) needs only lower-casing. Both give what the full path gives, for less work.
    if raw.is_ascii() {
        let start = out.len();
        out.push_str(raw);
        out[start..].make_ascii_lowercase();
        return;
    }
    // A CJK token is one or two ideographs, almost always their own normalized form.
    if raw.chars().all(crate::text::is_normal_ideograph) {
        out.push_str(raw);
        return;
    }
    out.reserve(raw.len());
    if crate::text::is_nfkc(raw) {
        for c in raw.chars() {
            out.extend(c.to_lowercase());
        }
        return;
    }
    for c in raw.nfkc() {
        out.extend(c.to_lowercase());
    }
}

/// A run of the input: a CJK run or a word, with its byte span.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Run {
    Cjk(usize, usize),
    Word(usize, usize),
}

fn runs(text: &str) -> Vec<Run> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut current: Option<Run> = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        // ASCII (most of most texts) a byte at a time: a run of letters and digits in one step.
        let (end, kind_cjk, is_word) = if b.is_ascii() {
            if b.is_ascii_alphanumeric() {
                let len = bytes[i..]
                    .iter()
                    .position(|b| !b.is_ascii_alphanumeric())
                    .unwrap_or(bytes.len() - i);
                (i + len, false, true)
            } else {
                (i + 1, false, false)
            }
        } else {
            // `i` is a character boundary: every step ends on one.
            let c = text[i..].chars().next().unwrap_or('\u{fffd}');
            let cjk = is_cjk(c);
            (i + c.len_utf8(), cjk, !cjk && c.is_alphanumeric())
        };
        current = next_run(&mut out, current, (i, end), kind_cjk, is_word);
        i = end;
    }
    out.extend(current);
    out
}

/// The run after the character at `span` (CJK or a word character, or neither) is added to
/// `current`: `current` grown, or a new run (`current` then ends, into `out`), or none.
fn next_run(
    out: &mut Vec<Run>,
    current: Option<Run>,
    (start, end): (usize, usize),
    cjk: bool,
    word: bool,
) -> Option<Run> {
    match (current, cjk, word) {
        (Some(Run::Cjk(s, _)), true, _) => Some(Run::Cjk(s, end)),
        (Some(Run::Word(s, _)), _, true) => Some(Run::Word(s, end)),
        (prev, true, _) => {
            out.extend(prev);
            Some(Run::Cjk(start, end))
        }
        (prev, _, true) => {
            out.extend(prev);
            Some(Run::Word(start, end))
        }
        (prev, _, _) => {
            out.extend(prev);
            None
        }
    }
}

/// Tokens most kept for reuse by a thread (a longer analysis frees its excess).
const SPARE_TOKENS: usize = 1 << 16;

thread_local! {
    /// The token buffer of this thread's last finished analysis.
    static SPARE: std::cell::RefCell<Vec<Token>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The tokens of one analysis, in a buffer taken over from the thread's last analysis: a slot
/// keeps its text's allocation, so analysing a page allocates nothing per token.
struct Tokens {
    slots: Vec<Token>,
    len: usize,
}

impl Tokens {
    fn new() -> Self {
        let slots = SPARE.with(|spare| std::mem::take(&mut *spare.borrow_mut()));
        Tokens { slots, len: 0 }
    }

    fn next_position(&self) -> usize {
        self.as_slice().last().map_or(0, |t| t.position + 1)
    }

    fn as_slice(&self) -> &[Token] {
        &self.slots[..self.len]
    }

    /// Adds `raw`, normalized, at the next position; nothing when it normalizes to nothing.
    fn push(&mut self, raw: &str, from: usize, to: usize) {
        let position = self.next_position();
        self.push_at(raw, from, to, position);
    }

    /// The slot after the last token, its text emptied (its allocation kept).
    fn free_slot(&mut self) -> &mut Token {
        if self.len == self.slots.len() {
            self.slots.push(Token::default());
        }
        let token = &mut self.slots[self.len];
        token.text.clear();
        token
    }

    /// Adds [`SECTION_MARK`] `skip` positions after the next one (at byte `at` of the text,
    /// spanning nothing).
    fn push_mark(&mut self, at: usize, skip: usize) {
        let position = self.next_position() + skip;
        let token = self.free_slot();
        token.text.push_str(SECTION_MARK);
        token.offset_from = at;
        token.offset_to = at;
        token.position = position;
        token.position_length = 1;
        self.len += 1;
    }

    /// Adds `raw`, normalized, at `position`; nothing when it normalizes to nothing.
    fn push_at(&mut self, raw: &str, from: usize, to: usize, position: usize) {
        let token = self.free_slot();
        normalize_into(raw, &mut token.text);
        if token.text.is_empty() {
            return;
        }
        token.offset_from = from;
        token.offset_to = to;
        token.position = position;
        token.position_length = 1;
        self.len += 1;
    }
}

impl Drop for Tokens {
    fn drop(&mut self) {
        let mut slots = std::mem::take(&mut self.slots);
        slots.truncate(SPARE_TOKENS);
        // `try_with`: a stream dropped while the thread's locals are torn down frees its buffer.
        let _ = SPARE.try_with(|spare| {
            let mut spare = spare.borrow_mut();
            if slots.len() > spare.len() {
                *spare = slots;
            }
        });
    }
}

/// What a `kb_text` token span is: a word, a CJK character, or the CJK bigram that the
/// character before it starts (at that character's position).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    Word,
    Char,
    Bigram,
}

/// The byte spans of the `kb_text` tokens of `text`, in token order, before normalization
/// (a token's text is its span normalized and filtered, see [`SpanAnalyzer`]).
pub fn text_token_spans(text: &str, mut f: impl FnMut(usize, usize, SpanKind)) {
    for run in runs(text) {
        match run {
            Run::Word(s, e) => f(s, e, SpanKind::Word),
            Run::Cjk(s, e) => {
                // Each character, and the bigram it starts, at one position: unigrams give
                // recall on single-character words, bigrams precision; consecutive bigrams
                // still make an exact phrase.
                let mut chars = text[s..e].char_indices().peekable();
                while let Some((offset, c)) = chars.next() {
                    let from = s + offset;
                    f(from, from + c.len_utf8(), SpanKind::Char);
                    if let Some(&(next_offset, next)) = chars.peek() {
                        f(from, s + next_offset + next.len_utf8(), SpanKind::Bigram);
                    }
                }
            }
        }
    }
}

fn text_tokens(text: &str) -> Tokens {
    let mut tokens = Tokens::new();
    push_text_tokens(&mut tokens, text, 0);
    tokens
}

/// Adds the `kb_text` tokens of `text` (which starts at byte `base` of the analysed text).
fn push_text_tokens(tokens: &mut Tokens, text: &str, base: usize) {
    let mut char_position = 0;
    text_token_spans(text, |from, to, kind| {
        let (raw, from, to) = (&text[from..to], base + from, base + to);
        match kind {
            SpanKind::Word => tokens.push(raw, from, to),
            SpanKind::Char => {
                char_position = tokens.next_position();
                tokens.push_at(raw, from, to, char_position);
            }
            SpanKind::Bigram => tokens.push_at(raw, from, to, char_position),
        }
    });
}

/// The `kb_body` tokens of a page's body text: `kb_text`'s, and after each section
/// ([`crate::markdown::sections`]) of a page of two or more, [`SECTION_MARK`]. The marks'
/// positions are the sections' bounds, and a mark stands as many positions after the one
/// before it as its section has tokens (a CJK character and the bigram it starts share a
/// position, so the mark skips one per bigram): the passage lane reads each section's place and
/// length from the index (`index::passages`), and a section costs the index one position, not
/// a document.
fn body_tokens(text: &str) -> Tokens {
    let sections = crate::markdown::sections(text);
    if sections.len() < 2 {
        return text_tokens(text);
    }
    let mut tokens = Tokens::new();
    for range in sections {
        let (first, start) = (tokens.len, tokens.next_position());
        push_text_tokens(&mut tokens, &text[range.clone()], range.start);
        // The tokens the index keeps (`RemoveLongFilter` drops the longer ones).
        let kept = tokens.as_slice()[first..]
            .iter()
            .filter(|t| t.text.len() < MAX_TOKEN_BYTES)
            .count();
        // (A section with more dropped tokens than bigrams counts the dropped ones too.)
        let spanned = tokens.next_position() - start;
        tokens.push_mark(range.end, kept.saturating_sub(spanned));
    }
    tokens
}

fn word_tokens(text: &str, segmenter: &Jieba) -> Tokens {
    let mut tokens = Tokens::new();
    if !has_cjk(text) {
        return tokens;
    }
    for run in runs(text) {
        match run {
            Run::Word(..) => {}
            Run::Cjk(s, e) => {
                let run_text = &text[s..e];
                for word in segmenter.cut_for_search(run_text, false) {
                    let mut chars = word.word.chars();
                    let single_han =
                        matches!((chars.next(), chars.next()), (Some(c), None) if is_han(c));
                    if single_han {
                        continue;
                    }
                    tokens.push(word.word, s + word.byte_start, s + word.byte_end);
                }
            }
        }
    }
    tokens
}

/// What a [`KbTokenizer`] makes of a text.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Analysis {
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
    analysis: Analysis,
    /// The segmenter of the words (`None`: jieba's whole dictionary).
    segmenter: Option<Arc<Jieba>>,
}

pub struct VecTokenStream {
    tokens: Tokens,
    index: usize,
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
fn with_text_filters<T: Tokenizer>(tokenizer: T) -> TextAnalyzer {
    TextAnalyzer::builder(tokenizer)
        .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES))
        .filter(CachedStemmer)
        .build()
}

/// The English Snowball stemmer (frostem, as tantivy's `Stemmer` applies it), remembering the
/// stems of the words it saw on this thread: words repeat (Zipf), and a lookup costs a fraction
/// of stemming. Stemming is a pure function of the word, so the tokens are the same.
#[derive(Clone, Copy)]
struct CachedStemmer;

/// Words whose stems a thread remembers; the memory is dropped when it grows past this.
const STEM_CACHE_WORDS: usize = 200_000;

thread_local! {
    static STEMS: std::cell::RefCell<rustc_hash::FxHashMap<String, String>> =
        std::cell::RefCell::new(rustc_hash::FxHashMap::default());
}

fn stem_into(word: &mut String) {
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
struct CachedStemmerFilter<T> {
    inner: T,
}

impl<T: Tokenizer> Tokenizer for CachedStemmerFilter<T> {
    type TokenStream<'a> = CachedStemmerStream<T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        CachedStemmerStream {
            tail: self.inner.token_stream(text),
        }
    }
}

struct CachedStemmerStream<T> {
    tail: T,
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

/// A tokenizer that makes one token of its whole (normalized) input, none of an input that
/// normalizes to nothing.
#[derive(Clone, Copy)]
struct WholeTokenizer;

impl Tokenizer for WholeTokenizer {
    type TokenStream<'a> = VecTokenStream;
    fn token_stream<'a>(&'a mut self, text: &'a str) -> VecTokenStream {
        let mut tokens = Tokens::new();
        tokens.push(text, 0, text.len());
        VecTokenStream { tokens, index: 0 }
    }
}

/// The `kb_text` term of one token span (from [`text_token_spans`]): the span normalized, then
/// through the analyzer's filters, exactly as the analyzer makes it; `None` when the analyzer
/// drops the token. With it a caller can analyse each distinct span once.
///
/// The terms of short ASCII words are remembered (up to [`WORD_CACHE_ENTRIES`], then forgotten
/// all at once): texts share their words, and stemming one costs far more than a lookup. Other
/// spans (CJK characters and bigrams, mostly) are too many and too varied to be worth it.
pub struct SpanAnalyzer {
    analyzer: TextAnalyzer,
    /// hashbrown's for `entry_ref`: a remembered word is found with one lookup, and a new one
    /// stored without a second (std's map needs `contains_key`, then `get`: two hashes and two
    /// comparisons of each word of each excerpt).
    words: hashbrown::HashMap<Box<str>, Option<Box<str>>, rustc_hash::FxBuildHasher>,
}

/// ASCII words a [`SpanAnalyzer`] remembers at most.
pub const WORD_CACHE_ENTRIES: usize = 1 << 16;
/// Longest ASCII word (bytes) whose term is remembered.
const CACHED_WORD_BYTES: usize = 24;

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

/// The `kb_words` analyzer.
pub fn words_analyzer() -> TextAnalyzer {
    words_analyzer_with(None)
}

/// The `kb_words` analyzer segmenting with `segmenter` (`None`: jieba's whole dictionary).
fn words_analyzer_with(segmenter: Option<Arc<Jieba>>) -> TextAnalyzer {
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

/// Question words and particles of Chinese queries. Answer passages do not hold them, so query
/// bigrams that overlap one (as jieba segments the query) only add noise.
const QUERY_STOP_WORDS: [&str; 22] = [
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
const ENGLISH_QUERY_STOP_WORDS: [&str; 84] = [
    "a", "about", "all", "am", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by",
    "can", "could", "did", "do", "does", "doing", "for", "from", "had", "has", "have", "having",
    "he", "her", "here", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "just",
    "me", "might", "my", "myself", "of", "on", "or", "our", "ours", "please", "she", "should",
    "so", "some", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this",
    "those", "to", "us", "was", "we", "were", "what", "when", "where", "which", "who", "whom",
    "why", "will", "with", "would", "you", "your", "yours", "i'm",
];

/// Whether `word` (a query's Latin word as written) is an English question or function word.
fn is_english_stop_word(word: &str) -> bool {
    word.len() <= 8 && ENGLISH_QUERY_STOP_WORDS.contains(&word.to_ascii_lowercase().as_str())
}

/// The `kb_text` terms of a query: like [`terms`], without English question and function words
/// and without the CJK bigrams that overlap a question word or particle (an all-stop-word query
/// keeps its terms).
pub fn query_terms(text: &str) -> Vec<String> {
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
    if kept.is_empty() {
        all
    } else {
        kept
    }
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
const NON_CJK_TERM_WEIGHT: f32 = 3.0;

/// English words that frame a question without naming its subject: "Why do I *get* a
/// warning", "Is there a *way* to", "I *want* to", "*Tell* me". Unlike the stop words above
/// they can be the subject ("the way pages are split"), so a query keeps them, at
/// [`QUESTION_FRAME_WEIGHT`]. At full weight a small knowledge base's IDF makes them a
/// question's rarest words (`get` is on one of markdownlint's 60 pages) and ranks the page
/// that happens to hold them. "make" and "instead" were tried too and left out: they raised the
/// lexical figures but cost stylelint-docs and vue-docs with the semantic lanes on.
const QUESTION_FRAME_WORDS: [&str; 18] = [
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
const QUESTION_FRAME_WEIGHT: f32 = 0.1;

/// Whether `term` (an analysed query term: lowercased and stemmed) is a question-framing word.
fn is_question_frame_term(term: &str) -> bool {
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

/// The query weight of each of `terms` (from [`query_terms`]): 1, [`NON_CJK_TERM_WEIGHT`] for
/// a non-CJK term of a query that also has CJK terms, times [`QUESTION_FRAME_WEIGHT`] for a
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

/// True when the text has any CJK character (the words lane only adds value then).
pub fn has_cjk(text: &str) -> bool {
    !text.is_ascii() && text.chars().any(is_cjk)
}

pub mod glossary;

#[cfg(test)]
mod tests;
