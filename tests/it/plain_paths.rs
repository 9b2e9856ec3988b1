//! A plain folder's paths as the user sees them: `README.md`, `rules/md013.md`, the folder
//! `rules` name the same files and folder as `pages/…` at every door, the outputs keep the
//! contract's `pages/…`, and a path that names nothing gets the nearest paths in the error's
//! `details.hint`.

use kbtools::error::ErrorCode;
use serde_json::json;

use crate::common::{call, open_fixture};

#[test]
fn a_plain_folder_takes_its_own_paths_and_answers_with_pages_paths() {
    let opened = open_fixture("rule-reference");
    let kb = &opened.kb;
    for given in ["README.md", "./README.md", "pages/README.md"] {
        let read = call(kb, "read_file", json!({ "path": given })).unwrap();
        assert_eq!(read["file"]["path"], "pages/README.md", "{given}");
    }
    let read = call(kb, "read_file", json!({ "fileId": "rules/md013.md" })).unwrap();
    assert_eq!(read["file"]["path"], "pages/rules/md013.md");
    for tool in ["get_file", "read_related", "expand_graph"] {
        let answer = call(kb, tool, json!({ "fileId": "rules/md013.md" }));
        assert!(answer.is_ok(), "{tool}: {answer:?}");
    }
    let file = call(kb, "get_file", json!({ "fileId": "rules/md013.md" })).unwrap();
    assert_eq!(file["file"]["path"], "pages/rules/md013.md", "{file}");

    let tree = call(kb, "list_tree", json!({ "parentPath": "rules" })).unwrap();
    let paths: Vec<&str> = tree["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap())
        .collect();
    assert!(paths.contains(&"pages/rules/md013.md"), "{paths:?}");
    assert!(
        paths.iter().all(|p| p.starts_with("pages/rules/")),
        "{paths:?}"
    );
}

fn hint(error: &kbtools::ToolError) -> String {
    error.details.as_ref().unwrap()["hint"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_path_that_names_nothing_gets_the_nearest_paths_in_its_details() {
    let opened = open_fixture("rule-reference");
    let error = call(
        &opened.kb,
        "read_file",
        json!({ "path": "rules/md0133.md" }),
    )
    .unwrap_err();
    assert_eq!(error.code, ErrorCode::ValidationError);
    assert!(
        hint(&error).contains("nearest: pages/rules/md013.md"),
        "{}",
        hint(&error)
    );

    let error = call(
        &opened.kb,
        "get_file",
        json!({ "fileId": "pages/rules/md0133.md" }),
    )
    .unwrap_err();
    assert_eq!(error.code, ErrorCode::NotFound);
    assert!(
        hint(&error).contains("pages/rules/md013.md"),
        "{}",
        hint(&error)
    );
    // The text rendering shows the specific hint, not the generic one.
    let text = kbtools::render::render_error(&error);
    assert_eq!(text.matches("hint: ").count(), 1, "{text}");
}

#[test]
fn a_bundle_keeps_its_paths_and_says_where_the_pages_are() {
    let opened = open_fixture("focowiki-docs");
    let error = call(&opened.kb, "read_file", json!({ "path": "en/README.md" })).unwrap_err();
    assert_eq!(error.code, ErrorCode::ValidationError);
    assert!(
        hint(&error).contains("try pages/en/README.md"),
        "{}",
        hint(&error)
    );
    // A validation error says what the field allows, at every door.
    let error = call(
        &opened.kb,
        "search_files",
        json!({ "query": "agents", "mode": "fiel" }),
    )
    .unwrap_err();
    assert!(
        hint(&error).contains("allowed values: file, graph, hybrid"),
        "{}",
        hint(&error)
    );
}
