//! A question no page shares a word with still gets an answer (issue 39: "never an empty
//! answer to a real question"): the pages whose titles or paths are a few edits from its words,
//! else the knowledge base's entry pages: a search with items as the contract has it
//! (DECISIONS item 29), whose compact text says on a line of its own that they are the nearest
//! pages and not matches. A precise request that finds nothing (one unknown word, a quoted phrase no
//! page holds, filters that leave nothing) stays `no_candidates`. And the title lane: a question
//! that says almost all of a page's title ranks that page first (`fixtures/rule-reference`).

use serde_json::{json, Value};

use crate::common;

fn search(kb: &kbtools::kb::KnowledgeBase, input: Value) -> Value {
    common::call(kb, "search_files", input).unwrap()
}

fn paths(out: &Value) -> Vec<&str> {
    out["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap())
        .collect()
}

/// A search with items, as the contract has it: `ok`, `message: null`, `nextActions: []`, and
/// the meaning of results (DECISIONS item 29).
fn assert_contract_shape(out: &Value, label: &str) {
    assert_eq!(out["searchStatus"], "ok", "{label}");
    assert!(out["message"].is_null(), "{label}: {}", out["message"]);
    assert_eq!(out["nextActions"], json!([]), "{label}");
    assert_eq!(
        out["resultSummary"]["meaning"], "Results match the current readable knowledge base.",
        "{label}"
    );
}

#[test]
fn a_question_in_words_no_page_uses_gets_the_entry_pages() {
    let opened = common::open_fixture("rule-reference");
    let kb = &opened.kb;
    for mode in ["file", "graph", "hybrid"] {
        // Chinese, over English pages, in words the glossary does not hold either: no lane
        // matches a word.
        let out = search(
            kb,
            json!({ "query": "我奶奶的猫为什么总在晚上叫？", "mode": mode }),
        );
        assert_eq!(out["searchStatus"], "ok", "{mode}");
        let found = paths(&out);
        // The README first (an entry page by name), then by relation count.
        assert_eq!(found.first(), Some(&"pages/README.md"), "{mode} {found:?}");
        assert!(found.len() > 1, "{mode} {found:?}");
        // The contract's shape of a search with items (DECISIONS item 29); the compact text
        // says what they are.
        assert_contract_shape(&out, mode);
        let text = common::call_text(
            kb,
            "search_files",
            json!({ "query": "我奶奶的猫为什么总在晚上叫？", "mode": mode }),
        );
        let line = text
            .lines()
            .find(|l| l.starts_with("nearest pages: "))
            .unwrap_or_else(|| panic!("{mode}: no nearest line in {text}"));
        assert!(line.contains("entry pages"), "{line}");
        assert!(line.contains("not matches"), "{line}");
        for item in out["items"].as_array().unwrap() {
            assert_eq!(item["matchedFields"], json!(["path"]));
            assert!(item["sourceExcerpt"].is_null());
        }
        // Scores fall down the list.
        let scores: Vec<f64> = out["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["score"].as_f64().unwrap())
            .collect();
        assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
        assert!(scores.iter().all(|s| *s > 0.0), "{scores:?}");
    }
}

#[test]
fn a_misspelled_title_word_finds_the_page_by_its_title() {
    let opened = common::open_fixture("rule-reference");
    let kb = &opened.kb;
    // `punctuatoin` (a transposition) and `trailnig` are in no page; one edit from the title.
    let out = search(kb, json!({ "query": "trailnig punctuatoin" }));
    assert_eq!(out["searchStatus"], "ok");
    let found = paths(&out);
    assert_eq!(
        found.first(),
        Some(&"pages/rules/no-trailing-punctuation.md"),
        "{found:?}"
    );
    assert_contract_shape(&out, "a misspelled title word");
    let text = common::call_text(
        kb,
        "search_files",
        json!({ "query": "trailnig punctuatoin" }),
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("nearest pages: ") && l.contains("titles or paths are closest")),
        "{text}"
    );
}

#[test]
fn a_question_quoting_words_no_page_holds_is_answered_by_its_other_words() {
    let opened = common::open_fixture("rule-reference");
    let kb = &opened.kb;
    // The quoted message is in no page (as an asker saw or translated it); the question's
    // other words are the rule's.
    for query in [
        "why is trailing punctuation in a heading reported as “zqxwvkjh ploughshare”?",
        "标题末尾的标点符号为什么被报告出来？报错说“zqxwvkjh 找不到规则定义”",
        // Two words besides the quote, and a question mark.
        "Which heading punctuation is \"zqxwvkjh ploughshare\"?",
    ] {
        let out = search(kb, json!({ "query": query }));
        assert_eq!(out["searchStatus"], "ok", "{query}");
        let found = paths(&out);
        assert!(
            found.contains(&"pages/rules/no-trailing-punctuation.md"),
            "{query}: {found:?}"
        );
    }
}

#[test]
fn a_precise_request_that_finds_nothing_stays_empty() {
    let opened = common::open_fixture("rule-reference");
    let kb = &opened.kb;
    for input in [
        // One unknown word: not a question.
        json!({ "query": "zqxwvkjh" }),
        // A quoted phrase no page holds.
        json!({ "query": "\"zqxwvkjh ploughshare\" rules of the linter" }),
        // Only the path scope was asked for.
        json!({ "query": "标题末尾的标点符号为什么被报告出来？", "scope": "path" }),
        // Filters that leave nothing.
        json!({ "query": "标题末尾的标点符号为什么被报告出来？", "okfStatus": "deprecated" }),
    ] {
        let out = search(kb, input.clone());
        assert_eq!(out["searchStatus"], "no_candidates", "{input}");
        assert_eq!(out["items"], json!([]), "{input}");
        assert!(out["message"]
            .as_str()
            .unwrap()
            .starts_with("No generated files matched"));
    }
}

#[test]
fn a_question_holding_a_pages_title_ranks_it_first() {
    let opened = common::open_fixture("rule-reference");
    let kb = &opened.kb;
    // The title's words, not its identifier; the collecting page and the changelog repeat them.
    let out = search(
        kb,
        json!({ "query": "which rule limits the line length of a markdown file?" }),
    );
    assert_eq!(paths(&out).first(), Some(&"pages/rules/md013.md"));
    let explained = kbtools::tools::search_files::explain(
        kb,
        &json!({ "query": "which rule limits the line length of a markdown file?" }),
    )
    .unwrap();
    let lanes: Vec<&str> = explained[0]
        .explained
        .lanes
        .iter()
        .map(|l| l.lane.as_str())
        .collect();
    assert!(lanes.contains(&"title"), "{lanes:?}");
}
