//! The jieba dictionary, embedded in the binary: loaded whole at the first CJK text (or at
//! once, `load_dictionary`), or cut to the words a short CJK query can hold.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use jieba_rs::Jieba;

use super::has_cjk;

pub(super) static JIEBA: OnceLock<Jieba> = OnceLock::new();

pub(super) fn jieba() -> &'static Jieba {
    JIEBA.get_or_init(Jieba::new)
}

/// Loads the word segmenter's dictionary now (a tenth of a second), so that a caller can have
/// it loaded on another thread while it does other work.
pub fn load_dictionary() {
    jieba();
}

/// Set by [`load_dictionary_at_first_cjk_query`].
pub(super) static LOAD_AT_FIRST_CJK_QUERY: AtomicBool = AtomicBool::new(false);

/// For a long-running process (a server): the first query with CJK text has jieba's whole
/// dictionary loaded on another thread, for the queries after it (that query, and those until
/// the dictionary is in, segment with the words they hold, alike). A server that is never asked
/// in Chinese does not hold the dictionary's memory.
pub fn load_dictionary_at_first_cjk_query() {
    LOAD_AT_FIRST_CJK_QUERY.store(true, Ordering::Relaxed);
}

/// jieba's dictionary, as `Jieba::new` loads it (a copy: `src/ingest/analysis/SOURCE.txt`).
pub(super) const JIEBA_DICT: &str = include_str!("jieba-dict.txt");
/// The sum of [`JIEBA_DICT`]'s frequencies: jieba scores a word by its frequency over this.
pub(super) const JIEBA_DICT_TOTAL: u64 = 60_101_964;
/// A word no text given to jieba holds (a noncharacter; jieba sees CJK runs only, and a text
/// holding it gets the whole dictionary), carrying the frequencies of the words a
/// [`query_dictionary`] leaves out.
pub(super) const FILLER_WORD: &str = "\u{fdd0}";

/// The lines of [`JIEBA_DICT`] whose word starts with `first`: a binary search, the lines being
/// sorted by word.
pub(super) fn dictionary_lines(first: char) -> impl Iterator<Item = &'static str> {
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
pub(super) fn query_dictionary(text: &str) -> Option<Arc<Jieba>> {
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
pub(super) fn dictionary_within(text: &str) -> Option<Jieba> {
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
