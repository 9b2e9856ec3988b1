//! Words a question borrows from the other language: a Chinese question asked of English pages
//! ("怎么禁止在声明里使用 !important") shares with its answer only the code it quotes, and
//! without a semantic model nothing else can match. The glossary (`glossary.txt`, written for
//! kbtools: some six hundred words of software documentation, one plain sense each) gives each
//! Chinese word its English words; `borrowed` finds them in a question by the longest entry
//! at each place of its CJK text, so that a word inside a longer one (`行` in `运行`) is not
//! read on its own.
//!
//! Only Chinese borrows English. The other way (an English question borrowing the Chinese
//! words of its words) lifted a mixed-language folder's English questions on Chinese pages
//! (`xquad-enzh`, lexical 0.5309 → 0.5592) but cost the bilingual docs, whose English
//! questions then ranked Chinese pages above English ones (`focowiki-docs` 0.8446 → 0.8037,
//! `vue-docs` 0.7872 → 0.7688).

use std::collections::HashMap;
use std::sync::OnceLock;

const GLOSSARY: &str = include_str!("glossary.txt");

/// The longest entry, in characters.
const LONGEST: usize = 8;

/// Chinese word → its English words (each a word or a phrase).
fn entries() -> &'static HashMap<&'static str, Vec<&'static str>> {
    static ENTRIES: OnceLock<HashMap<&'static str, Vec<&'static str>>> = OnceLock::new();
    ENTRIES.get_or_init(|| {
        GLOSSARY
            .lines()
            .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
            .filter_map(|line| line.split_once('\t'))
            .map(|(zh, en)| {
                let english = en.split(',').map(str::trim).filter(|w| !w.is_empty());
                (zh.trim(), english.collect())
            })
            .collect()
    })
}

/// The English words of each glossary word in `text`'s CJK runs, in order: one list of
/// alternatives per word found, read longest entry first at each place.
pub(crate) fn borrowed(text: &str) -> Vec<&'static [&'static str]> {
    let entries = entries();
    let mut found = Vec::new();
    for run in super::runs(text) {
        let super::Run::Cjk(start, end) = run else {
            continue;
        };
        let chars: Vec<(usize, char)> = text[start..end].char_indices().collect();
        let mut i = 0;
        while i < chars.len() {
            let longest = LONGEST.min(chars.len() - i);
            let hit = (1..=longest).rev().find_map(|n| {
                let from = start + chars[i].0;
                let to = chars.get(i + n).map_or(end, |&(at, _)| start + at);
                entries.get(&text[from..to]).map(|english| (n, english))
            });
            match hit {
                Some((n, english)) => {
                    found.push(english.as_slice());
                    i += n;
                }
                None => i += 1,
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::{borrowed, entries, LONGEST};

    #[test]
    fn every_entry_is_a_chinese_word_with_english_words() {
        let entries = entries();
        assert!(entries.len() > 500, "{} entries", entries.len());
        for (zh, english) in entries {
            assert!(zh.chars().all(crate::text::is_cjk), "{zh:?}");
            assert!(zh.chars().count() <= LONGEST, "{zh:?}");
            assert!(!english.is_empty(), "{zh:?}");
            assert!(english.iter().all(|w| w.is_ascii()), "{zh:?}: {english:?}");
        }
    }

    #[test]
    fn a_question_borrows_its_longest_words() {
        let found = borrowed("怎么禁止在声明里使用 !important？");
        // `使用` ("use") is no entry: every page says it.
        assert_eq!(
            found,
            [&["disallow", "forbid"][..], &["declare", "declaration"]]
        );
        // `样式表` is one entry, not `样式` and then nothing.
        assert_eq!(borrowed("样式表的导入")[0], ["stylesheet"]);
        assert!(borrowed("Disallow empty comments").is_empty());
    }
}
