//! Small text utilities shared by ingest, tools and search: Unicode normalization, the
//! JavaScript `encodeURIComponent` used by `readActions`, and character-safe truncation.

use std::borrow::Cow;
use std::fmt::Write as _;
use unicode_normalization::UnicodeNormalization;

/// NFKC, trimmed, every whitespace run collapsed to one space (the API's query normalization).
pub(crate) fn normalize_query_text(raw: &str) -> String {
    // Text already in NFKC (ASCII always, almost every title and path) is left as it is.
    let nfkc: Cow<'_, str> = if is_nfkc(raw) {
        raw.into()
    } else {
        raw.nfkc().collect::<String>().into()
    };
    nfkc.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The exact-match key used by the exact-path and exact-title lanes: normalized and lower-cased.
pub(crate) fn exact_key(raw: &str) -> String {
    let key = normalize_query_text(raw).to_lowercase();
    // Lower-casing can leave characters that compose (`T` + U+0308 lower-cases to `t` + U+0308,
    // which NFKC writes as `ẗ`): normalize once more, so that every form of a text has one key.
    if is_nfkc(&key) {
        key
    } else {
        normalize_query_text(&key).to_lowercase()
    }
}

/// True when `s` is known to be in NFKC by the quick check (ASCII always is); false may also be
/// text that is, which only the full normalization tells.
pub(crate) fn is_nfkc(s: &str) -> bool {
    s.is_ascii()
        || unicode_normalization::is_nfkc_quick(s.chars())
            == unicode_normalization::IsNormalized::Yes
}

pub(crate) fn is_nfc(s: &str) -> bool {
    // ASCII and CJK unified ideographs (most non-ASCII text of these bundles' paths) neither
    // decompose nor compose with anything: text of them alone is in every normal form, without
    // the lookups of the full check.
    s.chars().all(|c| c.is_ascii() || is_normal_ideograph(c)) || unicode_normalization::is_nfc(s)
}

pub(crate) fn nfc(s: &str) -> String {
    s.nfc().collect()
}

/// What JavaScript's `encodeURIComponent` escapes: everything but `A–Z a–z 0–9 - _ . ! ~ * ' ( )`.
const URI_COMPONENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'!')
    .remove(b'~')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')');

/// JavaScript `encodeURIComponent`: the UTF-8 bytes of every other character as `%XX`
/// (upper-case hex).
pub fn encode_uri_component(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, URI_COMPONENT).to_string()
}

/// Decodes `%XX` escapes once; invalid escapes are kept as written. Returns `None` when the
/// decoded bytes are not UTF-8.
pub fn percent_decode_once(s: &str) -> Option<String> {
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .ok()
        .map(Cow::into_owned)
}

/// `text` as XML character data or an attribute value: markup characters escaped, and the
/// characters XML 1.0 cannot hold at all (C0 controls but tab, newline and return; U+FFFE,
/// U+FFFF) replaced by U+FFFD.
pub(crate) fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push('\u{fffd}'),
            '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// The first `max_chars` characters of `s`.
pub fn truncate_chars(s: &str, max_chars: usize) -> &str {
    match s.char_indices().nth(max_chars) {
        Some((byte, _)) => &s[..byte],
        None => s,
    }
}

/// Collapses every whitespace run to one space and trims.
pub(crate) fn collapse_whitespace(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `s` safe to show on a terminal: control characters (C0, newline and tab included; DEL; C1)
/// and the bidi controls become escapes (`\n`, `\t`, `\r`, else `\u{1b}`), so that a file
/// name or a message cannot move the cursor, retitle the window or reorder the line it is on.
pub(crate) fn terminal_safe(s: &str) -> Cow<'_, str> {
    escape_controls(s, false)
}

/// `terminal_safe` for text of several lines: its newlines are kept.
pub fn terminal_safe_lines(s: &str) -> Cow<'_, str> {
    escape_controls(s, true)
}

fn escape_controls(s: &str, keep_newlines: bool) -> Cow<'_, str> {
    let escaped = |c: char| is_forbidden_path_char(c) && !(keep_newlines && c == '\n');
    if !s.chars().any(escaped) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if !escaped(c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            other => {
                let _ = write!(out, "\\u{{{:x}}}", other as u32);
            }
        }
    }
    Cow::Owned(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_escapes_controls_and_bidi_and_keeps_the_rest() {
        assert_eq!(terminal_safe("docs/a.md"), "docs/a.md");
        assert!(matches!(terminal_safe("中文 é"), Cow::Borrowed(_)));
        assert_eq!(
            terminal_safe("x\u{1b}]0;OWNED\u{7}.md"),
            "x\\u{1b}]0;OWNED\\u{7}.md"
        );
        assert_eq!(terminal_safe("a\nb\tc\r"), "a\\nb\\tc\\r");
        assert_eq!(
            terminal_safe("\u{202e}gpj.exe \u{9b}"),
            "\\u{202e}gpj.exe \\u{9b}"
        );
        assert_eq!(terminal_safe_lines("one\ntwo\u{1b}"), "one\ntwo\\u{1b}");
    }

    #[test]
    fn xml_text_is_escaped_and_stays_xml() {
        assert_eq!(
            xml_escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&apos;"
        );
        assert_eq!(xml_escape("a\u{1}b\u{fffe}"), "a\u{fffd}b\u{fffd}");
    }

    #[test]
    fn is_nfc_agrees_with_unicode_normalization() {
        for s in [
            "",
            "plain ascii/path.md",
            "é",
            "e\u{301}",
            "한국어",
            "\u{1100}\u{1161}",
            "Å",
            "A\u{30a}",
            // The shortcut for ASCII and CJK unified ideographs, and what it must leave to the
            // full check: Hangul, combining marks, compatibility ideographs.
            "pages/睡觉资金/absence-subset.md",
            "pages/\u{3400}\u{4DBF}\u{4E00}\u{9FFF}.md",
            "pages/中\u{301}.md",
            "pages/\u{F900}.md",
            "pages/\u{2F800}.md",
        ] {
            assert_eq!(is_nfc(s), unicode_normalization::is_nfc(s), "{s:?}");
        }
        assert!(!is_nfc("e\u{301}"));
    }

    #[test]
    fn encode_uri_component_matches_javascript() {
        assert_eq!(encode_uri_component("pages/guide.md"), "pages%2Fguide.md");
        assert_eq!(encode_uri_component("a b(c)!~*'"), "a%20b(c)!~*'");
        assert_eq!(encode_uri_component("指南"), "%E6%8C%87%E5%8D%97");
    }

    #[test]
    fn percent_decode_keeps_bad_escapes() {
        assert_eq!(percent_decode_once("%2e%2E/x").as_deref(), Some("../x"));
        assert_eq!(percent_decode_once("%zz%4").as_deref(), Some("%zz%4"));
        assert_eq!(percent_decode_once("a%").as_deref(), Some("a%"));
    }

    /// Found by the `query` fuzz target: `T` + U+0308 lower-cases to a sequence NFKC composes.
    #[test]
    fn exact_keys_are_one_form_whatever_the_case() {
        assert_eq!(exact_key("T\u{308}itle"), "\u{1e97}itle");
        assert_eq!(exact_key("\u{1e97}itle"), "\u{1e97}itle");
        assert_eq!(exact_key(&exact_key("T\u{308}")), exact_key("T\u{308}"));
        assert_eq!(exact_key("Guide.MD"), "guide.md");
    }

    #[test]
    fn query_normalization_is_nfkc_and_collapses_space() {
        assert_eq!(normalize_query_text("  ＡＰＩ \t v2  "), "API v2");
        // The quick check's way and NFKC's agree.
        for raw in [
            "知识库 续费",
            "e\u{301}",
            "ﬁle ①",
            "Å",
            "ｶﾀｶﾅ",
            "plain ascii",
            "ḱ\u{323}",
        ] {
            let full: String = raw.nfkc().collect();
            let full = full.split_whitespace().collect::<Vec<_>>().join(" ");
            assert_eq!(normalize_query_text(raw), full, "{raw:?}");
        }
    }
}
