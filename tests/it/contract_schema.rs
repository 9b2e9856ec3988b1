//! Every tool's output over the fixture bundle, success and error, validates against the
//! contract schemas (rules#output-shapes): required keys, nulls, enums, no extra keys.

use crate::common;

use common::{checked_call, open_fixture};
use serde_json::{json, Value};

fn items(v: &Value, key: &str) -> Vec<Value> {
    v[key].as_array().cloned().unwrap_or_default()
}

#[test]
fn every_tree_page_and_every_file_validates() {
    let opened = open_fixture("focowiki-docs");
    let kb = &opened.kb;
    // Walk the whole tree, page by page, validating each page and each file it lists.
    let mut dirs = vec![String::new()];
    let mut files = 0;
    while let Some(dir) = dirs.pop() {
        let mut cursor: Option<String> = None;
        loop {
            let input = json!({ "parentPath": dir, "limit": 7, "cursor": cursor });
            let page = checked_call(kb, "list_tree", input).unwrap();
            for entry in items(&page, "items") {
                let path = entry["path"].as_str().unwrap().to_string();
                if entry["entryType"] == "directory" {
                    dirs.push(path);
                    continue;
                }
                files += 1;
                let id = entry["fileId"].as_str().unwrap();
                checked_call(kb, "get_file", json!({ "fileId": id })).unwrap();
                checked_call(kb, "read_file", json!({ "fileId": id })).unwrap();
                checked_call(kb, "read_file", json!({ "path": path })).unwrap();
                let related = checked_call(kb, "read_related", json!({ "fileId": id }));
                let expand = checked_call(kb, "expand_graph", json!({ "fileId": id, "depth": 2 }));
                if entry["sourceFileId"].is_string() {
                    related.unwrap();
                    expand.unwrap();
                } else {
                    assert_eq!(related.unwrap_err().code.as_str(), "CONFLICT");
                    assert_eq!(expand.unwrap_err().code.as_str(), "NOT_FOUND");
                }
            }
            match page["nextCursor"].as_str() {
                Some(next) => cursor = Some(next.to_string()),
                None => break,
            }
        }
    }
    assert!(files > 250, "walked only {files} files");
}

#[test]
fn searches_validate_in_every_mode_and_scope() {
    let opened = open_fixture("focowiki-docs");
    let kb = &opened.kb;
    for query in [
        "knowledge base",
        "知识库",
        "OKF规范",
        "tools-design.md",
        "Tools Design",
        "zzzz-nothing-here",
    ] {
        for mode in ["file", "graph", "hybrid"] {
            for scope in ["all", "path", "metadata"] {
                let input = json!({ "query": query, "mode": mode, "scope": scope, "limit": 5 });
                let out = checked_call(kb, "search_files", input).unwrap();
                if let Some(next) = out["nextCursor"].as_str() {
                    let input = json!({ "query": query, "mode": mode, "scope": scope, "limit": 5, "cursor": next });
                    checked_call(kb, "search_files", input).unwrap();
                }
            }
        }
    }
    checked_call(
        kb,
        "search_files",
        json!({ "query": "graph", "rerank": true, "rerankTopK": 30 }),
    )
    .unwrap();
    checked_call(
        kb,
        "search_files",
        json!({ "query": "graph", "okfStatus": "stable", "okfFreshness": "fresh" }),
    )
    .unwrap();
}

#[test]
fn errors_validate() {
    let opened = open_fixture("focowiki-docs");
    let kb = &opened.kb;
    let cases = [
        ("list_tree", json!({ "parentPath": "../etc" })),
        ("list_tree", json!({ "limit": 0 })),
        ("list_tree", json!({ "cursor": "bogus" })),
        ("list_tree", json!({ "unknown": 1 })),
        ("get_file", json!({ "fileId": "source-file-nope" })),
        ("get_file", json!({})),
        ("read_file", json!({ "path": "../secret.md" })),
        ("read_file", json!({ "path": "pages/nope.md" })),
        ("read_file", json!({ "fileId": "x", "path": "index.md" })),
        ("read_related", json!({ "fileId": "index.md" })),
        ("read_related", json!({ "fileId": "nope" })),
        (
            "read_related",
            json!({ "fileId": "pages/en/README.md", "limit": 201 }),
        ),
        ("expand_graph", json!({ "fileId": "" })),
        (
            "expand_graph",
            json!({ "fileId": "pages/en/README.md", "depth": 3 }),
        ),
        (
            "expand_graph",
            json!({ "fileId": "pages/en/README.md", "fanout": 26 }),
        ),
        ("expand_graph", json!({ "fileId": "index.md" })),
        ("search_files", json!({})),
        ("search_files", json!({ "query": "a" })),
        ("search_files", json!({ "query": "ok", "mode": "vector" })),
    ];
    for (tool, input) in cases {
        assert!(
            checked_call(kb, tool, input.clone()).is_err(),
            "{tool} {input} should fail"
        );
    }
}

#[test]
fn schema_check_rejects_extra_and_missing_keys() {
    let opened = open_fixture("focowiki-docs");
    let mut out = checked_call(
        &opened.kb,
        "read_related",
        json!({ "fileId": "pages/en/README.md" }),
    )
    .unwrap();
    let schema = common::schema_for("listRelatedFiles", 200);
    out["items"][0]["weight"] = json!(0.8);
    assert!(
        !common::violations(&schema, &out).is_empty(),
        "an extra `weight` must be rejected"
    );
    out["items"][0].as_object_mut().unwrap().remove("weight");
    out.as_object_mut().unwrap().remove("sourceFileId");
    assert!(
        !common::violations(&schema, &out).is_empty(),
        "a missing key must be rejected"
    );
}

#[test]
fn a_search_past_its_deadline_is_a_timeout_not_an_empty_success() {
    let mut opened = open_fixture("focowiki-docs");
    opened.kb.options.search_deadline = std::time::Duration::ZERO;
    let error = checked_call(
        &opened.kb,
        "search_files",
        json!({ "query": "knowledge base" }),
    )
    .unwrap_err();
    assert_eq!(error.code.as_str(), "SEARCH_TIMEOUT");
    assert_eq!(error.http_status(), 504);
}

#[test]
fn typed_params_run_the_same_validation_as_json() {
    use kbtools::tools::{read_file, search_files};
    let opened = open_fixture("focowiki-docs");
    let kb = &opened.kb;
    let typed = search_files::run_params(
        kb,
        &search_files::Params {
            query: "knowledge base".into(),
            limit: Some(3),
            ..Default::default()
        },
    )
    .unwrap();
    let json_out = checked_call(
        kb,
        "search_files",
        json!({ "query": "knowledge base", "limit": 3 }),
    )
    .unwrap();
    assert_eq!(serde_json::to_value(typed).unwrap(), json_out);
    let both = read_file::Params {
        file_id: Some("x".into()),
        path: Some("index.md".into()),
        ..Default::default()
    };
    assert_eq!(
        read_file::run_params(kb, &both).unwrap_err().code.as_str(),
        "VALIDATION_ERROR"
    );
}
