//! Unit tests of the text renderers: cuts, budgets, odd text.

use super::*;
use serde_json::{json, Map};

use crate::ids::ReadActions;
use crate::ingest::bundle::paths::ContractFileKind;
use crate::okf::OkfSignals;
use crate::tools::read_file::ReadType;
use crate::tools::search_files::SearchResult;
use crate::tools::{list_tree, read_file, search_files, GeneratedFile};

fn assert_within(text: &str, budget: usize) {
    assert!(
        char_len(text) <= budget,
        "{} characters over a budget of {budget}:\n{text}",
        char_len(text)
    );
}

fn signals() -> OkfSignals {
    OkfSignals::compute(&Map::new(), crate::okf::parse_date("2026-06-01").unwrap())
}

fn file(path: &str) -> GeneratedFile {
    GeneratedFile {
        active_content_revision: 1,
        file_id: format!("id-{path}"),
        knowledge_base_id: "kb".into(),
        source_file_id: None,
        path: path.into(),
        file_kind: ContractFileKind::Page,
        content_type: "text/markdown".into(),
        size_bytes: 0,
        okf_type: None,
        title: None,
        description: None,
        tags: Vec::new(),
        frontmatter: Map::new(),
        okf_signals: signals(),
        deletable: false,
        content_available: true,
        read_actions: ReadActions::for_file("kb", "id", path, false),
    }
}

fn read(path: &str, content: &str, read_type: ReadType) -> Output {
    Output::ReadFile(read_file::Output {
        file: file(path),
        content: content.into(),
        read_type,
    })
}

fn tree_file(path: &str, file_id: &str, kind: ContractFileKind) -> list_tree::TreeEntry {
    list_tree::TreeEntry {
        active_content_revision: Some(1),
        id: file_id.into(),
        file_id: Some(file_id.into()),
        source_file_id: None,
        directory_id: None,
        parent_path: String::new(),
        name: path.into(),
        path: path.into(),
        sort_key: path.into(),
        entry_type: list_tree::EntryType::File,
        file_kind: Some(kind),
        direct_entry_count: 0,
        direct_directory_count: 0,
        direct_file_count: 0,
        descendant_file_count: 0,
        resource_revision: None,
        deletable: false,
        content_available: true,
        read_actions: None,
    }
}

fn tree(
    parent: &str,
    revision: u64,
    items: Vec<list_tree::TreeEntry>,
    cursor: Option<&str>,
    paged: bool,
) -> Output {
    Output::ListTree(list_tree::Output {
        active_content_revision: Some(revision),
        items,
        next_cursor: cursor.map(str::to_string),
        parent_path: parent.into(),
        paged,
    })
}

fn search_result(path: &str, title: &str) -> SearchResult {
    let file = file(path);
    SearchResult {
        active_content_revision: 1,
        file_id: file.file_id,
        knowledge_base_id: file.knowledge_base_id,
        source_file_id: None,
        path: file.path,
        file_kind: ContractFileKind::Page,
        title: Some(title.into()),
        description: None,
        tags: Vec::new(),
        frontmatter: Map::new(),
        okf_signals: file.okf_signals,
        matched_fields: vec!["content"],
        evidence_types: Vec::new(),
        source_excerpt: None,
        score: 0.5,
        content_available: true,
        read_actions: file.read_actions,
        match_type: search_files::MatchType::FileDirect,
        graph_context: None,
        lanes: Default::default(),
    }
}

fn search(query: &str, items: Vec<SearchResult>) -> Output {
    let request = search_files::validate_json(&json!({ "query": query })).unwrap();
    let mut output = search_files::empty_output(&request);
    output.items = items;
    Output::SearchFiles(output)
}

#[test]
fn read_file_renders_the_content_alone() {
    let output = read("pages/a.md", "# A\n\nBody.\n", ReadType::Read);
    assert_eq!(render_output(&output, 1000), "# A\n\nBody.\n");
    let snippets = read("pages/a.md", "[match_1] L1-1 hits:1\n# A", ReadType::Search);
    assert_eq!(render_output(&snippets, 1000), "[match_1] L1-1 hits:1\n# A");
}

#[test]
fn long_read_is_cut_at_a_line_with_an_extract_continuation() {
    let content: String = (1..=200).map(|i| format!("line {i} 知识库\n")).collect();
    let output = read("pages/long.md", &content, ReadType::Read);
    let text = render_output(&output, 600);
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
    let output = read("pages/zh.md", &content, ReadType::Read);
    for budget in [400, 401, 402, 999, 1_000, 1_001] {
        let text = render_output(&output, budget);
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
    let output = read("_graph/by-file/a.json", &content, ReadType::Read);
    let text = render_output(&output, 500);
    assert_within(&text, 500);
    assert!(
        text.contains("\"segments\": [{\"start\": 2, \"end\": 2}]"),
        "{text}"
    );
}

#[test]
fn a_file_known_only_by_its_id_continues_by_fileid() {
    let content: String = (1..=100).map(|i| format!("line {i}\n")).collect();
    let mut unnamed = file("");
    unnamed.file_id = "source-file-7".into();
    let output = Output::ReadFile(read_file::Output {
        file: unnamed,
        content,
        read_type: ReadType::Read,
    });
    let text = render_output(&output, 400);
    assert!(
        text.contains("{\"fileId\": \"source-file-7\", \"type\": \"extract\""),
        "{text}"
    );
}

#[test]
fn snippet_reads_are_cut_without_a_line_continuation() {
    let content: String = (1..=100)
        .map(|i| format!("[match_{i}] L{i}-{i} hits:{i}\nsome matching line {i}\n\n"))
        .collect();
    let output = read("pages/a.md", &content, ReadType::Search);
    let text = render_output(&output, 800);
    assert_within(&text, 800);
    assert!(text.ends_with("ask for a narrower query or a smaller maxMatches or contextLines]"));
    assert!(!text.contains("\"extract\""));
    let extracted = render_output(&read("pages/a.md", &content, ReadType::Extract), 800);
    assert!(
        extracted.ends_with("of this extract result; ask for fewer or shorter segments]"),
        "{extracted}"
    );
}

#[test]
fn lists_are_cut_at_a_whole_item_and_point_to_a_smaller_limit() {
    let items = || {
        (0..40)
            .map(|i| {
                let path = format!("pages/file-{i:02}.md");
                tree_file(
                    &path,
                    &format!("source-file-{i:02}"),
                    ContractFileKind::Page,
                )
            })
            .collect()
    };
    let text = render_output(&tree("pages", 3, items(), Some("CUR"), false), 600);
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

    let paged = render_output(&tree("pages", 3, items(), Some("CUR"), true), 600);
    assert!(paged.contains("without \"cursor\""), "{paged}");
}

#[test]
fn whole_lists_keep_the_cursor() {
    let mut dir = tree_file("pages/en", "d", ContractFileKind::Page);
    dir.entry_type = list_tree::EntryType::Directory;
    dir.file_id = None;
    dir.file_kind = None;
    dir.direct_entry_count = 7;
    let items = vec![
        dir,
        tree_file("index.md", "generated-1", ContractFileKind::Index),
    ];
    let text = render_output(&tree("", 1, items, Some("abc"), false), DEFAULT_TEXT_BUDGET);
    assert_eq!(
        text,
        "list_tree (root): 2 entries (revision 1)\n\
         dir  pages/en/ · 7 entries\n\
         file index.md · generated-1 · index\n\
         nextCursor: abc (for the next page, repeat the call with \"cursor\" set to it)"
    );
}

#[test]
fn odd_text_renders_on_one_line_within_the_budget() {
    let odd = "a\nb\u{202e}c\t\u{0}d";
    let mut result = search_result("p.md", odd);
    result.source_excerpt = Some(odd.repeat(200));
    result.description = Some(String::new());
    let mut empty = search_result("", "   ");
    empty.file_id = String::new();
    let outputs = [
        search("odd", vec![result, empty]),
        search("nothing", Vec::new()),
        read("p.md", odd, ReadType::Read),
        read("p.md", "", ReadType::Extract),
        tree("", 1, Vec::new(), None, false),
    ];
    for output in &outputs {
        for budget in [0, 400, DEFAULT_TEXT_BUDGET] {
            let text = render_output(output, budget);
            assert_within(&text, budget.max(MIN_TEXT_BUDGET));
        }
    }
    let text = render_output(&outputs[0], 1000);
    assert!(text.contains("1. p.md — a b c d · score 0.5"), "{text}");
    assert!(text.contains("2. ? · score 0.5"), "an unnamed file: {text}");
    assert!(!text.contains('\u{202e}'), "{text}");
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
