//! Hostile paths and ids against the security boundary (docs/contracts.md#bad-input): every
//! input gets the contract's 422 `VALIDATION_ERROR` (with the right `details.field`) or 404
//! `NOT_FOUND`, never a panic, and never the content of a file outside the bundle.
//!
//! Each test builds, in a temporary folder, a bundle next to an `outside/` folder whose files
//! hold a marker string, and links into `outside/` from inside the bundle: a relative and an
//! absolute symbolic link to a file, a link to the directory, and — after the index is built — a
//! page and a directory of pages replaced by links (a swap between indexing and reading).

#![cfg_attr(not(unix), allow(dead_code, unused_imports))]

use crate::common;

use std::path::{Path, PathBuf};

use common::{checked_call, open_bundle};
use kbtools::kb::KnowledgeBase;
use serde_json::{json, Value};

/// The text of every file outside the bundle; it must never appear in any output.
const SECRET: &str = "zqxoutsidesecretzqx";

/// Read, as a canonical path, these get 422 `{field: "path"}`; as a `fileId` (read_file and
/// get_file), 404 — ids and paths are looked up exactly, never resolved.
fn non_canonical_paths() -> Vec<String> {
    let mut list: Vec<String> = [
        // Traversal.
        "..",
        "../etc/passwd",
        "../outside/secret.md",
        "pages/../../etc/passwd",
        "pages/../../outside/secret.md",
        "pages/../index.md",
        "pages/guides/../../../outside/secret.md",
        "pages/..",
        "./pages/getting-started.md",
        "pages/./getting-started.md",
        "pages//getting-started.md",
        "pages/getting-started.md/",
        // Absolute, UNC and URL forms.
        "/etc/passwd",
        "/pages/getting-started.md",
        "//server/share/secret.md",
        "\\\\server\\share\\secret.md",
        "file:///etc/passwd",
        // Backslashes.
        "pages\\getting-started.md",
        "pages\\..\\..\\outside\\secret.md",
        "pages/guides\\..\\..\\..\\outside\\secret.md",
        // Drive letters.
        "C:/Windows/win.ini",
        "c:\\outside\\secret.md",
        "C:pages/getting-started.md",
        // NUL, other C0 controls, DEL, C1 and bidi controls.
        "pages/getting-started.md\u{0}",
        "pages/\u{0}/../../outside/secret.md",
        "pages/get\u{1}ting-started.md",
        "pages/getting-started.md\n",
        "pages/getting\rstarted.md",
        "pages/\u{1b}[2J.md",
        "pages/\u{7f}.md",
        "pages/\u{85}.md",
        "pages/\u{202e}dm.txt",
        "pages/\u{2066}x.md",
        // Percent-encoded traversal, separators and controls, once, twice and three times.
        "pages/%2e%2e/%2e%2e/outside/secret.md",
        "pages/%2E%2E/secret.md",
        "pages/%2e/getting-started.md",
        "%2e%2e/outside/secret.md",
        "pages/%252e%252e/%252e%252e/outside/secret.md",
        "pages/%25252e%25252e/secret.md",
        "pages/..%2f..%2foutside%2fsecret.md",
        "pages/..%2F..%2Foutside%2Fsecret.md",
        "pages/%2F..%2Fsecret.md",
        "pages/%252F..%252Fsecret.md",
        "pages/%5c..%5csecret.md",
        "pages/secret%00.md",
        "pages/secret%2500.md",
        "pages/%0a.md",
        // Overlong UTF-8 for "." (decodes to invalid UTF-8).
        "pages/%c0%ae%c0%ae/secret.md",
        // Not NFC: "Café" with a combining acute (the NFC page exists).
        "pages/notes/Cafe\u{301}.md",
        // Surrounding white space.
        "pages/getting-started.md ",
        " pages/getting-started.md",
        "pages/getting-started.md\t",
        "\u{3000}pages/getting-started.md",
        // Not a path a bundle holds.
        "etc/passwd",
        "outside/secret.md",
        "pages/secret.txt",
        "pages/getting-started.md:secret",
        "~/secret.md",
        "schema.md",
        "_graph/by-file/index.json",
        "_index/../outside/secret.json",
        // Names ending inside a multi-byte character (once a slicing panic).
        "pages/é..",
        "pages/x😀",
        "pages/..\u{2215}..",
        "pages/好.m",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // Overlong: 3,000 characters; and one 1,001-character segment in a short path.
    list.push(format!("pages/{}.md", "a".repeat(2991)));
    list.push(format!("pages/{}.md", "../".repeat(1000)));
    list.push(format!("pages/{}.md", "b".repeat(1001)));
    list.push(format!("pages/{}.md", "好".repeat(2100)));
    list
}

/// Canonical, allowed-looking paths that name nothing kbtools serves: 404 both as a path and as
/// an id. Unicode look-alikes of `.` and `/` are ordinary characters, never separators.
const MISSING_PATHS: [&str; 16] = [
    "pages/leak.md",
    "pages/abs-leak.md",
    "pages/guides/leak-dir/secret.md",
    "pages/.hidden.md",
    "pages/．．／．．／outside／secret.md",
    "pages/．．/secret.md",
    "pages/..\u{2215}..\u{2215}outside\u{2215}secret.md",
    "pages/..\u{ff0f}outside\u{ff0f}secret.md",
    "pages/\u{2024}\u{2024}/secret.md",
    "pages/%2e%2e.md",
    "pages/100%.md",
    "pages/nope.md",
    "pages/guides/nope.md",
    "_graph/by-file/leak.json",
    "_graph/by-file/guides/leak-dir/secret.json",
    "index.md",
];

/// Bad `list_tree` parents: 422 `{field: "parentPath"}`.
fn bad_parents() -> Vec<Value> {
    let mut list: Vec<Value> = [
        "..",
        "../",
        "../outside",
        "pages/..",
        "pages/../..",
        "pages/../../outside",
        "pages/guides/../../..",
        "./pages",
        "pages/./guides",
        "pages//guides",
        "pages/",
        "/",
        "/etc",
        "/pages",
        "pages\\guides",
        "pages\\..\\..",
        "pages/%2e%2e",
        "pages/%2E%2E/%2e%2e",
        "pages/%252e%252e",
        "pages%2F..",
        "pages/..%2F..",
        "pages/%00",
        "pages/\u{0}",
        "pages/\n",
        "pages/gu\u{1b}ides",
        "pages/Cafe\u{301}",
        " pages",
        "pages ",
        "C:",
        "C:/pages",
        "c:\\pages",
        "etc",
        "outside",
        "root/..",
        "pages/getting-started.md",
        "_index/terms/bogus",
        "_graph/other",
        "~",
    ]
    .iter()
    .map(|s| json!(s))
    .collect();
    list.push(json!(format!("pages/{}", "a".repeat(2994))));
    list.push(json!(format!("pages/{}", "x".repeat(1001))));
    list.push(json!(5));
    list.push(json!(true));
    list.push(json!(["pages"]));
    list.push(json!({ "path": "pages" }));
    list
}

/// Allowed-looking parents that list nothing: 200 with no items.
const EMPTY_PARENTS: [&str; 11] = [
    "pages/．．",
    "pages/．．／．．",
    "pages/..\u{2215}..",
    "pages/..\u{ff0f}outside",
    "pages/%2e%2e%2e",
    "pages/guides/leak-dir",
    "_graph/by-file/．．",
    "_graph/by-file/guides/leak-dir",
    "pages/é..",
    "pages/x😀",
    "_graph/by-file/é..",
];

struct Hostile {
    _dir: tempfile::TempDir,
    bundle: PathBuf,
}

/// `<tmp>/outside/{secret.md, secret.json, guides/install.md}` and `<tmp>/bundle/`, a copy of
/// `fixture`.
fn hostile_copy(fixture: &str) -> Hostile {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(outside.join("guides")).unwrap();
    let page = format!("---\ntitle: {SECRET}\n---\n# {SECRET}\n\n{SECRET} handbook\n");
    std::fs::write(outside.join("secret.md"), &page).unwrap();
    std::fs::write(outside.join("install.md"), &page).unwrap();
    std::fs::write(outside.join("guides/install.md"), &page).unwrap();
    std::fs::write(
        outside.join("secret.json"),
        format!("{{\"formatVersion\":2,\"title\":\"{SECRET}\",\"path\":\"pages/secret.md\",\"relationships\":[]}}\n"),
    )
    .unwrap();
    let bundle = dir.path().join("bundle");
    common::copy_dir(&common::fixture(fixture), &bundle);
    Hostile { _dir: dir, bundle }
}

/// Fails if `value` (an output or an error envelope) carries the outside content.
fn assert_clean(value: &Value, what: &str) {
    let text = value.to_string();
    assert!(
        !text.contains(SECRET),
        "{what} leaked outside content: {text}"
    );
}

fn envelope(error: &kbtools::ToolError) -> Value {
    error.envelope("req-00000000-0000-4000-8000-000000000000")
}

/// Calls a tool (schema-checked), checks nothing leaked, and returns the result.
fn call(kb: &KnowledgeBase, tool: &str, input: Value) -> Result<Value, kbtools::ToolError> {
    let what = format!("{tool} {input}");
    let result = checked_call(kb, tool, input);
    match &result {
        Ok(v) if tool == "search_files" => {
            // The query context echoes the query, which may be the marker itself.
            let mut v = v.clone();
            v.as_object_mut().unwrap().remove("query");
            assert_clean(&v, &what);
        }
        Ok(v) => assert_clean(v, &what),
        Err(e) => assert_clean(&envelope(e), &what),
    }
    result
}

fn expect_error(kb: &KnowledgeBase, tool: &str, input: Value, code: &str, field: Option<&str>) {
    let what = format!("{tool} {input}");
    let err = match call(kb, tool, input) {
        Ok(out) => panic!("{what} should fail with {code}, got {out}"),
        Err(e) => e,
    };
    assert_eq!(err.code.as_str(), code, "{what}: {err}");
    let expected = match code {
        "VALIDATION_ERROR" => 422,
        "NOT_FOUND" => 404,
        _ => 0,
    };
    assert_eq!(err.http_status(), expected, "{what}");
    if let Some(field) = field {
        let details = err
            .details
            .as_ref()
            .unwrap_or_else(|| panic!("{what}: no details"));
        assert_eq!(details["field"], field, "{what}");
    }
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

/// A plain-folder copy of `plain-notes` with links out of it (and one inside it).
#[cfg(unix)]
fn plain_with_links() -> Hostile {
    let h = hostile_copy("plain-notes");
    let b = &h.bundle;
    let outside = b.parent().unwrap().join("outside");
    symlink(Path::new("../outside/secret.md"), &b.join("leak.md"));
    symlink(&outside.join("secret.md"), &b.join("abs-leak.md"));
    symlink(Path::new("../../outside"), &b.join("guides/leak-dir"));
    symlink(Path::new("getting-started.md"), &b.join("inside-alias.md"));
    symlink(Path::new("../outside/missing.md"), &b.join("dangling.md"));
    std::fs::write(b.join(".hidden.md"), format!("# {SECRET}\n")).unwrap();
    std::fs::write(
        b.join("victim.md"),
        "# Victim\n\nA page swapped after indexing.\n",
    )
    .unwrap();
    h
}

/// After the index is built: `victim.md` and the `guides/` folder become links to `outside/`.
#[cfg(unix)]
fn swap_after_indexing(bundle: &Path) {
    std::fs::remove_file(bundle.join("victim.md")).unwrap();
    symlink(Path::new("../outside/secret.md"), &bundle.join("victim.md"));
    std::fs::rename(bundle.join("guides"), bundle.join("guides-moved")).unwrap();
    symlink(Path::new("../outside/guides"), &bundle.join("guides"));
}

#[cfg(unix)]
#[test]
fn hostile_read_file_paths_get_422_or_404() {
    let h = plain_with_links();
    let opened = open_bundle(&h.bundle);
    swap_after_indexing(&h.bundle);
    let kb = &opened.kb;
    let mut cases = 0;
    for path in non_canonical_paths() {
        expect_error(
            kb,
            "read_file",
            json!({ "path": path }),
            "VALIDATION_ERROR",
            Some("path"),
        );
        cases += 1;
    }
    for path in MISSING_PATHS {
        expect_error(kb, "read_file", json!({ "path": path }), "NOT_FOUND", None);
        cases += 1;
    }
    // Swapped for links after indexing: the catalog knows them, the read refuses them.
    for path in ["pages/victim.md", "pages/guides/install.md"] {
        expect_error(kb, "read_file", json!({ "path": path }), "NOT_FOUND", None);
        cases += 1;
    }
    // Empty, white-space-only and non-string paths.
    for path in [
        json!(""),
        json!("   "),
        json!(42),
        json!(["pages/x.md"]),
        json!({}),
    ] {
        expect_error(
            kb,
            "read_file",
            json!({ "path": path }),
            "VALIDATION_ERROR",
            Some("path"),
        );
        cases += 1;
    }
    assert!(cases >= 90, "{cases} cases");
}

#[cfg(unix)]
#[test]
fn hostile_file_ids_get_404() {
    let h = plain_with_links();
    let opened = open_bundle(&h.bundle);
    swap_after_indexing(&h.bundle);
    let kb = &opened.kb;
    let mut ids: Vec<String> = non_canonical_paths()
        .into_iter()
        // Ids are trimmed (an id wrapped in white space is that id); the rest must not resolve.
        .filter(|p| p.trim() == p.as_str())
        .collect();
    ids.extend(MISSING_PATHS.iter().map(|s| s.to_string()));
    ids.extend(
        [
            "source-file-../../etc/passwd",
            "generated-../../outside/secret.md",
            "source-file-00000000-0000-0000-0000-000000000000",
            "generated-directory-ff876c8747a48095f51328a9ef74e1e4",
            "pages",
            "_graph",
            "PAGES/GETTING-STARTED.MD",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    for id in &ids {
        for tool in ["read_file", "get_file", "read_related", "expand_graph"] {
            expect_error(kb, tool, json!({ "fileId": id }), "NOT_FOUND", None);
        }
    }
    // The swapped page: its metadata is still in the index, its content is never read.
    let detail = call(kb, "get_file", json!({ "fileId": "pages/victim.md" })).unwrap();
    let id = detail["file"]["fileId"].as_str().unwrap().to_string();
    expect_error(kb, "read_file", json!({ "fileId": id }), "NOT_FOUND", None);
    expect_error(
        kb,
        "read_file",
        json!({ "fileId": "pages/guides/install.md" }),
        "NOT_FOUND",
        None,
    );
    // Missing and empty ids.
    for input in [
        json!({}),
        json!({ "fileId": "" }),
        json!({ "fileId": " \t " }),
        json!({ "fileId": 7 }),
    ] {
        expect_error(
            kb,
            "get_file",
            input.clone(),
            "VALIDATION_ERROR",
            Some("fileId"),
        );
        expect_error(kb, "read_file", input, "VALIDATION_ERROR", Some("fileId"));
    }
    assert!(ids.len() >= 80, "{} ids", ids.len());
}

#[cfg(unix)]
#[test]
fn hostile_tree_parents_get_422_or_nothing() {
    let h = plain_with_links();
    let opened = open_bundle(&h.bundle);
    swap_after_indexing(&h.bundle);
    let kb = &opened.kb;
    let parents = bad_parents();
    assert!(parents.len() >= 40);
    for parent in parents {
        expect_error(
            kb,
            "list_tree",
            json!({ "parentPath": parent }),
            "VALIDATION_ERROR",
            Some("parentPath"),
        );
    }
    for parent in EMPTY_PARENTS {
        let out = call(kb, "list_tree", json!({ "parentPath": parent })).unwrap();
        assert_eq!(out["items"], json!([]), "{parent}");
        assert!(out["activeContentRevision"].is_u64());
    }
    // The root spellings the contract allows.
    for parent in [json!(""), json!(null), json!("root")] {
        let out = call(kb, "list_tree", json!({ "parentPath": parent })).unwrap();
        assert_eq!(out["items"].as_array().unwrap().len(), 2);
    }
}

/// Walks the whole tree, reads every file by id and by path, and searches for the marker: the
/// links out of the bundle were skipped at indexing (each with a diagnostic), the link inside it
/// is served, and nothing anywhere carries the outside content.
#[cfg(unix)]
#[test]
fn links_out_of_the_bundle_are_never_served() {
    let h = plain_with_links();
    let opened = open_bundle(&h.bundle);
    let kb = &opened.kb;
    let diagnostics = &opened.report.diagnostics;
    for (path, message) in [
        ("leak.md", "points outside the bundle"),
        ("abs-leak.md", "points outside the bundle"),
        ("guides/leak-dir", "points outside the bundle"),
        ("dangling.md", "broken symbolic link"),
    ] {
        assert!(
            diagnostics
                .iter()
                .any(|d| d.path == path && d.message.contains(message)),
            "no diagnostic `{message}` for {path}: {diagnostics:?}"
        );
    }
    for d in diagnostics {
        assert!(!d.to_string().contains(SECRET), "{d}");
    }

    let alias = call(kb, "read_file", json!({ "path": "pages/inside-alias.md" })).unwrap();
    let original = call(
        kb,
        "read_file",
        json!({ "path": "pages/getting-started.md" }),
    )
    .unwrap();
    assert_eq!(alias["content"], original["content"]);

    swap_after_indexing(&h.bundle);
    let mut files = Vec::new();
    let mut dirs = vec![String::new()];
    while let Some(dir) = dirs.pop() {
        let out = call(kb, "list_tree", json!({ "parentPath": dir, "limit": 500 })).unwrap();
        for entry in out["items"].as_array().unwrap() {
            let path = entry["path"].as_str().unwrap().to_string();
            assert!(!path.contains("leak") && !path.contains("hidden"), "{path}");
            if entry["entryType"] == "directory" {
                dirs.push(path);
            } else {
                files.push((path, entry["fileId"].as_str().unwrap().to_string()));
            }
        }
    }
    assert!(files.len() >= 8, "{files:?}");
    for (path, id) in &files {
        let by_path = call(kb, "read_file", json!({ "path": path }));
        let by_id = call(kb, "read_file", json!({ "fileId": id }));
        call(kb, "get_file", json!({ "fileId": id })).unwrap();
        if path == "pages/victim.md" || path.starts_with("pages/guides/") {
            assert_eq!(by_path.unwrap_err().code.as_str(), "NOT_FOUND", "{path}");
            assert_eq!(by_id.unwrap_err().code.as_str(), "NOT_FOUND", "{path}");
        } else {
            assert_eq!(by_path.unwrap(), by_id.unwrap(), "{path}");
        }
    }
    for query in [SECRET, "outsidesecret", "handbook", "victim"] {
        for mode in ["file", "hybrid"] {
            let out = call(
                kb,
                "search_files",
                json!({ "query": query, "mode": mode, "limit": 50 }),
            )
            .unwrap();
            if query.contains("outside") {
                assert_eq!(out["searchStatus"], "no_candidates", "{query}");
            }
        }
    }
}

/// The same boundary on a copy of the Focowiki fixture bundle.
#[cfg(unix)]
#[test]
fn focowiki_bundle_links_out_are_never_served() {
    let h = hostile_copy("focowiki-docs");
    let b = &h.bundle;
    let outside = b.parent().unwrap().join("outside");
    symlink(&outside.join("secret.md"), &b.join("pages/en/leak.md"));
    symlink(
        Path::new("../../../../outside/secret.json"),
        &b.join("_graph/by-file/en/leak.json"),
    );
    symlink(&outside, &b.join("pages/en/guide/leak-dir"));
    let opened = open_bundle(b);
    let kb = &opened.kb;
    let outside_links: Vec<_> = opened
        .report
        .diagnostics
        .iter()
        .filter(|d| d.message.contains("points outside the bundle"))
        .map(|d| d.path.as_str())
        .collect();
    assert_eq!(
        outside_links,
        vec![
            "_graph/by-file/en/leak.json",
            "pages/en/guide/leak-dir",
            "pages/en/leak.md"
        ]
    );

    // A page and a per-file graph swapped for links after indexing.
    let victim = "pages/en/guide/file-first-graph.md";
    let victim_graph = "_graph/by-file/en/guide/file-first-graph.json";
    for (path, target) in [(victim, "secret.md"), (victim_graph, "secret.json")] {
        std::fs::remove_file(b.join(path)).unwrap();
        symlink(&outside.join(target), &b.join(path));
    }

    for path in non_canonical_paths() {
        expect_error(
            kb,
            "read_file",
            json!({ "path": path }),
            "VALIDATION_ERROR",
            Some("path"),
        );
    }
    for path in [
        "pages/en/leak.md",
        "_graph/by-file/en/leak.json",
        "pages/en/guide/leak-dir/secret.md",
        "pages/en/．．／．．／．．／outside／secret.md",
        victim,
        victim_graph,
    ] {
        expect_error(kb, "read_file", json!({ "path": path }), "NOT_FOUND", None);
        expect_error(
            kb,
            "read_file",
            json!({ "fileId": path }),
            "NOT_FOUND",
            None,
        );
    }
    for parent in bad_parents() {
        expect_error(
            kb,
            "list_tree",
            json!({ "parentPath": parent }),
            "VALIDATION_ERROR",
            Some("parentPath"),
        );
    }
    let listed = call(
        kb,
        "list_tree",
        json!({ "parentPath": "pages/en/guide/leak-dir" }),
    )
    .unwrap();
    assert_eq!(listed["items"], json!([]));
    // The swapped page's relations and search hits still come from the index, without content
    // from outside.
    call(kb, "read_related", json!({ "fileId": victim })).unwrap();
    call(kb, "expand_graph", json!({ "fileId": victim, "depth": 2 })).unwrap();
    for mode in ["file", "graph", "hybrid"] {
        call(
            kb,
            "search_files",
            json!({ "query": "file-first graph", "mode": mode, "limit": 50 }),
        )
        .unwrap();
    }
    let out = call(kb, "search_files", json!({ "query": SECRET })).unwrap();
    assert_eq!(out["searchStatus"], "no_candidates");
    // Untouched pages still read.
    call(
        kb,
        "read_file",
        json!({ "path": "pages/en/guide/open-knowledge-format.md" }),
    )
    .unwrap();
}
