//! Contract tests of `search_files` (the online contract's search section; rules#cursors and
//! #statuses to #okf):
//! the 14 validation detail codes and the order in which they are checked, the query context
//! echo (NFKC and whitespace normalization), the status objects, the `no_candidates` response,
//! cursor paging (no repeats, no skips, bound to the request), score order and exact-match
//! priority, the OKF filters, and the `fileKind` and `scope` parameters.
//!
//! Fixtures: `fixtures/focowiki-docs` (36 source pages, English and Chinese, with relations) and
//! `fixtures/plain-notes` (six pages with OKF frontmatter; see `tests/it/edge_fixtures.rs`). Every
//! call goes through `common::checked_call`, so each output and error envelope is also validated
//! against the contract schema.

use crate::common;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use common::checked_call;
use kbtools::index::{self, BuildOptions};
use kbtools::kb::KnowledgeBase;
use kbtools::ToolError;
use serde_json::{json, Value};

const SEARCH_INVALID: &str = "File search query is invalid.";
const TOOLS_DESIGN: &str = "pages/en/agent-integration/own-agent-client/tools-design.md";

/// A fixture's knowledge base, indexed once per test process and shared by the tests of this
/// file. The index lives in a fresh folder under Cargo's per-target temporary folder; a static
/// is never dropped, so each run removes the folders that earlier runs left (those older than an
/// hour, sparing any that a concurrent run is using).
fn shared(name: &'static str, slot: &'static OnceLock<KnowledgeBase>) -> &'static KnowledgeBase {
    slot.get_or_init(|| {
        let parent = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("search_contract");
        std::fs::create_dir_all(&parent).unwrap();
        let stale = |entry: &std::fs::DirEntry| {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > Duration::from_secs(3600))
        };
        for entry in std::fs::read_dir(&parent).unwrap().flatten() {
            if stale(&entry) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        let dir = tempfile::Builder::new()
            .prefix(&format!("{name}-"))
            .tempdir_in(&parent)
            .unwrap()
            .keep();
        let bundle = common::fixture(name);
        index::build(&bundle, &dir, &BuildOptions::default(), &mut |_| {}).unwrap();
        KnowledgeBase::open(&dir, Some(&bundle), common::serve_options()).unwrap()
    })
}

fn docs() -> &'static KnowledgeBase {
    static KB: OnceLock<KnowledgeBase> = OnceLock::new();
    shared("focowiki-docs", &KB)
}

fn notes() -> &'static KnowledgeBase {
    static KB: OnceLock<KnowledgeBase> = OnceLock::new();
    shared("plain-notes", &KB)
}

fn search(kb: &KnowledgeBase, input: Value) -> Value {
    checked_call(kb, "search_files", input.clone())
        .unwrap_or_else(|e| panic!("search_files {input} failed: {e}"))
}

fn search_error(kb: &KnowledgeBase, input: Value) -> ToolError {
    match checked_call(kb, "search_files", input.clone()) {
        Ok(out) => panic!(
            "search_files {input} succeeded, expected an error: {}",
            out["items"].as_array().map_or(0, Vec::len)
        ),
        Err(e) => e,
    }
}

/// The error's contract details, less the `hint` every door adds (a sentence when present).
fn without_hint(error: &ToolError) -> Option<Value> {
    let mut details = error.details.clone()?;
    if let Some(hint) = details.remove("hint") {
        assert!(hint.as_str().is_some_and(|h| !h.is_empty()), "{hint}");
    }
    Some(Value::Object(details))
}

/// Asserts the contract's 422 for an invalid search input with detail code `code`.
fn assert_invalid(kb: &KnowledgeBase, input: Value, code: &str) {
    let error = search_error(kb, input.clone());
    assert_eq!(error.code.as_str(), "VALIDATION_ERROR", "{input}");
    assert_eq!(error.http_status(), 422, "{input}");
    assert_eq!(error.message, SEARCH_INVALID, "{input}");
    assert_eq!(
        without_hint(&error),
        Some(json!({ "code": code })),
        "{input}"
    );
    let envelope = error.envelope("req-00000000-0000-4000-8000-000000000000");
    assert_eq!(envelope["error"]["httpStatus"], 422);
    assert_eq!(envelope["error"]["details"]["code"], code);
}

/// Asserts the contract's 422 "Pagination cursor is invalid." `{field: "cursor"}`.
fn assert_cursor_refused(kb: &KnowledgeBase, input: Value) {
    let error = search_error(kb, input.clone());
    assert_eq!(error.code.as_str(), "VALIDATION_ERROR", "{input}");
    assert_eq!(error.http_status(), 422, "{input}");
    assert_eq!(error.message, "Pagination cursor is invalid.", "{input}");
    assert_eq!(
        without_hint(&error),
        Some(json!({ "field": "cursor" })),
        "{input}"
    );
}

/// `base` with the fields of `extra` set (a `null` in `extra` removes the field).
fn with(base: &Value, extra: Value) -> Value {
    let mut out = base.clone();
    for (k, v) in extra.as_object().unwrap() {
        if v.is_null() {
            out.as_object_mut().unwrap().remove(k);
        } else {
            out[k] = v.clone();
        }
    }
    out
}

fn items(v: &Value) -> Vec<Value> {
    v["items"].as_array().cloned().unwrap_or_default()
}

fn paths(v: &Value) -> Vec<String> {
    items(v)
        .iter()
        .map(|i| i["path"].as_str().unwrap().to_string())
        .collect()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The 14 validation detail codes (docs/rules.md#tool-inputs), one test each

#[test]
fn query_required() {
    let kb = docs();
    for input in [
        json!({}),
        Value::Null,
        json!({ "query": null }),
        json!({ "query": "" }),
        json!({ "query": "   " }),
        // Whitespace only after NFKC: TAB, an ideographic space, a no-break space.
        json!({ "query": "\t\u{3000}\u{a0} " }),
        json!({ "query": null, "limit": 5 }),
    ] {
        assert_invalid(kb, input, "FILE_SEARCH_QUERY_REQUIRED");
    }
}

#[test]
fn query_too_short() {
    let kb = docs();
    for query in [
        "a",
        "好",
        " a ",
        // One grapheme cluster of several code points: a ZWJ family, a flag, a skin tone.
        "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}",
        "\u{1F1EF}\u{1F1F5}",
        "\u{1F44D}\u{1F3FD}",
        // A base letter and a combining accent: one cluster (NFKC composes it to "é").
        "e\u{301}",
        // Fullwidth "Ａ" is "A" after NFKC.
        "\u{FF21}",
    ] {
        assert_invalid(kb, json!({ "query": query }), "FILE_SEARCH_QUERY_TOO_SHORT");
    }
    // Two clusters are enough, whatever their size.
    for query in [
        "ab",
        "好好",
        "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}x",
        "a b",
    ] {
        let out = search(kb, json!({ "query": query }));
        assert_eq!(out["query"]["query"], query);
    }
    // The count is taken after NFKC: U+FDFA is one character that expands to 18.
    let out = search(kb, json!({ "query": "\u{FDFA}" }));
    assert_eq!(out["query"]["query"].as_str().unwrap().chars().count(), 18);
}

#[test]
fn query_too_long() {
    let kb = docs();
    // Grapheme clusters: 512 pass, 513 fail.
    search(kb, json!({ "query": "a".repeat(512) }));
    assert_invalid(
        kb,
        json!({ "query": "a".repeat(513) }),
        "FILE_SEARCH_QUERY_TOO_LONG",
    );
    // 512 × "好" (1,536 bytes) passes; 511 × "好" + "ab" is 513 clusters and fails.
    let out = search(kb, json!({ "query": "好".repeat(512) }));
    assert_eq!(out["query"]["query"].as_str().unwrap().chars().count(), 512);
    assert_invalid(
        kb,
        json!({ "query": format!("{}ab", "好".repeat(511)) }),
        "FILE_SEARCH_QUERY_TOO_LONG",
    );
    // Bytes: 512 four-byte characters are exactly 2,048 bytes and pass; 512 clusters of
    // 2,052 bytes fail on bytes alone, as do 300 eight-byte clusters.
    search(kb, json!({ "query": "\u{20000}".repeat(512) }));
    assert_invalid(
        kb,
        json!({ "query": format!("{}\u{1F44D}\u{1F3FD}", "\u{20000}".repeat(511)) }),
        "FILE_SEARCH_QUERY_TOO_LONG",
    );
    assert_invalid(
        kb,
        json!({ "query": "\u{1F44D}\u{1F3FD}".repeat(300) }),
        "FILE_SEARCH_QUERY_TOO_LONG",
    );
    // Limits apply to the normalized text: trimmed and collapsed whitespace does not count,
    // and NFKC expansion does (30 × U+FDFA is 540 clusters).
    search(
        kb,
        json!({ "query": format!("  {}   {}  ", "a".repeat(300), "b".repeat(211)) }),
    );
    search(
        kb,
        json!({ "query": format!("{}{}", "a".repeat(512), " ".repeat(600)) }),
    );
    assert_invalid(
        kb,
        json!({ "query": "\u{FDFA}".repeat(30) }),
        "FILE_SEARCH_QUERY_TOO_LONG",
    );
}

#[test]
fn invalid_query() {
    let kb = docs();
    for query in [
        json!("graph\nsearch"),
        json!("graph\rsearch"),
        json!("graph\u{0}search"),
        json!("graph\u{85}search"),
        json!("graph\u{7f}search"),
        json!("graph\u{1b}search"),
        json!("graph\u{9f}search"),
        // The raw check runs before normalization and the other query rules.
        json!("\n"),
        json!(format!("{}\n", "a".repeat(600))),
        json!(42),
        json!(true),
        json!(["graph search"]),
        json!({ "text": "graph search" }),
    ] {
        assert_invalid(kb, json!({ "query": query }), "INVALID_FILE_SEARCH_QUERY");
    }
    // TAB is allowed (and collapsed like any whitespace).
    let out = search(kb, json!({ "query": "graph\tsearch" }));
    assert_eq!(out["query"]["query"], "graph search");
}

#[test]
fn invalid_scope() {
    let kb = docs();
    for scope in [json!("paths"), json!("ALL"), json!("content"), json!(1)] {
        assert_invalid(
            kb,
            json!({ "query": "graph", "scope": scope }),
            "INVALID_FILE_SEARCH_SCOPE",
        );
    }
    for (scope, effective) in [
        ("all", "all"),
        ("path", "path"),
        ("metadata", "metadata"),
        (" path ", "path"),
        ("", "all"),
    ] {
        let out = search(kb, json!({ "query": "graph", "scope": scope }));
        assert_eq!(out["query"]["scope"], effective, "{scope:?}");
    }
}

#[test]
fn invalid_file_kind() {
    let kb = docs();
    for kind in [json!("pages"), json!("folder"), json!("PAGE"), json!(false)] {
        assert_invalid(
            kb,
            json!({ "query": "graph", "fileKind": kind }),
            "INVALID_FILE_SEARCH_KIND",
        );
    }
    for (kind, effective) in [("all", "all"), ("page", "page"), ("", "page")] {
        let out = search(kb, json!({ "query": "graph", "fileKind": kind }));
        assert_eq!(out["query"]["fileKind"], effective, "{kind:?}");
    }
}

#[test]
fn invalid_mode() {
    let kb = docs();
    for mode in [json!("semantic"), json!("FILE"), json!("vector"), json!(0)] {
        assert_invalid(
            kb,
            json!({ "query": "graph", "mode": mode }),
            "INVALID_FILE_SEARCH_MODE",
        );
    }
    for (mode, effective) in [
        ("file", "file"),
        ("graph", "graph"),
        ("hybrid", "hybrid"),
        ("", "hybrid"),
    ] {
        let out = search(kb, json!({ "query": "graph", "mode": mode }));
        assert_eq!(out["query"]["mode"], effective, "{mode:?}");
        assert_eq!(out["searchMode"], effective, "{mode:?}");
    }
}

#[test]
fn invalid_graph_depth() {
    let kb = docs();
    for depth in [
        json!(3),
        json!(-1),
        json!(1.5),
        json!("x"),
        json!("1.5"),
        json!(true),
        json!([1]),
    ] {
        assert_invalid(
            kb,
            json!({ "query": "graph", "graphDepth": depth }),
            "INVALID_FILE_SEARCH_GRAPH_DEPTH",
        );
    }
    for (depth, effective) in [
        (json!(0), 0),
        (json!(2), 2),
        (json!("2"), 2),
        (json!("1.0"), 1),
        (json!(2.0), 2),
        (json!(""), 1),
    ] {
        let out = search(kb, json!({ "query": "graph", "graphDepth": depth }));
        assert_eq!(out["query"]["graphDepth"], effective, "{depth}");
        assert_eq!(out["graphSummary"]["depth"], effective, "{depth}");
    }
}

#[test]
fn invalid_graph_fanout() {
    let kb = docs();
    for fanout in [json!(26), json!(-1), json!(2.5), json!("many"), json!(1000)] {
        assert_invalid(
            kb,
            json!({ "query": "graph", "graphFanout": fanout }),
            "INVALID_FILE_SEARCH_GRAPH_FANOUT",
        );
    }
    for (fanout, effective) in [(json!(0), 0), (json!(25), 25), (json!(" 5 "), 5)] {
        let out = search(kb, json!({ "query": "graph", "graphFanout": fanout }));
        assert_eq!(out["query"]["graphFanout"], effective, "{fanout}");
        assert_eq!(out["graphSummary"]["fanout"], effective, "{fanout}");
    }
    let out = search(kb, json!({ "query": "graph" }));
    assert_eq!(out["query"]["graphFanout"], 10);
}

#[test]
fn invalid_okf_status() {
    let kb = docs();
    for status in [
        json!("archived"),
        json!("Stable"),
        json!("published"),
        json!(1),
    ] {
        assert_invalid(
            kb,
            json!({ "query": "graph", "okfStatus": status }),
            "INVALID_FILE_SEARCH_OKF_STATUS",
        );
    }
    let out = search(kb, json!({ "query": "graph", "okfStatus": " draft " }));
    assert_eq!(out["query"]["okfStatus"], "draft");
    let out = search(kb, json!({ "query": "graph", "okfStatus": "" }));
    assert_eq!(out["query"]["okfStatus"], Value::Null);
}

#[test]
fn invalid_okf_trust_tier() {
    let kb = docs();
    for tier in [
        json!("human"),
        json!("verified"),
        json!("Human-Reviewed"),
        json!(2),
    ] {
        assert_invalid(
            kb,
            json!({ "query": "graph", "okfTrustTier": tier }),
            "INVALID_FILE_SEARCH_OKF_TRUST_TIER",
        );
    }
    for tier in ["unverified", "machine-confirmed", "human-reviewed"] {
        let out = search(kb, json!({ "query": "graph", "okfTrustTier": tier }));
        assert_eq!(out["query"]["okfTrustTier"], tier);
    }
}

#[test]
fn invalid_okf_freshness() {
    let kb = docs();
    for freshness in [
        json!("rotten"),
        json!("expired"),
        json!("FRESH"),
        json!(false),
    ] {
        assert_invalid(
            kb,
            json!({ "query": "graph", "okfFreshness": freshness }),
            "INVALID_FILE_SEARCH_OKF_FRESHNESS",
        );
    }
    for freshness in ["fresh", "stale"] {
        let out = search(kb, json!({ "query": "graph", "okfFreshness": freshness }));
        assert_eq!(out["query"]["okfFreshness"], freshness);
    }
}

#[test]
fn invalid_limit() {
    let kb = docs();
    for limit in [
        json!(0),
        json!(51),
        json!(-1),
        json!(1.5),
        json!("abc"),
        json!("5 items"),
        json!(true),
        json!(9_007_199_254_740_993u64),
    ] {
        assert_invalid(
            kb,
            json!({ "query": "knowledge", "limit": limit }),
            "INVALID_FILE_SEARCH_LIMIT",
        );
    }
    for (limit, effective) in [
        (json!(1), 1),
        (json!(50), 50),
        (json!("10.0"), 10),
        (json!(" 5 "), 5),
        (json!(3.0), 3),
        (json!(""), 10),
        (Value::Null, 10),
    ] {
        let out = search(kb, json!({ "query": "knowledge", "limit": limit }));
        assert_eq!(out["query"]["limit"], effective, "{limit}");
        assert!(items(&out).len() <= effective, "{limit}");
    }
}

#[test]
fn invalid_rerank_controls() {
    let kb = docs();
    let code = "INVALID_FILE_SEARCH_RERANK_CONTROLS";
    for input in [
        // Only booleans and the exact strings "true" / "false".
        json!({ "rerank": "TRUE" }),
        json!({ "rerank": "True" }),
        json!({ "rerank": "yes" }),
        json!({ "rerank": 1 }),
        // rerankTopK needs rerank=true, an integer 1..50 and at least `limit`.
        json!({ "rerankTopK": 30 }),
        json!({ "rerank": false, "rerankTopK": 30 }),
        json!({ "rerank": true, "rerankTopK": 5 }),
        json!({ "rerank": true, "limit": 20, "rerankTopK": 19 }),
        json!({ "rerank": true, "rerankTopK": 51 }),
        json!({ "rerank": true, "rerankTopK": 0 }),
        json!({ "rerank": true, "rerankTopK": 30.5 }),
        json!({ "rerank": true, "rerankTopK": "many" }),
        // rerankScoreThreshold needs rerank=true and a finite number in 0..1.
        json!({ "rerank": true, "rerankScoreThreshold": 1.5 }),
        json!({ "rerank": true, "rerankScoreThreshold": -0.1 }),
        json!({ "rerank": true, "rerankScoreThreshold": "high" }),
        json!({ "rerank": true, "rerankScoreThreshold": "NaN" }),
        json!({ "rerank": true, "rerankScoreThreshold": true }),
        json!({ "rerankScoreThreshold": 0.5 }),
        json!({ "rerank": "false", "rerankScoreThreshold": 0.5 }),
    ] {
        assert_invalid(kb, with(&json!({ "query": "graph" }), input), code);
    }
    for (input, rerank, top_k, threshold) in [
        (json!({ "rerank": "true" }), true, json!(30), json!(0.35)),
        (
            json!({ "rerank": "false" }),
            false,
            Value::Null,
            Value::Null,
        ),
        (json!({ "rerank": "" }), false, Value::Null, Value::Null),
        (
            json!({ "rerank": true, "rerankTopK": 10 }),
            true,
            json!(10),
            json!(0.35),
        ),
        (
            json!({ "rerank": true, "limit": 40 }),
            true,
            json!(40),
            json!(0.35),
        ),
        (
            json!({ "rerank": true, "rerankTopK": "50", "rerankScoreThreshold": "0.5" }),
            true,
            json!(50),
            json!(0.5),
        ),
        (
            json!({ "rerank": true, "rerankScoreThreshold": 0 }),
            true,
            json!(30),
            json!(0.0),
        ),
        (
            json!({ "rerank": true, "rerankScoreThreshold": 1 }),
            true,
            json!(30),
            json!(1.0),
        ),
    ] {
        let out = search(kb, with(&json!({ "query": "graph" }), input.clone()));
        assert_eq!(out["query"]["rerank"], rerank, "{input}");
        assert_eq!(out["query"]["rerankTopK"], top_k, "{input}");
        assert_eq!(out["query"]["rerankScoreThreshold"], threshold, "{input}");
    }
}

/// One invalid value per field, in the order the API validates them.
fn bad_fields() -> Vec<(&'static str, Value, &'static str)> {
    vec![
        ("query", json!("a"), "FILE_SEARCH_QUERY_TOO_SHORT"),
        ("scope", json!("everything"), "INVALID_FILE_SEARCH_SCOPE"),
        ("fileKind", json!("folder"), "INVALID_FILE_SEARCH_KIND"),
        ("mode", json!("semantic"), "INVALID_FILE_SEARCH_MODE"),
        ("graphDepth", json!(3), "INVALID_FILE_SEARCH_GRAPH_DEPTH"),
        ("graphFanout", json!(26), "INVALID_FILE_SEARCH_GRAPH_FANOUT"),
        (
            "okfStatus",
            json!("archived"),
            "INVALID_FILE_SEARCH_OKF_STATUS",
        ),
        (
            "okfTrustTier",
            json!("human"),
            "INVALID_FILE_SEARCH_OKF_TRUST_TIER",
        ),
        (
            "okfFreshness",
            json!("rotten"),
            "INVALID_FILE_SEARCH_OKF_FRESHNESS",
        ),
        ("limit", json!(0), "INVALID_FILE_SEARCH_LIMIT"),
        (
            "rerank",
            json!("TRUE"),
            "INVALID_FILE_SEARCH_RERANK_CONTROLS",
        ),
    ]
}

#[test]
fn the_first_invalid_field_in_table_order_wins() {
    let kb = docs();
    let fields = bad_fields();
    let valid = json!({ "query": "graph search" });
    // Every pair of invalid fields: the earlier one in the table is reported.
    for (i, (first, first_value, first_code)) in fields.iter().enumerate() {
        for (second, second_value, _) in &fields[i + 1..] {
            let mut input = valid.clone();
            input[*first] = first_value.clone();
            input[*second] = second_value.clone();
            assert_invalid(kb, input, first_code);
        }
    }
    // Every suffix of the table made invalid at once: its first field is reported.
    for start in 0..fields.len() {
        let mut input = valid.clone();
        for (field, value, _) in &fields[start..] {
            input[*field] = value.clone();
        }
        input["cursor"] = json!("not-a-cursor");
        assert_invalid(kb, input, fields[start].2);
    }
    // Each query rule comes before every other field, in its own order: control characters,
    // then required, then too short.
    let all_bad_but_query =
        fields[1..]
            .iter()
            .fold(valid.clone(), |mut input, (field, value, _)| {
                input[*field] = value.clone();
                input
            });
    for (query, code) in [
        (json!("\n"), "INVALID_FILE_SEARCH_QUERY"),
        (json!(7), "INVALID_FILE_SEARCH_QUERY"),
        (json!("  "), "FILE_SEARCH_QUERY_REQUIRED"),
        (Value::Null, "FILE_SEARCH_QUERY_REQUIRED"),
        (json!("好"), "FILE_SEARCH_QUERY_TOO_SHORT"),
        (json!("a".repeat(513)), "FILE_SEARCH_QUERY_TOO_LONG"),
    ] {
        assert_invalid(
            kb,
            with(&all_bad_but_query, json!({ "query": query })),
            code,
        );
    }
    // The rerank controls come after `limit`, and a bad cursor only counts once everything
    // else is valid.
    assert_invalid(
        kb,
        json!({ "query": "graph", "limit": 51, "rerankTopK": 5 }),
        "INVALID_FILE_SEARCH_LIMIT",
    );
    assert_invalid(
        kb,
        json!({ "query": "graph", "rerankScoreThreshold": 2, "cursor": "x" }),
        "INVALID_FILE_SEARCH_RERANK_CONTROLS",
    );
    assert_invalid(
        kb,
        json!({ "query": "graph", "okfFreshness": "old", "cursor": 5 }),
        "INVALID_FILE_SEARCH_OKF_FRESHNESS",
    );
    assert_cursor_refused(kb, json!({ "query": "graph", "cursor": "x" }));
    assert_cursor_refused(kb, json!({ "query": "graph", "cursor": 5 }));
}

// ---------------------------------------------------------------------------------------------
// Query context echo and statuses (docs/rules.md#statuses, #no-candidates)

#[test]
fn the_query_context_echoes_the_normalized_request() {
    let kb = docs();
    for (raw, normalized) in [
        ("ＡＰＩ", "API"),
        ("  tools \t\u{3000} design  ", "tools design"),
        ("ｇｒａｐｈ　ｓｅａｒｃｈ", "graph search"),
        ("e\u{301}tude", "\u{e9}tude"),
        ("\u{FB01}le search", "file search"),
        ("知识库\u{2003}\u{2003}关系", "知识库 关系"),
    ] {
        let out = search(kb, json!({ "query": raw }));
        let q = &out["query"];
        assert_eq!(q["query"], normalized, "{raw:?}");
        assert_eq!(q["normalizedQuery"], normalized, "{raw:?}");
    }
    let out = search(kb, json!({ "query": "knowledge base" }));
    assert_eq!(
        out["query"],
        json!({
            "query": "knowledge base", "normalizedQuery": "knowledge base",
            "scope": "all", "fileKind": "page", "mode": "hybrid",
            "graphDepth": 1, "graphFanout": 10,
            "okfStatus": null, "okfTrustTier": null, "okfFreshness": null,
            "rerank": false, "rerankTopK": null, "rerankScoreThreshold": null,
            "limit": 10, "cursorProvided": false
        })
    );
    // A normalization-equivalent query finds the same pages.
    let fullwidth = search(kb, json!({ "query": "ｋｎｏｗｌｅｄｇｅ　　ｂａｓｅ" }));
    assert_eq!(paths(&fullwidth), paths(&out));

    // cursorProvided: only a non-empty cursor counts.
    let out = search(kb, json!({ "query": "knowledge base", "cursor": "" }));
    assert_eq!(out["query"]["cursorProvided"], false);
    let first = search(kb, json!({ "query": "knowledge base", "limit": 2 }));
    let next = first["nextCursor"].as_str().unwrap();
    let out = search(
        kb,
        json!({ "query": "knowledge base", "limit": 2, "cursor": next }),
    );
    assert_eq!(out["query"]["cursorProvided"], true);
}

#[test]
fn semantic_and_reranker_statuses() {
    let kb = docs();
    let plain = search(kb, json!({ "query": "knowledge base", "limit": 20 }));
    assert_eq!(
        plain["semanticStatus"],
        json!({ "state": "unavailable", "safeCode": "SEMANTIC_SEARCH_UNAVAILABLE" })
    );
    assert_eq!(
        plain["rerankerStatus"],
        json!({ "state": "skipped", "safeCode": "RERANKER_DISABLED" })
    );
    let off = search(
        kb,
        json!({ "query": "knowledge base", "limit": 20, "rerank": false }),
    );
    assert_eq!(off["rerankerStatus"], plain["rerankerStatus"]);
    assert_eq!(off["query"]["rerankTopK"], Value::Null);
    assert_eq!(off["query"]["rerankScoreThreshold"], Value::Null);

    let on = search(
        kb,
        json!({ "query": "knowledge base", "limit": 20, "rerank": true }),
    );
    assert_eq!(
        on["rerankerStatus"],
        json!({ "state": "not_configured", "safeCode": "RERANKER_NOT_CONFIGURED" })
    );
    assert_eq!(
        on["semanticStatus"],
        json!({ "state": "unavailable", "safeCode": "SEMANTIC_SEARCH_UNAVAILABLE" })
    );
    assert_eq!(on["query"]["rerank"], true);
    assert_eq!(on["query"]["rerankTopK"], 30);
    assert_eq!(on["query"]["rerankScoreThreshold"], 0.35);
    // No reranker runs offline: the fused order is kept.
    assert_eq!(paths(&on), paths(&plain));
    for limit in [1, 30, 31, 50] {
        let out = search(
            kb,
            json!({ "query": "knowledge base", "limit": limit, "rerank": true }),
        );
        assert_eq!(out["query"]["rerankTopK"], limit.max(30), "limit {limit}");
    }
    // The no-candidates response keeps the same statuses.
    let none = search(kb, json!({ "query": "zzzz-nothing-here", "rerank": true }));
    assert_eq!(none["rerankerStatus"], on["rerankerStatus"]);
    assert_eq!(none["semanticStatus"], on["semanticStatus"]);
}

#[test]
fn no_candidates_and_successful_responses() {
    let kb = docs();
    for mode in ["file", "graph", "hybrid"] {
        let none = search(kb, json!({ "query": "zzzz-nothing-here", "mode": mode }));
        assert_eq!(none["searchStatus"], "no_candidates", "{mode}");
        assert_eq!(none["items"], json!([]));
        assert_eq!(none["nextCursor"], Value::Null);
        assert_eq!(
            none["message"],
            "No generated files matched this query. The knowledge base may still contain relevant data through different titles, paths, or metadata terms."
        );
        assert_eq!(
            strings(&none["nextActions"]),
            [
                "Split the user question into shorter terms and search again.",
                "Read index.md through the file content endpoint.",
                "List the file tree and continue exploration from visible directories.",
                "Try title, path, subject, product name, workflow, identifier, or shorter terms from the question.",
                "Use graph or hybrid search mode when a direct file search does not find enough evidence.",
            ]
        );
        assert_eq!(
            none["resultSummary"],
            json!({
                "resultCount": 0, "hasMore": false,
                "sort": ["relevance_desc", "logical_path_asc", "source_file_id_asc"],
                "meaning": "No current readable files matched the search."
            })
        );
        assert_eq!(none["activeContentRevision"], 1);

        let found = search(kb, json!({ "query": "knowledge base", "mode": mode }));
        assert_eq!(found["searchStatus"], "ok", "{mode}");
        assert!(!items(&found).is_empty());
        let object = found.as_object().unwrap();
        assert!(object.contains_key("message"), "message is present");
        assert_eq!(found["message"], Value::Null);
        assert_eq!(found["nextActions"], json!([]));
        assert_eq!(
            found["resultSummary"]["meaning"],
            "Results match the current readable knowledge base."
        );
        assert_eq!(
            found["resultSummary"]["resultCount"],
            items(&found).len() as u64
        );
        // graphStatus and graphSummary follow the mode; graphContext only outside file mode.
        let file_mode = mode == "file";
        assert_eq!(
            found["graphStatus"],
            if file_mode {
                "disabled_for_file_mode"
            } else {
                "available"
            }
        );
        assert_eq!(found["graphSummary"]["available"], !file_mode);
        if file_mode {
            assert_eq!(found["graphSummary"]["indexedDocumentCount"], 0);
            assert_eq!(found["graphSummary"]["indexedRelationshipCount"], 0);
        } else {
            assert_eq!(found["graphSummary"]["indexedDocumentCount"], 36);
            assert!(found["graphSummary"]["indexedRelationshipCount"].as_u64() > Some(0));
        }
        for item in items(&found) {
            assert_eq!(item.get("graphContext").is_some(), !file_mode, "{mode}");
            assert_eq!(item["fileKind"], "page");
            assert_eq!(item["fileId"], item["sourceFileId"]);
        }
    }
    // A filter that keeps nothing is a no-candidates success too, not an error.
    let filtered = search(
        kb,
        json!({ "query": "knowledge base", "okfStatus": "draft" }),
    );
    assert_eq!(filtered["searchStatus"], "no_candidates");
    assert_eq!(filtered["nextActions"].as_array().map(Vec::len), Some(5));
}

// ---------------------------------------------------------------------------------------------
// Paging (docs/rules.md#cursors, #order)

/// Pages through a search with `nextCursor` until it is null; checks each page's summary.
fn page_through(kb: &KnowledgeBase, input: &Value) -> Vec<Value> {
    let limit = input["limit"].as_u64().unwrap() as usize;
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    for page_number in 0.. {
        assert!(page_number < 1000, "paging never ends for {input}");
        let mut request = input.clone();
        if let Some(c) = &cursor {
            request["cursor"] = json!(c);
        }
        let page = search(kb, request);
        let page_items = items(&page);
        let summary = &page["resultSummary"];
        assert_eq!(
            summary["hasMore"],
            page["nextCursor"].is_string(),
            "{input}"
        );
        assert_eq!(summary["resultCount"], page_items.len() as u64);
        assert_eq!(page["query"]["cursorProvided"], cursor.is_some());
        assert!(page_items.len() <= limit);
        if page["nextCursor"].is_string() {
            assert_eq!(page_items.len(), limit, "a page before the last is full");
        }
        all.extend(page_items);
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    all
}

fn assert_scores_never_increase(list: &[Value], what: &str) {
    for pair in list.windows(2) {
        let (a, b) = (
            pair[0]["score"].as_f64().unwrap(),
            pair[1]["score"].as_f64().unwrap(),
        );
        assert!(
            b <= a,
            "{what}: score rises from {a} ({}) to {b} ({})",
            pair[0]["path"],
            pair[1]["path"]
        );
    }
}

#[test]
fn pages_concatenate_to_the_single_call() {
    let kb = docs();
    for query in [
        "knowledge base",
        "知识库",
        "OKF规范 graph",
        "agent 接入 tools",
    ] {
        for mode in ["file", "graph", "hybrid"] {
            let single = search(kb, json!({ "query": query, "mode": mode, "limit": 50 }));
            assert_eq!(
                single["nextCursor"],
                Value::Null,
                "{query} fits in one page"
            );
            let reference = items(&single);
            assert!(reference.len() >= 8, "{query} {mode}: {}", reference.len());
            for limit in [1, 3, 7] {
                let input = json!({ "query": query, "mode": mode, "limit": limit });
                let paged = page_through(kb, &input);
                assert_eq!(
                    paged.len(),
                    reference.len(),
                    "{query} {mode} limit {limit}: paged count"
                );
                for (i, (a, b)) in paged.iter().zip(&reference).enumerate() {
                    assert_eq!(a, b, "{query} {mode} limit {limit}: item {i} differs");
                }
                let ids: BTreeSet<&str> = paged
                    .iter()
                    .map(|i| i["fileId"].as_str().unwrap())
                    .collect();
                assert_eq!(ids.len(), paged.len(), "{query} {mode}: a file repeats");
                assert_scores_never_increase(&paged, &format!("{query} {mode} limit {limit}"));
            }
        }
    }
}

#[test]
fn a_cursor_is_bound_to_its_request() {
    let kb = docs();
    let base = json!({ "query": "knowledge base", "limit": 3 });
    let first = search(kb, base.clone());
    let cursor = first["nextCursor"].as_str().unwrap().to_string();
    let second = search(kb, with(&base, json!({ "cursor": cursor })));
    assert_eq!(second["query"]["cursorProvided"], true);
    assert!(paths(&second).iter().all(|p| !paths(&first).contains(p)));
    // The same request with the cursor again gives the same page.
    assert_eq!(
        search(kb, with(&base, json!({ "cursor": cursor })))["items"],
        second["items"]
    );
    // A query that normalizes to the same text is the same request.
    let same = search(
        kb,
        json!({ "query": "  ｋｎｏｗｌｅｄｇｅ \t base ", "limit": "3", "cursor": cursor }),
    );
    assert_eq!(same["items"], second["items"]);

    for change in [
        json!({ "query": "knowledge bases" }),
        json!({ "query": "Knowledge Base" }),
        json!({ "limit": 4 }),
        json!({ "mode": "file" }),
        json!({ "mode": "graph" }),
        json!({ "scope": "metadata" }),
        json!({ "fileKind": "all" }),
        json!({ "graphDepth": 2 }),
        json!({ "graphFanout": 5 }),
        json!({ "okfStatus": "stable" }),
        json!({ "okfTrustTier": "unverified" }),
        json!({ "okfFreshness": "fresh" }),
        json!({ "rerank": true }),
    ] {
        assert_cursor_refused(kb, with(&base, with(&change, json!({ "cursor": cursor }))));
    }
    // A cursor of another tool, a tampered cursor and a non-string cursor.
    let tree = checked_call(
        kb,
        "list_tree",
        json!({ "parentPath": "pages/en", "limit": 1 }),
    )
    .unwrap();
    let tree_cursor = tree["nextCursor"].as_str().unwrap();
    assert_cursor_refused(kb, with(&base, json!({ "cursor": tree_cursor })));
    let mut tampered = cursor.clone().into_bytes();
    tampered[5] ^= 1;
    assert_cursor_refused(
        kb,
        with(
            &base,
            json!({ "cursor": String::from_utf8(tampered).unwrap() }),
        ),
    );
    assert_cursor_refused(kb, with(&base, json!({ "cursor": 3 })));
    assert_cursor_refused(kb, with(&base, json!({ "cursor": "search-cursor-123" })));

    // A cursor made with OKF filters pages only with those filters.
    let filtered = json!({ "query": "knowledge", "limit": 2, "okfStatus": "stable" });
    let page = search(kb, filtered.clone());
    let filtered_cursor = page["nextCursor"].as_str().unwrap();
    search(kb, with(&filtered, json!({ "cursor": filtered_cursor })));
    assert_cursor_refused(
        kb,
        json!({ "query": "knowledge", "limit": 2, "cursor": filtered_cursor }),
    );
}

// ---------------------------------------------------------------------------------------------
// Order: scores, exact-path and exact-title priority (docs/rules.md#fusion, #order, #excerpts)

/// 0 for an exact-path hit, 1 for an exact-title hit, 2 otherwise.
fn priority_class(item: &Value) -> u8 {
    let fields = strings(&item["matchedFields"]);
    if fields.iter().any(|f| f == "path") {
        0
    } else if fields.iter().any(|f| f == "title") {
        1
    } else {
        2
    }
}

#[test]
fn scores_never_increase_and_exact_hits_come_first() {
    let kb = docs();
    for query in [
        "knowledge base",
        "Tools Design",
        "skill design",
        "知识库",
        "OKF规范 graph",
        TOOLS_DESIGN,
        "en/agent-integration/own-agent-client/tools-design.md",
    ] {
        for mode in ["file", "graph", "hybrid"] {
            let out = search(kb, json!({ "query": query, "mode": mode, "limit": 50 }));
            let list = items(&out);
            assert_scores_never_increase(&list, &format!("{query} {mode}"));
            let classes: Vec<u8> = list.iter().map(priority_class).collect();
            assert!(
                classes.windows(2).all(|w| w[0] <= w[1]),
                "{query} {mode}: exact hits are not first: {classes:?}"
            );
            for item in &list {
                assert!(item["score"].as_f64().unwrap() >= 0.0);
                // rules#excerpts: no excerpt for exact-only and graph-only hits.
                let fields = strings(&item["matchedFields"]);
                if !fields.iter().any(|f| f == "content") {
                    assert_eq!(item["sourceExcerpt"], Value::Null, "{query} {mode}");
                }
            }
        }
    }
    // The exact path, with and without `pages/`, puts that page first.
    for query in [
        TOOLS_DESIGN,
        "en/agent-integration/own-agent-client/tools-design.md",
        "EN/Agent-Integration/Own-Agent-Client/Tools-Design.md",
    ] {
        let out = search(kb, json!({ "query": query }));
        let top = &items(&out)[0];
        assert_eq!(top["path"], TOOLS_DESIGN, "{query}");
        assert!(strings(&top["matchedFields"]).contains(&"path".to_string()));
        assert!(strings(&top["evidenceTypes"]).contains(&"path".to_string()));
        // Besides it, only the pages its file name names (its translation) are path hits.
        for item in items(&out).iter().filter(|i| priority_class(i) == 0) {
            let path = item["path"].as_str().unwrap();
            assert!(path.ends_with("/tools-design.md"), "{query}: {path}");
        }
    }
    // The exact title puts the titled page first, whatever the case and spacing.
    for query in ["Tools Design", "tools   design", "TOOLS DESIGN"] {
        let out = search(kb, json!({ "query": query }));
        let top = &items(&out)[0];
        assert_eq!(top["path"], TOOLS_DESIGN, "{query}");
        assert!(strings(&top["matchedFields"]).contains(&"title".to_string()));
    }
    // Exact-only hits carry no excerpt; hits with a content lane do.
    let exact_only = search(kb, json!({ "query": "Tools Design", "scope": "path" }));
    assert_eq!(paths(&exact_only), [TOOLS_DESIGN]);
    let hit = &items(&exact_only)[0];
    assert_eq!(hit["matchedFields"], json!(["title"]));
    assert_eq!(hit["sourceExcerpt"], Value::Null);
    let with_content = search(kb, json!({ "query": "Tools Design", "mode": "file" }));
    for item in items(&with_content) {
        if strings(&item["matchedFields"]).contains(&"content".to_string()) {
            let excerpt = item["sourceExcerpt"].as_str().unwrap_or_default();
            assert!(!excerpt.is_empty(), "{}", item["path"]);
            assert!(excerpt.chars().count() <= 1200);
        }
        assert_eq!(item.get("graphContext"), None);
    }
}

// ---------------------------------------------------------------------------------------------
// OKF filters (docs/rules.md#okf), over plain-notes with TODAY = 2026-09-01

const GS: &str = "pages/getting-started.md";
const INSTALL: &str = "pages/guides/install.md";
const OTHER: &str = "pages/notes/Other Note.md";
const CAFE: &str = "pages/notes/Café.md";
const BILLING: &str = "pages/zh/账单提醒.md";
const OKF: &str = "pages/zh/规范/OKF规范说明.md";

/// (page, effective status, trust tier, freshness on 2026-09-01); `None` where the value is
/// missing or malformed.
type PageSignals = (
    &'static str,
    Option<&'static str>,
    Option<&'static str>,
    Option<&'static str>,
);

/// What the fixture's frontmatter says, worked out by hand.
const EXPECTED_SIGNALS: [PageSignals; 6] = [
    // status stable, a human and a bot verification, stale_after 2027-01-01.
    (GS, Some("stable"), Some("human-reviewed"), Some("fresh")),
    // status draft, verified by ci-bot, stale_after 2026-03-01.
    (
        INSTALL,
        Some("draft"),
        Some("machine-confirmed"),
        Some("stale"),
    ),
    // status "archived", a verification with an empty `by`, stale_after 2026-13-45.
    (OTHER, None, None, None),
    // no frontmatter at all.
    (CAFE, Some("stable"), Some("unverified"), None),
    // status deprecated, not verified, stale_after == today (stale).
    (
        BILLING,
        Some("deprecated"),
        Some("unverified"),
        Some("stale"),
    ),
    // no status, not verified, no stale_after.
    (OKF, Some("stable"), Some("unverified"), None),
];

#[test]
fn okf_filters_keep_exactly_the_matching_pages() {
    assert_eq!(common::TODAY, "2026-09-01");
    let kb = notes();
    for mode in ["file", "hybrid"] {
        let base = json!({ "query": "handbook", "mode": mode, "limit": 50 });
        let unfiltered = items(&search(kb, base.clone()));
        let mut all_paths: Vec<String> = unfiltered
            .iter()
            .map(|i| i["path"].as_str().unwrap().to_string())
            .collect();
        all_paths.sort();
        let mut fixture_paths: Vec<String> =
            EXPECTED_SIGNALS.iter().map(|e| e.0.to_string()).collect();
        fixture_paths.sort();
        assert_eq!(all_paths, fixture_paths, "`handbook` finds every page");
        // The signals each result carries agree with the hand-worked table.
        for (path, status, tier, freshness) in EXPECTED_SIGNALS {
            let item = unfiltered.iter().find(|i| i["path"] == path).unwrap();
            let signals = &item["okfSignals"];
            assert_eq!(signals["effectiveStatus"].as_str(), status, "{path}");
            assert_eq!(signals["trustTier"].as_str(), tier, "{path}");
            let stale = freshness.map(|f| f == "stale");
            assert_eq!(signals["isStale"].as_bool(), stale, "{path}");
        }

        let statuses = [None, Some("draft"), Some("stable"), Some("deprecated")];
        let tiers = [
            None,
            Some("unverified"),
            Some("machine-confirmed"),
            Some("human-reviewed"),
        ];
        let freshnesses = [None, Some("fresh"), Some("stale")];
        let mut nonempty = 0;
        for status in statuses {
            for tier in tiers {
                for freshness in freshnesses {
                    let input = with(
                        &base,
                        json!({
                            "okfStatus": status, "okfTrustTier": tier, "okfFreshness": freshness
                        }),
                    );
                    let out = search(kb, input.clone());
                    assert_eq!(out["query"]["okfStatus"].as_str(), status);
                    assert_eq!(out["query"]["okfTrustTier"].as_str(), tier);
                    assert_eq!(out["query"]["okfFreshness"].as_str(), freshness);
                    let mut got = paths(&out);
                    got.sort();

                    // Expected from the signals of the unfiltered results…
                    let mut from_signals: Vec<String> = unfiltered
                        .iter()
                        .filter(|i| {
                            let s = &i["okfSignals"];
                            status.is_none_or(|v| s["effectiveStatus"] == v)
                                && tier.is_none_or(|v| s["trustTier"] == v)
                                && freshness
                                    .is_none_or(|v| s["isStale"].as_bool() == Some(v == "stale"))
                        })
                        .map(|i| i["path"].as_str().unwrap().to_string())
                        .collect();
                    from_signals.sort();
                    // …and from the hand-worked table.
                    let mut from_fixture: Vec<String> = EXPECTED_SIGNALS
                        .iter()
                        .filter(|(_, s, t, f)| {
                            status.is_none_or(|v| *s == Some(v))
                                && tier.is_none_or(|v| *t == Some(v))
                                && freshness.is_none_or(|v| *f == Some(v))
                        })
                        .map(|e| e.0.to_string())
                        .collect();
                    from_fixture.sort();
                    assert_eq!(got, from_signals, "{input}");
                    assert_eq!(got, from_fixture, "{input}");
                    if got.is_empty() {
                        assert_eq!(out["searchStatus"], "no_candidates", "{input}");
                    } else {
                        nonempty += 1;
                    }
                    // Every kept page satisfies each filter through its own signals.
                    for item in items(&out) {
                        let s = &item["okfSignals"];
                        if let Some(v) = status {
                            assert_eq!(s["effectiveStatus"], v);
                        }
                        if let Some(v) = tier {
                            assert_eq!(s["trustTier"], v);
                        }
                        if let Some(v) = freshness {
                            assert_eq!(s["isStale"], v == "stale");
                            assert!(s["staleAfter"].is_string());
                        }
                    }
                }
            }
        }
        assert!(
            nonempty >= 12,
            "{mode}: only {nonempty} filter sets kept pages"
        );
    }

    // A few combinations spelled out.
    let found = |filters: Value| {
        let mut got = paths(&search(
            kb,
            with(&json!({ "query": "handbook", "limit": 50 }), filters),
        ));
        got.sort();
        got
    };
    let sorted = |list: &[&str]| {
        let mut v: Vec<String> = list.iter().map(|s| s.to_string()).collect();
        v.sort();
        v
    };
    // Pages without a valid stale_after (Other Note, Café, OKF) are dropped by both values.
    assert_eq!(
        found(json!({ "okfFreshness": "stale" })),
        sorted(&[INSTALL, BILLING])
    );
    assert_eq!(found(json!({ "okfFreshness": "fresh" })), sorted(&[GS]));
    assert_eq!(
        found(json!({ "okfStatus": "stable" })),
        sorted(&[GS, CAFE, OKF])
    );
    assert_eq!(
        found(json!({ "okfStatus": "stable", "okfTrustTier": "unverified" })),
        sorted(&[CAFE, OKF])
    );
    assert_eq!(
        found(
            json!({ "okfStatus": "stable", "okfTrustTier": "unverified", "okfFreshness": "fresh" })
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        found(json!({ "okfTrustTier": "unverified", "okfFreshness": "stale" })),
        sorted(&[BILLING])
    );
}

// ---------------------------------------------------------------------------------------------
// fileKind and scope (docs/rules.md#tool-inputs, #fusion)

#[test]
fn file_kind_all_and_page_give_the_same_items() {
    let kb = docs();
    for query in ["knowledge base", "知识库", "Tools Design", "graph"] {
        for mode in ["file", "hybrid"] {
            let page = search(
                kb,
                json!({ "query": query, "mode": mode, "fileKind": "page", "limit": 50 }),
            );
            let all = search(
                kb,
                json!({ "query": query, "mode": mode, "fileKind": "all", "limit": 50 }),
            );
            assert_eq!(page["query"]["fileKind"], "page");
            assert_eq!(all["query"]["fileKind"], "all");
            assert!(!items(&page).is_empty(), "{query}");
            assert_eq!(page["items"], all["items"], "{query} {mode}");
        }
    }
}

#[test]
fn scope_path_runs_only_the_exact_lanes() {
    let kb = docs();
    for mode in ["file", "graph", "hybrid"] {
        for (query, expected, field) in [
            (TOOLS_DESIGN, vec![TOOLS_DESIGN], "path"),
            (
                "en/agent-integration/own-agent-client/tools-design.md",
                vec![TOOLS_DESIGN],
                "path",
            ),
            ("Tools Design", vec![TOOLS_DESIGN], "title"),
            // Words of a path or title that are not the whole of it match nothing here.
            ("tools-design.md", vec![], ""),
            ("knowledge base", vec![], ""),
        ] {
            let out = search(kb, json!({ "query": query, "scope": "path", "mode": mode }));
            assert_eq!(
                out["evidenceStatus"]["completedFamilies"],
                json!(["exact_path", "exact_title"]),
                "{query} {mode}"
            );
            assert_eq!(paths(&out), expected, "{query} {mode}");
            for item in items(&out) {
                assert_eq!(item["matchedFields"], json!([field]));
                assert_eq!(item["evidenceTypes"], json!([field]));
                assert_eq!(item["sourceExcerpt"], Value::Null);
                assert_eq!(item["matchType"], "file_direct");
            }
        }
    }
}

#[test]
fn scope_metadata_reports_metadata_matches() {
    let kb = docs();
    for query in ["tools design", "知识库", "graph"] {
        for mode in ["file", "hybrid"] {
            let out = search(
                kb,
                json!({ "query": query, "scope": "metadata", "mode": mode, "limit": 50 }),
            );
            assert_eq!(
                out["evidenceStatus"]["completedFamilies"],
                json!(["lexical"]),
                "{query} {mode}"
            );
            let list = items(&out);
            assert!(!list.is_empty(), "{query} {mode}");
            for item in &list {
                assert_eq!(item["matchedFields"], json!(["metadata"]));
                assert_eq!(item["evidenceTypes"], json!(["metadata"]));
                assert_eq!(item["matchType"], "file_direct");
            }
            assert_scores_never_increase(&list, &format!("{query} metadata {mode}"));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Passages: a long page's excerpt comes from its best heading section

/// A plain folder with one long page of three sections (the last two score the same for
/// "zebra": same length, same counts) and a page without headings.
fn sectioned_bundle() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let filler = |word: &str| vec![word; 90].join(" ");
    let page = format!(
        "# Field notes\n\n{}\n\n## Stripes\n\nzebra {}\n\n## Manes\n\nzebra {}\n",
        filler("savanna"),
        filler("alpha"),
        filler("omega"),
    );
    std::fs::write(dir.path().join("notes.md"), page).unwrap();
    std::fs::write(
        dir.path().join("short.md"),
        "# Short\n\nA zebra crossing, and nothing else.\n",
    )
    .unwrap();
    dir
}

#[test]
fn excerpts_come_from_the_best_section_and_equal_sections_from_the_first() {
    let bundle = sectioned_bundle();
    let opened = common::open_bundle(bundle.path());
    for mode in ["file", "hybrid"] {
        let out = search(&opened.kb, json!({ "query": "zebra", "mode": mode }));
        let notes = items(&out)
            .into_iter()
            .find(|i| i["path"] == "pages/notes.md")
            .unwrap_or_else(|| panic!("{mode}: {out}"));
        let excerpt = notes["sourceExcerpt"].as_str().unwrap();
        // The first of the two equal sections, not the page's first section nor the other one.
        assert!(excerpt.contains("zebra alpha"), "{mode}: {excerpt}");
        assert!(!excerpt.contains("omega"), "{mode}: {excerpt}");
        assert!(!excerpt.contains("savanna"), "{mode}: {excerpt}");
        // A page of one section is its own passage.
        let short = items(&out)
            .into_iter()
            .find(|i| i["path"] == "pages/short.md")
            .unwrap();
        assert!(short["sourceExcerpt"].as_str().unwrap().contains("zebra"));
    }
}
