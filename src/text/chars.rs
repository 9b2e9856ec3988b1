//! Characters by class (the controls the API rejects in paths, CJK ideographs and scripts) and
//! truncation at a character count.

/// The first `max_chars` characters of `s`.
pub fn truncate_chars(s: &str, max_chars: usize) -> &str {
    match s.char_indices().nth(max_chars) {
        Some((byte, _)) => &s[..byte],
        None => s,
    }
}

/// True for the control characters the API rejects in paths: C0, DEL, C1, and the bidi
/// controls U+202A–U+202E and U+2066–U+2069.
pub(crate) fn is_forbidden_path_char(c: char) -> bool {
    c.is_control()
        || ('\u{202A}'..='\u{202E}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

/// True for a CJK unified ideograph of the basic block or extension A (almost every character
/// of Chinese text): it has no decomposition, composes with nothing and has no case, so it is
/// its own form in every normalization.
pub(crate) fn is_normal_ideograph(c: char) -> bool {
    matches!(c, '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}')
}

/// True for a CJK ideograph (the `han` bucket of the bundle format's term routes).
pub(crate) fn is_han(c: char) -> bool {
    matches!(c as u32,
        0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x323AF)
}

/// True for characters that form CJK text runs for tokenization: Han, kana and hangul.
pub(crate) fn is_cjk(c: char) -> bool {
    is_han(c)
        || matches!(c as u32,
            0x3040..=0x30FF | 0x31F0..=0x31FF | 0xFF65..=0xFF9F | 0x1100..=0x11FF
            | 0x3130..=0x318F | 0xAC00..=0xD7AF)
}
