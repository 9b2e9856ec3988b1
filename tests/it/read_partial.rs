//! `read_file` partial reads: `type: "search"` (snippets around matching lines) and
//! `type: "extract"` (line ranges), their validation errors, and `type: "read"` staying the
//! whole file byte for byte. Every call is checked against the contract schema.

use crate::common;

use common::{checked_call, open_fixture, Opened};
use kbtools::tools::read_file::{self, Params, ReadType, Segment};
use kbtools::ToolError;
use serde_json::{json, Value};

const LOG: &str = "log.md";
const ZH_PAGE: &str = "pages/zh-CN/guide/resource-management.md";
const GRAPH_RECORD: &str = "_graph/by-file/en/README.json";

fn opened() -> Opened {
    open_fixture("focowiki-docs")
}

fn content(opened: &Opened, input: Value) -> String {
    let output = checked_call(&opened.kb, "read_file", input.clone())
        .unwrap_or_else(|e| panic!("read_file {input} failed: {e}"));
    output["content"].as_str().unwrap().to_string()
}

fn whole(opened: &Opened, path: &str) -> String {
    content(opened, json!({ "path": path }))
}

/// Lines `start..=end` (1-based) of `text`, joined as the tool joins them.
fn lines(text: &str, start: usize, end: usize) -> String {
    let all: Vec<&str> = text.split_terminator('\n').collect();
    all[start - 1..end].join("\n")
}

fn error(opened: &Opened, input: Value) -> ToolError {
    match checked_call(&opened.kb, "read_file", input.clone()) {
        Ok(output) => panic!("read_file {input} succeeded: {output}"),
        Err(error) => error,
    }
}

/// Asserts a validation error naming `field`, whose message contains `needle`.
fn assert_invalid(opened: &Opened, input: Value, field: &str, needle: &str) -> ToolError {
    let error = error(opened, input.clone());
    assert_eq!(error.code.as_str(), "VALIDATION_ERROR", "{input}: {error}");
    let details = error.details.clone().unwrap_or_default();
    assert_eq!(
        details.get("field"),
        Some(&json!(field)),
        "{input}: {error}"
    );
    assert!(
        error.message.contains(needle),
        "{input}: message {:?} lacks {needle:?}",
        error.message
    );
    error
}

/// The hit line numbers listed in the `[match_N]` headers of a search result.
fn listed_hits(text: &str) -> Vec<usize> {
    text.lines()
        .filter(|l| l.starts_with("[match_"))
        .flat_map(|l| {
            let list = l.split(" hits:").nth(1).unwrap();
            list.split(',')
                .map(|n| n.parse::<usize>().unwrap())
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn type_read_is_the_default_read_byte_for_byte() {
    let opened = opened();
    for path in [LOG, ZH_PAGE, GRAPH_RECORD, "index.md", "pages/en/README.md"] {
        let default = checked_call(&opened.kb, "read_file", json!({ "path": path })).unwrap();
        for read_type in [json!("read"), json!(" read "), json!(""), Value::Null] {
            let typed = checked_call(
                &opened.kb,
                "read_file",
                json!({ "path": path, "type": read_type }),
            )
            .unwrap();
            assert_eq!(typed, default, "{path} type {read_type}");
        }
        let on_disk = std::fs::read(common::fixture("focowiki-docs").join(path)).unwrap();
        assert_eq!(default["content"].as_str().unwrap().as_bytes(), on_disk);
        let id = default["file"]["fileId"].as_str().unwrap();
        let by_id = checked_call(
            &opened.kb,
            "read_file",
            json!({ "fileId": id, "type": "read" }),
        )
        .unwrap();
        assert_eq!(by_id, default);
    }
}

#[test]
fn search_returns_snippets_with_context_and_hit_lines() {
    let opened = opened();
    let log = whole(&opened, LOG);
    let got = content(
        &opened,
        json!({ "path": LOG, "type": "search", "query": "backend-adapter", "contextLines": 1 }),
    );
    let expected = format!(
        "[match_1] L4-6 hits:5\n{}\n\n[match_2] L22-24 hits:23\n{}",
        lines(&log, 4, 6),
        lines(&log, 22, 24)
    );
    assert_eq!(got, expected);
}

#[test]
fn search_merges_overlapping_and_adjacent_windows() {
    let opened = opened();
    let log = whole(&opened, LOG);
    // `README.md` is on lines 9, 20, 22, 27, 38, 40 and `webhook-delivery` on 21 and 39.
    let query = "README.md webhook-delivery";
    let tight = content(
        &opened,
        json!({ "path": LOG, "type": "search", "query": query, "contextLines": 0 }),
    );
    let expected = format!(
        "[match_1] L9-9 hits:9\n{}\n\n[match_2] L20-22 hits:20,21,22\n{}\n\n\
         [match_3] L27-27 hits:27\n{}\n\n[match_4] L38-40 hits:38,39,40\n{}",
        lines(&log, 9, 9),
        lines(&log, 20, 22),
        lines(&log, 27, 27),
        lines(&log, 38, 40)
    );
    assert_eq!(tight, expected);
    // Default context 2: 18–24 and 25–29 touch, so they merge into one snippet.
    let wide = content(
        &opened,
        json!({ "path": LOG, "type": "search", "query": query }),
    );
    let expected = format!(
        "[match_1] L7-11 hits:9\n{}\n\n[match_2] L18-29 hits:20,21,22,27\n{}\n\n\
         [match_3] L36-40 hits:38,39,40\n{}",
        lines(&log, 7, 11),
        lines(&log, 18, 29),
        lines(&log, 36, 40)
    );
    assert_eq!(wide, expected);
    let explicit = content(
        &opened,
        json!({ "path": LOG, "type": "search", "query": query, "contextLines": "2" }),
    );
    assert_eq!(explicit, wide);
}

#[test]
fn search_is_case_insensitive_and_nfkc_normalized() {
    let opened = opened();
    let plain = content(
        &opened,
        json!({ "path": LOG, "type": "search", "query": "webhook-delivery" }),
    );
    assert_eq!(listed_hits(&plain), vec![21, 39]);
    for query in ["WEBHOOK-DELIVERY", "Ｗｅｂｈｏｏｋ-Ｄｅｌｉｖｅｒｙ"] {
        let folded = content(
            &opened,
            json!({ "path": LOG, "type": "search", "query": query }),
        );
        assert_eq!(folded, plain, "{query}");
    }
}

#[test]
fn search_keeps_a_quoted_phrase_as_one_term() {
    let opened = opened();
    let words = content(
        &opened,
        json!({ "path": LOG, "type": "search", "query": "Docker Compose 部署", "contextLines": 0 }),
    );
    assert_eq!(listed_hits(&words), vec![13, 30, 31]);
    let phrase = content(
        &opened,
        json!({ "path": LOG, "type": "search", "query": "\"Docker Compose 部署\"", "contextLines": 0 }),
    );
    assert_eq!(listed_hits(&phrase), vec![31]);
}

#[test]
fn chinese_query_matches_as_a_substring() {
    let opened = opened();
    let page = whole(&opened, ZH_PAGE);
    let expected: Vec<usize> = page
        .split_terminator('\n')
        .enumerate()
        .filter(|(_, line)| line.contains("知识库"))
        .map(|(i, _)| i + 1)
        .collect();
    assert!(expected.len() >= 3, "{expected:?}");
    let got = content(
        &opened,
        json!({ "path": ZH_PAGE, "type": "search", "query": "知识库", "contextLines": 0, "maxMatches": 100 }),
    );
    assert_eq!(listed_hits(&got), expected);
    let log = content(
        &opened,
        json!({ "path": LOG, "type": "search", "query": "资源管理", "contextLines": 0 }),
    );
    assert_eq!(
        log,
        format!(
            "[match_1] L36-36 hits:36\n{}",
            lines(&whole(&opened, LOG), 36, 36)
        )
    );
}

#[test]
fn search_stops_at_max_matches_and_says_what_is_left() {
    let opened = opened();
    let log = whole(&opened, LOG);
    let got = content(
        &opened,
        json!({
            "path": LOG, "type": "search", "query": "README.md webhook-delivery",
            "contextLines": 0, "maxMatches": 2,
        }),
    );
    let expected = format!(
        "[match_1] L9-9 hits:9\n{}\n\n[match_2] L20-22 hits:20,21,22\n{}\n\n\
         [more] 2 more matches after L22; raise maxMatches or read with type=extract",
        lines(&log, 9, 9),
        lines(&log, 20, 22)
    );
    assert_eq!(got, expected);
    let one_left = content(
        &opened,
        json!({
            "path": LOG, "type": "search", "query": "README.md webhook-delivery",
            "contextLines": 0, "maxMatches": "3.0",
        }),
    );
    assert!(
        one_left.ends_with(
            "\n\n[more] 1 more match after L27; raise maxMatches or read with type=extract"
        ),
        "{one_left}"
    );
    let all = content(
        &opened,
        json!({
            "path": LOG, "type": "search", "query": "README.md webhook-delivery",
            "contextLines": 0, "maxMatches": 4,
        }),
    );
    assert!(!all.contains("[more]"), "{all}");
    assert!(all.contains("[match_4] L38-40"), "{all}");
}

#[test]
fn no_match_is_a_note_not_an_error() {
    let opened = opened();
    let got = content(
        &opened,
        json!({ "path": LOG, "type": "search", "query": "  no-such   thing  " }),
    );
    assert_eq!(
        got,
        "[no_match] \"no-such thing\" not found in log.md (40 lines)"
    );
    let id = checked_call(&opened.kb, "read_file", json!({ "path": ZH_PAGE })).unwrap()["file"]
        ["fileId"]
        .as_str()
        .unwrap()
        .to_string();
    let by_id = content(
        &opened,
        json!({ "fileId": id, "type": "search", "query": "zzzqqq" }),
    );
    let count = whole(&opened, ZH_PAGE).split_terminator('\n').count();
    assert_eq!(
        by_id,
        format!("[no_match] \"zzzqqq\" not found in {ZH_PAGE} ({count} lines)")
    );
}

#[test]
fn search_and_extract_work_on_graph_records() {
    let opened = opened();
    let record = whole(&opened, GRAPH_RECORD);
    let found = content(
        &opened,
        json!({ "path": GRAPH_RECORD, "type": "search", "query": "docker-compose.md" }),
    );
    assert_eq!(
        found,
        format!("[match_1] L1-1 hits:1\n{}", lines(&record, 1, 1))
    );
    let extracted = content(
        &opened,
        json!({ "path": GRAPH_RECORD, "type": "extract", "segments": [{ "start": 1, "end": 9 }] }),
    );
    assert_eq!(
        extracted,
        format!("[segment_1] L1-1\n{}", lines(&record, 1, 1))
    );
}

#[test]
fn the_file_metadata_is_the_whole_file_s() {
    let opened = opened();
    let full = checked_call(&opened.kb, "read_file", json!({ "path": LOG })).unwrap();
    let part = checked_call(
        &opened.kb,
        "read_file",
        json!({ "path": LOG, "type": "extract", "segments": [{ "start": 2 }] }),
    )
    .unwrap();
    assert_eq!(part["file"], full["file"]);
    assert_eq!(part["content"], json!("[segment_1] L2-2\n"));
}

#[test]
fn extract_returns_labelled_segments_in_the_order_given() {
    let opened = opened();
    let log = whole(&opened, LOG);
    let got = content(
        &opened,
        json!({
            "path": LOG, "type": "extract",
            "segments": [
                { "label": "init", "start": 1, "end": 3 },
                { "start": 30, "end": "31" },
                { "label": "  ", "start": 5.0 },
                { "label": "again", "start": 2, "end": 2 },
            ],
        }),
    );
    let expected = format!(
        "[init] L1-3\n{}\n\n[segment_2] L30-31\n{}\n\n[segment_3] L5-5\n{}\n\n[again] L2-2\n",
        lines(&log, 1, 3),
        lines(&log, 30, 31),
        lines(&log, 5, 5)
    );
    assert_eq!(got, expected);
}

#[test]
fn extract_clamps_an_end_past_the_last_line() {
    let opened = opened();
    let log = whole(&opened, LOG);
    let got = content(
        &opened,
        json!({ "path": LOG, "type": "extract", "segments": [{ "label": "tail", "start": 39, "end": 9007199254740991i64 }] }),
    );
    assert_eq!(got, format!("[tail] L39-40\n{}", lines(&log, 39, 40)));
    let last = content(
        &opened,
        json!({ "path": LOG, "type": "extract", "segments": [{ "start": 40 }] }),
    );
    assert_eq!(last, format!("[segment_1] L40-40\n{}", lines(&log, 40, 40)));
}

#[test]
fn extract_labels_are_one_trimmed_line_of_at_most_64_characters() {
    let opened = opened();
    let long = "标".repeat(100);
    let got = content(
        &opened,
        json!({
            "path": LOG, "type": "extract",
            "segments": [
                { "label": "  two\nlines\u{0}\u{202e}here ", "start": 1 },
                { "label": long, "start": 1 },
            ],
        }),
    );
    let headers: Vec<&str> = got.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(
        headers,
        vec![
            "[two lines here] L1-1".to_string(),
            format!("[{}] L1-1", "标".repeat(64)),
        ]
    );
}

#[test]
fn extract_start_past_the_last_line_names_the_field_and_the_line_count() {
    let opened = opened();
    let error = assert_invalid(
        &opened,
        json!({ "path": LOG, "type": "extract", "segments": [{ "start": 1 }, { "start": 41, "end": 50 }] }),
        "segments[1].start",
        "log.md (40 lines)",
    );
    assert_eq!(error.details.unwrap().get("lineCount"), Some(&json!(40)));
    assert_invalid(
        &opened,
        json!({ "path": LOG, "type": "extract", "segments": [{ "start": 9007199254740991i64 }] }),
        "segments[0].start",
        "40 lines",
    );
}

#[test]
fn type_must_be_read_search_or_extract() {
    let opened = opened();
    for bad in [
        json!("grep"),
        json!("READ"),
        json!(5),
        json!(["search"]),
        json!({}),
    ] {
        assert_invalid(
            &opened,
            json!({ "path": LOG, "type": bad }),
            "type",
            "\"read\"",
        );
    }
}

#[test]
fn search_validation_errors() {
    let opened = opened();
    let search = |extra: Value| {
        let mut input = json!({ "path": LOG, "type": "search" });
        for (k, v) in extra.as_object().unwrap() {
            input[k] = v.clone();
        }
        input
    };
    assert_invalid(&opened, search(json!({})), "query", "requires `query`");
    assert_invalid(
        &opened,
        search(json!({ "query": "  " })),
        "query",
        "requires `query`",
    );
    assert_invalid(
        &opened,
        search(json!({ "query": 5 })),
        "query",
        "must be a string",
    );
    assert_invalid(
        &opened,
        search(json!({ "query": ["a"] })),
        "query",
        "must be a string",
    );
    assert_invalid(
        &opened,
        search(json!({ "query": "x".repeat(513) })),
        "query",
        "512",
    );
    assert_invalid(
        &opened,
        search(json!({ "query": "\"\" \"\"" })),
        "query",
        "nothing",
    );
    let many: Vec<String> = (0..33).map(|i| format!("w{i}")).collect();
    assert_invalid(
        &opened,
        search(json!({ "query": many.join(" ") })),
        "query",
        "at most 32",
    );
    for bad in [
        json!(21),
        json!(-1),
        json!(1.5),
        json!("abc"),
        json!(1e300),
        json!(true),
    ] {
        assert_invalid(
            &opened,
            search(json!({ "query": "log", "contextLines": bad })),
            "contextLines",
            "from 0 to 20",
        );
    }
    for bad in [
        json!(0),
        json!(101),
        json!("NaN"),
        json!(u64::MAX),
        json!([1]),
    ] {
        assert_invalid(
            &opened,
            search(json!({ "query": "log", "maxMatches": bad })),
            "maxMatches",
            "from 1 to 100",
        );
    }
}

#[test]
fn extract_validation_errors() {
    let opened = opened();
    let extract = |segments: Value| json!({ "path": LOG, "type": "extract", "segments": segments });
    assert_invalid(
        &opened,
        json!({ "path": LOG, "type": "extract" }),
        "segments",
        "requires `segments`",
    );
    for bad in [json!([]), json!("1-5"), json!({ "start": 1 }), json!(3)] {
        assert_invalid(&opened, extract(bad), "segments", "1 to 50");
    }
    let too_many: Vec<Value> = (0..51).map(|_| json!({ "start": 1 })).collect();
    assert_invalid(&opened, extract(json!(too_many)), "segments", "1 to 50");
    assert_invalid(&opened, extract(json!([5])), "segments[0]", "an object");
    assert_invalid(
        &opened,
        extract(json!([{ "start": 1 }, null])),
        "segments[1]",
        "an object",
    );
    assert_invalid(
        &opened,
        extract(json!([{ "start": 1, "stop": 3 }])),
        "segments[0].stop",
        "Unknown field",
    );
    assert_invalid(
        &opened,
        extract(json!([{ "end": 3 }])),
        "segments[0].start",
        "is required",
    );
    for bad in [
        json!(0),
        json!(-3),
        json!(1.5),
        json!("x"),
        json!(1e300),
        json!([1]),
    ] {
        assert_invalid(
            &opened,
            extract(json!([{ "start": bad }])),
            "segments[0].start",
            "1 or more",
        );
    }
    assert_invalid(
        &opened,
        extract(json!([{ "start": 1 }, { "start": 10, "end": 4 }])),
        "segments[1].end",
        "before",
    );
    for bad in [json!(0), json!(-1), json!("x"), json!(2.5), json!({})] {
        assert_invalid(
            &opened,
            extract(json!([{ "start": 2, "end": bad }])),
            "segments[0].end",
            "line number",
        );
    }
    assert_invalid(
        &opened,
        extract(json!([{ "start": 1, "label": 7 }])),
        "segments[0].label",
        "must be a string",
    );
}

#[test]
fn fields_of_another_type_and_unknown_fields_are_refused() {
    let opened = opened();
    assert_invalid(
        &opened,
        json!({ "path": LOG, "query": "log" }),
        "query",
        "only to type \"search\"",
    );
    assert_invalid(
        &opened,
        json!({ "path": LOG, "type": "read", "segments": [{ "start": 1 }] }),
        "segments",
        "only to type \"extract\"",
    );
    assert_invalid(
        &opened,
        json!({ "path": LOG, "type": "search", "query": "log", "segments": [{ "start": 1 }] }),
        "segments",
        "only to type \"extract\"",
    );
    assert_invalid(
        &opened,
        json!({ "path": LOG, "type": "extract", "segments": [{ "start": 1 }], "maxMatches": 3 }),
        "maxMatches",
        "only to type \"search\"",
    );
    assert_invalid(
        &opened,
        json!({ "path": LOG, "type": "search", "query": "log", "lines": 5 }),
        "lines",
        "Unknown input field",
    );
    // Blank values of another type's fields count as absent.
    let read = content(
        &opened,
        json!({ "path": LOG, "query": "", "segments": [], "contextLines": null }),
    );
    assert_eq!(read, whole(&opened, LOG));
}

#[test]
fn path_and_id_errors_come_before_read_type_errors() {
    let opened = opened();
    assert_invalid(
        &opened,
        json!({ "type": "search", "query": "x" }),
        "fileId",
        "exactly one",
    );
    let missing = error(
        &opened,
        json!({ "path": "pages/nope.md", "type": "extract", "segments": [{ "start": 1 }] }),
    );
    assert_eq!(missing.code.as_str(), "NOT_FOUND");
}

#[test]
fn odd_values_in_the_partial_read_fields_never_panic() {
    let opened = opened();
    let odd = [
        Value::Null,
        json!(true),
        json!(0),
        json!(-1),
        json!(1.5),
        json!(1e300),
        json!(-9007199254740993i64),
        json!(u64::MAX),
        json!(""),
        json!("0"),
        json!("10.0"),
        json!("NaN"),
        json!("Infinity"),
        json!("\u{0}\u{1}\u{7f}"),
        json!("x".repeat(100_000)),
        json!("😀😀😀"),
        json!([]),
        json!([{}]),
        json!({}),
    ];
    let bases = [
        json!({ "path": LOG, "type": "search", "query": "log" }),
        json!({ "path": LOG, "type": "extract", "segments": [{ "start": 1 }] }),
        json!({ "path": GRAPH_RECORD }),
    ];
    let mut calls = 0;
    for base in &bases {
        for field in ["type", "query", "contextLines", "maxMatches", "segments"] {
            for value in &odd {
                let mut input = base.clone();
                input[field] = value.clone();
                let _ = checked_call(&opened.kb, "read_file", input);
                calls += 1;
            }
        }
        for key in ["label", "start", "end"] {
            for value in &odd {
                let mut segment = json!({ "start": 2, "end": 3 });
                segment[key] = value.clone();
                let mut input = bases[1].clone();
                input["segments"] = json!([segment]);
                let _ = checked_call(&opened.kb, "read_file", input);
                calls += 1;
            }
        }
    }
    assert!(calls > 300, "{calls} calls");
}

#[test]
fn typed_params_run_the_same_rules_and_describe_themselves() {
    let opened = opened();
    let typed = read_file::run_params(
        &opened.kb,
        &Params {
            path: Some(LOG.into()),
            read_type: Some(ReadType::Extract),
            segments: Some(vec![Segment {
                label: Some("init".into()),
                start: 1,
                end: Some(3),
            }]),
            ..Default::default()
        },
    )
    .unwrap();
    let json_out = checked_call(
        &opened.kb,
        "read_file",
        json!({ "path": LOG, "type": "extract", "segments": [{ "label": "init", "start": 1, "end": 3 }] }),
    )
    .unwrap();
    assert_eq!(serde_json::to_value(typed).unwrap(), json_out);
    let search = read_file::run_params(
        &opened.kb,
        &Params {
            path: Some(LOG.into()),
            read_type: Some(ReadType::Search),
            query: Some("backend-adapter".into()),
            context_lines: Some(1),
            max_matches: Some(1),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(search.content.starts_with("[match_1] L4-6 hits:5\n"));
    assert!(search
        .content
        .ends_with("[more] 1 more match after L6; raise maxMatches or read with type=extract"));
    let bad = read_file::run_params(
        &opened.kb,
        &Params {
            path: Some(LOG.into()),
            read_type: Some(ReadType::Search),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(bad.details.unwrap()["field"], json!("query"));

    let schema = serde_json::to_value(schemars::schema_for!(Params)).unwrap();
    let properties = &schema["properties"];
    for key in [
        "fileId",
        "path",
        "type",
        "query",
        "contextLines",
        "maxMatches",
        "segments",
    ] {
        assert!(
            properties[key]["description"].is_string(),
            "{key} has no description: {schema}"
        );
    }
    assert_eq!(schema["additionalProperties"], json!(false));
    let text = schema.to_string();
    for needle in [
        "\"read\"",
        "\"search\"",
        "\"extract\"",
        "\"start\"",
        "\"label\"",
    ] {
        assert!(text.contains(needle), "schema lacks {needle}: {text}");
    }
    let parsed: Params = serde_json::from_value(json!({
        "path": LOG, "type": "search", "query": "x", "contextLines": 3, "maxMatches": 5,
    }))
    .unwrap();
    assert_eq!(parsed.read_type, Some(ReadType::Search));
    assert!(serde_json::from_value::<Params>(json!({ "path": LOG, "lines": 1 })).is_err());
}
