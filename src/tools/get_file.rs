//! `get_file` → `getFileById`: a file's metadata and read actions, `{file: GeneratedFile}`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ToolName;
use super::{require_revision, GeneratedFile, Input};
use crate::error::{messages, ErrorCode, ToolError};
use crate::kb::KnowledgeBase;

/// `FileDetailResponse`.
#[derive(Debug, Clone, Serialize)]
pub struct Output {
    pub file: GeneratedFile,
}

/// The `fileId` input: a non-empty string (ids and paths are both accepted).
pub fn file_id<'a>(input: &Input<'a>) -> Result<&'a str, ToolError> {
    match input.trimmed("fileId") {
        Ok(Some(id)) => Ok(id),
        _ => Err(ToolError::invalid_field(messages::INPUT_INVALID, "fileId")),
    }
}

/// The tool input (`get_file {fileId}`), for Rust callers and schemas.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Params {
    /// A fileId (or a bundle path).
    pub file_id: String,
}

/// Runs the tool with typed parameters (the same validation as JSON input).
pub fn run_params(kb: &KnowledgeBase, params: &Params) -> Result<Output, ToolError> {
    run(kb, &serde_json::to_value(params).unwrap_or(Value::Null))
}

pub fn run(kb: &KnowledgeBase, input: &Value) -> Result<Output, ToolError> {
    let input = Input::new(input, ToolName::GetFile.fields())?;
    let id = file_id(&input)?;
    let revision = require_revision(kb)?;
    let position = kb
        .catalog
        .by_id_or_path(id)
        .ok_or_else(ToolError::not_found)?;
    let file = kb.catalog.file(position);
    if file.size > kb.options.read_limit {
        return Err(ToolError::new(
            ErrorCode::PayloadTooLarge,
            messages::PAYLOAD_TOO_LARGE,
        ));
    }
    Ok(Output {
        file: GeneratedFile::new(kb, revision, file, file.size),
    })
}
