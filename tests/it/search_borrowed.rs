//! Two rules of the default ranking on a rule reference (`fixtures/rule-reference`, English
//! pages): a Chinese question finds the English rule page it asks about through the words it
//! borrows from the glossary (`src/ingest/analysis/glossary.rs`), with no model; and the graph lanes
//! add pages without reordering those the direct lanes found, so `hybrid` keeps `file` mode's
//! order of them.

use crate::common;

#[test]
fn a_chinese_question_finds_the_english_page_it_asks_about() {
    let opened = common::open_fixture("rule-reference");
    let kb = &opened.kb;
    let cases = [
        // Trailing spaces at the end of a line: 行尾 → end of line, trailing; 空格 → space.
        ("行尾的空格会被报告吗？", "pages/rules/md009.md"),
        // A heading ending in punctuation: 标题 → title, heading; 末尾 → end, trailing.
        (
            "标题末尾的标点符号会报错吗？",
            "pages/rules/no-trailing-punctuation.md",
        ),
        // One top-level heading: 文档 → document; 标题 → heading.
        ("文档里能有几个一级标题？", "pages/rules/md025.md"),
    ];
    for mode in ["file", "hybrid"] {
        for (query, page) in cases {
            let found = common::search_paths(kb, query, mode, 50);
            assert_eq!(
                found.first().map(String::as_str),
                Some(page),
                "{mode} {query}: {found:?}"
            );
        }
    }
}

#[test]
fn graph_lanes_do_not_reorder_the_pages_the_question_found() {
    let opened = common::open_fixture("rule-reference");
    let kb = &opened.kb;
    for query in [
        "trailing spaces at the end of a line",
        "how long may a line be",
        "heading punctuation question mark",
        "which rules changed in the last release",
        "行尾的空格会被报告吗？",
    ] {
        let file = common::search_paths(kb, query, "file", 50);
        assert!(!file.is_empty(), "{query}");
        let hybrid: Vec<String> = common::search_paths(kb, query, "hybrid", 50)
            .into_iter()
            .filter(|p| file.contains(p))
            .collect();
        assert_eq!(hybrid, file, "{query}");
    }
}
