//! Golden files of the compact text format for models (`kbtools::render`): every tool over the
//! fixture bundle, errors, a paged list, and results cut by a small budget, compared byte for
//! byte with `tests/golden_text/<case>.txt` (the text exactly, no newline added).
//!
//! Refresh after an intended change, then review the diff:
//!
//! ```sh
//! KBTOOLS_UPDATE_GOLDEN=1 cargo test --test it golden_text::
//! ```

use crate::common;

use common::{checked_call, open_fixture};
use kbtools::error::ToolError;
use kbtools::render::{render_error, render_output, DEFAULT_TEXT_BUDGET};
use kbtools::tools::Output;
use serde_json::{json, Value};

struct Case {
    name: &'static str,
    tool: &'static str,
    input: Value,
    budget: usize,
}

fn case(name: &'static str, tool: &'static str, input: Value) -> Case {
    Case {
        name,
        tool,
        input,
        budget: DEFAULT_TEXT_BUDGET,
    }
}

fn cases() -> Vec<Case> {
    vec![
        case(
            "search_hybrid_en",
            "search_files",
            json!({ "query": "How do agents read related files through the graph?", "limit": 3 }),
        ),
        case(
            "search_file_zh",
            "search_files",
            json!({ "query": "知识库 图谱 关系", "mode": "file", "limit": 3 }),
        ),
        case(
            "search_exact_title",
            "search_files",
            json!({ "query": "Tools Design", "mode": "file", "limit": 2 }),
        ),
        case(
            "search_no_candidates",
            "search_files",
            json!({ "query": "zqxj vvkw", "mode": "file" }),
        ),
        case(
            "search_paged_cursor",
            "search_files",
            json!({ "query": "knowledge base", "mode": "file", "limit": 2 }),
        ),
        Case {
            budget: 2_500,
            ..case(
                "search_budget_truncated",
                "search_files",
                json!({ "query": "How do agents read related files through the graph?" }),
            )
        },
        case("list_tree_root", "list_tree", json!({ "parentPath": "" })),
        case(
            "list_tree_pages_en_page1",
            "list_tree",
            json!({ "parentPath": "pages/en", "limit": 3 }),
        ),
        Case {
            budget: 400,
            ..case(
                "list_tree_budget_truncated",
                "list_tree",
                json!({ "parentPath": "pages/en/deployment" }),
            )
        },
        case(
            "get_file_source_page",
            "get_file",
            json!({ "fileId": "pages/en/guide/open-knowledge-format.md" }),
        ),
        case("get_file_log", "get_file", json!({ "fileId": "log.md" })),
        case(
            "read_file_page",
            "read_file",
            json!({ "path": "pages/en/agent-integration/own-agent-client/tools-design.md" }),
        ),
        case(
            "read_file_graph_record",
            "read_file",
            json!({ "path": "_graph/by-file/en/README.json" }),
        ),
        Case {
            budget: 1_200,
            ..case(
                "read_file_budget_truncated",
                "read_file",
                json!({ "path": "pages/en/agent-integration/own-agent-client/tools-design.md" }),
            )
        },
        case(
            "read_related",
            "read_related",
            json!({ "fileId": "pages/en/README.md", "limit": 3 }),
        ),
        case(
            "expand_graph_depth2",
            "expand_graph",
            json!({ "fileId": "pages/en/README.md", "depth": 2, "fanout": 3 }),
        ),
        case(
            "error_path_traversal",
            "read_file",
            json!({ "path": "pages/../../etc/passwd" }),
        ),
        case(
            "error_query_too_short",
            "search_files",
            json!({ "query": "a" }),
        ),
        case(
            "error_related_conflict",
            "read_related",
            json!({ "fileId": "index.md" }),
        ),
        case(
            "error_not_found",
            "get_file",
            json!({ "fileId": "source-file-00000000-0000-5000-8000-000000000000" }),
        ),
        case(
            "error_cursor_invalid",
            "list_tree",
            json!({ "parentPath": "pages", "cursor": "not-a-cursor" }),
        ),
    ]
}

/// The typed answer of a call whose JSON meets the contract (`checked_call`).
fn answer(kb: &kbtools::KnowledgeBase, tool: &str, input: &Value) -> Result<Output, ToolError> {
    let json = checked_call(kb, tool, input.clone());
    let typed = kbtools::tools::call(kb, tool, input);
    assert_eq!(
        typed
            .as_ref()
            .map(|o| o.to_json().unwrap())
            .map_err(|e| e.code),
        json.map_err(|e| e.code),
        "{tool} {input}: the typed answer serializes to the JSON answer"
    );
    typed
}

fn render(kb: &kbtools::KnowledgeBase, case: &Case) -> String {
    match answer(kb, case.tool, &case.input) {
        Ok(output) => render_output(&output, case.budget),
        Err(error) => render_error(&error),
    }
}

#[test]
fn text_renderings_match_golden_files() {
    let opened = open_fixture("focowiki-docs");
    let update = std::env::var_os("KBTOOLS_UPDATE_GOLDEN").is_some();
    let dir = common::manifest_dir().join("tests/golden_text");
    if update {
        std::fs::create_dir_all(&dir).unwrap();
    }
    let mut mismatches = Vec::new();
    for case in cases() {
        let actual = render(&opened.kb, &case);
        assert!(
            actual.chars().count() <= case.budget,
            "{} is over its budget of {}",
            case.name,
            case.budget
        );
        let path = dir.join(format!("{}.txt", case.name));
        if update {
            std::fs::write(&path, &actual).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
            panic!(
                "{} is missing: run KBTOOLS_UPDATE_GOLDEN=1 cargo test --test it golden_text::",
                path.display()
            )
        });
        if expected != actual {
            mismatches.push(case.name);
        }
    }
    assert!(
        mismatches.is_empty(),
        "renderings differ from tests/golden_text for {mismatches:?}; review, then refresh with KBTOOLS_UPDATE_GOLDEN=1 cargo test --test it golden_text::"
    );
}

#[test]
fn every_candidate_names_what_the_next_call_needs() {
    let opened = open_fixture("focowiki-docs");
    let input =
        json!({ "query": "How do agents read related files through the graph?", "limit": 5 });
    let output = checked_call(&opened.kb, "search_files", input.clone()).unwrap();
    let text = render_output(
        &answer(&opened.kb, "search_files", &input).unwrap(),
        DEFAULT_TEXT_BUDGET,
    );
    for item in output["items"].as_array().unwrap() {
        for key in ["fileId", "path"] {
            let value = item[key].as_str().unwrap();
            assert!(text.contains(value), "{key} {value} missing:\n{text}");
        }
        let graph_ref = item["graphContext"]["graphRef"].as_str().unwrap();
        assert!(text.contains(graph_ref), "graphRef {graph_ref} missing");
    }
    assert!(text.contains("read_file"), "says candidates must be read");
}

#[test]
fn a_cut_read_continues_where_it_stopped() {
    let opened = open_fixture("focowiki-docs");
    let path = "pages/en/agent-integration/own-agent-client/tools-design.md";
    let input = json!({ "path": path });
    let output = checked_call(&opened.kb, "read_file", input.clone()).unwrap();
    let content = output["content"].as_str().unwrap();
    let text = render_output(&answer(&opened.kb, "read_file", &input).unwrap(), 1_200);
    let (shown, note) = text.rsplit_once('\n').unwrap();
    assert!(content.starts_with(&format!("{shown}\n")));
    let shown_lines = shown.split('\n').count();

    // The note's call, run as written, reads the lines right after the last one shown.
    let call = note
        .split_once("continue with read_file ")
        .map(|(_, rest)| rest.trim_end_matches(']'))
        .expect("a continuation call");
    let next_input: Value = serde_json::from_str(call).unwrap();
    let next = answer(&opened.kb, "read_file", &next_input).unwrap();
    let next_text = render_output(&next, 1_200);
    let next_line = content.split('\n').nth(shown_lines).unwrap();
    let body = next_text.split_once('\n').unwrap().1;
    assert!(
        body.starts_with(next_line),
        "line {} ({next_line:?}) should open the continuation:\n{next_text}",
        shown_lines + 1
    );
    assert!(next_text.chars().count() <= 1_200);
    assert!(
        !next_text.contains("[truncated"),
        "the continuation is sized to fit"
    );
}
