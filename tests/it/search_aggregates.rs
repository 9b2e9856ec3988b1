//! A history (a changelog, release notes: headings that are versions) counts at a share of its
//! weight in the content lanes unless the question asks about releases, so the page that
//! answers ranks above the changelog that repeats its words; a question about a version or a
//! rename still finds the changelog (`fixtures/rule-reference`, issue 60).

use serde_json::json;

use crate::common;

const CHANGELOG: &str = "pages/CHANGELOG.md";

/// The changelog's lanes in `explain`: (lane, weight), when it is among the results.
fn changelog_weights(kb: &kbtools::kb::KnowledgeBase, query: &str) -> Option<Vec<(String, f64)>> {
    let input = json!({ "query": query, "mode": "file", "limit": 50 });
    let explained = kbtools::tools::search_files::explain(kb, &input).unwrap();
    explained.iter().find(|e| e.path == CHANGELOG).map(|e| {
        e.explained
            .lanes
            .iter()
            .map(|l| (l.lane.name().to_string(), l.weight))
            .collect()
    })
}

#[test]
fn a_changelog_ranks_below_the_page_that_answers_unless_asked_about_releases() {
    let opened = common::open_fixture("rule-reference");
    let kb = &opened.kb;
    // Every word of these is in the changelog too; none asks about a release.
    for query in [
        "How do I make the linter report every trailing space, hard line breaks too?",
        "line length of code blocks",
    ] {
        for mode in ["file", "graph", "hybrid"] {
            let paths = common::search_paths(kb, query, mode, 10);
            let at = paths.iter().position(|p| p == CHANGELOG);
            assert!(at.is_none_or(|at| at >= 3), "{mode} {query}: {paths:?}");
        }
        let weights = changelog_weights(kb, query).expect("the changelog matches");
        for (lane, weight) in &weights {
            let full = match lane.as_str() {
                "lexical" | "title" | "literal" => 3.0,
                "passage" => 10.0,
                other => panic!("{other} found the changelog"),
            };
            let damped = full * kbtools::search::weights::WEIGHTS.history;
            assert!((weight - damped).abs() < 1e-9, "{lane} {weight}");
        }
    }
    // Questions about releases: the changelog at its whole weight, near the top.
    for query in [
        "In which version did MD013 get the code_blocks option?",
        "When were the rules renamed to their MD numbers?",
        "MD013 的 code_blocks 选项是哪个版本加的？",
    ] {
        let paths = common::search_paths(kb, query, "hybrid", 10);
        let at = paths.iter().position(|p| p == CHANGELOG);
        assert!(at.is_some_and(|at| at < 2), "{query}: {paths:?}");
        let weights = changelog_weights(kb, query).expect("the changelog matches");
        assert!(
            weights
                .iter()
                .any(|(lane, w)| lane == "passage" && *w == 10.0),
            "{query}: {weights:?}"
        );
    }
}

#[test]
fn only_the_changelog_is_a_history() {
    let opened = common::open_fixture("rule-reference");
    let kb = &opened.kb;
    let histories: Vec<&str> = (0..kb.catalog.file_count() as u32)
        .filter(|&i| kb.catalog.is_history(i))
        .map(|i| kb.catalog.file(i).path.as_str())
        .collect();
    assert_eq!(histories, vec![CHANGELOG]);
}
