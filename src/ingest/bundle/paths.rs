//! Bundle-logical paths: the canonical-form checks that make paths a security boundary, and the
//! classification of every path a bundle may hold (docs/contracts.md#bad-input).

use crate::text::{is_forbidden_path_char, is_nfc, percent_decode_once};

/// Longest accepted path, in UTF-16 units (the API's limit).
pub(crate) const MAX_PATH_UNITS: usize = 2048;
/// Longest accepted path segment, in code points.
pub(crate) const MAX_SEGMENT_CHARS: usize = 1000;

/// Why a path is not in canonical form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PathProblem {
    Empty,
    TooLong,
    LeadingSlash,
    Backslash,
    DriveLetter,
    ControlCharacter,
    NotNfc,
    SurroundingWhitespace,
    EmptySegment,
    DotSegment,
    SegmentTooLong,
    EncodedTraversal,
}

impl std::fmt::Display for PathProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = match self {
            PathProblem::Empty => "the path is empty",
            PathProblem::TooLong => "the path is longer than 2,048 characters",
            PathProblem::LeadingSlash => "the path starts with '/'",
            PathProblem::Backslash => "the path contains a backslash",
            PathProblem::DriveLetter => "the path starts with a drive letter",
            PathProblem::ControlCharacter => "the path contains a control character",
            PathProblem::NotNfc => "the path is not in Unicode NFC form",
            PathProblem::SurroundingWhitespace => "the path starts or ends with white space",
            PathProblem::EmptySegment => "the path has an empty segment",
            PathProblem::DotSegment => "the path has a '.' or '..' segment",
            PathProblem::SegmentTooLong => "a path segment is longer than 1,000 characters",
            PathProblem::EncodedTraversal => "a path segment decodes to a traversal or separator",
        };
        f.write_str(text)
    }
}

/// Checks that `path` is a canonical bundle-logical path: relative, `/`-separated, NFC, no
/// `.`/`..`/empty segments, no controls, and no segment that percent-decodes (up to four rounds)
/// into a traversal, a separator or a control character.
pub(crate) fn check_canonical(path: &str) -> Result<(), PathProblem> {
    if path.is_empty() {
        return Err(PathProblem::Empty);
    }
    // A path has at most as many UTF-16 units as bytes.
    if path.len() > MAX_PATH_UNITS && path.encode_utf16().count() > MAX_PATH_UNITS {
        return Err(PathProblem::TooLong);
    }
    if path.chars().any(is_forbidden_path_char) {
        return Err(PathProblem::ControlCharacter);
    }
    if path.starts_with('/') {
        return Err(PathProblem::LeadingSlash);
    }
    if path.contains('\\') {
        return Err(PathProblem::Backslash);
    }
    let bytes = path.as_bytes();
    if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
        return Err(PathProblem::DriveLetter);
    }
    if path.trim() != path {
        return Err(PathProblem::SurroundingWhitespace);
    }
    if !is_nfc(path) {
        return Err(PathProblem::NotNfc);
    }
    for segment in path.split('/') {
        if segment.is_empty() {
            return Err(PathProblem::EmptySegment);
        }
        if segment == "." || segment == ".." {
            return Err(PathProblem::DotSegment);
        }
        if segment.len() > MAX_SEGMENT_CHARS && segment.chars().count() > MAX_SEGMENT_CHARS {
            return Err(PathProblem::SegmentTooLong);
        }
        if !segment.contains('%') {
            // Nothing to decode.
            continue;
        }
        let mut decoded = segment.to_string();
        for _ in 0..4 {
            let Some(next) = percent_decode_once(&decoded) else {
                return Err(PathProblem::EncodedTraversal);
            };
            if next == decoded {
                break;
            }
            if next == "."
                || next == ".."
                || next.contains('/')
                || next.contains('\\')
                || next.chars().any(is_forbidden_path_char)
            {
                return Err(PathProblem::EncodedTraversal);
            }
            decoded = next;
        }
    }
    Ok(())
}

/// What a bundle path is: which of the bundle's kinds of file it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathClass {
    RootIndex,
    Log,
    /// `pages/**/index.md` or `pages/**/index-<leaf>.md`.
    PageNavigation,
    /// Any other `pages/**.md`: a document page.
    Page,
    /// Navigation Markdown under `_index/**` (`fileKind` `search_index`, as every file there).
    IndexNavigation,
    /// Navigation Markdown under `_graph/**` (`fileKind` `graph_index`).
    GraphNavigation,
    IndexCatalog,
    PageDirectoryRouter,
    DocumentPacket,
    TermCatalog,
    TermBucketRouter,
    TermPostings,
    GraphCatalog,
    GraphDirectoryRouter,
    RelationshipPacket,
    PerFileGraph,
}

crate::wire::wire_enum! {
    /// A file's `fileKind` in the output contract.
    pub enum ContractFileKind {
        /// A source page.
        Page = "page",
        /// Navigation: `index.md`, a page folder's index, a page that is no source page.
        Index = "index",
        /// `log.md` (in tree entries; file detail says `index`).
        Log = "log",
        /// A record or navigation file under `_index/`.
        SearchIndex = "search_index",
        /// A record or navigation file under `_graph/`.
        GraphIndex = "graph_index",
    }
}

impl PathClass {
    /// `fileKind` as the tree shows it (`log` for `log.md`); file detail maps `log` to `index`.
    pub(crate) fn tree_file_kind(self, source_backed: bool) -> ContractFileKind {
        match self {
            PathClass::Log => ContractFileKind::Log,
            PathClass::Page if source_backed => ContractFileKind::Page,
            PathClass::RootIndex | PathClass::PageNavigation | PathClass::Page => {
                ContractFileKind::Index
            }
            PathClass::IndexNavigation
            | PathClass::IndexCatalog
            | PathClass::PageDirectoryRouter
            | PathClass::DocumentPacket
            | PathClass::TermCatalog
            | PathClass::TermBucketRouter
            | PathClass::TermPostings => ContractFileKind::SearchIndex,
            PathClass::GraphNavigation
            | PathClass::GraphCatalog
            | PathClass::GraphDirectoryRouter
            | PathClass::RelationshipPacket
            | PathClass::PerFileGraph => ContractFileKind::GraphIndex,
        }
    }
}

const BUCKETS: [&str; 6] = ["latin", "han", "kana", "hangul", "number", "other"];

fn ends_with_md(name: &str) -> bool {
    // Bytes, not `str` slicing: a name may end inside a multi-byte character (`é..`, `x😀`).
    name.len() > 3 && name.as_bytes()[name.len() - 3..].eq_ignore_ascii_case(b".md")
}

/// `index-<leaf>.md` with `<leaf>` = `[A-Za-z0-9]([A-Za-z0-9._-]{0,238}[A-Za-z0-9])?`, not `map-…`.
fn is_leaf_name(name: &str) -> bool {
    let Some(leaf) = name
        .strip_prefix("index-")
        .and_then(|rest| rest.strip_suffix(".md"))
    else {
        return false;
    };
    let ok_edge = |c: u8| c.is_ascii_alphanumeric();
    let bytes = leaf.as_bytes();
    !leaf.is_empty()
        && leaf.len() <= 240
        && !leaf.starts_with("map-")
        && ok_edge(bytes[0])
        && ok_edge(bytes[bytes.len() - 1])
        && bytes
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

fn is_navigation_name(name: &str) -> bool {
    name == "index.md" || is_leaf_name(name)
}

/// `<stem>-part-NNNN.json` → `<stem>`; `<stem>.json` → `<stem>` when `allow_single`.
fn strip_part_suffix(name: &str, allow_single: bool) -> Option<&str> {
    let stem = name.strip_suffix(".json")?;
    if let Some(idx) = stem.rfind("-part-") {
        let digits = &stem[idx + 6..];
        if digits.len() == 4 && digits.bytes().all(|b| b.is_ascii_digit()) && digits != "0000" {
            return Some(&stem[..idx]);
        }
    }
    allow_single.then_some(stem)
}

/// Classifies a canonical bundle path, or `None` when the path is not one a bundle may hold.
pub(crate) fn classify(path: &str) -> Option<PathClass> {
    let segments: Vec<&str> = path.split('/').collect();
    let name = *segments.last()?;
    match segments.as_slice() {
        ["index.md"] => return Some(PathClass::RootIndex),
        ["log.md"] => return Some(PathClass::Log),
        ["pages", .., _] => {
            if !ends_with_md(name) {
                return None;
            }
            if is_navigation_name(name) {
                return Some(PathClass::PageNavigation);
            }
            if let Some(first) = segments.get(1) {
                let lower = first.to_ascii_lowercase();
                if segments.len() > 2 && matches!(lower.as_str(), "_graph" | "_index" | "_segments")
                {
                    return None;
                }
            }
            return Some(PathClass::Page);
        }
        ["_index", "catalog.json"] => return Some(PathClass::IndexCatalog),
        ["_graph", "catalog.json"] => return Some(PathClass::GraphCatalog),
        ["_index", n] if is_navigation_name(n) => return Some(PathClass::IndexNavigation),
        ["_graph", n] if is_navigation_name(n) => return Some(PathClass::GraphNavigation),
        _ => {}
    }
    match segments.as_slice() {
        ["_index", "pages", dirs @ .., _] => {
            if is_navigation_name(name) {
                return Some(PathClass::IndexNavigation);
            }
            if name == "index.json" {
                return Some(PathClass::PageDirectoryRouter);
            }
            let subject = dirs.last().copied().unwrap_or("all");
            let stem = strip_part_suffix(name, true)?;
            (stem == format!("{subject}-documents")).then_some(PathClass::DocumentPacket)
        }
        ["_index", "terms", _] => {
            if is_navigation_name(name) {
                Some(PathClass::IndexNavigation)
            } else if name == "index.json" {
                Some(PathClass::TermCatalog)
            } else {
                None
            }
        }
        ["_index", "terms", bucket, _] if BUCKETS.contains(bucket) => {
            if is_navigation_name(name) {
                Some(PathClass::IndexNavigation)
            } else if name == "index.json" {
                Some(PathClass::TermBucketRouter)
            } else {
                let stem = strip_part_suffix(name, false)?;
                (stem == format!("{bucket}-terms")).then_some(PathClass::TermPostings)
            }
        }
        ["_graph", "by-directory", dirs @ .., _] => {
            if is_navigation_name(name) {
                return Some(PathClass::GraphNavigation);
            }
            if name == "index.json" {
                return Some(PathClass::GraphDirectoryRouter);
            }
            let subject = dirs.last().copied().unwrap_or("all");
            let stem = strip_part_suffix(name, true)?;
            (stem == format!("{subject}-relationships")).then_some(PathClass::RelationshipPacket)
        }
        ["_graph", "by-file", .., _] => {
            if is_navigation_name(name) {
                Some(PathClass::GraphNavigation)
            } else if name.ends_with(".json") && name != "index.json" && name.len() > 5 {
                Some(PathClass::PerFileGraph)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Checks a `list_tree` `parentPath` (other than the root): canonical, and an allowed directory
/// (`pages…`, `_index`, `_index/pages…`, `_index/terms[/<bucket>]`, `_graph`,
/// `_graph/by-directory…`, `_graph/by-file…`).
pub(crate) fn is_allowed_tree_parent(path: &str) -> bool {
    if check_canonical(path).is_err() {
        return false;
    }
    let segments: Vec<&str> = path.split('/').collect();
    match segments.as_slice() {
        ["pages"] | ["_index"] | ["_graph"] => true,
        ["pages", .., last] => !ends_with_md(last),
        ["_index", "pages", ..] => true,
        ["_index", "terms"] => true,
        ["_index", "terms", bucket] => BUCKETS.contains(bucket),
        ["_graph", "by-directory", ..] | ["_graph", "by-file", ..] => true,
        _ => false,
    }
}

/// The per-file graph path of a page (`pages/a/b.md` → `_graph/by-file/a/b.json`).
pub fn per_file_graph_path(page_path: &str) -> String {
    let rest = page_path.strip_prefix("pages/").unwrap_or(page_path);
    let stem = if ends_with_md(rest) {
        &rest[..rest.len() - 3]
    } else {
        rest
    };
    format!("_graph/by-file/{stem}.json")
}

/// `target` (a link) relative to the file at `from` as a bundle path, its segments joined
/// (empty for the bundle's root); `None` when it leaves the bundle.
pub(crate) fn resolve_link(from: &str, target: &str) -> Option<String> {
    let mut segments: Vec<&str> = if target.starts_with('/') {
        Vec::new()
    } else {
        parent_of(from)
            .split('/')
            .filter(|s| !s.is_empty())
            .collect()
    };
    for segment in target.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop()?;
            }
            other => segments.push(other),
        }
    }
    Some(segments.join("/"))
}

/// The parent directory of a path (`""` for root-level entries).
pub fn parent_of(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

/// The last segment of a path.
pub(crate) fn name_of(path: &str) -> &str {
    path.rfind('/').map_or(path, |i| &path[i + 1..])
}

/// Language codes recognized as a path segment of a bilingual knowledge base's language roots
/// (ISO 639-1 with the common regional and script variants, rules#translations). Only these count,
/// so that sibling folders such as `js/` and `ts/` are never taken for translations.
pub(crate) const LANGUAGE_CODES: [&str; 36] = [
    "ar", "cs", "de", "en", "en-GB", "en-US", "es", "fa", "fr", "he", "hi", "id", "it", "ja", "ko",
    "nl", "pl", "pt", "pt-BR", "pt-br", "ru", "sv", "th", "tr", "uk", "vi", "zh", "zh-CN", "zh-HK",
    "zh-Hans", "zh-Hant", "zh-TW", "zh-cn", "zh-hans", "zh-hant", "zh-tw",
];

/// The language code of the first folder of `path` that is a language root
/// ([`LANGUAGE_CODES`]), as [`translation_paths`] reads them.
pub(crate) fn language_root(path: &str) -> Option<&str> {
    let folders = &path[..path.rfind('/')?];
    folders
        .split('/')
        .find(|segment| LANGUAGE_CODES.contains(segment))
}

/// The paths `path` would have under its sibling language roots: each folder segment that is
/// a language code ([`LANGUAGE_CODES`]) replaced by each other code, in code order.
pub(crate) fn translation_paths(path: &str) -> Vec<String> {
    let segments: Vec<&str> = path.split('/').collect();
    let mut out = Vec::new();
    // Folders only: a file named `en.md` is no language root.
    for (i, segment) in segments
        .iter()
        .enumerate()
        .take(segments.len().saturating_sub(1))
    {
        if !LANGUAGE_CODES.contains(segment) {
            continue;
        }
        for code in LANGUAGE_CODES.iter().filter(|c| *c != segment) {
            let mut other = segments.clone();
            other[i] = code;
            out.push(other.join("/"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_root_is_the_first_language_folder() {
        assert_eq!(language_root("pages/zh-CN/guide/a.md"), Some("zh-CN"));
        assert_eq!(language_root("en/a/fr/b.md"), Some("en"));
        assert_eq!(language_root("docs/en.md"), None);
        assert_eq!(language_root("en"), None);
        assert_eq!(language_root("guide/js/a.md"), None);
    }

    #[test]
    fn classifies_bundle_paths() {
        assert_eq!(classify("index.md"), Some(PathClass::RootIndex));
        assert_eq!(classify("pages/a/b.md"), Some(PathClass::Page));
        assert_eq!(
            classify("pages/a/index.md"),
            Some(PathClass::PageNavigation)
        );
        assert_eq!(
            classify("pages/index-directory-leaf-22b72063-c6fa.md"),
            Some(PathClass::PageNavigation)
        );
        assert_eq!(
            classify("_index/pages/en/guide/guide-documents.json"),
            Some(PathClass::DocumentPacket)
        );
        assert_eq!(
            classify("_index/pages/all-documents-part-0002.json"),
            Some(PathClass::DocumentPacket)
        );
        assert_eq!(
            classify("_index/terms/han/han-terms-part-0001.json"),
            Some(PathClass::TermPostings)
        );
        assert_eq!(
            classify("_graph/by-file/en/a.json"),
            Some(PathClass::PerFileGraph)
        );
        assert_eq!(classify("_graph/by-file/index.json"), None);
        assert_eq!(classify("schema.md"), None);
        assert_eq!(classify("pages/a.txt"), None);
        assert_eq!(classify("_index/pages/stray.json"), None);
    }

    #[test]
    fn rejects_non_canonical_paths() {
        for bad in [
            "",
            "/etc/passwd",
            "pages/../x.md",
            "pages\\x.md",
            "pages//x.md",
            "pages/./x.md",
            "pages/%2e%2e/x.md",
            "pages/%252e%252e/x.md",
            "C:/x.md",
            "pages/x\u{0}.md",
            " pages/x.md",
            "pages/%2F.md",
        ] {
            assert!(check_canonical(bad).is_err(), "{bad:?} should be rejected");
        }
        assert!(check_canonical("pages/指南/安装 (基础).md").is_ok());
        assert!(check_canonical("pages/100%.md").is_ok());
    }

    #[test]
    fn length_limits_count_units_and_characters_not_bytes() {
        // The byte-length shortcuts must not change which paths pass: é is 2 bytes and 1 unit,
        // 😀 is 4 bytes and 2 UTF-16 units.
        let segment = |c: &str, n: usize| c.repeat(n);
        assert!(check_canonical(&format!("pages/{}.md", segment("é", 997))).is_ok());
        assert_eq!(
            check_canonical(&format!("pages/{}", segment("é", 1001))),
            Err(PathProblem::SegmentTooLong)
        );
        assert!(check_canonical(&format!("pages/{}", segment("a", 1000))).is_ok());
        assert_eq!(
            check_canonical(&format!("pages/{}", segment("a", 1001))),
            Err(PathProblem::SegmentTooLong)
        );
        // Exactly 2,048 UTF-16 units, then one more.
        let at_limit = format!(
            "p/{}/{}/{}",
            segment("é", 1000),
            segment("é", 1000),
            "é".repeat(44)
        );
        assert_eq!(at_limit.encode_utf16().count(), 2048);
        assert!(check_canonical(&at_limit).is_ok());
        assert_eq!(
            check_canonical(&format!("{at_limit}é")),
            Err(PathProblem::TooLong)
        );
        let emoji = format!(
            "p/{}/{}/{}",
            segment("😀", 500),
            segment("😀", 500),
            segment("😀", 22)
        );
        assert_eq!(emoji.encode_utf16().count(), 2 + 1000 + 1 + 1000 + 1 + 44);
        assert!(check_canonical(&emoji).is_ok());
        assert_eq!(
            check_canonical(&format!("{emoji}😀")),
            Err(PathProblem::TooLong)
        );
    }

    #[test]
    fn segments_without_percent_pass_and_encoded_ones_are_decoded() {
        assert!(check_canonical("pages/plain name.md").is_ok());
        assert_eq!(
            check_canonical("pages/a%2fb.md"),
            Err(PathProblem::EncodedTraversal)
        );
        assert_eq!(
            check_canonical("pages/%25252e%25252e/x.md"),
            Err(PathProblem::EncodedTraversal)
        );
        // Decodes to invalid UTF-8.
        assert_eq!(
            check_canonical("pages/%ff.md"),
            Err(PathProblem::EncodedTraversal)
        );
    }

    #[test]
    fn graph_path_of_page() {
        assert_eq!(
            per_file_graph_path("pages/guides/install.md"),
            "_graph/by-file/guides/install.json"
        );
        assert_eq!(per_file_graph_path("pages/X.MD"), "_graph/by-file/X.json");
    }
}
