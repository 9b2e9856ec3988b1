//! The options of the tool commands (`search`, `read`, `tree`, `file`, `related`, `expand`),
//! derived from each tool's `Params` ([`kbtools::tools::ToolName::params`]): one `--kebab-case`
//! option per input field the command does not take as a positional argument, described by the
//! field's schema. A field added to a tool's `Params` is an option here with no other edit.
//!
//! Values go to the tool as the MCP and HTTP doors send them, so a bad one gets the tool's own
//! validation error (and the CLI's hint), not a second set of rules: a number when it parses as
//! one, `true`/`false` for a boolean, JSON for an array or object, else the text as given.

use std::marker::PhantomData;

use clap::{Arg, ArgAction, ArgMatches, Command};
use kbtools::tools::{ParamsDef, ToolName};
use serde_json::{Map, Value};

/// A tool command: the tool it runs and the fields it takes as positional arguments.
pub trait ToolCommand {
    const TOOL: ToolName;
    const POSITIONAL: &'static [&'static str];
}

/// The tool input given as options (positional fields are added by the command).
pub struct ToolFlags<T> {
    pub input: Map<String, Value>,
    command: PhantomData<T>,
}

impl<T: ToolCommand> ToolFlags<T> {
    /// The command's tool and its input: the options, and the positional `field` when given.
    pub fn with(self, field: &str, value: Option<String>) -> (ToolName, Value) {
        let mut input = self.input;
        if let Some(value) = value {
            input.insert(field.to_string(), Value::String(value));
        }
        (T::TOOL, Value::Object(input))
    }
}

impl<T> Clone for ToolFlags<T> {
    fn clone(&self) -> Self {
        ToolFlags {
            input: self.input.clone(),
            command: PhantomData,
        }
    }
}

impl<T: ToolCommand> clap::FromArgMatches for ToolFlags<T> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut flags = ToolFlags {
            input: Map::new(),
            command: PhantomData,
        };
        flags.update_from_arg_matches(matches)?;
        Ok(flags)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        let params = T::TOOL.params();
        self.input.extend(input_of(matches, &params, T::POSITIONAL));
        Ok(())
    }
}

impl<T: ToolCommand> clap::Args for ToolFlags<T> {
    fn augment_args(command: Command) -> Command {
        with_options(command, &T::TOOL.params(), T::POSITIONAL)
    }

    fn augment_args_for_update(command: Command) -> Command {
        Self::augment_args(command)
    }
}

/// `command` with an option for each field of `params` not in `positional`.
pub fn with_options(mut command: Command, params: &ParamsDef, positional: &[&str]) -> Command {
    for &field in params.fields.iter().filter(|f| !positional.contains(f)) {
        let property = params.property(field);
        let mut arg = Arg::new(field)
            .long(kebab_case(field))
            .value_name(value_name(property))
            .help(help(property))
            .action(ArgAction::Set);
        // A value outside the field's list is a usage error (exit 2) that lists the allowed ones,
        // as for every other option.
        if let Some(values) = property["enum"].as_array() {
            let values: Vec<String> = values
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
            arg = arg.value_parser(clap::builder::PossibleValuesParser::new(values));
        }
        command = command.arg(arg);
    }
    command
}

/// The tool input the options of `matches` give.
pub fn input_of(
    matches: &ArgMatches,
    params: &ParamsDef,
    positional: &[&str],
) -> Map<String, Value> {
    let mut input = Map::new();
    for &field in params.fields.iter().filter(|f| !positional.contains(f)) {
        if let Ok(Some(text)) = matches.try_get_one::<String>(field) {
            input.insert(field.to_string(), typed(text, params.property(field)));
        }
    }
    input
}

/// `graphDepth` → `graph-depth`.
fn kebab_case(field: &str) -> String {
    let mut out = String::with_capacity(field.len() + 4);
    for c in field.chars() {
        if c.is_ascii_uppercase() {
            out.push('-');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The schema's types of a property, `null` left out.
fn kinds(property: &Value) -> Vec<&str> {
    match &property["type"] {
        Value::String(kind) => vec![kind.as_str()],
        Value::Array(kinds) => kinds
            .iter()
            .filter_map(Value::as_str)
            .filter(|k| *k != "null")
            .collect(),
        _ => Vec::new(),
    }
}

fn value_name(property: &Value) -> String {
    if let Some(values) = property["enum"].as_array() {
        let values: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
        return values.join("|");
    }
    let name = match kinds(property).first().copied() {
        Some("integer") => "N",
        Some("number") => "NUMBER",
        Some("boolean") => "true|false",
        Some("array") | Some("object") => "JSON",
        _ => "TEXT",
    };
    name.to_string()
}

/// The field's description as option help, its default in clap's `[default: …]` style.
fn help(property: &Value) -> String {
    let text = property["description"]
        .as_str()
        .unwrap_or("")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    match text.find("(default ") {
        Some(start) => match text[start..].find(')') {
            Some(len) => format!(
                "{}[default: {}]{}",
                &text[..start],
                &text[start + "(default ".len()..start + len],
                &text[start + len + 1..]
            ),
            None => text,
        },
        None => format!("{text} [default: none]"),
    }
}

/// An option's text as the JSON value an agent would send for the field.
fn typed(text: &str, property: &Value) -> Value {
    let kinds = kinds(property);
    let parsed = if kinds.contains(&"integer") {
        text.trim().parse::<i64>().ok().map(Value::from)
    } else if kinds.contains(&"number") {
        text.trim()
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
    } else if kinds.contains(&"boolean") {
        match text.trim() {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        }
    } else if kinds.contains(&"array") || kinds.contains(&"object") {
        serde_json::from_str(text).ok()
    } else {
        None
    };
    parsed.unwrap_or_else(|| Value::String(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn options_are_named_typed_and_described_from_the_schema() {
        assert_eq!(kebab_case("rerankScoreThreshold"), "rerank-score-threshold");
        let int = json!({"type": ["integer", "null"], "description": "Page size (default 10)."});
        assert_eq!(typed("5", &int), json!(5));
        assert_eq!(typed("five", &int), json!("five"));
        assert_eq!(help(&int), "Page size [default: 10].");
        assert_eq!(typed("true", &json!({"type": "boolean"})), json!(true));
        assert_eq!(
            typed(r#"[{"start": 1}]"#, &json!({"type": ["array", "null"]})),
            json!([{"start": 1}])
        );
        assert_eq!(typed("x", &json!({"type": "string"})), json!("x"));
        assert_eq!(
            help(&json!({"description": "A word."})),
            "A word. [default: none]"
        );
        assert_eq!(value_name(&json!({"enum": ["a", "b"]})), "a|b");
    }
}

/// A field added to a tool's `Params` reaches every door with no other edit: the MCP input
/// schema, the HTTP routes' parameters (the allowlist and the served document) and the CLI's
/// options all read the same `ParamsDef`. `Probe` is `list_tree`'s `Params` with one field more.
#[cfg(all(test, feature = "server"))]
mod doors {
    use super::*;
    use kbtools::serve::http::spec::{route_operation, SpecOptions, KB_ROUTES};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Probe {
        parent_path: Option<String>,
        cursor: Option<String>,
        limit: Option<u64>,
        /// A field no door knows by name, 1–9 (default 3).
        #[schemars(range(min = 1, max = 9))]
        brand_new_option: Option<u64>,
    }

    #[test]
    fn a_field_added_to_params_is_in_every_door() {
        let probe = ParamsDef::of::<Probe>();
        assert_eq!(
            probe.fields,
            ["parentPath", "cursor", "limit", "brandNewOption"]
        );

        let mcp = kbtools::serve::mcp::input_schema(ToolName::ListTree, &probe);
        assert!(mcp["properties"].get("brandNewOption").is_some(), "{mcp:?}");

        let tree = KB_ROUTES.iter().find(|r| r.path == "/tree").unwrap();
        let operation = route_operation(tree, &probe, &SpecOptions::default()).unwrap();
        let parameter = operation["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "brandNewOption")
            .expect("the HTTP document lists the new field");
        assert_eq!(parameter["in"], "query");
        assert_eq!(parameter["schema"]["maximum"], 9);

        let command = with_options(Command::new("tree"), &probe, &["parentPath"]);
        let matches = command
            .clone()
            .try_get_matches_from(["tree", "--brand-new-option", "5", "--limit", "2"])
            .unwrap();
        let input = input_of(&matches, &probe, &["parentPath"]);
        assert_eq!(input["brandNewOption"], 5);
        assert_eq!(input["limit"], 2);
        let help = command.clone().render_long_help().to_string();
        assert!(
            help.contains("A field no door knows by name, 1–9 [default: 3]."),
            "{help}"
        );
        assert!(command
            .try_get_matches_from(["tree", "--parent-path", "x"])
            .is_err());
    }
}
