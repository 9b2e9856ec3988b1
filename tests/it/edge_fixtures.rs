//! Behaviour over small hand-made fixtures and over folders generated at test time: Chinese
//! search, plain-folder relations and their virtual `_graph/by-file` records, frontmatter that is
//! broken or awkward, invalid UTF-8 in contents and file names, empty bundles, the legacy
//! `formatVersion: 1` layout, and OKF signals and filters.
//!
//! Fixtures (described here, since every `.md` file of a plain folder is a page; each folder also
//! has a hidden `.note.txt` that kbtools does not ingest):
//! * `fixtures/plain-notes/`: six pages in English and Chinese with OKF frontmatter, relative,
//!   `../` and percent-encoded Markdown links, a `[[Other Note]]` wiki link, a frontmatter
//!   `related:` entry and one link to a missing file. Every page contains "handbook".
//! * `fixtures/bad-frontmatter/`: invalid YAML (unclosed bracket on line 3), an empty `---\n---`
//!   block, a page without a trailing newline, an escaped heading `# DEV\_234`, a frontmatter
//!   sequence and an opening fence that never closes.
//!
//! Every tool call goes through `common::checked_call`, which validates the output (or the error
//! envelope) against the contract schema.

use crate::common;

use std::path::Path;

use common::{checked_call, open_bundle, open_fixture};
use kbtools::index::{self, BuildOptions};
use kbtools::ingest::bundle::Diagnostic;
use kbtools::kb::KnowledgeBase;
use serde_json::{json, Value};

const GS: &str = "pages/getting-started.md";
const INSTALL: &str = "pages/guides/install.md";
const OTHER: &str = "pages/notes/Other Note.md";
const CAFE: &str = "pages/notes/Café.md";
const BILLING: &str = "pages/zh/账单提醒.md";
const OKF: &str = "pages/zh/规范/OKF规范说明.md";
const ALL_PAGES: [&str; 6] = [GS, INSTALL, CAFE, OTHER, OKF, BILLING];

fn items(v: &Value) -> Vec<Value> {
    v["items"].as_array().cloned().unwrap_or_default()
}

fn paths_of(v: &Value) -> Vec<String> {
    items(v)
        .iter()
        .map(|i| i["path"].as_str().unwrap().to_string())
        .collect()
}

fn sorted(mut list: Vec<String>) -> Vec<String> {
    list.sort();
    list
}

fn owned(list: &[&str]) -> Vec<String> {
    sorted(list.iter().map(|s| s.to_string()).collect())
}

fn search(kb: &KnowledgeBase, input: Value) -> Value {
    checked_call(kb, "search_files", input).unwrap()
}

fn read_path(kb: &KnowledgeBase, path: &str) -> Value {
    checked_call(kb, "read_file", json!({ "path": path }))
        .unwrap_or_else(|e| panic!("read_file {path:?} failed: {e}"))
}

fn error_code(result: Result<Value, kbtools::ToolError>) -> &'static str {
    result.expect_err("expected an error").code.as_str()
}

fn diagnostics_for<'a>(diagnostics: &'a [Diagnostic], path: &str) -> Vec<&'a Diagnostic> {
    diagnostics.iter().filter(|d| d.path == path).collect()
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Chinese search

#[test]
fn chinese_query_finds_the_renewal_notice_first() {
    let opened = open_fixture("plain-notes");
    let kb = &opened.kb;
    for mode in ["file", "hybrid"] {
        let out = search(kb, json!({ "query": "续费", "mode": mode }));
        assert_eq!(out["searchStatus"], "ok", "{mode}");
        let first = &items(&out)[0];
        assert_eq!(
            first["path"],
            BILLING,
            "{mode}: {}",
            paths_of(&out).join(", ")
        );
        assert!(
            first["sourceExcerpt"].as_str().unwrap().contains("续费"),
            "{mode}: excerpt {}",
            first["sourceExcerpt"]
        );
        let content = read_path(kb, first["path"].as_str().unwrap());
        assert!(content["content"]
            .as_str()
            .unwrap()
            .contains("知识库的续费通知"));
        // The distractor page mentions 续费 once in passing: found, but after.
        assert!(paths_of(&out).contains(&OKF.to_string()), "{mode}");
    }
}

#[test]
fn mixed_latin_han_query_finds_the_okf_page() {
    let opened = open_fixture("plain-notes");
    let kb = &opened.kb;
    for mode in ["file", "hybrid"] {
        let out = search(kb, json!({ "query": "OKF规范", "mode": mode }));
        let first = &items(&out)[0];
        assert_eq!(first["path"], OKF, "{mode}: {}", paths_of(&out).join(", "));
        assert_eq!(first["title"], "OKF 规范说明");
        assert!(first["matchedFields"]
            .as_array()
            .unwrap()
            .contains(&json!("content")));
        let content = read_path(kb, OKF);
        assert!(content["content"].as_str().unwrap().contains("OKF规范"));
    }
    // In file mode no neighbour is pulled in: only the page holding the text matches.
    let out = search(kb, json!({ "query": "OKF规范", "mode": "file" }));
    assert_eq!(paths_of(&out), vec![OKF.to_string()]);
}

// ---------------------------------------------------------------------------------------------
// Plain-folder relations (rules#plain-folders)

/// (path, direction, reason) of every read_related item.
/// The items of `read_related` for `page` (checked to come in the byte order of their
/// `sourceFileId`, as the API orders them), in path order.
fn related(kb: &KnowledgeBase, page: &str) -> Vec<(String, String, String)> {
    let out = checked_call(kb, "read_related", json!({ "fileId": page })).unwrap();
    let ids: Vec<String> = items(&out)
        .iter()
        .map(|i| i["sourceFileId"].as_str().unwrap().to_string())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let mut out: Vec<(String, String, String)> = items(&out)
        .iter()
        .map(|i| {
            assert_eq!(i["relationType"], "references");
            assert_eq!(i["relationshipDepth"], 1);
            (
                i["path"].as_str().unwrap().to_string(),
                i["direction"].as_str().unwrap().to_string(),
                i["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

fn rel(path: &str, direction: &str, reason: &str) -> (String, String, String) {
    (path.to_string(), direction.to_string(), reason.to_string())
}

#[test]
fn plain_folder_relations_have_direction_and_reason() {
    let opened = open_fixture("plain-notes");
    let kb = &opened.kb;
    let md = |holder: &str, other: &str| {
        format!("{holder} contains an explicit Markdown reference to {other}.")
    };
    // Relative link, `[[Other Note]]`, a percent-encoded Chinese link (answered by a `../` link
    // back, so bidirectional), and an incoming link from a page two levels down.
    assert_eq!(
        related(kb, GS),
        vec![
            rel(
                INSTALL,
                "bidirectional",
                &md("Getting Started", "Installation Guide")
            ),
            rel(OTHER, "outgoing", &md("Getting Started", "Other Note")),
            rel(OKF, "incoming", &md("OKF 规范说明", "Getting Started")),
            rel(BILLING, "bidirectional", &md("Getting Started", "账单提醒")),
        ]
    );
    // `../notes/Other%20Note.md#background`: percent-decoded, anchor dropped.
    assert_eq!(
        related(kb, INSTALL),
        vec![
            rel(
                GS,
                "bidirectional",
                &md("Installation Guide", "Getting Started")
            ),
            rel(OTHER, "outgoing", &md("Installation Guide", "Other Note")),
        ]
    );
    assert_eq!(
        related(kb, OTHER),
        vec![
            rel(GS, "incoming", &md("Getting Started", "Other Note")),
            rel(INSTALL, "incoming", &md("Installation Guide", "Other Note")),
        ]
    );
    // The frontmatter `related: [../账单提醒.md]` entry: a metadata reason, both sides.
    assert_eq!(
        related(kb, OKF),
        vec![
            rel(GS, "outgoing", &md("OKF 规范说明", "Getting Started")),
            rel(
                BILLING,
                "outgoing",
                "OKF 规范说明 metadata explicitly references 账单提醒."
            ),
        ]
    );
    assert_eq!(
        related(kb, BILLING),
        vec![
            rel(GS, "bidirectional", &md("账单提醒", "Getting Started")),
            rel(
                OKF,
                "incoming",
                "OKF 规范说明 metadata explicitly references 账单提醒."
            ),
        ]
    );
    assert!(related(kb, CAFE).is_empty());

    // The link to a file that does not exist is a diagnostic, not a relation.
    let missing: Vec<_> = diagnostics_for(&opened.report.diagnostics, GS)
        .into_iter()
        .filter(|d| d.message.contains("archive/old-plan.md"))
        .collect();
    assert_eq!(missing.len(), 1, "{:?}", opened.report.diagnostics);
    assert!(missing[0].message.contains("does not resolve"));
    assert_eq!(opened.report.manifest.counts.source_pages, 6);
}

#[test]
fn expand_graph_walks_plain_relations_and_every_graph_path_opens() {
    let opened = open_fixture("plain-notes");
    let kb = &opened.kb;
    let out = checked_call(
        kb,
        "expand_graph",
        json!({ "fileId": OTHER, "depth": 2, "fanout": 25 }),
    )
    .unwrap();
    let reached: Vec<(String, u64)> = out["relationships"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["path"].as_str().unwrap().to_string(),
                r["relationshipDepth"].as_u64().unwrap(),
            )
        })
        .collect();
    // Depth 1: the two pages that link to it; depth 2: their other neighbours, each once.
    for (path, depth) in [(GS, 1), (INSTALL, 1), (OKF, 2), (BILLING, 2)] {
        assert!(
            reached.contains(&(path.to_string(), depth)),
            "{path} at depth {depth} missing from {reached:?}"
        );
    }
    assert!(!reached.iter().any(|(p, _)| p == OTHER || p == CAFE));
    let graph_paths = out["graphPaths"].as_array().unwrap();
    assert_eq!(graph_paths[0], "_graph/by-file/notes/Other Note.json");
    for path in graph_paths {
        let read = read_path(kb, path.as_str().unwrap());
        let record: Value = serde_json::from_str(read["content"].as_str().unwrap()).unwrap();
        assert_eq!(record["formatVersion"], 2);
    }
}

/// Checks rules#graph-refs-open over every result of a set of searches and every expansion: each
/// `graphRef` and `graphPaths` entry opens with read_file {path}, and the record it opens is the
/// right page's.
fn assert_every_graph_ref_opens(kb: &KnowledgeBase, queries: &[&str], pages: &[&str]) -> usize {
    let mut checked = 0;
    for query in queries {
        for mode in ["graph", "hybrid"] {
            for depth in [0, 1, 2] {
                let out = search(
                    kb,
                    json!({ "query": query, "mode": mode, "graphDepth": depth, "limit": 50 }),
                );
                for item in items(&out) {
                    let context = &item["graphContext"];
                    let graph_ref = context["graphRef"].as_str().unwrap();
                    let read = read_path(kb, graph_ref);
                    let record: Value =
                        serde_json::from_str(read["content"].as_str().unwrap()).unwrap();
                    assert_eq!(record["path"], item["path"], "{graph_ref}");
                    assert_eq!(read["file"]["fileKind"], "graph_index");
                    for path in context["graphPaths"].as_array().unwrap() {
                        read_path(kb, path.as_str().unwrap());
                        checked += 1;
                    }
                    checked += 1;
                }
            }
        }
    }
    for page in pages {
        for depth in [0, 1, 2] {
            let out = checked_call(
                kb,
                "expand_graph",
                json!({ "fileId": page, "depth": depth }),
            )
            .unwrap();
            for path in out["graphPaths"].as_array().unwrap() {
                read_path(kb, path.as_str().unwrap());
                checked += 1;
            }
        }
    }
    checked
}

#[test]
fn every_graph_ref_and_graph_path_opens_in_a_plain_folder() {
    let opened = open_fixture("plain-notes");
    let checked = assert_every_graph_ref_opens(
        &opened.kb,
        &["handbook", "续费", "OKF规范", "Café", "Other Note"],
        &ALL_PAGES,
    );
    assert!(checked > 50, "only {checked} graph paths checked");
}

/// A plain docs folder with `index.md` pages: their per-file records are
/// `_graph/by-file/**/index.json`, a name the bundle path table does not allow; they still open.
#[test]
fn graph_refs_of_index_md_pages_open() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        &root.join("index.md"),
        b"# Home\n\nStart at [the guide](guide/index.md) or [faq](faq.md). docshome\n",
    );
    write(
        &root.join("guide/index.md"),
        b"# Guide Home\n\nBack [home](../index.md). docshome\n",
    );
    write(
        &root.join("faq.md"),
        b"# FAQ\n\nSee [home](index.md). docshome\n",
    );
    let opened = open_bundle(root);
    let kb = &opened.kb;
    let out = search(kb, json!({ "query": "docshome", "limit": 50 }));
    assert_eq!(
        sorted(paths_of(&out)),
        owned(&["pages/faq.md", "pages/guide/index.md", "pages/index.md"])
    );
    let checked = assert_every_graph_ref_opens(
        kb,
        &["docshome", "Home"],
        &["pages/index.md", "pages/guide/index.md", "pages/faq.md"],
    );
    assert!(checked >= 10);
    let record = read_path(kb, "_graph/by-file/index.json");
    assert!(record["content"]
        .as_str()
        .unwrap()
        .contains("\"path\":\"pages/index.md\""));
    // Only the exact virtual record opens: other index.json paths stay unsupported.
    for path in [
        "_graph/by-file/nope/index.json",
        "_index/by-file/index.json",
    ] {
        let err = checked_call(kb, "read_file", json!({ "path": path })).unwrap_err();
        assert_eq!(err.code.as_str(), "VALIDATION_ERROR", "{path}");
        assert_eq!(err.details.unwrap()["field"], "path");
    }
}

#[test]
fn virtual_graph_records_are_listed_and_hold_the_relations() {
    let opened = open_fixture("plain-notes");
    let kb = &opened.kb;

    let root = checked_call(kb, "list_tree", json!({})).unwrap();
    assert_eq!(paths_of(&root), vec!["_graph", "pages"]);

    let by_file = checked_call(kb, "list_tree", json!({ "parentPath": "_graph/by-file" })).unwrap();
    let entries = items(&by_file);
    let gs_entry = entries
        .iter()
        .find(|e| e["path"] == "_graph/by-file/getting-started.json")
        .expect("the per-file record of getting-started is listed");
    assert_eq!(gs_entry["entryType"], "file");
    assert_eq!(gs_entry["fileKind"], "graph_index");
    assert!(gs_entry["sourceFileId"].is_null());
    let nested = checked_call(
        kb,
        "list_tree",
        json!({ "parentPath": "_graph/by-file/zh/规范" }),
    )
    .unwrap();
    assert_eq!(
        paths_of(&nested),
        vec!["_graph/by-file/zh/规范/OKF规范说明.json"]
    );
    // Café has no relations: its record is readable but not listed.
    let notes = checked_call(
        kb,
        "list_tree",
        json!({ "parentPath": "_graph/by-file/notes" }),
    )
    .unwrap();
    assert_eq!(
        paths_of(&notes),
        vec!["_graph/by-file/notes/Other Note.json"]
    );
    let cafe = read_path(kb, "_graph/by-file/notes/Café.json");
    let cafe: Value = serde_json::from_str(cafe["content"].as_str().unwrap()).unwrap();
    assert_eq!(cafe["relationships"], json!([]));

    // The listed record opens by id and by path, and is the page's relations in bundle form.
    let id = gs_entry["fileId"].as_str().unwrap();
    let by_id = checked_call(kb, "read_file", json!({ "fileId": id })).unwrap();
    let by_path = read_path(kb, "_graph/by-file/getting-started.json");
    assert_eq!(by_id, by_path);
    assert_eq!(
        by_path["file"]["contentType"],
        "application/json; charset=utf-8"
    );
    let content = by_path["content"].as_str().unwrap();
    assert_eq!(
        by_path["file"]["sizeBytes"].as_u64().unwrap(),
        content.len() as u64
    );
    let record: Value = serde_json::from_str(content).unwrap();
    assert_eq!(record["formatVersion"], 2);
    assert_eq!(record["path"], GS);
    let from_record: Vec<(String, String, String)> = record["relationships"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!(r["relationType"], "references");
            (
                r["targetPath"].as_str().unwrap().to_string(),
                r["direction"].as_str().unwrap().to_string(),
                r["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(from_record, related(kb, GS));
    let billing = record["relationships"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["targetPath"] == BILLING)
        .unwrap();
    assert_eq!(billing["targetTitle"], "账单提醒");

    let detail = checked_call(kb, "get_file", json!({ "fileId": id })).unwrap();
    assert_eq!(detail["file"]["fileKind"], "graph_index");
    assert_eq!(detail["file"]["deletable"], false);
    assert_eq!(detail["file"]["frontmatter"], json!({}));
    // Not a source page: no related files, no expansion.
    assert_eq!(
        error_code(checked_call(kb, "read_related", json!({ "fileId": id }))),
        "CONFLICT"
    );
    assert_eq!(
        error_code(checked_call(kb, "expand_graph", json!({ "fileId": id }))),
        "NOT_FOUND"
    );
}

// ---------------------------------------------------------------------------------------------
// OKF signals and filters (docs/rules.md#okf, TODAY = 2026-09-01)

#[test]
fn okf_signals_follow_the_frontmatter() {
    assert_eq!(common::TODAY, "2026-09-01");
    let opened = open_fixture("plain-notes");
    let kb = &opened.kb;
    let expected = [
        (
            GS,
            json!({
                "effectiveStatus": "stable", "trustTier": "human-reviewed",
                "isStale": false, "staleAfter": "2027-01-01",
                "generatedAt": null, "generatedAtSource": null,
                "latestVerifiedAt": "2026-05-01T08:00:00.000Z", "sourceCount": 0
            }),
        ),
        (
            INSTALL,
            json!({
                "effectiveStatus": "draft", "trustTier": "machine-confirmed",
                "isStale": true, "staleAfter": "2026-03-01",
                "generatedAt": null, "generatedAtSource": null,
                "latestVerifiedAt": "2026-02-01T00:00:00.000Z", "sourceCount": 0
            }),
        ),
        (
            // status "archived", a verified entry with an empty `by`, stale_after 2026-13-45.
            OTHER,
            json!({
                "effectiveStatus": null, "trustTier": null,
                "isStale": null, "staleAfter": null,
                "generatedAt": null, "generatedAtSource": null,
                "latestVerifiedAt": null, "sourceCount": 0
            }),
        ),
        (
            // stale_after equal to today counts as stale.
            BILLING,
            json!({
                "effectiveStatus": "deprecated", "trustTier": "unverified",
                "isStale": true, "staleAfter": "2026-09-01",
                "generatedAt": null, "generatedAtSource": null,
                "latestVerifiedAt": null, "sourceCount": 0
            }),
        ),
        (
            OKF,
            json!({
                "effectiveStatus": "stable", "trustTier": "unverified",
                "isStale": null, "staleAfter": null,
                "generatedAt": null, "generatedAtSource": null,
                "latestVerifiedAt": null, "sourceCount": 0
            }),
        ),
        (
            CAFE,
            json!({
                "effectiveStatus": "stable", "trustTier": "unverified",
                "isStale": null, "staleAfter": null,
                "generatedAt": null, "generatedAtSource": null,
                "latestVerifiedAt": null, "sourceCount": 0
            }),
        ),
    ];
    let all = search(
        kb,
        json!({ "query": "handbook", "mode": "file", "limit": 50 }),
    );
    for (page, signals) in expected {
        let detail = checked_call(kb, "get_file", json!({ "fileId": page })).unwrap();
        assert_eq!(detail["file"]["okfSignals"], signals, "{page}");
        let read = read_path(kb, page);
        assert_eq!(read["file"]["okfSignals"], signals, "{page}");
        let hit = items(&all)
            .into_iter()
            .find(|i| i["path"] == page)
            .unwrap_or_else(|| panic!("{page} not found by `handbook`"));
        assert_eq!(hit["okfSignals"], signals, "{page}");
    }

    let gs = checked_call(kb, "get_file", json!({ "fileId": GS })).unwrap();
    assert_eq!(gs["file"]["title"], "Getting Started");
    assert_eq!(
        gs["file"]["description"],
        "First steps with the team handbook."
    );
    assert_eq!(gs["file"]["tags"], json!(["onboarding", "handbook"]));
    assert_eq!(gs["file"]["frontmatter"]["stale_after"], "2027-01-01");
    assert_eq!(gs["file"]["fileKind"], "page");
    assert_eq!(gs["file"]["deletable"], true);
    // A scalar `tags` gives [], and the frontmatter keeps the value as written.
    let other = checked_call(kb, "get_file", json!({ "fileId": OTHER })).unwrap();
    assert_eq!(other["file"]["tags"], json!([]));
    assert_eq!(other["file"]["frontmatter"]["tags"], "handbook");
    assert_eq!(other["file"]["frontmatter"]["status"], "archived");
    let cafe = checked_call(kb, "get_file", json!({ "fileId": CAFE })).unwrap();
    assert_eq!(cafe["file"]["title"], "Café");
    assert_eq!(cafe["file"]["frontmatter"], json!({}));
}

#[test]
fn okf_filters_keep_and_drop_the_right_pages() {
    let opened = open_fixture("plain-notes");
    let kb = &opened.kb;
    let found = |filters: Value| {
        let mut input = json!({ "query": "handbook", "mode": "file", "limit": 50 });
        for (k, v) in filters.as_object().unwrap() {
            input[k] = v.clone();
        }
        let out = search(kb, input);
        for (k, v) in filters.as_object().unwrap() {
            assert_eq!(&out["query"][k], v, "the query context echoes {k}");
        }
        sorted(paths_of(&out))
    };
    assert_eq!(found(json!({})), owned(&ALL_PAGES));
    // Status: a missing status is stable; an invalid one ("archived") matches no status.
    assert_eq!(found(json!({ "okfStatus": "draft" })), owned(&[INSTALL]));
    assert_eq!(
        found(json!({ "okfStatus": "stable" })),
        owned(&[GS, OKF, CAFE])
    );
    assert_eq!(
        found(json!({ "okfStatus": "deprecated" })),
        owned(&[BILLING])
    );
    // Freshness: pages without a valid stale_after are dropped by both values.
    assert_eq!(
        found(json!({ "okfFreshness": "stale" })),
        owned(&[INSTALL, BILLING])
    );
    assert_eq!(found(json!({ "okfFreshness": "fresh" })), owned(&[GS]));
    // Trust tier: a malformed `verified` matches no tier.
    assert_eq!(
        found(json!({ "okfTrustTier": "human-reviewed" })),
        owned(&[GS])
    );
    assert_eq!(
        found(json!({ "okfTrustTier": "machine-confirmed" })),
        owned(&[INSTALL])
    );
    assert_eq!(
        found(json!({ "okfTrustTier": "unverified" })),
        owned(&[BILLING, OKF, CAFE])
    );
    // Filters combine with AND.
    assert_eq!(
        found(
            json!({ "okfStatus": "draft", "okfFreshness": "stale", "okfTrustTier": "machine-confirmed" })
        ),
        owned(&[INSTALL])
    );
    assert_eq!(
        found(json!({ "okfStatus": "deprecated", "okfFreshness": "stale" })),
        owned(&[BILLING])
    );
    let none = search(
        kb,
        json!({ "query": "handbook", "okfStatus": "stable", "okfFreshness": "stale" }),
    );
    assert_eq!(none["searchStatus"], "no_candidates");
    assert_eq!(none["items"], json!([]));
    // Filters also hold in graph-bearing modes: no neighbour sneaks in.
    let hybrid = search(
        kb,
        json!({ "query": "quartzlantern", "mode": "hybrid", "okfStatus": "draft" }),
    );
    assert_eq!(paths_of(&hybrid), vec![INSTALL.to_string()]);
    let err = checked_call(
        kb,
        "search_files",
        json!({ "query": "handbook", "okfFreshness": "rotten" }),
    )
    .unwrap_err();
    assert_eq!(
        err.details.unwrap()["code"],
        "INVALID_FILE_SEARCH_OKF_FRESHNESS"
    );
}

// ---------------------------------------------------------------------------------------------
// Awkward frontmatter

#[test]
fn invalid_frontmatter_is_reported_with_a_line_and_the_page_still_served() {
    let opened = open_fixture("bad-frontmatter");
    let kb = &opened.kb;
    let diagnostics = &opened.report.diagnostics;

    // Invalid YAML (unclosed `[` on line 3 of the file): one diagnostic naming the file and a
    // line inside the block.
    let broken = diagnostics_for(diagnostics, "broken-yaml.md");
    assert_eq!(broken.len(), 1, "{diagnostics:?}");
    assert!(broken[0].message.contains("invalid frontmatter"));
    let line = broken[0].line.expect("a line number");
    assert!((3..=5).contains(&line), "line {line}");
    assert!(broken[0]
        .to_string()
        .starts_with(&format!("broken-yaml.md:{line}: ")));

    let page = read_path(kb, "pages/broken-yaml.md");
    let on_disk =
        std::fs::read_to_string(common::fixture("bad-frontmatter/broken-yaml.md")).unwrap();
    assert_eq!(page["content"], on_disk.as_str());
    assert_eq!(page["file"]["frontmatter"], json!({}));
    assert_eq!(page["file"]["title"], "Broken YAML page");
    assert_eq!(page["file"]["okfSignals"]["effectiveStatus"], "stable");
    let hits = search(kb, json!({ "query": "zebrafishcalibration" }));
    assert_eq!(paths_of(&hits), vec!["pages/broken-yaml.md"]);
    // The raw frontmatter text stays searchable as metadata.
    let meta = search(kb, json!({ "query": "bracket", "scope": "metadata" }));
    assert_eq!(paths_of(&meta), vec!["pages/broken-yaml.md"]);

    // A frontmatter that is a sequence, not a mapping.
    let sequence = diagnostics_for(diagnostics, "sequence.md");
    assert_eq!(sequence.len(), 1, "{diagnostics:?}");
    assert!(sequence[0].message.contains("not a mapping"));
    assert!(sequence[0].line.is_some());
    let page = read_path(kb, "pages/sequence.md");
    assert_eq!(page["file"]["frontmatter"], json!({}));
    assert_eq!(page["file"]["title"], "Sequence Frontmatter");

    // No other file has a diagnostic.
    for d in diagnostics {
        assert!(
            d.path == "broken-yaml.md" || d.path == "sequence.md",
            "unexpected diagnostic {d}"
        );
    }
}

#[test]
fn empty_unclosed_and_newline_free_frontmatter_and_escaped_headings() {
    let opened = open_fixture("bad-frontmatter");
    let kb = &opened.kb;

    let empty = read_path(kb, "pages/empty-block.md");
    assert_eq!(empty["file"]["frontmatter"], json!({}));
    assert_eq!(empty["file"]["title"], "Empty Frontmatter");
    assert!(empty["content"]
        .as_str()
        .unwrap()
        .starts_with("---\n---\n# Empty"));
    assert_eq!(
        paths_of(&search(kb, json!({ "query": "marmosetwidget" }))),
        vec!["pages/empty-block.md"]
    );

    // Byte-exact, no newline added; sizeBytes is the returned length.
    let bare = read_path(kb, "pages/no-newline.md");
    let content = bare["content"].as_str().unwrap();
    assert!(content.ends_with("okapiterminus"));
    assert_eq!(
        content.as_bytes(),
        std::fs::read(common::fixture("bad-frontmatter/no-newline.md")).unwrap()
    );
    assert_eq!(bare["file"]["sizeBytes"], content.len());
    assert_eq!(bare["file"]["title"], "No Trailing Newline");
    assert_eq!(
        paths_of(&search(kb, json!({ "query": "okapiterminus" }))),
        vec!["pages/no-newline.md"]
    );

    // `# DEV\_234`: the title is unescaped, and an exact-title search finds it first.
    let escaped = read_path(kb, "pages/escaped-heading.md");
    assert_eq!(escaped["file"]["title"], "DEV_234");
    let hits = search(kb, json!({ "query": "DEV_234" }));
    assert_eq!(items(&hits)[0]["path"], "pages/escaped-heading.md");
    assert_eq!(items(&hits)[0]["title"], "DEV_234");

    // An opening fence that never closes is not frontmatter: the title is the file stem.
    let unclosed = read_path(kb, "pages/unclosed-fence.md");
    assert_eq!(unclosed["file"]["frontmatter"], json!({}));
    assert_eq!(unclosed["file"]["title"], "unclosed-fence");
    assert_eq!(
        paths_of(&search(kb, json!({ "query": "pangolinfence" }))),
        vec!["pages/unclosed-fence.md"]
    );
}

#[test]
fn crlf_and_bom_frontmatter_is_parsed() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join("crlf.md"),
        b"---\r\ntitle: Windows Page\r\nstatus: draft\r\n---\r\n# Heading\r\n\r\nBody with ibexcarriage.\r\n",
    );
    write(
        &dir.path().join("bom.md"),
        "\u{feff}---\ntitle: BOM Page\ntags: [bom]\n---\nBody with lemurbyteorder.\n".as_bytes(),
    );
    let opened = open_bundle(dir.path());
    let kb = &opened.kb;
    assert!(
        opened.report.diagnostics.is_empty(),
        "{:?}",
        opened.report.diagnostics
    );
    let crlf = read_path(kb, "pages/crlf.md");
    assert_eq!(crlf["file"]["title"], "Windows Page");
    assert_eq!(crlf["file"]["okfSignals"]["effectiveStatus"], "draft");
    assert!(crlf["content"].as_str().unwrap().contains("\r\n"));
    let bom = read_path(kb, "pages/bom.md");
    assert_eq!(bom["file"]["title"], "BOM Page");
    assert_eq!(bom["file"]["tags"], json!(["bom"]));
    assert_eq!(
        paths_of(&search(kb, json!({ "query": "ibexcarriage" }))),
        vec!["pages/crlf.md"]
    );
    assert_eq!(
        paths_of(&search(kb, json!({ "query": "lemurbyteorder" }))),
        vec!["pages/bom.md"]
    );
}

// ---------------------------------------------------------------------------------------------
// Invalid UTF-8 in contents and names

#[test]
fn invalid_utf8_page_is_indexed_with_a_diagnostic() {
    let dir = tempfile::tempdir().unwrap();
    // Latin-1 bytes: 0xE9 is "é" in Latin-1 and invalid as UTF-8.
    write(
        &dir.path().join("latin1.md"),
        b"# Caf\xe9 Menu\n\nThe menu lists \xe9clair and quokkapastry.\n",
    );
    write(
        &dir.path().join("good.md"),
        b"# Good\n\nPlain UTF-8 page.\n",
    );
    let opened = open_bundle(dir.path());
    let kb = &opened.kb;

    let found = diagnostics_for(&opened.report.diagnostics, "latin1.md");
    assert_eq!(found.len(), 1, "{:?}", opened.report.diagnostics);
    assert!(
        found[0].message.contains("invalid UTF-8 at byte 5"),
        "{}",
        found[0]
    );
    // The diagnostics are stored with the index too.
    let stored = KnowledgeBase::diagnostics(opened.index_dir.path()).unwrap();
    assert_eq!(stored, opened.report.diagnostics);

    let hits = search(kb, json!({ "query": "quokkapastry" }));
    assert_eq!(paths_of(&hits), vec!["pages/latin1.md"]);
    let page = read_path(kb, "pages/latin1.md");
    assert_eq!(page["file"]["title"], "Caf\u{FFFD} Menu");
    let content = page["content"].as_str().unwrap();
    assert!(content.starts_with("# Caf\u{FFFD} Menu\n"));
    assert_eq!(page["file"]["sizeBytes"], content.len());
    read_path(kb, "pages/good.md");
}

#[cfg(unix)]
#[test]
fn non_utf8_file_name_is_skipped_with_a_diagnostic() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    let dir = tempfile::tempdir().unwrap();
    let bad_name = OsStr::from_bytes(b"bad-\xff-name.md");
    if std::fs::write(dir.path().join(bad_name), b"# Bad Name\n\nwalrusbadname\n").is_err() {
        // A file system that refuses non-UTF-8 names cannot hold the case.
        return;
    }
    write(
        &dir.path().join("fine.md"),
        b"# Fine\n\nThis page is served: walrusfine.\n",
    );
    let opened = open_bundle(dir.path());
    let kb = &opened.kb;
    let skipped: Vec<_> = opened
        .report
        .diagnostics
        .iter()
        .filter(|d| d.message.contains("not valid UTF-8"))
        .collect();
    assert_eq!(skipped.len(), 1, "{:?}", opened.report.diagnostics);
    assert!(skipped[0].path.starts_with("bad-"));
    assert!(skipped[0].message.contains("skipped"));

    let pages = checked_call(kb, "list_tree", json!({ "parentPath": "pages" })).unwrap();
    assert_eq!(paths_of(&pages), vec!["pages/fine.md"]);
    assert_eq!(
        paths_of(&search(kb, json!({ "query": "walrusfine" }))),
        vec!["pages/fine.md"]
    );
    assert_eq!(
        search(kb, json!({ "query": "walrusbadname" }))["searchStatus"],
        "no_candidates"
    );
    assert_eq!(opened.report.manifest.counts.source_pages, 1);
}

/// File names that end inside a multi-byte character once made indexing panic (a `str` slice
/// three bytes from the end); they are now just not Markdown, or served like any page.
#[test]
fn file_names_ending_in_multi_byte_characters_index() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("photo😀"), b"not markdown\n");
    write(&dir.path().join("é.."), b"not markdown\n");
    write(&dir.path().join("sub/好"), b"not markdown\n");
    write(
        &dir.path().join("日记😀.md"),
        b"# Diary\n\nemojiname page, links [x](%E6%97%A5%E8%AE%B0%F0%9F%98%80.md)\n",
    );
    write(
        &dir.path().join("notes/Ünïcödé.md"),
        "# Umlauts\n\nSee [[日记😀]] and emojiname.\n".as_bytes(),
    );
    let opened = open_bundle(dir.path());
    let kb = &opened.kb;
    let hits = search(kb, json!({ "query": "emojiname", "limit": 50 }));
    assert_eq!(
        sorted(paths_of(&hits)),
        owned(&["pages/notes/Ünïcödé.md", "pages/日记😀.md"])
    );
    assert_eq!(read_path(kb, "pages/日记😀.md")["file"]["title"], "Diary");
    let related = related(kb, "pages/notes/Ünïcödé.md");
    assert_eq!(related.len(), 1);
    assert_eq!(related[0].0, "pages/日记😀.md");
    read_path(kb, "_graph/by-file/日记😀.json");
}

#[test]
fn nfd_file_names_are_served_under_their_nfc_path_and_twins_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let nfd = "Re\u{301}sume\u{301}.md";
    write(
        &dir.path().join(nfd),
        b"# Resume NFD\n\nfirst twin: yakduplicate\n",
    );
    let opened = open_bundle(dir.path());
    // Served under the NFC form of its name, read from the NFD name on disk.
    let page = read_path(&opened.kb, "pages/Résumé.md");
    assert_eq!(page["file"]["title"], "Resume NFD");

    // Its NFC twin next to it: one of the two is skipped with a diagnostic.
    if std::fs::write(
        dir.path().join("Résumé.md"),
        b"# Resume NFC\n\nsecond twin\n",
    )
    .is_err()
    {
        return;
    }
    let names = std::fs::read_dir(dir.path()).unwrap().count();
    if names < 2 {
        return; // a normalizing file system (e.g. APFS) merged the names
    }
    let opened = open_bundle(dir.path());
    let twins: Vec<_> = opened
        .report
        .diagnostics
        .iter()
        .filter(|d| d.message.contains("Unicode twins"))
        .collect();
    assert_eq!(twins.len(), 1, "{:?}", opened.report.diagnostics);
    let pages = checked_call(&opened.kb, "list_tree", json!({ "parentPath": "pages" })).unwrap();
    assert_eq!(paths_of(&pages), vec!["pages/Résumé.md"]);
}

// ---------------------------------------------------------------------------------------------
// Empty bundles and the legacy layout

fn assert_no_readable_content(kb: &KnowledgeBase, label: &str) {
    for parent in [json!({}), json!({ "parentPath": "pages" })] {
        let tree = checked_call(kb, "list_tree", parent).unwrap();
        assert!(tree["activeContentRevision"].is_null(), "{label}");
        assert_eq!(tree["items"], json!([]), "{label}");
        assert!(tree["nextCursor"].is_null(), "{label}");
    }
    for mode in ["file", "graph", "hybrid"] {
        let out = search(kb, json!({ "query": "anything at all", "mode": mode }));
        assert!(out["activeContentRevision"].is_null(), "{label} {mode}");
        assert_eq!(out["searchStatus"], "no_candidates", "{label} {mode}");
        assert_eq!(out["items"], json!([]), "{label} {mode}");
        assert_eq!(out["resultSummary"]["resultCount"], 0);
    }
    let not_found = [
        ("get_file", json!({ "fileId": "index.md" })),
        ("get_file", json!({ "fileId": "pages/notes.md" })),
        ("read_file", json!({ "path": "index.md" })),
        ("read_file", json!({ "path": "pages/notes.md" })),
        ("read_file", json!({ "fileId": "pages/notes.md" })),
        ("read_related", json!({ "fileId": "pages/notes.md" })),
        ("expand_graph", json!({ "fileId": "pages/notes.md" })),
    ];
    for (tool, input) in not_found {
        assert_eq!(
            error_code(checked_call(kb, tool, input.clone())),
            "NOT_FOUND",
            "{label}: {tool} {input}"
        );
    }
    // Input validation still comes first.
    let err = checked_call(kb, "read_file", json!({ "path": "../notes.txt" })).unwrap_err();
    assert_eq!(err.code.as_str(), "VALIDATION_ERROR", "{label}");
    let err = checked_call(kb, "list_tree", json!({ "parentPath": "../" })).unwrap_err();
    assert_eq!(err.details.unwrap()["field"], "parentPath", "{label}");
}

#[test]
fn empty_bundles_have_no_readable_content() {
    // An empty folder.
    let empty = tempfile::tempdir().unwrap();
    let opened = open_bundle(empty.path());
    assert_eq!(opened.report.manifest.counts.files, 0);
    assert_no_readable_content(&opened.kb, "empty folder");

    // A folder with files, none of them Markdown (and a hidden Markdown file).
    let other = tempfile::tempdir().unwrap();
    write(&other.path().join("notes.txt"), b"# not markdown\n");
    write(&other.path().join("image.png"), b"\x89PNG\r\n\x1a\n");
    write(
        &other.path().join("data/export.json"),
        b"{\"title\":\"x\"}\n",
    );
    write(&other.path().join(".obsidian/hidden.md"), b"# Hidden\n");
    write(&other.path().join("pages/notes.md.bak"), b"# Backup\n");
    let opened = open_bundle(other.path());
    assert_eq!(opened.report.manifest.counts.source_pages, 0);
    assert_no_readable_content(&opened.kb, "non-Markdown folder");

    // A Focowiki bundle skeleton: `_index/` with a formatVersion 2 catalog and no pages.
    let skeleton = tempfile::tempdir().unwrap();
    write(
        &skeleton.path().join("_index/catalog.json"),
        b"{\"formatVersion\":2}\n",
    );
    let opened = open_bundle(skeleton.path());
    assert_eq!(opened.report.manifest.counts.source_pages, 0);
    assert_no_readable_content(&opened.kb, "bundle skeleton");
}

#[test]
fn format_version_1_bundle_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join("_index/catalog.json"),
        br#"{"formatVersion":1,"title":"Legacy"}"#,
    );
    write(&dir.path().join("index.md"), b"# Legacy\n");
    write(&dir.path().join("pages/a.md"), b"# A\n\nlegacy page\n");
    let index_dir = tempfile::tempdir().unwrap();
    let err = index::build(
        dir.path(),
        index_dir.path(),
        &BuildOptions::default(),
        &mut |_| {},
    )
    .expect_err("a formatVersion 1 bundle must not index");
    let message = err.to_string();
    assert!(message.contains("formatVersion 1"), "{message}");
    assert!(message.contains("catalog.json"), "{message}");
    // Nothing was published.
    assert!(index::read_manifest(index_dir.path()).unwrap().is_none());

    // An unknown future version is refused too, naming the version.
    write(
        &dir.path().join("_index/catalog.json"),
        br#"{"formatVersion":3}"#,
    );
    let err = index::build(
        dir.path(),
        index_dir.path(),
        &BuildOptions::default(),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(err.to_string().contains("formatVersion 3"), "{err}");
}

/// Every file under `_graph/` is `graph_index` and every file under `_index/` is `search_index`,
/// their Markdown navigation files included, in the tree and in file detail (as the API has it).
#[test]
fn navigation_files_of_graph_and_index_have_their_folders_file_kind() {
    let opened = open_fixture("focowiki-docs");
    let kb = &opened.kb;
    let mut folders = vec!["_graph".to_string(), "_index".to_string()];
    let mut markdown = 0;
    while let Some(folder) = folders.pop() {
        let out = checked_call(
            kb,
            "list_tree",
            json!({ "parentPath": folder, "limit": 500 }),
        )
        .unwrap();
        for item in items(&out) {
            let path = item["path"].as_str().unwrap().to_string();
            if item["entryType"] == "directory" {
                folders.push(path);
                continue;
            }
            let want = if path.starts_with("_graph/") {
                "graph_index"
            } else {
                "search_index"
            };
            assert_eq!(item["fileKind"], want, "{path} in the tree");
            let detail = checked_call(kb, "get_file", json!({ "fileId": path })).unwrap();
            assert_eq!(detail["file"]["fileKind"], want, "{path} in file detail");
            markdown += usize::from(path.ends_with(".md"));
        }
    }
    assert!(markdown > 10, "{markdown} navigation files");
}

/// A plain folder's virtual relation records name no `_index`/`_graph` router that does not
/// open: a plain folder has neither, so both fields are null.
#[test]
fn virtual_graph_records_point_at_nothing_missing() {
    let opened = open_fixture("plain-notes");
    let kb = &opened.kb;
    let graph = kbtools::ingest::bundle::paths::per_file_graph_path(GS);
    let read = checked_call(kb, "read_file", json!({ "path": graph })).unwrap();
    let record: Value = serde_json::from_str(read["content"].as_str().unwrap()).unwrap();
    for key in ["indexPath", "directoryGraphPath"] {
        match record[key].as_str() {
            None => assert!(record[key].is_null(), "{key}: {}", record[key]),
            Some(path) => {
                assert!(
                    checked_call(kb, "read_file", json!({ "path": path })).is_ok(),
                    "{path}"
                );
            }
        }
    }
    assert!(record["indexPath"].is_null());
}

// ---------------------------------------------------------------------------------------------
// Relation directions outside the contract's enum

/// A graph record's relationship whose direction is not `outgoing`, `incoming` or
/// `bidirectional` is left out with a diagnostic that names the record, the item and the words
/// allowed; the record's other relationships stay, and every output keeps to the contract's enum
/// (checked by `checked_call`).
#[test]
fn a_relation_in_an_unknown_direction_is_left_out_with_a_diagnostic() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("bundle");
    common::copy_dir(&common::fixture("focowiki-docs"), &bundle);
    let record = "_graph/by-file/en/README.json";
    let path = bundle.join(record);
    let mut json: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let relationships = json["relationships"].as_array_mut().unwrap();
    assert!(
        relationships.len() > 1,
        "the record has relationships to keep"
    );
    relationships[0]["direction"] = json!("sideways");
    std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();

    let opened = open_bundle(&bundle);
    let found = diagnostics_for(&opened.report.diagnostics, record);
    assert_eq!(found.len(), 1, "{:?}", opened.report.diagnostics);
    assert!(
        found[0].message.contains(
            "relationships[0]: unknown direction `sideways`: expected outgoing, incoming or bidirectional"
        ),
        "{}",
        found[0]
    );
    let page = "pages/en/README.md";
    let related = checked_call(&opened.kb, "read_related", json!({ "fileId": page })).unwrap();
    assert!(!related["items"].as_array().unwrap().is_empty());
    checked_call(
        &opened.kb,
        "expand_graph",
        json!({ "fileId": page, "depth": 2 }),
    )
    .unwrap();
}
