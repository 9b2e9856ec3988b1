//! The search index remembers, per opened generation, the IDFs it looked up and each page's
//! weighted title terms. A knowledge base whose memo is full answers exactly as a freshly
//! opened one, which computes everything (the straightforward path).

use kbtools::kb::KnowledgeBase;

use crate::common::{call, fixture, open_fixture, serve_options};

const QUESTIONS: [&str; 8] = [
    "Which rule disallows unknown at-rules?",
    "color-no-invalid-hex",
    "how do I turn off a rule for one line",
    "知识库 续费 通知",
    "what does the changelog say about deprecated rules",
    "selector type no unknown",
    "规则 配置",
    "renewal notice",
];

/// The search output of `question` in `mode` (ten items, every field).
fn answer(kb: &KnowledgeBase, question: &str, mode: &str) -> serde_json::Value {
    let input = serde_json::json!({ "query": question, "mode": mode, "limit": 10 });
    call(kb, "search_files", input).unwrap_or_else(|e| panic!("{question}: {e:?}"))
}

#[test]
fn a_full_memo_answers_as_a_fresh_knowledge_base() {
    for name in ["rule-reference", "focowiki-docs"] {
        let opened = open_fixture(name);
        let remembered = &opened.kb;
        for mode in ["hybrid", "file"] {
            // Every question once, so that the memo holds the pages and terms of all of them.
            for question in QUESTIONS {
                answer(remembered, question, mode);
            }
            for question in QUESTIONS {
                let fresh = KnowledgeBase::open(
                    opened.index_dir.path(),
                    Some(&fixture(name)),
                    serve_options(),
                )
                .unwrap();
                assert_eq!(
                    answer(remembered, question, mode),
                    answer(&fresh, question, mode),
                    "{name} {mode}: {question}"
                );
            }
        }
    }
}

#[test]
fn remembered_title_terms_and_idfs_are_the_ones_read() {
    let opened = open_fixture("rule-reference");
    let kb = &opened.kb;
    let searcher = kb.search.searcher();
    let pages: Vec<u32> = (0..kb.catalog.file_count() as u32).collect();
    let terms_of = |position: u32| {
        let title = kb.catalog.file(position).title.clone().unwrap_or_default();
        kbtools::ingest::analysis::query_terms(&title)
    };
    let first = kb.search.title_terms(&searcher, &pages, terms_of).unwrap();
    assert!(first.iter().any(|terms| !terms.is_empty()));
    // From the memo, in another order and with a page twice.
    let mut again: Vec<u32> = pages.iter().rev().copied().collect();
    again.push(pages[0]);
    let remembered = kb.search.title_terms(&searcher, &again, |_| {
        panic!("every page's title terms are remembered")
    });
    for (page, terms) in again.iter().zip(remembered.unwrap()) {
        assert_eq!(terms, first[*page as usize], "page {page}");
    }
    // Each IDF as a fresh knowledge base reads it.
    let fresh = KnowledgeBase::open(
        opened.index_dir.path(),
        Some(&fixture("rule-reference")),
        serve_options(),
    )
    .unwrap();
    let words: Vec<&str> = first
        .iter()
        .flat_map(|terms| terms.iter().map(|(term, _)| term.as_str()))
        .chain(["no-such-word-anywhere"])
        .collect();
    let read = fresh.search.idfs(&fresh.search.searcher(), &words).unwrap();
    assert_eq!(kb.search.idfs(&searcher, &words).unwrap(), read);
    let weighted = first
        .iter()
        .flat_map(|terms| terms.iter().map(|(_, idf)| *idf));
    assert!(weighted.zip(&read).all(|(idf, read)| idf == *read));
}
