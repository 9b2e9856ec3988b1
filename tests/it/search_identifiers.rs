//! A query that names a page by its identifier (`MD013`, `md013.md`, `no-trailing-punctuation`)
//! ranks that page first in every mode, above the changelog, the README and the page that
//! collects every rule, which repeat the identifier more often than the page itself
//! (`fixtures/rule-reference`, issue 39). A word of prose, or a name many pages share, names no
//! page. `explain` is that ranking lane by lane.

use serde_json::json;

use crate::common;

/// The pages the query names, as the identifier lane finds them.
fn named(kb: &kbtools::kb::KnowledgeBase, query: &str) -> Vec<u32> {
    kbtools::search::identifier::named_pages(kb, &kb.search.searcher(), query).unwrap()
}

#[test]
fn a_query_naming_a_page_ranks_it_first() {
    let opened = common::open_fixture("rule-reference");
    let kb = &opened.kb;
    let cases = [
        ("MD013", "pages/rules/md013.md"),
        ("md013", "pages/rules/md013.md"),
        ("md013.md", "pages/rules/md013.md"),
        ("rules/md013.md", "pages/rules/md013.md"),
        ("Why does MD013 flag my long lines?", "pages/rules/md013.md"),
        (
            "what does md025 say about a front matter title",
            "pages/rules/md025.md",
        ),
        (
            "MD009 trailing spaces strict option",
            "pages/rules/md009.md",
        ),
        (
            "is a question mark allowed by no-trailing-punctuation",
            "pages/rules/no-trailing-punctuation.md",
        ),
    ];
    for mode in ["file", "graph", "hybrid"] {
        for (query, page) in cases {
            let found = common::search_paths(kb, query, mode, 10);
            assert_eq!(
                found.first().map(String::as_str),
                Some(page),
                "{mode} {query}: {found:?}"
            );
        }
    }
}

#[test]
fn prose_and_shared_names_name_no_page() {
    // Without an identifier the content decides: the changelog and the page of every rule
    // hold "front matter" too, and stay among the results.
    let opened = common::open_fixture("rule-reference");
    let found = common::search_paths(&opened.kb, "front matter title", "file", 10);
    assert!(found.len() >= 2, "{found:?}");
    assert!(named(&opened.kb, "front matter title").is_empty());
    assert!(named(&opened.kb, "options").is_empty());
    assert_eq!(named(&opened.kb, "MD013 or MD009?").len(), 2);

    // `index`, the stem of a page in each of five folders, names none of them.
    let tmp = tempfile::tempdir().unwrap();
    for folder in ["a", "b", "c", "d", "e"] {
        let dir = tmp.path().join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("index.md"),
            format!("# {folder}\n\nThe {folder} index.\n"),
        )
        .unwrap();
        std::fs::write(
            dir.join("page-1.md"),
            format!("# Page 1 of {folder}\n\nText.\n"),
        )
        .unwrap();
    }
    let opened = common::open_bundle(tmp.path());
    assert!(named(&opened.kb, "index").is_empty());
    assert!(named(&opened.kb, "where is page-1").is_empty());
}

/// `explain` ranks as `search_files` does, and each result's shares add up to its score.
#[test]
fn explain_is_the_ranking_lane_by_lane() {
    let opened = common::open_fixture("focowiki-docs");
    let kb = &opened.kb;
    for query in [
        "How do agents read related files?",
        "知识库 图谱",
        "tools-design.md",
    ] {
        for mode in ["file", "graph", "hybrid"] {
            let input = json!({ "query": query, "mode": mode, "limit": 10 });
            let explained = kbtools::tools::search_files::explain(kb, &input).unwrap();
            let searched = common::search_paths(kb, query, mode, 10);
            let got: Vec<&str> = explained.iter().map(|e| e.path.as_str()).collect();
            assert_eq!(&got[..searched.len()], &searched[..], "{query} {mode}");
            for e in &explained {
                let parts = e.explained.lanes.iter().map(|l| l.share).sum::<f64>()
                    + e.explained.graph
                    + e.explained.relationship
                    + e.explained.translation;
                assert!(
                    (parts - e.score).abs() < 1e-9,
                    "{query} {mode} {}: {parts} vs {}",
                    e.path,
                    e.score
                );
                for lane in &e.explained.lanes {
                    assert!(lane.rank >= 1);
                    let expected = lane.weight / (5.0 + f64::from(lane.rank));
                    assert!((lane.share - expected).abs() < 1e-9, "{lane:?}");
                }
            }
        }
    }
}
