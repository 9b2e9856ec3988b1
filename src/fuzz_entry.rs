//! Entry points for the coverage-guided fuzz targets (`fuzz/fuzz_targets/*.rs`, cargo-fuzz on
//! nightly) and for their stable-Rust corpus replay (`tests/it/fuzz_corpus.rs`): one function per
//! parser, taking raw bytes. Each runs the parser the way ingest or a tool runs it and checks
//! the invariants that are cheap to check; a broken invariant panics, which is what a fuzzer
//! reports. Not part of the public API.

use serde_json::{json, Value};

use crate::ingest::bundle::records::{self, DocumentRecord, LocalRelationship};
use crate::ingest::bundle::{frontmatter, paths};
use crate::ingest::{analysis, markdown};
use crate::{cursor, text};

/// One fuzz target: its entry function, taking the raw input.
pub type Entry = fn(&[u8]);

/// The fuzz targets, by name: the folder of each seed corpus (`fuzz/corpus/<name>/`).
pub const TARGETS: [(&str, Entry); 5] = [
    ("frontmatter", frontmatter),
    ("records", records),
    ("cursor", cursor),
    ("query", query),
    ("path", path),
];

fn text_of(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(data)
}

/// A page as ingest reads it: frontmatter located and parsed (YAML → JSON), then the body
/// summarized by the Markdown parser and reduced to indexed text.
pub fn frontmatter(data: &[u8]) {
    let text = text_of(data);
    let mut body: &str = &text;
    if let Some(block) = frontmatter::locate(&text) {
        assert!(block.body_start <= text.len(), "body_start past the end");
        assert!(
            text.is_char_boundary(block.body_start),
            "body_start inside a character"
        );
        assert!(
            text.contains(block.yaml),
            "the YAML is not part of the text"
        );
        if let Ok(map) = frontmatter::parse(&block) {
            // Ingest stores the frontmatter as JSON text; it must read back as an object.
            let json = serde_json::to_string(&map).expect("frontmatter serializes");
            let back: Value = serde_json::from_str(&json).expect("frontmatter JSON reads back");
            assert!(back.is_object());
            let _ = crate::tools::tags_of(&map);
        }
        body = &text[block.body_start..];
    }
    let summary = markdown::summarize(body);
    let _ = summary.first_h1;
    let _ = crate::ingest::bundle::indexed_body_text(body);
}

/// A `_index/**` or `_graph/**` JSON record as ingest reads it: lenient parse (lone surrogates,
/// depth bound), the title-only parse, and the typed items.
pub fn records(data: &[u8]) {
    let text = text_of(data);
    let sanitized = records::sanitize_lone_surrogates(&text);
    assert_eq!(
        records::sanitize_lone_surrogates(&sanitized),
        sanitized,
        "surrogate repair is not idempotent"
    );
    let full = records::parse_json(&text);
    let title = records::parse_title(&text);
    // The title parse never refuses what the full parse accepts (the full parse also refuses
    // numbers a JSON value cannot hold, such as 1e400, which the title parse skips over).
    assert!(
        full.is_err() || title.is_ok(),
        "the title parse refuses a record the full parse reads: {title:?}"
    );
    let Ok(value) = full else { return };
    let _ = records::format_version(&value);
    for key in ["childDirectories", "resources"] {
        let _ = records::listed_paths(&value, key);
    }
    let count = |key: &str| value.get(key).and_then(Value::as_array).map(Vec::len);
    let (good, bad) = records::typed_items::<DocumentRecord>(&value, "documents");
    if let Some(n) = count("documents") {
        assert_eq!(good.len() + bad.len(), n, "documents: items lost");
    }
    let (good, bad) = records::typed_items::<LocalRelationship>(&value, "relationships");
    if let Some(n) = count("relationships") {
        assert_eq!(good.len() + bad.len(), n, "relationships: items lost");
    }
}

/// The scopes cursors are checked against (a tool name, the inputs that shape its result, a
/// revision).
fn cursor_scopes() -> [(&'static str, Value, u64); 4] {
    [
        ("list_tree", json!({"parentPath": "pages", "limit": 2}), 1),
        (
            "search_files",
            json!({"query": "knowledge base", "limit": 1}),
            1,
        ),
        ("read_related", json!({"fileId": "pages/en/README.md"}), 7),
        ("expand_graph", json!({}), u64::MAX),
    ]
}

/// Cursor decoding: arbitrary text against several scopes; a cursor that decodes is the
/// canonical encoding of its offset. The first 16 bytes also give a (revision, offset) pair to
/// round-trip, and the pagination arithmetic is run on arbitrary numbers.
pub fn cursor(data: &[u8]) {
    let text = text_of(data);
    for (tool, scope, revision) in cursor_scopes() {
        if let Ok(offset) = cursor::decode(&text, tool, &scope, revision) {
            assert!((1..=cursor::MAX_OFFSET).contains(&offset));
            assert_eq!(
                cursor::encode(tool, &scope, revision, offset),
                text,
                "a decoded cursor does not re-encode to itself"
            );
        }
        let _ = cursor::start(Some(&text), tool, &scope, revision);
    }
    if data.len() >= 16 {
        let number = |at: usize| u64::from_le_bytes(data[at..at + 8].try_into().unwrap_or([0; 8]));
        let (revision, offset) = (number(0), number(8));
        let (tool, scope, _) = &cursor_scopes()[usize::from(data[0] % 4)];
        let encoded = cursor::encode(tool, scope, revision, offset);
        let decoded = cursor::decode(&encoded, tool, scope, revision);
        if (1..=cursor::MAX_OFFSET).contains(&offset) {
            assert_eq!(decoded.ok(), Some(offset), "{encoded} does not round-trip");
            assert!(cursor::decode(&encoded, tool, scope, revision.wrapping_add(1)).is_err());
            assert!(cursor::decode(&encoded, "get_file", scope, revision).is_err());
        } else {
            assert!(decoded.is_err(), "offset {offset} accepted");
        }
        let total = (revision % 1_000_000) as usize;
        let (range, next) = cursor::page(tool, scope, revision, offset as usize, offset, total);
        assert!(range.start <= range.end && range.end <= total);
        assert_eq!(next.is_some(), range.end < total);
    }
}

thread_local! {
    static TEXT_ANALYZER: std::cell::RefCell<tantivy::tokenizer::TextAnalyzer> =
        std::cell::RefCell::new(analysis::text_analyzer());
}

/// Query normalization and analysis: the `search_files` query rules, then the terms and words
/// the lanes search for; and the indexing analyzer on the raw text.
pub fn query(data: &[u8]) {
    let raw = text_of(data).into_owned();
    TEXT_ANALYZER.with(|a| analysis::terms(&mut a.borrow_mut(), &raw));
    let normalized = crate::tools::search_files::normalize_query(&raw);
    let Ok(query) = normalized else { return };
    assert!(!query.is_empty() && query.trim() == query);
    let again =
        crate::tools::search_files::normalize_query(&query).expect("a normalized query is valid");
    assert_eq!(again, query, "query normalization is not idempotent");
    let terms = analysis::query_terms(&query);
    let weights = analysis::query_term_weights(&terms);
    assert_eq!(weights.len(), terms.len());
    assert!(weights.iter().all(|w| w.is_finite() && *w > 0.0));
    let _ = analysis::query_words(&query);
    let _ = crate::search::query::AnalyzedQuery::of(&query);
    let key = text::exact_key(&query);
    assert_eq!(
        text::exact_key(&key),
        key,
        "the exact key is not idempotent"
    );
}

/// Path checks and normalization: the canonical-path check (the security boundary), the
/// classification, the tree-parent rule, the page → per-file graph mapping, NFC, and the
/// percent-decoding of HTTP path segments.
pub fn path(data: &[u8]) {
    let path = text_of(data);
    let nfc = text::nfc(&path);
    assert_eq!(text::nfc(&nfc), nfc, "NFC is not idempotent");
    let decoded = text::percent_decode_once(&path);
    if let Some(d) = &decoded {
        assert!(d.len() <= path.len());
    }
    assert_eq!(
        text::percent_decode_once(&text::encode_uri_component(&path)).as_deref(),
        Some(&*path),
        "encodeURIComponent does not decode back"
    );
    let _ = paths::parent_of(&path);
    let _ = paths::name_of(&path);
    let canonical = paths::check_canonical(&path).is_ok();
    if paths::is_allowed_tree_parent(&path) {
        assert!(canonical);
    }
    if !canonical {
        return;
    }
    assert_eq!(nfc, path, "a canonical path is not NFC");
    assert!(!path.starts_with('/') && !path.contains('\\') && !path.contains("//"));
    assert!(path.split('/').all(|s| s != "." && s != ".."));
    assert_eq!(
        format!("{}/{}", paths::parent_of(&path), paths::name_of(&path)).trim_start_matches('/'),
        &*path
    );
    if paths::classify(&path) == Some(paths::PathClass::Page) {
        let graph = paths::per_file_graph_path(&path);
        let fits = path.encode_utf16().count() + 11 <= paths::MAX_PATH_UNITS
            && paths::name_of(&path).chars().count() + 2 <= paths::MAX_SEGMENT_CHARS;
        if fits {
            assert_eq!(paths::check_canonical(&graph), Ok(()), "{graph}");
            // `index.md` pages get a graph record the path table does not list
            // (rules#graph-refs-open).
            if paths::name_of(&graph) != "index.json" {
                assert_eq!(
                    paths::classify(&graph),
                    Some(paths::PathClass::PerFileGraph),
                    "{graph}"
                );
            }
        }
    }
}
