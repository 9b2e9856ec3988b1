//! Token normalization (NFKC, lower case) and the runs a text splits into: Latin words and
//! numbers, CJK runs.

use unicode_normalization::UnicodeNormalization;

use crate::text::is_cjk;

/// NFKC, then each character lower-cased (not `str::to_lowercase`, whose final sigma differs).
#[cfg(test)]
pub(super) fn normalize_token(raw: &str) -> String {
    let mut out = String::new();
    normalize_into(raw, &mut out);
    out
}

/// [`normalize_token`] of `raw`, appended to `out`.
pub(super) fn normalize_into(raw: &str, out: &mut String) {
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
pub(super) enum Run {
    Cjk(usize, usize),
    Word(usize, usize),
}

pub(super) fn runs(text: &str) -> Vec<Run> {
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
pub(super) fn next_run(
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
