//! `kbtools call` and the tool commands (`search`, `read`, `tree`, `file`, `related`,
//! `expand`): one tool run on the knowledge base, its output as contract JSON or compact text.

use std::io::Read;

use anyhow::{anyhow, Context, Result};
use serde_json::Value;

use kbtools::door::{Answer, Body, Call, OutputFormat, Rendered};
use kbtools::tools::{self, Output, ToolName};

use crate::args::Printed;
use crate::human;
use crate::open;
use crate::output::{print_json, print_raw, print_text};
use crate::tool_flags::{ToolCommand, ToolFlags};
use crate::{RenderArgs, Source};

/// `kbtools call TOOL [INPUT | -]`: the input as an agent sends it (`{}` when none, stdin
/// for `-`).
pub(crate) fn call(
    source: &Source,
    tool: &str,
    input: Option<&str>,
    render: &RenderArgs,
) -> Result<i32> {
    let text = match input {
        None => "{}".to_string(),
        Some("-") => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .context("reading the tool input from stdin")?;
            s
        }
        Some(s) => s.to_string(),
    };
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| anyhow!("the tool input is not valid JSON: {e}"))?;
    let Ok(tool) = tool.parse::<ToolName>() else {
        let names: Vec<&str> = ToolName::ALL.iter().map(|t| t.as_str()).collect();
        return Err(anyhow!(
            "unknown tool {tool:?}; the tools are {}",
            names.join(", ")
        ));
    };
    answer(source, render, tool, value)
}

/// Whether `target` (of `kbtools read`) is a file id rather than a path.
pub(crate) fn looks_like_id(target: &str) -> bool {
    target.starts_with("source-file-") || target.starts_with("generated-")
}

/// `kbtools search --explain`: each result's score by lane, as JSON or as text (an error as
/// its envelope).
pub(crate) fn explain_search(source: &Source, render: &RenderArgs, input: &Value) -> Result<i32> {
    let kb = open::open(source)?;
    let explained = match tools::search_files::explain(&kb, input) {
        Ok(explained) => explained,
        Err(error) => return print(Answer::refused(error).json(), source),
    };
    match render.format() {
        OutputFormat::Text => print_text(kbtools::render::render_explained(&explained))?,
        OutputFormat::Json => print_json(
            &serde_json::json!({ "query": input["query"], "items": explained }),
            source.pretty,
        )?,
    }
    Ok(0)
}

/// Runs `tool` on `input` as every door does ([`kbtools::door`]) and prints its answer; 1 when
/// the tool answered with an error.
pub(crate) fn answer(
    source: &Source,
    render: &RenderArgs,
    tool: ToolName,
    input: Value,
) -> Result<i32> {
    let call = Call::new(tool, input);
    // The tool answers while the bundle is checked; again only if the index was rebuilt.
    let (kb, early) = open::open_ahead(source, |kb| call.answer(kb))?;
    let answer = early.unwrap_or_else(|| call.answer(&kb));
    let printed = render.printed(tool == ToolName::ReadFile);
    // A person's error text holds its hint already.
    if printed != Printed::Person || answer.result.is_ok() {
        if let Some(hint) = tools::hints::hint(&kb, &call.input, &answer.result) {
            eprintln!("kbtools: hint: {hint}");
        }
    }
    let marks = match (printed, &answer.result) {
        (Printed::Person, Ok(Output::SearchFiles(output))) => {
            kbtools::search::excerpt::rare_terms(&kb, &output.query.query)
        }
        _ => Vec::new(),
    };
    // A one-shot process: the OS frees the knowledge base faster than its destructors would
    // (hundreds of thousands of small allocations on a large bundle).
    std::mem::forget(kb);
    match (printed, &answer.result) {
        (Printed::Door(format), _) => print(answer.render(format, render.text_budget), source),
        (Printed::Markdown, Ok(Output::ReadFile(output))) => {
            print_raw(output.content.as_bytes())?;
            Ok(0)
        }
        (Printed::Markdown, _) => print(answer.json(), source),
        (Printed::Person, result) => {
            let json = match answer.json().body {
                Body::Json(json) => json,
                Body::Text(_) => Value::Null,
            };
            let style = human::Style {
                verbose: render.verbose,
                color: colored(),
                marks,
            };
            print_text(human::render(result, &json, &style))?;
            Ok(i32::from(result.is_err()))
        }
    }
}

/// Whether text for a person may carry ANSI bold: stdout is a terminal and `NO_COLOR` is unset
/// or empty (no-color.org).
fn colored() -> bool {
    use std::io::IsTerminal;
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Prints a rendered answer; its exit code (1 for an error).
fn print(rendered: Rendered, source: &Source) -> Result<i32> {
    match rendered.body {
        Body::Json(json) => print_json(&json, source.pretty)?,
        Body::Text(text) => print_text(text)?,
    }
    Ok(i32::from(rendered.is_error))
}

/// A tool command that takes a source page (`file`, `related`, `expand`): `target` as its
/// `fileId` (a path is accepted there too), the rest from its options.
pub(crate) fn on_file<C: ToolCommand>(
    source: &Source,
    render: &RenderArgs,
    target: String,
    input: ToolFlags<C>,
) -> Result<i32> {
    let (tool, input) = input.with("fileId", Some(target));
    answer(source, render, tool, input)
}
