//! Every tool, every input field, odd JSON values: the answer is a contract error or a valid
//! result (checked against the schema), never a panic.

use crate::common;

use common::{checked_call, open_fixture};
use serde_json::{json, Value};

fn odd_values() -> Vec<Value> {
    vec![
        Value::Null,
        json!(true),
        json!(0),
        json!(-1),
        json!(1.5),
        json!(1e300),
        json!(-9007199254740993i64),
        json!(u64::MAX),
        json!(""),
        json!(" "),
        json!("0"),
        json!("10.0"),
        json!("NaN"),
        json!("Infinity"),
        json!("1e3"),
        json!("\u{0}\u{1}\u{7f}"),
        json!("é".repeat(600)),
        json!("x".repeat(100_000)),
        json!("../../etc/passwd"),
        json!("pages/%2e%2e/x.md"),
        json!("😀😀😀"),
        json!("\u{202e}evil"),
        json!([]),
        json!(["pages/en/README.md"]),
        json!({}),
        json!({"nested": {"deep": [1, 2, 3]}}),
    ]
}

#[test]
fn odd_values_in_every_field_never_panic() {
    let opened = open_fixture("focowiki-docs");
    let kb = &opened.kb;
    let tools: [(&str, &[&str], Value); 6] = [
        ("list_tree", &["parentPath", "cursor", "limit"], json!({})),
        (
            "get_file",
            &["fileId"],
            json!({ "fileId": "pages/en/README.md" }),
        ),
        ("read_file", &["fileId", "path"], json!({})),
        (
            "read_related",
            &["fileId", "cursor", "limit"],
            json!({ "fileId": "pages/en/README.md" }),
        ),
        (
            "expand_graph",
            &["fileId", "depth", "fanout", "cursor", "limit"],
            json!({ "fileId": "pages/en/README.md" }),
        ),
        (
            "search_files",
            &[
                "query",
                "mode",
                "graphDepth",
                "graphFanout",
                "rerank",
                "cursor",
                "limit",
                "scope",
                "fileKind",
                "okfStatus",
                "okfTrustTier",
                "okfFreshness",
                "rerankTopK",
                "rerankScoreThreshold",
            ],
            json!({ "query": "knowledge base" }),
        ),
    ];
    let mut calls = 0;
    for (tool, fields, base) in tools {
        for field in fields {
            for value in odd_values() {
                let mut input = base.clone();
                input[*field] = value;
                // checked_call validates the success output or the error envelope.
                let _ = checked_call(kb, tool, input);
                calls += 1;
            }
        }
        for whole in [
            json!(null),
            json!([]),
            json!("string"),
            json!(42),
            json!({ "unknownField": 1 }),
        ] {
            let _ = checked_call(kb, tool, whole);
            calls += 1;
        }
    }
    assert!(calls > 700, "{calls} calls");
}

#[test]
fn tampered_cursors_are_refused() {
    let opened = open_fixture("focowiki-docs");
    let kb = &opened.kb;
    let page = checked_call(
        kb,
        "list_tree",
        json!({ "parentPath": "pages/en", "limit": 2 }),
    )
    .unwrap();
    let cursor = page["nextCursor"].as_str().unwrap().to_string();
    let mut variants = vec![
        cursor.replace('.', ""),
        format!("{cursor}x"),
        cursor[1..].to_string(),
        cursor.to_uppercase(),
        "e30.AAAA".to_string(),
    ];
    for i in 0..cursor.len() {
        let mut bytes = cursor.clone().into_bytes();
        bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
        variants.push(String::from_utf8(bytes).unwrap());
    }
    for bad in variants {
        if bad == cursor {
            continue;
        }
        let err = checked_call(
            kb,
            "list_tree",
            json!({ "parentPath": "pages/en", "limit": 2, "cursor": bad }),
        )
        .unwrap_err();
        assert_eq!(err.details.unwrap()["field"], "cursor");
    }
    // A valid cursor used with other inputs is refused too.
    for other in [
        json!({ "parentPath": "pages/en", "limit": 3, "cursor": cursor }),
        json!({ "parentPath": "pages", "limit": 2, "cursor": cursor }),
    ] {
        assert!(checked_call(kb, "list_tree", other).is_err());
    }
    assert!(checked_call(
        kb,
        "read_related",
        json!({ "fileId": "pages/en/README.md", "cursor": cursor })
    )
    .is_err());
}
