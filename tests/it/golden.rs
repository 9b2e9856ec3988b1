//! Golden files: representative outputs of every tool over the fixture bundle, compared byte for
//! byte with `tests/golden/<case>.json`. Outputs are deterministic (fixed knowledge-base name,
//! fresh index at revision 1, "today" pinned); an error's requestId is fixed here.
//!
//! Refresh after an intended change, then review the diff:
//!
//! ```sh
//! KBTOOLS_UPDATE_GOLDEN=1 cargo test --test it golden::
//! ```

use crate::common;

use common::{checked_call, open_fixture};
use serde_json::{json, Value};

fn cases() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        ("list_tree_root", "list_tree", json!({ "parentPath": "" })),
        (
            "list_tree_pages_en_page1",
            "list_tree",
            json!({ "parentPath": "pages/en", "limit": 3 }),
        ),
        (
            "get_file_source_page",
            "get_file",
            json!({ "fileId": "pages/en/guide/open-knowledge-format.md" }),
        ),
        ("get_file_log", "get_file", json!({ "fileId": "log.md" })),
        (
            "read_file_page",
            "read_file",
            json!({ "path": "pages/en/agent-integration/own-agent-client/tools-design.md" }),
        ),
        (
            "read_file_graph_record",
            "read_file",
            json!({ "path": "_graph/by-file/en/README.json" }),
        ),
        (
            "read_related",
            "read_related",
            json!({ "fileId": "pages/en/README.md", "limit": 3 }),
        ),
        (
            "expand_graph_depth2",
            "expand_graph",
            json!({ "fileId": "pages/en/README.md", "depth": 2, "fanout": 3 }),
        ),
        (
            "search_hybrid_en",
            "search_files",
            json!({ "query": "How do agents read related files through the graph?", "limit": 3 }),
        ),
        (
            "search_file_zh",
            "search_files",
            json!({ "query": "知识库 图谱 关系", "mode": "file", "limit": 3 }),
        ),
        (
            "search_exact_title",
            "search_files",
            json!({ "query": "Tools Design", "mode": "file", "limit": 2 }),
        ),
        (
            "search_no_candidates",
            "search_files",
            json!({ "query": "zqxj vvkw", "mode": "file" }),
        ),
        (
            "error_path_traversal",
            "read_file",
            json!({ "path": "pages/../../etc/passwd" }),
        ),
        (
            "error_query_too_short",
            "search_files",
            json!({ "query": "a" }),
        ),
        (
            "error_related_conflict",
            "read_related",
            json!({ "fileId": "index.md" }),
        ),
        (
            "error_not_found",
            "get_file",
            json!({ "fileId": "source-file-00000000-0000-5000-8000-000000000000" }),
        ),
    ]
}

fn render(result: Result<Value, kbtools::ToolError>) -> String {
    let value = match result {
        Ok(v) => v,
        Err(e) => e.envelope("req-00000000-0000-4000-8000-000000000000"),
    };
    let mut text = serde_json::to_string_pretty(&value).unwrap();
    text.push('\n');
    text
}

#[test]
fn outputs_match_golden_files() {
    let opened = open_fixture("focowiki-docs");
    let update = std::env::var_os("KBTOOLS_UPDATE_GOLDEN").is_some();
    let dir = common::manifest_dir().join("tests/golden");
    let mut mismatches = Vec::new();
    for (name, tool, input) in cases() {
        let actual = render(checked_call(&opened.kb, tool, input));
        let path = dir.join(format!("{name}.json"));
        if update {
            std::fs::write(&path, &actual).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
            panic!(
                "{} is missing: run KBTOOLS_UPDATE_GOLDEN=1 cargo test --test it golden::",
                path.display()
            )
        });
        if expected != actual {
            mismatches.push(name);
        }
    }
    assert!(
        mismatches.is_empty(),
        "outputs differ from tests/golden for {mismatches:?}; review, then refresh with KBTOOLS_UPDATE_GOLDEN=1 cargo test --test it golden::"
    );
}

#[test]
fn second_page_follows_the_cursor_of_the_first() {
    let opened = open_fixture("focowiki-docs");
    let first = checked_call(
        &opened.kb,
        "list_tree",
        json!({ "parentPath": "pages/en", "limit": 3 }),
    )
    .unwrap();
    let cursor = first["nextCursor"]
        .as_str()
        .expect("a second page")
        .to_string();
    let second = checked_call(
        &opened.kb,
        "list_tree",
        json!({ "parentPath": "pages/en", "limit": 3, "cursor": cursor }),
    )
    .unwrap();
    let last_first = first["items"][2]["path"].as_str().unwrap().to_string();
    let first_second = second["items"][0]["path"].as_str().unwrap().to_string();
    assert!(
        last_first < first_second,
        "{last_first} then {first_second}"
    );
}
