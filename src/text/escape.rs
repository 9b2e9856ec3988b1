//! Text made safe for where it goes: a URI component (JavaScript's `encodeURIComponent`, used
//! by `readActions`, and its decoding), XML character data, a terminal (control and bidi
//! characters as escapes).

use std::borrow::Cow;
use std::fmt::Write as _;

use super::chars::is_forbidden_path_char;

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
}
