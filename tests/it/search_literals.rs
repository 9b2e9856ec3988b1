//! The code a question quotes without quote marks (`compose:clean`, `_graph/by-file`): the
//! `literal` lane finds the pages whose text holds it as written, not the pages where its words
//! only stand together, and adds them to the fused ranking (`fixtures/focowiki-docs`).

use serde_json::{json, Value};

use crate::common;

/// The literal lane's pages for `query`, as paths.
fn literal_pages(kb: &kbtools::kb::KnowledgeBase, query: &str) -> Vec<String> {
    kbtools::search::literal::pages(kb, &kb.search.searcher(), query)
        .unwrap()
        .into_iter()
        .map(|p| kb.catalog.file(p).path.clone())
        .collect()
}

#[test]
fn the_literal_lane_finds_the_pages_that_hold_the_code_as_written() {
    let opened = common::open_fixture("focowiki-docs");
    let kb = &opened.kb;
    let mut found = literal_pages(kb, "What does compose:clean remove?");
    found.sort();
    assert_eq!(
        found,
        [
            "pages/en/deployment/docker-compose.md",
            "pages/zh-CN/deployment/docker-compose.md"
        ]
    );
    // Written nowhere as such (its words are: `compose`, `clean`), prose, and a hyphenated
    // name (the identifier lane's): nothing.
    assert!(literal_pages(kb, "What does compose:purge remove?").is_empty());
    assert!(literal_pages(kb, "Clean up, e.g. with docker compose").is_empty());
    assert!(literal_pages(kb, "what is docker-compose for").is_empty());
    // The rarer literal counts for more: the two pages with `compose:clean` before the ten
    // with `_graph/by-file`.
    let both = literal_pages(kb, "_graph/by-file records and compose:clean");
    assert_eq!(both.len(), 12, "{both:?}");
    assert!(
        both[..2]
            .iter()
            .all(|p| p.ends_with("deployment/docker-compose.md")),
        "{both:?}"
    );
}

#[test]
fn a_plugin_prefixed_rule_no_page_writes_is_read_as_the_rule() {
    let opened = common::open_fixture("rule-reference");
    let kb = &opened.kb;
    // No page writes `tidy/no-trailing-punctuation`; the rule's own page and the pages that
    // name it write `no-trailing-punctuation`.
    let found = literal_pages(kb, "Why does tidy/no-trailing-punctuation flag my heading?");
    assert!(
        found.contains(&"pages/rules/no-trailing-punctuation.md".to_string()),
        "{found:?}"
    );
    // A path's last part that is no name, and a name written nowhere: nothing.
    assert!(literal_pages(kb, "Why does tidy/punctuation flag my heading?").is_empty());
    assert!(literal_pages(kb, "Why does tidy/no-such-rule flag my heading?").is_empty());
}

#[test]
fn explain_shows_the_literal_lane() {
    let opened = common::open_fixture("focowiki-docs");
    let out: Value = kbtools::tools::search_files::explain(
        &opened.kb,
        &json!({ "query": "What does compose:clean remove?", "mode": "hybrid" }),
    )
    .map(|items| serde_json::to_value(items).unwrap())
    .unwrap();
    let first = &out[0];
    assert_eq!(
        first["path"],
        json!("pages/en/deployment/docker-compose.md"),
        "{out}"
    );
    let lanes: Vec<&str> = first["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["lane"].as_str().unwrap())
        .collect();
    assert!(lanes.contains(&"literal"), "{lanes:?}");
}
