//! The token spans of each analysis (`kb_text`, `kb_body` with its section marks, `kb_words`),
//! as byte ranges of the text.

use jieba_rs::Jieba;

use crate::text::is_han;

use super::runs::{runs, Run};
use super::tokens::Tokens;
use super::{has_cjk, MAX_TOKEN_BYTES};

/// What a `kb_text` token span is: a word, a CJK character, or the CJK bigram that the
/// character before it starts (at that character's position).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    Word,
    Char,
    Bigram,
}

/// The byte spans of the `kb_text` tokens of `text`, in token order, before normalization
/// (a token's text is its span normalized and filtered, see [`super::SpanAnalyzer`]).
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

pub(super) fn text_tokens(text: &str) -> Tokens {
    let mut tokens = Tokens::new();
    push_text_tokens(&mut tokens, text, 0);
    tokens
}

/// Adds the `kb_text` tokens of `text` (which starts at byte `base` of the analysed text).
pub(super) fn push_text_tokens(tokens: &mut Tokens, text: &str, base: usize) {
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
/// ([`crate::ingest::markdown::sections`]) of a page of two or more, [`SECTION_MARK`]. The marks'
/// positions are the sections' bounds, and a mark stands as many positions after the one
/// before it as its section has tokens (a CJK character and the bigram it starts share a
/// position, so the mark skips one per bigram): the passage lane reads each section's place and
/// length from the index (`search::lanes::passage`), and a section costs the index one position, not
/// a document.
pub(super) fn body_tokens(text: &str) -> Tokens {
    let sections = crate::ingest::markdown::sections(text);
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

pub(super) fn word_tokens(text: &str, segmenter: &Jieba) -> Tokens {
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
