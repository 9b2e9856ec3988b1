use super::*;
use serde_json::json;

fn assert_within(text: &str, budget: usize) {
    assert!(
        char_len(text) <= budget,
        "{} characters over a budget of {budget}:\n{text}",
        char_len(text)
    );
}

#[test]
fn read_file_renders_the_content_alone() {
    let output = json!({"file": {"path": "pages/a.md", "title": "A"}, "content": "# A\n\nBody.\n"});
    let text = render_output(
        ToolName::ReadFile,
        &json!({"path": "pages/a.md"}),
        &output,
        1000,
    );
    assert_eq!(text, "# A\n\nBody.\n");
    let snippets = json!({"file": {"path": "pages/a.md"}, "content": "[match_1] L1-1 hits:1\n# A"});
    let input = json!({"path": "pages/a.md", "type": "search", "query": "A"});
    assert_eq!(
        render_output(ToolName::ReadFile, &input, &snippets, 1000),
        "[match_1] L1-1 hits:1\n# A"
    );
}

#[test]
fn long_read_is_cut_at_a_line_with_an_extract_continuation() {
    let content: String = (1..=200).map(|i| format!("line {i} 知识库\n")).collect();
    let output = json!({"file": {"path": "pages/long.md"}, "content": content});
    let text = render_output(ToolName::ReadFile, &json!({"fileId": "x"}), &output, 600);
    assert_within(&text, 600);
    let (shown, note) = text.rsplit_once('\n').unwrap();
    assert!(
        content.starts_with(&format!("{shown}\n")),
        "whole lines of the content"
    );
    let n = shown.lines().count();
    assert!(n > 10, "{n} lines shown");
    assert!(
        note.starts_with(&format!(
            "[truncated: showing L1-{n} of 200 lines; continue with read_file {{\"path\": \"pages/long.md\", \"type\": \"extract\", \"segments\": [{{\"start\": {}, \"end\": ",
            n + 1
        )),
        "{note}"
    );
}

#[test]
fn cuts_never_split_a_character() {
    // One 3-byte character per position, no newline: every cut lands inside line 1.
    let content = "知".repeat(5_000);
    let output = json!({"file": {"path": "pages/zh.md"}, "content": content});
    for budget in [400, 401, 402, 999, 1_000, 1_001] {
        let text = render_output(ToolName::ReadFile, &json!({}), &output, budget);
        assert_within(&text, budget);
        let (part, note) = text.split_once('\n').unwrap();
        assert!(part.chars().all(|c| c == '知'));
        assert!(note.contains("of L1 (of 1 line)]"), "{note}");
    }
    assert_eq!(cap_text("知识库".repeat(300), 400).chars().count(), 400);
    assert!(cap_text("知识库".repeat(300), 400).ends_with("[truncated]"));
    assert_eq!(cap_text("知识".into(), 1), "知");
}

#[test]
fn a_long_first_line_continues_from_line_two() {
    let content = format!("{}\nshort\n", "x".repeat(3_000));
    let output = json!({"file": {"path": "_graph/by-file/a.json"}, "content": content});
    let text = render_output(ToolName::ReadFile, &json!({}), &output, 500);
    assert_within(&text, 500);
    assert!(
        text.contains("\"segments\": [{\"start\": 2, \"end\": 2}]"),
        "{text}"
    );
}

#[test]
fn snippet_reads_are_cut_without_a_line_continuation() {
    let content: String = (1..=100)
        .map(|i| format!("[match_{i}] L{i}-{i} hits:{i}\nsome matching line {i}\n\n"))
        .collect();
    let output = json!({"file": {"path": "pages/a.md"}, "content": content});
    let input = json!({"path": "pages/a.md", "type": "search", "query": "matching"});
    let text = render_output(ToolName::ReadFile, &input, &output, 800);
    assert_within(&text, 800);
    assert!(text.ends_with("ask for a narrower query or a smaller maxMatches or contextLines]"));
    assert!(!text.contains("\"extract\""));
}

#[test]
fn lists_are_cut_at_a_whole_item_and_point_to_a_smaller_limit() {
    let items: Vec<Value> = (0..40)
        .map(|i| {
            json!({"entryType": "file", "path": format!("pages/file-{i:02}.md"),
                   "fileId": format!("source-file-{i:02}"), "fileKind": "page"})
        })
        .collect();
    let output = json!({"activeContentRevision": 3, "items": items, "nextCursor": "CUR"});
    let text = render_output(
        ToolName::ListTree,
        &json!({"parentPath": "pages"}),
        &output,
        600,
    );
    assert_within(&text, 600);
    let shown = text.lines().filter(|l| l.starts_with("file ")).count();
    assert!(shown > 5 && shown < 40, "{shown}\n{text}");
    assert!(text.contains(&format!(
        "showing {shown} of 40 entries; to see the rest, call again with \"limit\": {shown} and follow nextCursor]"
    )));
    assert!(
        !text.contains("CUR"),
        "the page cursor would skip the cut items"
    );

    let paged = render_output(
        ToolName::ListTree,
        &json!({"parentPath": "pages", "cursor": "OLD"}),
        &output,
        600,
    );
    assert!(paged.contains("without \"cursor\""), "{paged}");
}

#[test]
fn whole_lists_keep_the_cursor() {
    let output = json!({"activeContentRevision": 1, "items": [
        {"entryType": "directory", "path": "pages/en", "directEntryCount": 7},
        {"entryType": "file", "path": "index.md", "fileId": "generated-1", "fileKind": "index"}
    ], "nextCursor": "abc"});
    let text = render_output(ToolName::ListTree, &json!({}), &output, DEFAULT_TEXT_BUDGET);
    assert_eq!(
        text,
        "list_tree (root): 2 entries (revision 1)\n\
         dir  pages/en/ · 7 entries\n\
         file index.md · generated-1 · index\n\
         nextCursor: abc (for the next page, repeat the call with \"cursor\" set to it)"
    );
}

#[test]
fn odd_json_renders_without_panicking() {
    let odd = [
        json!(null),
        json!(42),
        json!("text"),
        json!([1, 2]),
        json!({}),
        json!({"items": "not a list", "content": 7, "file": [], "seedFile": "x"}),
        json!({"items": [null, 1, "s", {"path": 5, "title": {"a": 1}, "score": "high"}]}),
        json!({"relationships": [{"fromFileId": 3, "direction": null}], "graphPaths": [1, null]}),
        json!({"file": {"frontmatter": {"a": [1, {"b": null}], "t\nx": "v\u{202e}w"}, "okfSignals": 1}}),
        json!({"searchStatus": 1, "semanticStatus": "ready", "rerankerStatus": {"state": 2},
               "evidenceStatus": {"degradedFamilies": "lexical"}, "nextActions": [null]}),
    ];
    for tool in ToolName::ALL {
        for output in &odd {
            for input in [json!(null), json!({"type": 5}), json!({"cursor": null})] {
                for budget in [0, 400, DEFAULT_TEXT_BUDGET] {
                    let text = render_output(tool, &input, output, budget);
                    assert_within(&text, budget.max(MIN_TEXT_BUDGET));
                }
            }
        }
    }
    let text = render_output(
        ToolName::SearchFiles,
        &json!({}),
        &json!({"items": [{"title": "a\nb\u{202e}c", "path": "p.md"}]}),
        1000,
    );
    assert!(text.contains("1. p.md — a b c"), "{text}");
}

#[test]
fn errors_start_with_the_seed_prefix_and_list_details() {
    let error = ToolError::invalid_field("Pagination cursor is invalid.", "cursor");
    assert_eq!(
        render_error(&error),
        "失败: VALIDATION_ERROR Pagination cursor is invalid.\nfield: cursor\n\
         hint: the cursor is stale or belongs to other inputs; call again without \"cursor\" to start over"
    );
    let error = ToolError::invalid_code(
        "File search query is invalid.",
        "FILE_SEARCH_QUERY_TOO_SHORT",
    )
    .with_detail("lineCount", 12);
    assert_eq!(
        render_error(&error),
        "失败: VALIDATION_ERROR File search query is invalid.\ncode: FILE_SEARCH_QUERY_TOO_SHORT\nlineCount: 12"
    );
}

#[test]
fn numbers_are_short_and_stable() {
    assert_eq!(number(0.18887027), "0.1889");
    assert_eq!(number(12.0), "12");
    assert_eq!(number(0.5), "0.5");
    assert_eq!(number(0.00001234), "1.23e-5");
    assert_eq!(number(f64::NAN), "NaN");
}
