//! Unicode normal forms and the keys made with them: the API's normalization of a query (NFKC,
//! trimmed, whitespace runs as one space), the exact-match key of paths and titles, the NFKC
//! quick check, NFC (with its shortcut for ASCII and CJK ideographs), whitespace collapsed.

use std::borrow::Cow;

use unicode_normalization::UnicodeNormalization;

use super::chars::is_normal_ideograph;

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

/// Collapses every whitespace run to one space and trims.
pub(crate) fn collapse_whitespace(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

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
