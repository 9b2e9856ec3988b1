//! A search analyses its question once: every lane, the fusion and the excerpts read the one
//! `AnalyzedQuery` (`kbtools::search::query`), whichever lanes run, the fallback included.

use kbtools::search::query::analyses_on_this_thread;
use serde_json::json;

use crate::common::{call, item_paths, open_fixture};

#[test]
fn a_search_analyses_its_question_once() {
    let opened = open_fixture("rule-reference");
    let kb = &opened.kb;
    let searches = [
        ("Which rule disallows unknown at-rules?", "hybrid", "all"),
        (
            "How do I require a::before? md013 \"line length\"",
            "graph",
            "all",
        ),
        ("知识库 续费 通知 rules", "file", "all"),
        ("selector type no unknown", "hybrid", "metadata"),
        ("rules/md013.md", "hybrid", "path"),
        // No lane matches: the fallback lane reads the same analysis.
        ("configration punctuatoin", "hybrid", "all"),
    ];
    for (query, mode, scope) in searches {
        let before = analyses_on_this_thread();
        let out = call(
            kb,
            "search_files",
            json!({ "query": query, "mode": mode, "scope": scope }),
        )
        .unwrap_or_else(|e| panic!("{query}: {e:?}"));
        assert_eq!(
            analyses_on_this_thread() - before,
            1,
            "{query} ({mode}, {scope}): {:?}",
            item_paths(&out)
        );
    }
}
