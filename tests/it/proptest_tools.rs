//! Hostile requests, generated: every field of every one of the six tools gets arbitrary JSON
//! (strings of odd Unicode — combining marks, bidi controls, NUL, astral planes, U+FFFD from
//! repaired lone surrogates, 1 MiB strings —, numbers huge, negative, fractional and -0, arrays,
//! objects, nulls, unknown extra fields), mixed with plausible values so that the generated calls
//! get past the first check and reach the deeper ones. Every answer must be a schema-valid result
//! or a contract error envelope (`checked_call` validates both against the vendored contract),
//! never a panic and never an `INTERNAL_ERROR`, and a 422 names its field (`details.field` or
//! `details.code`). Cursors: real ones (from a search and a tree listing with `limit` 1),
//! mutated by bit flips, truncation, base64 garbage and splicing, or re-signed for another
//! revision or offset, must be refused with `details.field = "cursor"` unless they are the
//! original. The same generated calls also go through the MCP tool handler in process and
//! through the HTTP router.
//!
//! proptest picks new cases on every run; a failure prints the smallest input it found. The case
//! counts below fit CI's budget; `PROPTEST_CASES=N` raises every one of them by hand.

use crate::common;

use std::collections::BTreeMap;

use common::{checked_call, open_fixture, operation_of, schema_for, violations, Opened};
use kbtools::KnowledgeBase;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{json, Map, Number, Value};
use sha2::{Digest, Sha256};

/// The case count: `PROPTEST_CASES` when set, else `default`.
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn runner(default_cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases: cases(default_cases),
        // Inputs are rebuilt from strategies; nothing is written next to the sources.
        failure_persistence: None,
        max_shrink_iters: 2_000,
        ..Config::default()
    })
}

/// Runs `test` on `cases` generated values and fails with proptest's minimal failing input.
fn check<S: Strategy>(
    what: &str,
    default_cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) where
    S::Value: std::fmt::Debug,
{
    let mut runner = runner(default_cases);
    if let Err(e) = runner.run(&strategy, test) {
        panic!("{what}: {e}");
    }
}

const ODD_CHARS: &[char] = &[
    '\u{0}',
    '\u{1}',
    '\t',
    '\n',
    '\r',
    '\u{7f}',
    '\u{85}',
    '\u{9f}',
    ' ',
    '\u{a0}',
    '\u{3000}',
    '\u{200b}',
    '\u{200d}',
    '\u{200e}',
    '\u{200f}',
    '\u{202a}',
    '\u{202e}',
    '\u{2066}',
    '\u{2028}',
    '\u{feff}',
    '\u{fffd}',
    '\u{fffe}',
    '\u{301}',
    '\u{308}',
    '\u{20dd}',
    '\u{1f600}',
    '\u{1f3f3}',
    '\u{fe0f}',
    '\u{20000}',
    '\u{e0001}',
    '\u{10ffff}',
    'ﬁ',
    'Ⅻ',
    'Ａ',
    '㍿',
    'é',
    'İ',
    'ß',
    '中',
    '文',
    '的',
    'א',
    'ب',
    '/',
    '\\',
    '.',
    '%',
    '"',
    '“',
    '”',
    '\'',
    '#',
    '?',
    '&',
    '=',
    '+',
    ':',
    '*',
    '[',
    ']',
    '{',
    '}',
    'a',
    'Z',
    '0',
    '9',
    '-',
    '_',
];

/// Short strings drawn from the odd characters above.
fn odd_chars() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(ODD_CHARS), 0..40)
        .prop_map(|chars| chars.into_iter().collect())
}

/// A 64 KiB or 1 MiB string: one repeated unit (ASCII, Chinese, combining marks, emoji).
fn huge_string() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec!["x", "知识", "e\u{301}", "\u{1f600}", "a b ", "%2e"]),
        prop::sample::select(vec![64 * 1024, 1024 * 1024]),
    )
        .prop_map(|(unit, bytes)| unit.repeat(bytes / unit.len()))
}

/// Strings that mean something to the tools: enum values, numbers as text, paths.
const WORDS: &[&str] = &[
    "",
    " ",
    "all",
    "page",
    "path",
    "metadata",
    "file",
    "graph",
    "hybrid",
    "read",
    "search",
    "extract",
    "true",
    "false",
    "draft",
    "stable",
    "deprecated",
    "unverified",
    "machine-confirmed",
    "human-reviewed",
    "fresh",
    "stale",
    "text",
    "json",
    " 5 ",
    "10.0",
    "-0",
    "1e3",
    "0x10",
    "+1",
    "NaN",
    "9007199254740993",
    "pages",
    "pages/en",
    "pages/zh-CN",
    "pages/en/README.md",
    "_graph/by-file/en/README.json",
    "_index/pages/en/en-documents.json",
    "_index/terms/latin",
    "index.md",
    "log.md",
    "pages/../index.md",
    "pages/%2e%2e/index.md",
    "knowledge base",
    "知识库 关系",
    "\"related files\"",
];

fn odd_string() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => any::<String>(),
        4 => odd_chars(),
        4 => prop::sample::select(WORDS).prop_map(str::to_string),
        // A meaningful word with odd characters around it.
        3 => (odd_chars(), prop::sample::select(WORDS), odd_chars())
            .prop_map(|(a, w, b)| format!("{a}{w}{b}")),
        1 => huge_string(),
    ]
}

fn odd_number() -> impl Strategy<Value = Value> {
    prop_oneof![
        (-3i64..120).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        prop::num::f64::NORMAL
            .prop_filter_map("finite", Number::from_f64)
            .prop_map(Value::Number),
        prop::sample::select(vec![
            -0.0,
            0.5,
            1.0,
            2.0000001,
            1e15,
            9007199254740993.0,
            1e300,
            -1e-300,
            f64::MAX,
            f64::MIN_POSITIVE
        ])
        .prop_map(|f| Value::Number(Number::from_f64(f).unwrap())),
    ]
}

/// Any JSON value, up to three levels deep.
fn odd_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        3 => odd_number(),
        4 => odd_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(odd_string(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// What the fixture gives the generators: real file ids, paths and cursors.
struct Real {
    ids: Vec<String>,
    cursors: Vec<String>,
}

fn real(kb: &KnowledgeBase) -> Real {
    let mut ids = Vec::new();
    for path in [
        "pages/en/README.md",
        "pages/zh-CN/README.md",
        "_graph/by-file/en/README.json",
        "index.md",
    ] {
        if let Ok(file) = checked_call(kb, "get_file", json!({ "fileId": path })) {
            ids.push(file["file"]["fileId"].as_str().unwrap().to_string());
            ids.push(path.to_string());
        }
    }
    assert!(ids.len() >= 6, "fixture files missing: {ids:?}");
    let mut cursors = Vec::new();
    for (tool, input) in [
        (
            "search_files",
            json!({ "query": "knowledge base", "limit": 1 }),
        ),
        ("list_tree", json!({ "parentPath": "pages/en", "limit": 1 })),
        (
            "read_related",
            json!({ "fileId": "pages/en/README.md", "limit": 1 }),
        ),
    ] {
        let output = checked_call(kb, tool, input).unwrap();
        if let Some(cursor) = output["nextCursor"].as_str() {
            cursors.push(cursor.to_string());
        }
    }
    assert!(cursors.len() >= 2, "no cursors from the fixture");
    Real { ids, cursors }
}

/// A plausible value for `field` (so the call gets past the first checks), using `real`.
fn plausible(field: &str, real: &Real) -> BoxedStrategy<Value> {
    let strings = |items: &[&str]| {
        prop::sample::select(items.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .prop_map(Value::String)
            .boxed()
    };
    match field {
        "query" => prop_oneof![
            4 => strings(&[
                "knowledge base",
                "How do agents read related files?",
                "知识库 关系",
                "\"read_file\" tools",
                "OKF规范",
                "README",
                "pages/en/README.md",
            ]),
            1 => odd_string().prop_map(Value::String),
        ]
        .boxed(),
        "mode" => strings(&["file", "graph", "hybrid"]),
        "scope" => strings(&["all", "path", "metadata"]),
        "fileKind" => strings(&["all", "page"]),
        "okfStatus" => strings(&["draft", "stable", "deprecated"]),
        "okfTrustTier" => strings(&["unverified", "machine-confirmed", "human-reviewed"]),
        "okfFreshness" => strings(&["fresh", "stale"]),
        "type" => strings(&["read", "search", "extract"]),
        "rerank" => prop_oneof![any::<bool>().prop_map(Value::Bool), strings(&["true"])].boxed(),
        "rerankScoreThreshold" => (0.0f64..=1.0).prop_map(Value::from).boxed(),
        "fileId" | "path" | "parentPath" => prop_oneof![
            4 => prop::sample::select(real.ids.clone()).prop_map(Value::String),
            1 => strings(&[
                "pages",
                "pages/en",
                "_graph",
                "_index/pages",
                "_graph/by-file/en"
            ]),
        ]
        .boxed(),
        "cursor" => prop::sample::select(real.cursors.clone())
            .prop_map(Value::String)
            .boxed(),
        "segments" => prop::collection::vec(
            prop::collection::btree_map(
                prop::sample::select(vec!["label", "start", "end"]).prop_map(str::to_string),
                prop_oneof![(0i64..400).prop_map(Value::from), odd_value()],
                0..4,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
            0..4,
        )
        .prop_map(Value::Array)
        .boxed(),
        "depth" | "graphDepth" => prop_oneof![
            4 => (0i64..=3).prop_map(Value::from),
            1 => (-2i64..110).prop_map(Value::from),
        ]
        .boxed(),
        // limit, fanout, graphFanout, contextLines, maxMatches, rerankTopK.
        _ => prop_oneof![
            4 => (1i64..=10).prop_map(Value::from),
            1 => (-2i64..110).prop_map(Value::from),
            1 => (-2i64..110).prop_map(|n| Value::String(format!(" {n} "))),
        ]
        .boxed(),
    }
}

/// An input for a tool with `fields`: each field absent, plausible or arbitrary; sometimes an
/// unknown extra field; rarely a whole input that is not an object.
fn tool_input(fields: &[&'static str], real: &Real) -> BoxedStrategy<Value> {
    // About one arbitrary field per input, so that inputs of the many-field tools are not
    // all refused at their first bad field.
    let odd_weight = (20 / fields.len() as u32).clamp(1, 6);
    let per_field: Vec<BoxedStrategy<Option<Value>>> = fields
        .iter()
        .map(|field| {
            // A real cursor rarely matches the other generated inputs: mostly none.
            // The required fields (the query, the file) are mostly there.
            let none = match *field {
                "cursor" => 24,
                "query" | "fileId" => 1,
                _ => 8,
            };
            prop_oneof![
                none => Just(None),
                8 => plausible(field, real).prop_map(Some),
                odd_weight => odd_value().prop_map(Some),
            ]
            .boxed()
        })
        .collect();
    let names: Vec<&'static str> = fields.to_vec();
    let object = (
        per_field,
        prop::option::weighted(0.1, (odd_string(), odd_value())),
    )
        .prop_map(move |(values, extra)| {
            let mut map = Map::new();
            for (name, value) in names.iter().zip(values) {
                if let Some(value) = value {
                    map.insert(name.to_string(), value);
                }
            }
            if let Some((key, value)) = extra {
                map.insert(key, value);
            }
            Value::Object(map)
        });
    prop_oneof![19 => object, 1 => odd_value()].boxed()
}

/// `read_file` inputs of a valid shape (exactly one target; the fields of one read type), with
/// one field at times replaced by an arbitrary value: the generic generator almost never makes
/// a valid read, since most field combinations conflict.
fn read_file_input(real: &Real) -> BoxedStrategy<Value> {
    let target = prop_oneof![
        plausible("fileId", real).prop_map(|v| json!({ "fileId": v })),
        plausible("path", real).prop_map(|v| json!({ "path": v })),
    ];
    let part = prop_oneof![
        Just(json!({})),
        Just(json!({ "type": "read" })),
        (
            plausible("query", real),
            prop::option::of(0i64..25),
            prop::option::of(0i64..105)
        )
            .prop_map(|(query, context, max)| {
                let mut part = json!({ "type": "search", "query": query });
                if let Some(n) = context {
                    part["contextLines"] = json!(n);
                }
                if let Some(n) = max {
                    part["maxMatches"] = json!(n);
                }
                part
            }),
        plausible("segments", real).prop_map(|s| json!({ "type": "extract", "segments": s })),
    ];
    let field = prop::sample::select(vec!["fileId", "path", "type", "query", "segments"]);
    (
        target,
        part,
        prop::option::weighted(0.3, (field, odd_value())),
    )
        .prop_map(|(mut input, part, odd)| {
            for (k, v) in part.as_object().unwrap() {
                input[k] = v.clone();
            }
            if let Some((field, value)) = odd {
                input[field] = value;
            }
            input
        })
        .boxed()
}

const TOOLS: [(&str, &[&str]); 6] = [
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
    ),
    (
        "read_file",
        &[
            "fileId",
            "path",
            "type",
            "query",
            "contextLines",
            "maxMatches",
            "segments",
        ],
    ),
    ("list_tree", &["parentPath", "cursor", "limit"]),
    ("get_file", &["fileId"]),
    ("read_related", &["fileId", "cursor", "limit"]),
    (
        "expand_graph",
        &["fileId", "depth", "fanout", "cursor", "limit"],
    ),
];

/// The checks on one answer beyond the schema (which `checked_call` applies): no internal
/// error, and a validation error names its field.
fn answer_is_sound(tool: &str, input: &Value, result: &Result<Value, kbtools::ToolError>) {
    let Err(error) = result else { return };
    let envelope = error.envelope("req-test");
    let code = envelope["error"]["code"].as_str().unwrap_or_default();
    assert_ne!(code, "INTERNAL_ERROR", "{tool} {input} → {envelope}");
    if code == "VALIDATION_ERROR" {
        let details = &envelope["error"]["details"];
        assert!(
            details["field"].is_string() || details["code"].is_string(),
            "{tool}: a validation error without its field: {envelope}"
        );
    }
}

/// How many successes and errors a run saw, so that a run that never got past validation (or
/// never failed) shows up as a test failure instead of passing silently.
#[derive(Default)]
struct Tally {
    ok: std::cell::Cell<u32>,
    err: std::cell::Cell<u32>,
    /// Errors by code and field (or detail code), for the printed summary.
    kinds: std::cell::RefCell<BTreeMap<String, u32>>,
}

impl Tally {
    fn count(&self, result: &Result<Value, kbtools::ToolError>) {
        let cell = if result.is_ok() { &self.ok } else { &self.err };
        cell.set(cell.get() + 1);
        if let Err(error) = result {
            let envelope = error.envelope("r");
            let details = &envelope["error"]["details"];
            let kind = format!(
                "{} {}",
                envelope["error"]["code"].as_str().unwrap_or_default(),
                details["field"]
                    .as_str()
                    .or(details["code"].as_str())
                    .map(|f| kbtools::text::truncate_chars(f, 40))
                    .unwrap_or_default()
            );
            *self.kinds.borrow_mut().entry(kind).or_default() += 1;
        }
    }
}

#[test]
fn every_tool_answers_arbitrary_json_in_every_field_with_a_contract_answer() {
    let opened = open_fixture("focowiki-docs");
    let kb = &opened.kb;
    let real = real(kb);
    for (tool, fields) in TOOLS {
        let tally = Tally::default();
        let inputs = if tool == "read_file" {
            prop_oneof![tool_input(fields, &real), read_file_input(&real)].boxed()
        } else {
            tool_input(fields, &real)
        };
        check(tool, 250, inputs, |input| {
            let result = checked_call(kb, tool, input.clone());
            answer_is_sound(tool, &input, &result);
            tally.count(&result);
            Ok(())
        });
        println!(
            "{tool}: {} results, {} errors {:?}",
            tally.ok.get(),
            tally.err.get(),
            tally.kinds.borrow()
        );
        // Both outcomes must be reached, or the generators are too timid (or too wild).
        assert!(
            tally.ok.get() > 0 && tally.err.get() > 0,
            "{tool}: {} results, {} errors",
            tally.ok.get(),
            tally.err.get()
        );
    }
}

/// `run_params(typed)` for the `Params` serde reads strictly from `input`; `None` when it reads
/// none (a wire-only form such as `"limit": "5"`).
fn typed_answer(
    kb: &KnowledgeBase,
    tool: &str,
    input: &Value,
) -> Option<Result<Value, kbtools::ToolError>> {
    use kbtools::tools::*;
    fn run<P: serde::de::DeserializeOwned, O: serde::Serialize>(
        kb: &KnowledgeBase,
        input: &Value,
        run: fn(&KnowledgeBase, &P) -> Result<O, kbtools::ToolError>,
    ) -> Option<Result<Value, kbtools::ToolError>> {
        let params: P = serde_json::from_value(input.clone()).ok()?;
        Some(run(kb, &params).map(|out| serde_json::to_value(out).unwrap()))
    }
    match tool {
        "search_files" => run(kb, input, search_files::run_params),
        "read_file" => run(kb, input, read_file::run_params),
        "list_tree" => run(kb, input, list_tree::run_params),
        "get_file" => run(kb, input, get_file::run_params),
        "read_related" => run(kb, input, read_related::run_params),
        "expand_graph" => run(kb, input, expand_graph::run_params),
        _ => unreachable!("{tool}"),
    }
}

/// Typed callers and JSON callers share one validator: whatever `Params` serde reads from a
/// JSON input gets the same answer, or the same first error, as the JSON itself.
#[test]
fn typed_params_answer_as_their_json_does() {
    let opened = open_fixture("focowiki-docs");
    let kb = &opened.kb;
    let real = real(kb);
    for (tool, fields) in TOOLS {
        let compared = std::cell::Cell::new(0u32);
        let inputs = if tool == "read_file" {
            prop_oneof![tool_input(fields, &real), read_file_input(&real)].boxed()
        } else {
            tool_input(fields, &real)
        };
        check(tool, 250, inputs, |input| {
            // serde also reads a struct from an array of its fields in order; the wire takes
            // objects only.
            if !input.is_object() {
                return Ok(());
            }
            let Some(typed) = typed_answer(kb, tool, &input) else {
                return Ok(());
            };
            compared.set(compared.get() + 1);
            let tool_name = tool.parse().unwrap();
            let json = kbtools::tools::run_unhinted(kb, tool_name, &input)
                .map(|out| out.to_json().unwrap());
            prop_assert_eq!(typed, json, "{} {}", tool, input);
            Ok(())
        });
        println!("{tool}: {} inputs read as typed Params", compared.get());
        assert!(compared.get() > 10, "{tool}: too few typed inputs");
    }
}

/// Line numbers past JavaScript's safe integers (2^53 and more), which the property above found
/// once: a JSON caller's are no line numbers, and a typed caller's u64 must not be read as a
/// line past the end instead.
#[test]
fn line_numbers_past_safe_integers_answer_alike_typed_and_as_json() {
    let opened = open_fixture("focowiki-docs");
    let kb = &opened.kb;
    let segments = [
        json!([{ "start": 9_007_199_254_740_992_u64 }]),
        json!([{ "start": u64::MAX }]),
        json!([{ "start": 1, "end": 9_007_199_254_740_992_u64 }]),
        json!([{ "start": 9_007_199_254_740_991_u64 }]),
    ];
    for segments in segments {
        let input =
            json!({ "path": "pages/en/README.md", "type": "extract", "segments": segments });
        let typed = typed_answer(kb, "read_file", &input).expect("serde reads the input");
        let json = kbtools::tools::run_unhinted(kb, "read_file".parse().unwrap(), &input)
            .map(|out| out.to_json().unwrap());
        assert_eq!(typed, json, "{input}");
        assert!(json.is_err(), "{input}");
    }
}

/// JSON text with escaped lone surrogates, as a JavaScript client that cut a surrogate pair
/// writes it: strict JSON parsing (the CLI, the HTTP and MCP front doors) refuses it, and the
/// bundle's lenient parser repairs it to U+FFFD; the repaired input must still get a contract
/// answer.
#[test]
fn escaped_lone_surrogates_in_json_text_never_reach_a_tool_unrepaired() {
    let opened = open_fixture("focowiki-docs");
    let kb = &opened.kb;
    let escapes = prop::sample::select(vec![
        "\\ud800",
        "\\udfff",
        "\\ud83d",
        "\\ude00",
        "\\ud83d\\ude00",
        "\\u0000",
        "\\u202e",
        "\\\\ud800",
        "\\u00e9",
        "\\u0301",
    ]);
    let tools: Vec<&str> = TOOLS.iter().map(|(t, _)| *t).collect();
    let strategy = (
        prop::sample::select(tools),
        prop::collection::vec((escapes, prop::sample::select(WORDS)), 1..6),
    );
    let repaired = std::cell::Cell::new(0u32);
    check("lone surrogates", 120, strategy, |(tool, parts)| {
        let field = match tool {
            "search_files" => "query",
            "list_tree" => "parentPath",
            _ => "fileId",
        };
        // Each word escaped as JSON string text (without its quotes), after a raw escape.
        let inner: String = parts
            .iter()
            .map(|(e, w)| {
                let word = serde_json::to_string(w).unwrap();
                format!("{e}{}", &word[1..word.len() - 1])
            })
            .collect();
        let limit = if matches!(tool, "get_file" | "read_file") {
            ""
        } else {
            ", \"limit\": 1"
        };
        let text = format!("{{\"{field}\": \"{inner}\"{limit}}}");
        let strict = serde_json::from_str::<Value>(&text);
        let lenient = kbtools::ingest::bundle::records::parse_json(&text);
        let lenient = lenient.map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        if let Ok(strict) = &strict {
            prop_assert_eq!(strict, &lenient);
        } else {
            repaired.set(repaired.get() + 1);
        }
        let result = checked_call(kb, tool, lenient.clone());
        answer_is_sound(tool, &lenient, &result);
        Ok(())
    });
    assert!(repaired.get() > 0, "no input needed repair");
}

/// A mutation of a real cursor.
#[derive(Debug, Clone)]
enum Tamper {
    FlipBit(usize, u8),
    Truncate(usize),
    Append(String),
    Replace(usize, char),
    Base64Garbage(Vec<u8>),
    Splice(usize),
    /// Validly signed, for another revision (any offset) or an offset out of range.
    Resign {
        revision: u64,
        offset: u64,
    },
    OtherTool(usize),
}

fn tamper() -> impl Strategy<Value = Tamper> {
    prop_oneof![
        (any::<usize>(), 0u8..8).prop_map(|(i, b)| Tamper::FlipBit(i, b)),
        any::<usize>().prop_map(Tamper::Truncate),
        odd_string().prop_map(Tamper::Append),
        (any::<usize>(), any::<char>()).prop_map(|(i, c)| Tamper::Replace(i, c)),
        prop::collection::vec(any::<u8>(), 0..120).prop_map(Tamper::Base64Garbage),
        any::<usize>().prop_map(Tamper::Splice),
        (any::<u64>(), 0u64..200_000)
            .prop_map(|(revision, offset)| Tamper::Resign { revision, offset }),
        any::<usize>().prop_map(Tamper::OtherTool),
    ]
}

fn apply(tamper: &Tamper, cursor: &str, others: &[String]) -> String {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    let bytes = cursor.as_bytes();
    match tamper {
        Tamper::FlipBit(i, bit) => {
            let mut b = bytes.to_vec();
            let i = i % b.len();
            b[i] ^= 1 << bit;
            String::from_utf8_lossy(&b).into_owned()
        }
        Tamper::Truncate(n) => cursor[..n % cursor.len()].to_string(),
        Tamper::Append(s) => format!("{cursor}{s}"),
        Tamper::Replace(i, c) => {
            let mut chars: Vec<char> = cursor.chars().collect();
            let i = i % chars.len();
            chars[i] = *c;
            chars.into_iter().collect()
        }
        Tamper::Base64Garbage(b) => {
            let (body, tag) = b.split_at(b.len() / 2);
            format!(
                "{}.{}",
                URL_SAFE_NO_PAD.encode(body),
                URL_SAFE_NO_PAD.encode(tag)
            )
        }
        Tamper::Splice(i) => {
            // The body of this cursor with the integrity tag of another, or the reverse.
            let other = &others[i % others.len()];
            let (body, _) = cursor.split_once('.').unwrap_or((cursor, ""));
            let (_, tag) = other.split_once('.').unwrap_or(("", other));
            format!("{body}.{tag}")
        }
        Tamper::Resign { revision, offset } => {
            // A well-formed cursor of the same tool and scope, for another revision (the
            // fixture's revision is 1, so 1 is skipped) or an offset beyond the limit.
            let (body, _) = cursor.split_once('.').unwrap_or((cursor, ""));
            let payload: Value = URL_SAFE_NO_PAD
                .decode(body)
                .ok()
                .and_then(|json| serde_json::from_slice(&json).ok())
                .unwrap_or(Value::Null);
            let live = payload["r"].as_u64().unwrap_or(1);
            let (revision, offset) = if *revision == live {
                // Same revision: an offset the decoder must refuse (0 or past the maximum).
                (
                    live,
                    if *offset % 2 == 0 {
                        0
                    } else {
                        100_001 + offset
                    },
                )
            } else {
                (*revision, *offset)
            };
            let mut forged = payload.clone();
            forged["r"] = json!(revision);
            forged["o"] = json!(offset);
            let json = serde_json::to_vec(&forged).unwrap();
            let mut hasher = Sha256::new();
            hasher.update(b"kbtools-cursor-v1\0");
            hasher.update(&json);
            let tag = &hasher.finalize()[..12];
            format!(
                "{}.{}",
                URL_SAFE_NO_PAD.encode(&json),
                URL_SAFE_NO_PAD.encode(tag)
            )
        }
        Tamper::OtherTool(i) => others[i % others.len()].clone(),
    }
}

#[test]
fn tampered_cursors_are_refused_as_the_cursor_field() {
    let opened = open_fixture("focowiki-docs");
    let kb = &opened.kb;
    // The cursors' inputs: each real cursor came from one of these calls.
    let calls = [
        (
            "search_files",
            json!({ "query": "knowledge base", "limit": 1 }),
        ),
        ("list_tree", json!({ "parentPath": "pages/en", "limit": 1 })),
    ];
    let cursors: Vec<String> = calls
        .iter()
        .map(|(tool, input)| {
            checked_call(kb, tool, input.clone()).unwrap()["nextCursor"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    // The untampered cursors work (so a refusal below is the tampering, not a broken cursor).
    for ((tool, input), cursor) in calls.iter().zip(&cursors) {
        let mut next = input.clone();
        next["cursor"] = json!(cursor);
        let page = checked_call(kb, tool, next).unwrap();
        assert_eq!(page["items"].as_array().unwrap().len(), 1, "{tool}");
    }
    let strategy = (0..calls.len(), tamper(), odd_value());
    check("tampered cursors", 300, strategy, |(which, tamper, odd)| {
        let (tool, input) = &calls[which];
        let cursor = &cursors[which];
        let tampered = apply(&tamper, cursor, &cursors);
        if tampered == *cursor || tampered.is_empty() {
            return Ok(());
        }
        let mut call = input.clone();
        call["cursor"] = json!(tampered);
        let result = checked_call(kb, tool, call);
        let error = match result {
            Ok(output) => {
                return Err(TestCaseError::fail(format!(
                    "{tool}: tampered cursor {tampered:?} ({tamper:?}) accepted: {output}"
                )))
            }
            Err(error) => error,
        };
        let envelope = error.envelope("r");
        prop_assert_eq!(
            envelope["error"]["details"]["field"].as_str(),
            Some("cursor"),
            "{:?}",
            tamper
        );
        // Any value that is not a string in `cursor` is refused the same way.
        if !odd.is_string() && !odd.is_null() {
            let mut call = input.clone();
            call["cursor"] = odd.clone();
            let envelope = checked_call(kb, tool, call).unwrap_err().envelope("r");
            prop_assert_eq!(
                envelope["error"]["details"]["field"].as_str(),
                Some("cursor")
            );
        }
        Ok(())
    });
}

fn args(value: &Value) -> Option<Map<String, Value>> {
    match value {
        Value::Object(map) => Some(map.clone()),
        _ => None,
    }
}

/// The MCP tool handler in process: the same generated inputs plus a `format` argument (and
/// unknown tool names): a result, never a panic; `isError` exactly when the library answers an
/// error; the JSON format is the contract JSON.
#[test]
fn the_mcp_handler_answers_generated_calls() {
    use kbtools::serve::mcp::{KbServer, McpOptions};
    let Opened { kb, index_dir, .. } = open_fixture("focowiki-docs");
    let real = real(&kb);
    let server = KbServer::new(kb, McpOptions::default()).unwrap();
    let tool_inputs: Vec<BoxedStrategy<(String, Value)>> = TOOLS
        .iter()
        .map(|(tool, fields)| {
            let tool = tool.to_string();
            tool_input(fields, &real)
                .prop_map(move |input| (tool.clone(), input))
                .boxed()
        })
        .collect();
    let format = prop_oneof![
        Just(None),
        Just(Some(json!("json"))),
        Just(Some(json!("text"))),
        odd_value().prop_map(Some),
    ];
    let strategy = (
        prop::strategy::Union::new(tool_inputs),
        format,
        prop::option::weighted(0.05, odd_string()),
    );
    check(
        "mcp",
        150,
        strategy,
        |((tool, input), format, other_tool)| {
            let tool = other_tool.unwrap_or(tool);
            let mut arguments = args(&input);
            // Arguments that are not an object are sent as none, so no format either.
            let format = if arguments.is_some() { format } else { None };
            if let (Some(map), Some(format)) = (arguments.as_mut(), &format) {
                map.insert("format".into(), format.clone());
            }
            let result = server.answer(&tool, arguments.clone());
            let text = serde_json::to_value(&result).unwrap()["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            prop_assert!(!text.is_empty(), "{} {:?}: empty answer", tool, arguments);
            let known = tool.parse::<kbtools::tools::ToolName>().is_ok();
            let library = common::json_call(
                &server.knowledge_base(),
                &tool,
                &arguments
                    .as_ref()
                    .map(|m| {
                        let mut m = m.clone();
                        m.remove("format");
                        Value::Object(m)
                    })
                    .unwrap_or(Value::Object(Map::new())),
            );
            let format_ok = match &format {
                None | Some(Value::Null) => true,
                Some(Value::String(s)) => kbtools::door::OutputFormat::parse(s.trim()).is_some(),
                Some(_) => false,
            };
            if format_ok {
                prop_assert_eq!(result.is_error == Some(true), library.is_err());
            } else {
                prop_assert_eq!(result.is_error, Some(true));
            }
            if known && format.as_ref().and_then(Value::as_str) == Some("json") {
                if let Ok(output) = &library {
                    let answered: Value = serde_json::from_str(&text).unwrap();
                    let schema = schema_for(operation_of(&tool, &input), 200);
                    let problems = violations(&schema, &answered);
                    prop_assert!(problems.is_empty(), "{:?}", problems);
                    // Search results carry timings; compare the items only.
                    prop_assert_eq!(&answered["items"], &output["items"]);
                }
            }
            Ok(())
        },
    );
    drop(index_dir);
}

/// One generated request on the HTTP router (in process, no socket).
fn http_get(router: &axum::Router, runtime: &tokio::runtime::Runtime, uri: &str) -> (u16, Value) {
    use tower::Service;
    let request = axum::http::Request::builder()
        .uri(uri)
        .body(axum::body::Body::empty())
        .unwrap();
    runtime.block_on(async {
        let mut service = router.clone();
        let response = service.call(request).await.unwrap();
        let status = response.status().as_u16();
        let body = axum::body::to_bytes(response.into_body(), 64 * 1024 * 1024)
            .await
            .unwrap();
        let value = serde_json::from_slice(&body).unwrap_or_else(|e| {
            panic!(
                "{uri} → {status}: not JSON ({e}): {}",
                String::from_utf8_lossy(&body)
            )
        });
        (status, value)
    })
}

/// The HTTP routes with generated query strings and path segments: every answer is JSON, a
/// contract result on 200 and an error envelope otherwise, never a 500.
#[test]
fn the_http_routes_answer_generated_requests() {
    let Opened { kb, index_dir, .. } = open_fixture("focowiki-docs");
    let real = real(&kb);
    let kb_id = kb.manifest.knowledge_base_id.clone();
    let router =
        kbtools::serve::http::router(vec![kb], &kbtools::serve::http::HttpOptions::default())
            .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // (route, operation, its query parameters) with `{id}` for a path segment.
    let routes: Vec<(&str, &str, Vec<&'static str>)> = vec![
        (
            "/tree",
            "listKnowledgeBaseTree",
            vec!["parentPath", "limit", "cursor"],
        ),
        ("/files/{id}", "getFileById", vec![]),
        ("/files/{id}/content", "getFileContentById", vec![]),
        ("/files/content", "getFileContentByPath", vec!["path"]),
        (
            "/files/{id}/related",
            "listRelatedFiles",
            vec!["limit", "cursor"],
        ),
        (
            "/graph/expand",
            "expandGraph",
            vec!["fileId", "depth", "fanout", "limit", "cursor"],
        ),
        (
            "/files/search",
            "searchGeneratedFiles",
            vec![
                "query",
                "mode",
                "scope",
                "limit",
                "cursor",
                "graphDepth",
                "okfStatus",
            ],
        ),
    ];
    // Strings are cut to 2,000 characters: the URI type refuses 64 KiB (oversized requests
    // on the wire are the server tests' subject, tests/it/http_server.rs).
    let text_of = |v: Value| match v {
        Value::String(s) => s,
        other => other.to_string(),
    };
    let cut = |s: String| kbtools::text::truncate_chars(&s, 2_000).to_string();
    let route_count = routes.len();
    let strategy = (
        0..route_count,
        prop_oneof![
            plausible("fileId", &real).prop_map(text_of),
            odd_string().prop_map(cut)
        ],
        prop::collection::btree_map(
            prop::sample::select(vec![
                "parentPath",
                "limit",
                "cursor",
                "path",
                "fileId",
                "depth",
                "fanout",
                "query",
                "mode",
                "scope",
                "graphDepth",
                "okfStatus",
                "bogus",
            ]),
            prop_oneof![
                prop::sample::select(WORDS).prop_map(str::to_string),
                plausible("fileId", &real).prop_map(text_of),
                odd_string().prop_map(cut),
            ],
            0..4,
        ),
        any::<bool>(),
    );
    let statuses = std::cell::RefCell::new(BTreeMap::<u16, u32>::new());
    check("http", 120, strategy, |(which, id, params, short)| {
        let (route, operation, accepted) = &routes[which];
        let path = route.replace("{id}", &kbtools::text::encode_uri_component(&id));
        let mut query: Vec<String> = params
            .iter()
            .map(|(k, v)| format!("{k}={}", kbtools::text::encode_uri_component(v)))
            .collect();
        if route.ends_with("search") && !params.contains_key("query") {
            query.push("query=knowledge%20base".into());
        }
        let base = if short {
            String::new()
        } else {
            format!("/openapi/v2/knowledge-bases/{kb_id}")
        };
        let uri = format!("{base}{path}?{}", query.join("&"));
        let (status, body) = http_get(&router, &runtime, &uri);
        *statuses.borrow_mut().entry(status).or_default() += 1;
        prop_assert_ne!(status, 500, "{} → {}", uri, body);
        let expected_params = params.keys().all(|k| accepted.contains(k));
        let schema = if status == 200 {
            schema_for(operation, 200)
        } else {
            schema_for(operation, status)
        };
        let problems = violations(&schema, &body);
        prop_assert!(
            problems.is_empty(),
            "{} → {} violates {}: {:?}\n{}",
            uri,
            status,
            operation,
            problems,
            body
        );
        if status == 200 {
            prop_assert!(expected_params, "{} accepted an unknown parameter", uri);
        }
        Ok(())
    });
    let statuses = statuses.into_inner();
    assert!(
        statuses.contains_key(&200) && statuses.keys().any(|s| *s >= 400),
        "{statuses:?}"
    );
    drop(index_dir);
}
