//! `get_file` → `getFileById`: a file's metadata and read actions, `{file: GeneratedFile}`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::fields::wire_names;
use super::ToolName;
use super::{require_revision, GeneratedFile, Malformed, Reader};
use crate::error::{messages, ErrorCode, ToolError};
use crate::kb::KnowledgeBase;

/// `FileDetailResponse`.
#[derive(Debug, Clone, Serialize)]
pub struct Output {
    pub file: GeneratedFile,
}

/// A file id input read from `field`: a non-empty string, trimmed (ids and paths are both
/// accepted).
pub(crate) fn file_id<'a>(
    malformed: &Malformed,
    field: &str,
    given: &'a str,
) -> Result<&'a str, ToolError> {
    match malformed.check(field, given.trim()) {
        Ok(id) if !id.is_empty() => Ok(id),
        _ => Err(ToolError::invalid_field(messages::INPUT_INVALID, field)),
    }
}

/// The tool input (`get_file {fileId}`), for Rust callers and schemas.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Params {
    /// A fileId (or a bundle path).
    pub file_id: String,
}

wire_names! {
    /// The wire names of [`Params`]' fields.
    pub struct ParamNames for Params { file_id }
}

impl Params {
    /// A JSON input as `Params`, and the fields it gave in a form they cannot hold.
    pub(crate) fn from_json(value: &Value) -> Result<(Params, Malformed), ToolError> {
        let mut reader = Reader::new(value, ToolName::GetFile.fields())?;
        let params = Params {
            file_id: reader.string(Params::WIRE.file_id).unwrap_or_default(),
        };
        Ok((params, reader.malformed))
    }
}

/// A validated request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub file_id: String,
}

/// Validates typed parameters.
pub fn validate(params: &Params) -> Result<Request, ToolError> {
    validate_with(params, &Malformed::default())
}

fn validate_with(params: &Params, malformed: &Malformed) -> Result<Request, ToolError> {
    Ok(Request {
        file_id: file_id(malformed, Params::WIRE.file_id, &params.file_id)?.to_string(),
    })
}

/// Runs the tool with typed parameters.
pub fn run_params(kb: &KnowledgeBase, params: &Params) -> Result<Output, ToolError> {
    answer(kb, &validate(params)?)
}

/// Runs the tool with its JSON input.
pub fn run(kb: &KnowledgeBase, input: &Value) -> Result<Output, ToolError> {
    let (params, malformed) = Params::from_json(input)?;
    answer(kb, &validate_with(&params, &malformed)?)
}

fn answer(kb: &KnowledgeBase, request: &Request) -> Result<Output, ToolError> {
    let id = request.file_id.as_str();
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
        file: GeneratedFile::new(kb, revision, file, kb.served_size(file)),
    })
}
