//! Exact-phrase matching in both languages: a double-quoted part of a query must appear as
//! written (in order, adjacent) in a content-lane hit.

use crate::common;

use common::{checked_call, open_fixture};
use serde_json::json;

#[test]
fn a_chinese_phrase_must_appear_as_written() {
    let opened = open_fixture("plain-notes");
    let kb = &opened.kb;
    // Both pages mention 续费; only one holds the exact run 续费通知.
    let loose = common::item_paths(
        &checked_call(
            kb,
            "search_files",
            json!({ "query": "续费 通知", "mode": "file" }),
        )
        .unwrap(),
    );
    assert!(loose.len() >= 2, "{loose:?}");
    let exact = common::item_paths(
        &checked_call(
            kb,
            "search_files",
            json!({ "query": "\"续费通知\"", "mode": "file" }),
        )
        .unwrap(),
    );
    assert_eq!(exact, vec!["pages/zh/账单提醒.md"]);
    let reversed = checked_call(
        kb,
        "search_files",
        json!({ "query": "\"通知续费\"", "mode": "file" }),
    )
    .unwrap();
    assert_eq!(reversed["searchStatus"], "no_candidates");
}

#[test]
fn an_english_phrase_must_appear_in_order() {
    let opened = open_fixture("plain-notes");
    let kb = &opened.kb;
    let exact = common::item_paths(
        &checked_call(
            kb,
            "search_files",
            json!({ "query": "\"installation guide\"", "mode": "file" }),
        )
        .unwrap(),
    );
    assert!(
        exact.contains(&"pages/getting-started.md".to_string()),
        "{exact:?}"
    );
    let reversed = common::item_paths(
        &checked_call(
            kb,
            "search_files",
            json!({ "query": "\"guide installation\"", "mode": "file" }),
        )
        .unwrap(),
    );
    assert!(
        !reversed.contains(&"pages/getting-started.md".to_string()),
        "{reversed:?}"
    );
}

#[test]
fn phrases_filter_every_mode() {
    let opened = open_fixture("focowiki-docs");
    let kb = &opened.kb;
    for mode in ["file", "graph", "hybrid"] {
        let out = checked_call(
            kb,
            "search_files",
            json!({ "query": "\"Webhook Delivery\" retries", "mode": mode, "limit": 50 }),
        )
        .unwrap();
        for item in out["items"].as_array().unwrap() {
            let lexical = item["evidenceTypes"]
                .as_array()
                .unwrap()
                .contains(&json!("content"));
            if lexical {
                let read =
                    checked_call(kb, "read_file", json!({ "fileId": item["fileId"] })).unwrap();
                // Phrases match analyzed words: case, punctuation and stemming aside.
                let text: String = read["content"]
                    .as_str()
                    .unwrap()
                    .to_lowercase()
                    .chars()
                    .map(|c| if c.is_alphanumeric() { c } else { ' ' })
                    .collect();
                let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
                assert!(
                    words.contains("webhook deliver"),
                    "{mode}: {} lacks the phrase",
                    item["path"]
                );
            }
        }
    }
}
