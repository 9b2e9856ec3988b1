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

/// The size of the catalog's `pages` together.
fn bytes_of(kb: &kbtools::kb::KnowledgeBase, pages: &[u32]) -> u64 {
    pages.iter().map(|&p| kb.catalog.file(p).size).sum()
}

#[test]
fn the_literal_lane_reads_each_page_once_for_all_its_literals() {
    let opened = common::open_fixture("focowiki-docs");
    let kb = &opened.kb;
    let searcher = kb.search.searcher();
    let budget = kbtools::search::literal::budget(kb);
    let scan = |query: &str| kbtools::search::literal::scan(kb, &searcher, query, budget).unwrap();
    let one = scan("_graph/by-file");
    assert_eq!(one.pages.len(), 10, "{one:?}");
    assert_eq!(one.pages_read, 10, "{one:?}");
    assert_eq!(one.bytes_read, bytes_of(kb, &one.pages), "{one:?}");
    // Three literals with the same words, so the same candidate pages: each page is read and
    // searched once for the three (the old lane searched each page once a literal).
    let three = scan("_graph/by-file _graph:by-file _graph.by-file");
    assert_eq!(three.literals, 3, "{three:?}");
    assert_eq!(three.pages, one.pages);
    assert_eq!(
        (three.pages_read, three.bytes_read),
        (one.pages_read, one.bytes_read)
    );
    assert!(!three.cut_short(), "{three:?}");
    // Only the first literals of a query are read: the rest are left out, and said so.
    let many: Vec<String> = (0..kbtools::search::literal::MOST_LITERALS + 4)
        .map(|i| format!("graph{i}.by{i}"))
        .collect();
    let many = scan(&format!("_graph/by-file {}", many.join(" ")));
    assert_eq!(many.literals, kbtools::search::literal::MOST_LITERALS);
    assert_eq!(many.literals_dropped, 5, "{many:?}");
    assert_eq!(many.pages, one.pages);
    assert!(many.cut_short());
}

#[test]
fn the_literal_lane_reads_no_more_than_its_budget_and_the_search_says_so() {
    let opened = common::open_fixture("focowiki-docs");
    let kb = &opened.kb;
    let searcher = kb.search.searcher();
    let all = kbtools::search::literal::scan(kb, &searcher, "_graph/by-file", u64::MAX).unwrap();
    let largest = all
        .pages
        .iter()
        .map(|&p| kb.catalog.file(p).size)
        .max()
        .unwrap();
    // A read limit every page fits, four of which (the lane's budget) do not hold them all.
    let read_limit = largest;
    let budget = read_limit * kbtools::search::literal::BUDGET_READS;
    assert!(budget < all.bytes_read, "{budget} {all:?}");
    let cut = kbtools::search::literal::scan(kb, &searcher, "_graph/by-file", budget).unwrap();
    assert!(cut.bytes_read <= budget, "{cut:?}");
    assert!(cut.pages_skipped > 0, "{cut:?}");
    assert_eq!(
        cut.pages_read + cut.pages_skipped,
        all.pages_read,
        "{cut:?}"
    );
    assert!(cut.pages.len() < all.pages.len(), "{cut:?}");
    // The search says the lexical evidence is partial; with the default read limit it is not.
    let query = json!({ "query": "What are the _graph/by-file records?", "mode": "file" });
    let out = common::call(kb, "search_files", query.clone()).unwrap();
    assert_eq!(
        out["evidenceStatus"]["degradedFamilies"],
        json!([]),
        "{out}"
    );
    let limited = kbtools::kb::KnowledgeBase::open(
        opened.index_dir.path(),
        Some(&common::fixture("focowiki-docs")),
        kbtools::kb::ServeOptions {
            read_limit,
            ..common::serve_options()
        },
    )
    .unwrap();
    let out = common::call(&limited, "search_files", query).unwrap();
    assert_eq!(out["searchStatus"], "ok", "{out}");
    assert_eq!(
        out["evidenceStatus"]["degradedFamilies"],
        json!(["lexical"]),
        "{out}"
    );
}
