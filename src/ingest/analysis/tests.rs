//! Unit tests of the analyzers, the dictionary and the query terms.

use std::sync::Arc;

use tantivy::tokenizer::{RemoveLongFilter, TextAnalyzer};
use unicode_normalization::UnicodeNormalization;

use super::analyzers::{words_analyzer_with, Analysis};
use super::dictionary::{
    dictionary_lines, dictionary_within, jieba, FILLER_WORD, JIEBA_DICT, JIEBA_DICT_TOTAL,
};
use super::query::{NON_CJK_TERM_WEIGHT, QUESTION_FRAME_WEIGHT};
use super::runs::next_run;
use super::spans::text_tokens;
use super::*;
use crate::text::is_cjk;

/// A question's own words (question words, pronouns, auxiliaries) are no query terms; a
/// question of nothing else keeps them, and a word that only contains one stays.
#[test]
fn english_question_words_are_no_query_terms() {
    assert_eq!(
        query_terms("How do I cap how many instances KeepAlive holds?"),
        vec!["cap", "mani", "instanc", "keepal", "hold"]
    );
    assert_eq!(query_terms("What is it?"), vec!["what", "is", "it"]);
    assert_eq!(query_terms("howto whatever"), vec!["howto", "whatev"]);
    // In a Chinese question too.
    assert!(!query_terms("How 配置 Redis").contains(&"how".to_string()));
}

/// The cached stemmer gives tantivy's English stemmer's tokens, also when a word comes back.
#[test]
fn cached_stemming_is_tantivy_stemming() {
    let text = "Running runners ran; the generously generous generation's studies studied \
                ponies caresses CONSIGNMENT consigned 数据库 running runners ΟΔΟΣ Ελληνικά \
                東京大学 2023 ١٢٣ naïve cafés";
    let mut ours = text_analyzer();
    let mut theirs = TextAnalyzer::builder(KbTokenizer {
        analysis: Analysis::Text,
        segmenter: None,
    })
    .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES))
    .filter(tantivy::tokenizer::Stemmer::new(
        tantivy::tokenizer::Language::English,
    ))
    .build();
    let tokens = |a: &mut TextAnalyzer| {
        let mut out = Vec::new();
        let mut stream = a.token_stream(text);
        while stream.advance() {
            let t = stream.token();
            out.push((t.text.clone(), t.position, t.offset_from, t.offset_to));
        }
        out
    };
    for _ in 0..2 {
        assert_eq!(tokens(&mut ours), tokens(&mut theirs));
    }
}

/// The fast paths of `normalize_token` give what NFKC + per-character lower-casing gives.
#[test]
fn normalize_token_fast_paths_agree_with_the_full_path() {
    let full = |raw: &str| -> String { raw.nfkc().flat_map(char::to_lowercase).collect() };
    for raw in [
        "Hello",
        "ABC123",
        "naïve",
        "ÉCOLE",
        "ΟΔΟΣ",
        "Straße",
        "İstanbul",
        "ﬁle",
        "Ｆｕｌｌ",
        "①②",
        "e\u{301}",
        "Å",
        "ǅ",
        "ᾼ",
        "数据",
        "㐀䶿一鿿",
        "\u{F900}\u{2F00}\u{2E80}",
        "数\u{301}",
        "ｶﾀｶﾅ",
        "x\u{0}y",
        "",
    ] {
        assert_eq!(normalize_token(raw), full(raw), "{raw:?}");
    }
}

#[test]
fn mixed_runs_split_and_bigram() {
    let mut a = text_analyzer();
    assert_eq!(terms(&mut a, "OKF规范"), vec!["okf", "规", "规范", "范"]);
    assert_eq!(
        terms(&mut a, "知识库的续费"),
        vec![
            "知", "知识", "识", "识库", "库", "库的", "的", "的续", "续", "续费", "费"
        ]
    );
    assert_eq!(terms(&mut a, "Running ＡＰＩ v2"), vec!["run", "api", "v2"]);
}

/// The byte-stepping `runs` splits as a character-by-character classification does.
#[test]
fn runs_split_as_characters_classify() {
    fn by_chars(text: &str) -> Vec<Run> {
        let mut out = Vec::new();
        let mut current: Option<Run> = None;
        for (i, c) in text.char_indices() {
            let cjk = is_cjk(c);
            let word = !cjk && c.is_alphanumeric();
            current = next_run(&mut out, current, (i, i + c.len_utf8()), cjk, word);
        }
        out.extend(current);
        out
    }
    for text in [
        "",
        "a",
        "café au lait, naïve-ish x² 3½ ΟΔΟΣ e\u{301}te",
        "OKF规范v2 知识库的续费 (2024年) API_key=abc123;",
        "ＡＰＩ ﬁne — “quoted” 🙂 emoji🙂x тест1 日本語かなカナ한국어",
        "trailing ascii run123",
        "中",
        " \t\n",
    ] {
        assert_eq!(runs(text), by_chars(text), "{text:?}");
    }
}

#[test]
fn the_dictionary_copy_is_jiebas_and_sorted() {
    let mut total = 0u64;
    let mut previous: Option<&str> = None;
    let mut lines = 0;
    for line in JIEBA_DICT.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        assert_eq!(fields.len(), 3, "line {line:?}");
        let word = fields[0];
        assert!(
            jieba().has_word(word),
            "{word} is not in jieba's dictionary"
        );
        assert!(
            previous.is_none_or(|p| p < word),
            "{previous:?} before {word}"
        );
        previous = Some(word);
        total += fields[1].parse::<u64>().unwrap();
        lines += 1;
    }
    assert_eq!(lines, 349_045);
    assert_eq!(total, JIEBA_DICT_TOTAL);
    assert!(!JIEBA_DICT.contains(FILLER_WORD));
    // The binary search finds every line of a first character, and only those.
    for first in ['一', '中', 'A', '1', '龟', '齐'] {
        let expected: Vec<&str> = JIEBA_DICT
            .lines()
            .filter(|l| l.starts_with(first))
            .collect();
        assert!(!expected.is_empty());
        assert_eq!(dictionary_lines(first).collect::<Vec<_>>(), expected);
    }
    assert_eq!(dictionary_lines('\u{fdd0}').count(), 0);
    assert_eq!(dictionary_lines('\0').count(), 0);
}

/// Chinese texts for the segmenter tests: the fixture's Chinese pages, and sentences of
/// random dictionary words and characters (a fixed seed).
fn chinese_texts() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/focowiki-docs");
    let mut texts: Vec<String> = walkdir::WalkDir::new(root.join("pages/zh-CN"))
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "md"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert!(texts.len() >= 5, "the fixture's Chinese pages are missing");
    let words: Vec<&str> = JIEBA_DICT
        .lines()
        .filter_map(|l| l.split(' ').next())
        .collect();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    for _ in 0..400 {
        let mut text = String::new();
        for _ in 0..1 + next(12) {
            match next(4) {
                0 => text.push(char::from_u32(0x4e00 + next(0x5200) as u32).unwrap()),
                1 => text.push_str(["的", "了", "是", "，", " ", "a"][next(6)]),
                _ => text.push_str(words[next(words.len())]),
            }
        }
        texts.push(text);
    }
    texts
}

#[test]
fn a_dictionary_of_the_words_inside_a_text_segments_it_as_the_whole_one() {
    let whole = jieba();
    for text in chinese_texts() {
        let own = dictionary_within(&text).expect("a dictionary");
        let mut parts = vec![text.as_str()];
        parts.extend(runs(&text).into_iter().filter_map(|run| match run {
            Run::Cjk(s, e) => Some(&text[s..e]),
            Run::Word(..) => None,
        }));
        for part in parts {
            assert_eq!(own.cut(part, false), whole.cut(part, false), "{part:?}");
            assert_eq!(
                own.cut_for_search(part, false),
                whole.cut_for_search(part, false),
                "{part:?} (search mode)"
            );
        }
        assert_eq!(
            terms(&mut words_analyzer_with(Some(Arc::new(own))), &text),
            terms(&mut words_analyzer(), &text),
            "words of {text:?}"
        );
    }
    // A text holding the filler word gets the whole dictionary.
    assert!(dictionary_within("知识\u{fdd0}库").is_none());
}

/// `kb_body` is `kb_text` with a mark after each section of a page of two or more: the
/// same terms, in order, and each mark as many positions after the previous section's end
/// as its section has tokens (a CJK bigram shares its character's position).
#[test]
fn body_marks_end_each_section_and_count_its_tokens() {
    let brk = crate::ingest::markdown::SECTION_BREAK;
    let filler = "lorem ".repeat(80);
    let long = "x".repeat(MAX_TOKEN_BYTES + 1);
    let body = format!(
        "Renewal notices {filler}{brk}## 续费通知 {long} 知识库 {filler}{brk}short{brk}data {filler}"
    );
    let tokens = |mut a: TextAnalyzer| {
        let mut out = Vec::new();
        let mut stream = a.token_stream(&body);
        while stream.advance() {
            let t = stream.token();
            out.push((t.text.clone(), t.position));
        }
        out
    };
    let text = tokens(text_analyzer());
    let marked = tokens(body_analyzer());
    let kept: Vec<&String> = marked
        .iter()
        .map(|(t, _)| t)
        .filter(|t| *t != SECTION_MARK)
        .collect();
    assert_eq!(kept, text.iter().map(|(t, _)| t).collect::<Vec<_>>());
    // Three sections ("short" joins the one after it), each ended by a mark.
    let marks: Vec<usize> = marked
        .iter()
        .filter(|(t, _)| t == SECTION_MARK)
        .map(|(_, p)| *p)
        .collect();
    assert_eq!(marks.len(), crate::ingest::markdown::sections(&body).len());
    assert_eq!(marks.len(), 3);
    assert_eq!(marked.last().map(|(t, _)| t.as_str()), Some(SECTION_MARK));
    let mut start = 0;
    for (i, &end) in marks.iter().enumerate() {
        let in_section = marked
            .iter()
            .filter(|(t, p)| t != SECTION_MARK && (start..end).contains(p))
            .count();
        assert_eq!(end - start, in_section, "section {i}");
        start = end + 1;
    }
    // The second section's Chinese: its tokens outnumber its positions.
    let chinese = marked
        .iter()
        .filter(|(_, p)| (marks[0]..marks[1]).contains(p))
        .count();
    let positions: std::collections::BTreeSet<usize> = marked
        .iter()
        .filter(|(_, p)| (marks[0]..marks[1]).contains(p))
        .map(|(_, p)| *p)
        .collect();
    assert!(chinese > positions.len());
    // A page of one section has no mark.
    let mut a = body_analyzer();
    assert_eq!(
        terms(&mut a, "one section only"),
        terms(&mut text_analyzer(), "one section only")
    );
    // No query has the mark.
    assert!(!query_terms(&body).iter().any(|t| t == SECTION_MARK));
}

#[test]
fn words_use_the_dictionary() {
    let mut a = words_analyzer();
    let t = terms(&mut a, "知识库的续费通知");
    assert!(t.contains(&"续费".to_string()), "{t:?}");
    assert!(
        t.contains(&"知识库".to_string()) || t.contains(&"知识".to_string()),
        "{t:?}"
    );
    assert!(!t.contains(&"的".to_string()));
    // Latin words and numbers are `kb_text`'s alone; a text without CJK has no words.
    assert_eq!(terms(&mut a, "OKF规范 v2 2024年"), vec!["规范"]);
    assert!(terms(&mut a, "Running API v2").is_empty());
}

#[test]
fn query_terms_drop_question_word_bigrams() {
    let t = query_terms("谁在第 50 届超级碗上演唱了国歌？");
    assert!(t.contains(&"国歌".to_string()), "{t:?}");
    assert!(t.contains(&"超级".to_string()), "{t:?}");
    assert!(
        !t.iter().any(|x| x.contains('谁') || x.contains('了')),
        "{t:?}"
    );
    assert!(query_terms("目的是什么").contains(&"目的".to_string()));
    assert_eq!(query_terms("什么"), vec!["什", "什么", "么"]);
}

#[test]
fn non_cjk_terms_of_a_chinese_query_weigh_more() {
    let terms = query_terms("Internet2与谁达成合作");
    let weights = query_term_weights(&terms);
    let of = |t: &str| weights[terms.iter().position(|x| x == t).unwrap()];
    assert_eq!(of("internet2"), NON_CJK_TERM_WEIGHT);
    assert_eq!(of("合作"), 1.0);
    // An all-Latin query keeps plain weights.
    let latin = query_terms("internet partners");
    assert!(query_term_weights(&latin).iter().all(|&w| w == 1.0));
}

#[test]
fn question_framing_words_weigh_little_and_stay_in_the_query() {
    let terms = query_terms("Why do I get a warning about trailing spaces?");
    let weights = query_term_weights(&terms);
    let of = |t: &str| weights[terms.iter().position(|x| x == t).unwrap()];
    assert_eq!(of("get"), QUESTION_FRAME_WEIGHT);
    assert_eq!(of("warn"), 1.0);
    assert_eq!(of("trail"), 1.0);
    // Inflected forms are the same stem; a question made only of them keeps them.
    let only = query_terms("possibly happening");
    assert_eq!(only, vec!["possibl", "happen"]);
    assert!(query_term_weights(&only)
        .iter()
        .all(|&w| w == QUESTION_FRAME_WEIGHT));
    // In a Chinese question the Latin weight and the framing weight multiply.
    let mixed = query_terms("怎么 get 配置");
    let weights = query_term_weights(&mixed);
    let get = mixed.iter().position(|x| x == "get").unwrap();
    assert_eq!(weights[get], NON_CJK_TERM_WEIGHT * QUESTION_FRAME_WEIGHT);
}

#[test]
fn a_character_and_its_bigram_share_a_position() {
    let tokens = text_tokens("续费通知");
    let tokens = tokens.as_slice();
    let at = |p: usize| -> Vec<&str> {
        tokens
            .iter()
            .filter(|t| t.position == p)
            .map(|t| t.text.as_str())
            .collect()
    };
    assert_eq!(at(0), vec!["续", "续费"]);
    assert_eq!(at(3), vec!["知"]);
    let words = text_tokens("a 续费 b");
    let words = words.as_slice();
    assert_eq!(
        words.last().unwrap().position,
        words[words.len() - 2].position + 1
    );
}

#[test]
fn ascii_tokens_normalize_as_nfkc_lowercase() {
    for raw in ["Running", "API", "v2", "x", "MiXeD123", "ÀB", "ＡＰＩ"] {
        let slow: String = raw.nfkc().flat_map(char::to_lowercase).collect();
        assert_eq!(normalize_token(raw), slow, "{raw}");
    }
    for b in 0u8..128 {
        let raw = (b as char).to_string();
        let slow: String = raw.nfkc().flat_map(char::to_lowercase).collect();
        assert_eq!(normalize_token(&raw), slow, "{b}");
    }
}

#[test]
fn quick_checked_tokens_normalize_as_nfkc_lowercase() {
    let slow = |raw: &str| -> String { raw.nfkc().flat_map(char::to_lowercase).collect() };
    // Every character alone, then after a letter and before a combining mark.
    for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
        for raw in [c.to_string(), format!("a{c}"), format!("{c}\u{301}")] {
            assert_eq!(normalize_token(&raw), slow(&raw), "{:?}", raw);
        }
    }
    for raw in [
        "续费通知",
        "ﾃｽﾄ",
        "한국어",
        "ﬁne",
        "Å",
        "ÀB",
        "e\u{301}\u{300}",
    ] {
        assert_eq!(normalize_token(raw), slow(raw), "{raw}");
    }
}

#[test]
fn spans_analysed_one_by_one_make_the_analyzer_tokens() {
    let long = "x".repeat(MAX_TOKEN_BYTES + 3);
    let texts = [
        "Running ＡＰＩ v2, the renewals; OKF规范 知识库的续费 — ﾃｽﾄ 한국어 ﬁne",
        "a 续 b 续费通知 c",
        long.as_str(),
        "",
    ];
    // Twice over: the second time the words' terms are remembered ones.
    let mut spans = SpanAnalyzer::default();
    for text in texts.iter().chain(&texts) {
        let mut analyzer = text_analyzer();
        let mut expected = Vec::new();
        let mut stream = analyzer.token_stream(text);
        while stream.advance() {
            let t = stream.token();
            expected.push((t.offset_from, t.offset_to, t.text.clone()));
        }
        let mut got = Vec::new();
        text_token_spans(text, |from, to, _| {
            if let Some(term) = spans.term(&text[from..to]) {
                got.push((from, to, term.into_owned()));
            }
        });
        assert_eq!(got, expected, "{text}");
    }
}

#[test]
fn offsets_point_into_the_original_text() {
    let text = "前言 OKF规范";
    let tokens = text_tokens(text);
    for t in tokens.as_slice() {
        assert!(text.get(t.offset_from..t.offset_to).is_some());
    }
}
