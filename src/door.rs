//! One tool call as every front door answers it (the CLI, MCP, HTTP): a [`Call`] (the tool, its
//! input, the request id) answered on one snapshot of a knowledge base ([`Call::answer`]) is an
//! [`Answer`], the tool's typed output or its typed error; [`Answer::render`] writes it in an
//! [`OutputFormat`] as a [`Rendered`] body, which the door sends its own way (stdout, a tool
//! result, an HTTP response). The async doors add one step, the blocking pool
//! (`serve/pool.rs`). So a door reads its request and writes a body; the recipe is here, once.
//!
//! The input is the tool's `Params` as the wire carries them: the tool reads them into `Params`
//! itself (`tools/input.rs`), so the wire's lenient forms and the first-failing-field order hold
//! at every door, and a plain folder's paths and the errors' hints are the same everywhere.
//!
//! [`OutputFormat`] is the one list of formats: the CLI's `--format` (with `auto`), MCP's
//! `format` argument, its schema in `tools/list` and `kbtools mcp --format` read its values. A new
//! format is its renderer, a value here and its arms in [`Answer::render`] and
//! [`OutputFormat::summary`]; a door matches only on the [`Body`]'s kind, save the CLI's
//! `search --explain`, a view of its own with an arm per format.

use serde_json::Value;

use crate::error::{new_request_id, ToolError};
use crate::kb::KnowledgeBase;
use crate::render;
use crate::tools::{self, Output, ToolName};

crate::wire::wire_enum! {
    /// What an answer is written as: the CLI's `--format` (besides `auto`), MCP's `format`
    /// (per call or per server); HTTP answers the contract JSON.
    #[derive(Default)]
    pub enum OutputFormat {
        /// Compact text for models (`docs/text-format.md`; an error as `失败: <CODE> <message>`).
        #[default]
        Text = "text",
        /// The exact contract JSON (an error as its envelope).
        Json = "json",
    }
}

impl OutputFormat {
    /// The format in a few words, as the MCP schema describes its `format` argument.
    pub const fn summary(self) -> &'static str {
        match self {
            OutputFormat::Text => "compact text for reading",
            OutputFormat::Json => "the full contract JSON",
        }
    }

    /// The spellings as a sentence offers them: `"text" or "json"`.
    pub fn choices() -> String {
        let quoted: Vec<String> = OutputFormat::NAMES
            .iter()
            .map(|name| format!("\"{name}\""))
            .collect();
        match quoted.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => quoted.concat(),
        }
    }
}

/// One tool call as a door received it.
#[derive(Debug, Clone)]
pub struct Call {
    pub tool: ToolName,
    /// The tool's `Params` in their wire form (a JSON object; `null` for none).
    pub input: Value,
    /// The id an error envelope carries: the door's own (HTTP's `x-request-id`) or a fresh one.
    pub request_id: String,
}

impl Call {
    /// A call of `tool` with `input` and a fresh request id.
    pub fn new(tool: ToolName, input: Value) -> Self {
        Call {
            tool,
            input,
            request_id: new_request_id(),
        }
    }

    /// A call of `tool` with `input` and the request id its door gave the request.
    pub fn with_id(tool: ToolName, input: Value, request_id: String) -> Self {
        Call {
            tool,
            input,
            request_id,
        }
    }

    /// Runs the tool on `kb`, one snapshot for the whole call ([`tools::run`]: a plain folder's
    /// paths as the user sees them, an error's hint).
    pub fn answer(&self, kb: &KnowledgeBase) -> Answer {
        Answer {
            result: tools::run(kb, self.tool, &self.input),
            request_id: self.request_id.clone(),
        }
    }
}

/// What a call answered, typed: the tool's output or its error.
#[derive(Debug)]
pub struct Answer {
    pub result: Result<Output, ToolError>,
    pub request_id: String,
}

/// An answer written in one format, what a door sends.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub body: Body,
    /// The error's HTTP status, 200 for an output.
    pub status: u16,
    pub is_error: bool,
}

/// A rendered answer's body, by what a door does with it.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// A JSON document (the contract JSON, an error envelope).
    Json(Value),
    /// Text to show as it is.
    Text(String),
}

impl Body {
    /// The body as one JSON value (text as a JSON string).
    pub fn into_json(self) -> Value {
        match self {
            Body::Json(json) => json,
            Body::Text(text) => Value::String(text),
        }
    }
}

impl Answer {
    /// The answer to a call refused before its tool ran (an unknown tool, a door's own argument
    /// out of bounds), with a fresh request id.
    pub fn refused(error: ToolError) -> Self {
        Answer {
            result: Err(error),
            request_id: new_request_id(),
        }
    }

    /// The answer written as `format`; `text_budget` is the character budget of a text result.
    pub fn render(&self, format: OutputFormat, text_budget: usize) -> Rendered {
        match format {
            OutputFormat::Json => self.json(),
            OutputFormat::Text => self.text(text_budget),
        }
    }

    /// The contract JSON of the output ([`Output::to_json`]), or the error's envelope with the
    /// request id ([`ToolError::envelope`]).
    pub fn json(&self) -> Rendered {
        let failed = |error: &ToolError| Rendered {
            body: Body::Json(error.envelope(&self.request_id)),
            status: error.http_status(),
            is_error: true,
        };
        match &self.result {
            Ok(output) => match output.to_json() {
                Ok(json) => Rendered {
                    body: Body::Json(json),
                    status: 200,
                    is_error: false,
                },
                Err(error) => failed(&error),
            },
            Err(error) => failed(error),
        }
    }

    /// The compact text of the output ([`render::render_output`]) or of the error
    /// ([`render::render_error`]).
    pub fn text(&self, budget: usize) -> Rendered {
        match &self.result {
            Ok(output) => Rendered {
                body: Body::Text(render::render_output(output, budget)),
                status: 200,
                is_error: false,
            },
            Err(error) => Rendered {
                body: Body::Text(render::render_error(error)),
                status: error.http_status(),
                is_error: true,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn the_formats_are_offered_from_the_one_list() {
        assert_eq!(OutputFormat::NAMES, ["text", "json"]);
        assert_eq!(OutputFormat::default(), OutputFormat::Text);
        assert_eq!(OutputFormat::choices(), r#""text" or "json""#);
    }

    #[test]
    fn an_error_is_rendered_with_its_request_id_and_status() {
        let error = || ToolError::new(ErrorCode::NotFound, "Resource was not found.");
        let answer = Answer {
            result: Err(error()),
            request_id: "req-1".into(),
        };
        let json = answer.render(OutputFormat::Json, 1_000);
        assert!(json.is_error);
        assert_eq!(json.status, 404);
        let Body::Json(envelope) = json.body else {
            panic!("{json:?}")
        };
        assert_eq!(envelope["requestId"], "req-1");
        assert_eq!(envelope["error"]["code"], "NOT_FOUND");
        let text = answer.render(OutputFormat::Text, 1_000);
        assert_eq!(text.body, Body::Text(render::render_error(&error())));
        assert_eq!((text.status, text.is_error), (404, true));
    }
}
