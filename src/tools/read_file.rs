//! `read_file` → `getFileContentById` / `getFileContentByPath`: a file's bytes exactly
//! (frontmatter included) with its metadata, `{file, content}`. Takes exactly one of `fileId`
//! and `path`; a path must be a canonical bundle path (the security boundary).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{read_content, require_revision, GeneratedFile, Input};
use crate::bundle::paths::{self, PathClass};
use crate::error::{messages, ToolError};
use crate::index::KnowledgeBase;

const FIELDS: [&str; 2] = ["fileId", "path"];

/// `FileContentResponse`.
#[derive(Debug, Clone, Serialize)]
pub struct Output {
    pub file: GeneratedFile,
    pub content: String,
}

/// What to read.
enum Target<'a> {
    Id(&'a str),
    Path(&'a str),
}

fn target<'a>(input: &Input<'a>) -> Result<Target<'a>, ToolError> {
    let id = input
        .trimmed("fileId")
        .map_err(|_| ToolError::invalid_field(messages::INPUT_INVALID, "fileId"))?;
    let path = input
        .string("path")
        .map_err(|_| ToolError::invalid_field(messages::PATH_UNSUPPORTED, "path"))?;
    match (id, path) {
        (Some(_), Some(_)) | (None, None) => Err(ToolError::invalid_field(
            "Provide exactly one of fileId or path.",
            "fileId",
        )),
        (Some(id), None) => Ok(Target::Id(id)),
        (None, Some(path)) => {
            if paths::check_canonical(path).is_err() {
                return Err(ToolError::invalid_field(messages::PATH_UNSUPPORTED, "path"));
            }
            Ok(Target::Path(path))
        }
    }
}

/// True when `path` is exactly the path of a per-file graph record kbtools renders itself. A
/// plain-folder page named `index.md` gets `_graph/by-file/**/index.json`, which the bundle path
/// table does not allow; it must still open, since it is that page's `graphRef` (DECISIONS 21).
fn is_virtual_graph(kb: &KnowledgeBase, path: &str) -> bool {
    kb.catalog.by_path(path).is_some_and(|i| {
        let file = kb.catalog.file(i);
        file.path == path && file.class == PathClass::PerFileGraph && file.virtual_content.is_some()
    })
}

/// The tool input (`read_file {fileId | path}`, exactly one), for Rust callers and schemas.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Params {
    /// A fileId from the tree, search, file detail, related files or graph expansion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_id: Option<String>,
    /// A bundle path such as `pages/guide.md` or a `graphRef`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// Runs the tool with typed parameters (the same validation as JSON input).
pub fn run_params(kb: &KnowledgeBase, params: &Params) -> Result<Output, ToolError> {
    run(kb, &serde_json::to_value(params).unwrap_or(Value::Null))
}

pub fn run(kb: &KnowledgeBase, input: &Value) -> Result<Output, ToolError> {
    let input = Input::new(input, &FIELDS)?;
    let target = target(&input)?;
    if let Target::Path(path) = target {
        if paths::classify(path).is_none() && !is_virtual_graph(kb, path) {
            return Err(ToolError::invalid_field(messages::PATH_UNSUPPORTED, "path"));
        }
    }
    let revision = require_revision(kb)?;
    let position = match target {
        Target::Id(id) => kb.catalog.by_id_or_path(id),
        Target::Path(path) => kb.catalog.by_path(path),
    }
    .ok_or_else(ToolError::not_found)?;
    let file = kb.catalog.file(position);
    let content = read_content(kb, file)?;
    Ok(Output {
        file: GeneratedFile::new(kb, revision, file, content.len() as u64),
        content,
    })
}
