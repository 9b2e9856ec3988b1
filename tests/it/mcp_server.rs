//! The MCP server's own behaviour, in process: tool definitions (schemas, annotations), the two
//! result formats of one call, tool errors as `isError` results, and the audit log. The
//! protocol itself is exercised by an independent client in `tests/mcp/client_test.py`.

use crate::common;

use common::{open_fixture, operation_of, schema_for, violations};
use kbtools::door::OutputFormat;
use kbtools::serve::mcp::{tool_definitions, KbServer, McpOptions};
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::{json, Value};

fn args(value: Value) -> Option<JsonObject> {
    match value {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

fn text_of(result: &CallToolResult) -> String {
    let value = serde_json::to_value(result).unwrap();
    value["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn is_error(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
}

/// A server over the fixture, and the temporary index folder it reads (kept alive).
fn server(options: McpOptions) -> (KbServer, tempfile::TempDir) {
    let common::Opened { kb, index_dir, .. } = open_fixture("focowiki-docs");
    (KbServer::new(kb, options).unwrap(), index_dir)
}

#[test]
fn six_read_only_tools_with_generated_schemas_and_a_format_argument() {
    let tools = tool_definitions();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, kbtools::tools::ToolName::ALL.map(|t| t.as_str()));
    for tool in &tools {
        let schema = Value::Object(tool.input_schema.as_ref().clone());
        assert_eq!(schema["type"], "object", "{}", tool.name);
        assert_eq!(
            schema["properties"]["format"]["enum"],
            json!(["text", "json"]),
            "{}",
            tool.name
        );
        assert!(tool.description.as_deref().unwrap_or("").len() > 80);
        let a = tool.annotations.as_ref().unwrap();
        assert_eq!(
            (
                a.read_only_hint,
                a.destructive_hint,
                a.idempotent_hint,
                a.open_world_hint
            ),
            (Some(true), Some(false), Some(true), Some(false)),
            "{}",
            tool.name
        );
    }
    let search = Value::Object(tools[0].input_schema.as_ref().clone());
    for field in ["query", "mode", "scope", "limit", "cursor", "graphDepth"] {
        assert!(search["properties"].get(field).is_some(), "{field}");
    }
}

/// What an MCP client shows and a strict one validates with: standard JSON Schema (no
/// `$ref` to resolve, no Rust integer formats such as `uint8`, optional fields as their own
/// type, not "or null"), titled and described for a model.
#[test]
fn tool_schemas_are_plain_json_schema_titled_for_a_model() {
    fn walk(value: &Value, at: &str, problems: &mut Vec<String>) {
        match value {
            Value::Object(object) => {
                for (key, v) in object {
                    let here = format!("{at}/{key}");
                    if key == "properties" {
                        // Names of properties, not keywords (`format` is a tool argument).
                        for (name, property) in v.as_object().unwrap() {
                            walk(property, &format!("{here}/{name}"), problems);
                        }
                        continue;
                    }
                    match key.as_str() {
                        "$ref" | "$defs" | "anyOf" | "oneOf" => problems.push(here.clone()),
                        "format" if v != "date-time" && v != "uri" => {
                            problems.push(format!("{here} = {v}"));
                        }
                        "type" if v.is_array() => problems.push(format!("{here} = {v}")),
                        "enum" if v.as_array().unwrap().iter().any(Value::is_null) => {
                            problems.push(format!("{here} = {v}"));
                        }
                        "description" if v.as_str().unwrap_or("").contains("Rust") => {
                            problems.push(format!("{here} = {v}"));
                        }
                        _ => {}
                    }
                    walk(v, &here, problems);
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    walk(v, &format!("{at}/{i}"), problems);
                }
            }
            _ => {}
        }
    }
    for tool in tool_definitions() {
        let schema = Value::Object(tool.input_schema.as_ref().clone());
        let mut problems = Vec::new();
        walk(&schema, "", &mut problems);
        assert!(problems.is_empty(), "{}: {problems:#?}", tool.name);
        assert!(
            tool.title.as_deref().is_some_and(|t| !t.is_empty()),
            "{}",
            tool.name
        );
        assert!(schema["title"].as_str().unwrap().ends_with(": arguments"));
        assert!(
            schema["description"].as_str().unwrap().len() > 20,
            "{}",
            tool.name
        );
        assert!(
            jsonschema::meta::is_valid(&schema),
            "{}: not a valid JSON Schema",
            tool.name
        );
        // Every property tells a model what it is.
        for (name, property) in schema["properties"].as_object().unwrap() {
            assert!(
                property["description"]
                    .as_str()
                    .is_some_and(|d| !d.is_empty()),
                "{}.{name} has no description",
                tool.name
            );
        }
    }
    // What was a `$ref` (read_file's `type`, `segments`' items) is inlined.
    let read = tool_definitions()
        .into_iter()
        .find(|t| t.name == "read_file")
        .unwrap();
    let schema = Value::Object(read.input_schema.as_ref().clone());
    assert_eq!(
        schema["properties"]["type"]["enum"],
        json!(["read", "search", "extract"])
    );
    assert_eq!(schema["properties"]["segments"]["items"]["type"], "object");
}

#[test]
fn one_call_in_text_and_in_json() {
    let (server, _opened) = server(McpOptions::default());
    let input = json!({ "query": "How do agents read related files?", "limit": 3 });
    let text = server.answer("search_files", args(input.clone()));
    assert!(!is_error(&text));
    let text_body = text_of(&text);
    assert!(
        serde_json::from_str::<Value>(&text_body).is_err(),
        "{text_body}"
    );
    assert!(text_body.contains("pages/"), "{text_body}");

    let mut with_json = input.clone();
    with_json["format"] = json!("json");
    let json_result = server.answer("search_files", args(with_json));
    assert!(!is_error(&json_result));
    let output: Value = serde_json::from_str(&text_of(&json_result)).unwrap();
    assert_eq!(json_result.structured_content.as_ref(), Some(&output));
    let schema = schema_for(operation_of("search_files", &input), 200);
    assert_eq!(violations(&schema, &output), Vec::<String>::new());
    // The same call through the library gives the same items.
    let direct = common::json_call(&server.knowledge_base(), "search_files", &input).unwrap();
    assert_eq!(direct["items"], output["items"]);
}

#[test]
fn read_file_text_is_the_content_alone() {
    let (server, _opened) = server(McpOptions::default());
    let path = "pages/en/agent-integration/own-agent-client/tools-design.md";
    let text = text_of(&server.answer("read_file", args(json!({ "path": path }))));
    let bytes = std::fs::read_to_string(common::fixture("focowiki-docs").join(path)).unwrap();
    assert_eq!(text, bytes);
}

#[test]
fn tool_errors_are_error_results_in_both_formats() {
    let (server, _opened) = server(McpOptions::default());
    let text = server.answer("search_files", args(json!({ "query": "x" })));
    assert!(is_error(&text));
    assert!(text_of(&text).starts_with("失败: "), "{}", text_of(&text));

    let json_result = server.answer(
        "read_file",
        args(json!({ "fileId": "no-such-file", "format": "json" })),
    );
    assert!(is_error(&json_result));
    let envelope: Value = serde_json::from_str(&text_of(&json_result)).unwrap();
    assert!(envelope["error"]["code"].is_string(), "{envelope}");
    assert!(json_result.structured_content.is_none());

    let bad_format = server.answer("list_tree", args(json!({ "format": "xml" })));
    assert!(is_error(&bad_format));
    assert!(text_of(&bad_format).contains("format"));
}

#[test]
fn a_plain_folder_path_as_the_user_sees_it_and_a_typo_with_the_nearest_paths() {
    let common::Opened { kb, index_dir, .. } = open_fixture("rule-reference");
    let server = KbServer::new(kb, McpOptions::default()).unwrap();
    let read = server.answer("read_file", args(json!({ "path": "rules/md013.md" })));
    assert!(!is_error(&read), "{}", text_of(&read));
    assert!(text_of(&read).contains("MD013"), "{}", text_of(&read));
    let typo = server.answer("read_file", args(json!({ "path": "rules/md0133.md" })));
    assert!(is_error(&typo));
    assert!(
        text_of(&typo).contains("nearest: pages/rules/md013.md"),
        "{}",
        text_of(&typo)
    );
    drop(index_dir);
}

#[test]
fn the_server_format_applies_when_a_call_names_none() {
    let options = McpOptions {
        format: OutputFormat::Json,
        ..McpOptions::default()
    };
    let (server, _opened) = server(options);
    let result = server.answer("list_tree", None);
    assert!(!is_error(&result));
    let output: Value = serde_json::from_str(&text_of(&result)).unwrap();
    assert!(output["items"].is_array());
    // A call may still ask for text.
    let text = server.answer("list_tree", args(json!({ "format": "text" })));
    assert!(serde_json::from_str::<Value>(&text_of(&text)).is_err());
}

#[test]
fn the_audit_log_has_one_line_per_call_with_the_contract_output() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let options = McpOptions {
        audit_log: Some(log.clone()),
        ..McpOptions::default()
    };
    let (server, _opened) = server(options);
    server.answer("list_tree", args(json!({ "parentPath": "pages" })));
    server.answer("get_file", args(json!({ "fileId": "nope" })));
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["tool"], "list_tree");
    assert_eq!(lines[0]["input"], json!({ "parentPath": "pages" }));
    assert_eq!(lines[0]["isError"], false);
    assert!(lines[0]["output"]["items"].is_array());
    assert!(lines[0]["durationMs"].as_f64().unwrap() >= 0.0);
    assert_eq!(lines[1]["isError"], true);
    assert!(lines[1]["output"]["error"]["code"].is_string());
}
