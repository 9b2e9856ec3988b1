//! The six tools as MCP sees them: titles, descriptions and input schemas made for clients
//! (`format` added, its values from [`OutputFormat`]), and the instructions sent with
//! `initialize`.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{json, Map, Value};

use crate::door::OutputFormat;
use crate::tools::{ParamsDef, ToolName};

/// The argument every tool takes on top of its contract input.
pub(super) const FORMAT_ARGUMENT: &str = "format";

/// What the server tells a model about the whole tool set (sent with `initialize`).
pub(super) const INSTRUCTIONS: &str =
    "Read-only tools over one local knowledge base. Answer only from file \
content you have read. Loop: search_files with the user's complete question -> read_file the most \
useful candidates (search results are candidates, not evidence) -> if a gap remains, read_related \
or expand_graph from a file already read, or one follow-up search derived from that gap. Use \
list_tree when search finds nothing useful. Reuse fileId, path, graphRef and cursor values \
exactly as returned; never invent or assemble one. Cite the titles or paths of the files that \
support the answer, and say so when the files do not cover the question. Every tool takes \
`format`: \"text\" (compact, default) or \"json\" (the full contract JSON).";

/// JSON Schema formats clients know (the tool structs' integer widths, `uint8` and the like,
/// are Rust's, not JSON Schema's: the bounds say the same in `minimum` and `maximum`).
const STANDARD_FORMATS: [&str; 10] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "uri",
    "uri-reference",
    "uuid",
    "regex",
    "hostname",
];

/// A schema as an MCP client shows it and a model reads it: the `$defs` it refers to inlined,
/// an optional field as its own type (`["string", "null"]` and `anyOf [X, null]` read as
/// "string" and X: a model leaves the field out rather than sending null), only standard
/// formats.
fn for_clients(schema: &Value, defs: &Map<String, Value>, depth: usize) -> Value {
    let Value::Object(object) = schema else {
        return match schema {
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|v| for_clients(v, defs, depth + 1))
                    .collect(),
            ),
            other => other.clone(),
        };
    };
    let mut out = Map::new();
    // `$ref` to a definition: the definition, with this object's own keys (its description).
    if let Some(target) = object
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        .and_then(|name| defs.get(name))
        .filter(|_| depth < 32)
    {
        if let Value::Object(inlined) = for_clients(target, defs, depth + 1) {
            out.extend(inlined);
        }
    }
    for (key, value) in object {
        match key.as_str() {
            "$ref" | "$defs" | "$schema" => {}
            "type" => {
                let types: Vec<&Value> = match value {
                    Value::Array(types) => types.iter().filter(|t| *t != "null").collect(),
                    other => vec![other],
                };
                match types.as_slice() {
                    [one] => out.insert(key.clone(), (*one).clone()),
                    _ => out.insert(key.clone(), json!(types)),
                };
            }
            "anyOf" | "oneOf" => {
                let options: Vec<Value> = value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|o| o.get("type") != Some(&json!("null")))
                    .map(|o| for_clients(o, defs, depth + 1))
                    .collect();
                if let [Value::Object(only)] = options.as_slice() {
                    for (k, v) in only {
                        out.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                } else {
                    out.insert(key.clone(), Value::Array(options));
                }
            }
            "enum" => {
                let values: Vec<Value> = value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|v| !v.is_null())
                    .cloned()
                    .collect();
                out.insert(key.clone(), Value::Array(values));
            }
            "format"
                if !value
                    .as_str()
                    .is_some_and(|f| STANDARD_FORMATS.contains(&f)) => {}
            "default" if value.is_null() => {}
            "properties" => {
                let properties: Map<String, Value> = value
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(name, v)| (name.clone(), for_clients(v, defs, depth + 1)))
                    .collect();
                out.insert(key.clone(), Value::Object(properties));
            }
            _ => {
                out.insert(key.clone(), for_clients(value, defs, depth + 1));
            }
        }
    }
    Value::Object(out)
}

/// The input schema of a tool as clients get it: its `Params`' schema made plain for clients
/// (`for_clients`), titled and described for a model, plus the `format` argument.
pub fn input_schema(tool: ToolName, params: &ParamsDef) -> JsonObject {
    let defs = params
        .schema
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut object = match for_clients(&params.schema, &defs, 0) {
        Value::Object(object) => object,
        _ => Map::new(),
    };
    let (title, arguments) = tool.title_and_arguments();
    object.insert("type".into(), json!("object"));
    object.insert("title".into(), json!(format!("{title}: arguments")));
    object.insert("description".into(), json!(arguments));
    let properties = object
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(properties) = properties {
        properties.insert(FORMAT_ARGUMENT.into(), format_schema());
    }
    object
}

/// The schema of the `format` argument, from [`OutputFormat`]: its values in order, each with
/// what it gives (`text (default): compact text for reading; json: the full contract JSON.`).
fn format_schema() -> Value {
    let described: Vec<String> = OutputFormat::ALL
        .iter()
        .map(|&format| {
            let default = if format == OutputFormat::default() {
                " (default)"
            } else {
                ""
            };
            format!("{format}{default}: {}", format.summary())
        })
        .collect();
    json!({
        "type": "string",
        "enum": OutputFormat::NAMES,
        "description": format!("{}.", described.join("; ")),
    })
}

/// The tool list every server (every MCP-over-HTTP session) shares: built once, so that a
/// session costs a pointer to it rather than a copy of six schemas.
pub(super) fn shared_tool_definitions() -> Arc<Vec<Tool>> {
    static TOOLS: std::sync::OnceLock<Arc<Vec<Tool>>> = std::sync::OnceLock::new();
    TOOLS.get_or_init(|| Arc::new(tool_definitions())).clone()
}

/// The six tools as MCP tool definitions.
pub fn tool_definitions() -> Vec<Tool> {
    ToolName::ALL
        .into_iter()
        .map(|tool| {
            let annotations = ToolAnnotations::new()
                .read_only(true)
                .destructive(false)
                .idempotent(true)
                .open_world(false);
            let mut definition = Tool::new(
                tool.as_str(),
                tool.description(),
                Arc::new(input_schema(tool, &tool.params())),
            );
            definition.title = Some(tool.title_and_arguments().0.to_string());
            definition.annotations = Some(annotations);
            definition
        })
        .collect()
}
