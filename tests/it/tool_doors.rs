//! Every door offers each tool's fields exactly: the parser accepts them (and nothing else), the
//! MCP schema lists them, the HTTP routes take them (less what the path gives or the route does
//! not offer), and the CLI has an option for each one a command does not take positionally.
//! The lists all come from the tools' `Params` (`ToolName::params`); the unit test
//! `tool_flags::doors` adds a field to a `Params` and finds it in all three doors.

use std::collections::BTreeSet;

use kbtools::error::ErrorCode;
use kbtools::serve::http::spec::{RouteFields, KB_ROUTES};
use kbtools::tools::ToolName;
use serde_json::{json, Map, Value};

use crate::common::{self, open_fixture};

fn set<'a>(items: impl IntoIterator<Item = &'a str>) -> BTreeSet<String> {
    items.into_iter().map(str::to_string).collect()
}

#[test]
fn the_parser_accepts_every_field_and_refuses_any_other() {
    let opened = open_fixture("focowiki-docs");
    for tool in ToolName::ALL {
        for field in tool.fields() {
            // null counts as absent: only the known-field check can refuse it.
            let input = Value::Object(Map::from_iter([(field.to_string(), Value::Null)]));
            if let Err(e) = kbtools::tools::run(&opened.kb, tool, &input) {
                assert!(!e.message.contains("Unknown input field"), "{tool} {field}");
            }
        }
        let error =
            kbtools::tools::run(&opened.kb, tool, &json!({ "noSuchField": 1 })).unwrap_err();
        assert_eq!(error.code, ErrorCode::ValidationError, "{tool}");
        assert!(error.message.contains("Unknown input field"), "{tool}");
    }
}

#[test]
fn mcp_schemas_list_the_fields() {
    for definition in kbtools::serve::mcp::tool_definitions() {
        let tool: ToolName = definition.name.parse().unwrap();
        let properties = definition.input_schema["properties"].as_object().unwrap();
        let mut expected = set(tool.fields().iter().copied());
        expected.insert("format".into());
        assert_eq!(
            set(properties.keys().map(String::as_str)),
            expected,
            "{tool}"
        );
    }
}

#[test]
fn http_routes_take_the_fields() {
    for route in &KB_ROUTES {
        let expected: BTreeSet<String> = match route.fields {
            RouteFields::AllBut(except) => set(route.tool.fields().iter().copied())
                .into_iter()
                .filter(|f| !except.contains(&f.as_str()))
                .collect(),
            RouteFields::Only(only) => set(only.iter().copied()),
        };
        assert_eq!(
            set(route.query().iter().copied()),
            expected,
            "{}",
            route.path
        );
        if let RouteFields::Only(only) = route.fields {
            assert!(
                only.iter().all(|f| route.tool.fields().contains(f)),
                "{}",
                route.path
            );
        }
    }
}

#[test]
fn cli_commands_have_an_option_per_field() {
    let commands = [
        ("search", ToolName::SearchFiles, &["query"][..]),
        ("read", ToolName::ReadFile, &["fileId", "path"][..]),
        ("tree", ToolName::ListTree, &["parentPath"][..]),
        ("file", ToolName::GetFile, &["fileId"][..]),
        ("related", ToolName::ReadRelated, &["fileId"][..]),
        ("expand", ToolName::ExpandGraph, &["fileId"][..]),
    ];
    for (command, tool, positional) in commands {
        let run = common::kbtools()
            .args([command, "--help"])
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&run.stdout);
        for field in tool.fields().iter().filter(|f| !positional.contains(f)) {
            let mut flag = String::from("--");
            for c in field.chars() {
                if c.is_ascii_uppercase() {
                    flag.push('-');
                }
                flag.push(c.to_ascii_lowercase());
            }
            assert!(
                help.contains(&format!("{flag} <")),
                "{command} lacks {flag}:\n{help}"
            );
        }
    }
}
