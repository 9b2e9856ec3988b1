//! `list_tree` → `listKnowledgeBaseTree`: the direct children of a directory, files and
//! directories interleaved in byte order of path (rules#tree-order), paged by a cursor bound to the
//! parent path, the limit and the revision.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::fields::{wire_names, Bounds};
use super::input::{self, Malformed, Reader};
use super::read_actions;
use super::ToolName;
use crate::cursor;
use crate::error::{messages, ToolError};
use crate::ids::{self, ReadActions};
use crate::index::catalog::TreeChild;
use crate::ingest::bundle::paths;
use crate::ingest::bundle::paths::ContractFileKind;
use crate::kb::KnowledgeBase;

pub const NAME: &str = ToolName::ListTree.as_str();
/// `limit`: entries per page.
pub(crate) const LIMIT: Bounds<u64> = Bounds {
    min: 1,
    max: 500,
    default: 100,
};

crate::wire::wire_enum! {
    /// What a tree entry is (`entryType`).
    pub enum EntryType {
        File = "file",
        Directory = "directory",
    }
}

/// `TreeResponse`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Output {
    pub active_content_revision: Option<u64>,
    pub items: Vec<TreeEntry>,
    pub next_cursor: Option<String>,
    /// The folder listed, `""` for the root (not in the contract: the text renderer's
    /// header).
    #[serde(skip)]
    pub parent_path: String,
    /// Whether the call gave a cursor (not in the contract: how the text renderer says to
    /// continue a cut page).
    #[serde(skip)]
    pub paged: bool,
}

/// `GeneratedTreeEntry`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TreeEntry {
    pub active_content_revision: Option<u64>,
    pub id: String,
    pub file_id: Option<String>,
    pub source_file_id: Option<String>,
    pub directory_id: Option<String>,
    pub parent_path: String,
    pub name: String,
    pub path: String,
    pub sort_key: String,
    pub entry_type: EntryType,
    pub file_kind: Option<ContractFileKind>,
    pub direct_entry_count: u64,
    pub direct_directory_count: u64,
    pub direct_file_count: u64,
    pub descendant_file_count: u64,
    pub resource_revision: Option<u64>,
    pub deletable: bool,
    pub content_available: bool,
    pub read_actions: Option<ReadActions>,
}

/// Validates `parentPath`: absent, `""` and `"root"` mean the root.
fn parent_path(malformed: &Malformed, given: Option<&str>) -> Result<String, ToolError> {
    let field = Params::WIRE.parent_path;
    let invalid = || ToolError::invalid_field(messages::TREE_PARENT_INVALID, field);
    match malformed.check(field, given).map_err(|_| invalid())? {
        None | Some("") | Some("root") => Ok(String::new()),
        Some(path) if paths::is_allowed_tree_parent(path) => Ok(path.to_string()),
        Some(_) => Err(invalid()),
    }
}

/// The tool input (`list_tree {parentPath, cursor, limit}`), for Rust callers and schemas.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Params {
    /// The directory to list, e.g. `pages` or `pages/guide`; `""` or `"root"` is the bundle root
    /// (default the root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_path: Option<String>,
    /// The `nextCursor` of the previous page, with the same parentPath and limit (default the
    /// first page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Entries per page, 1–500 (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = LIMIT.min, max = LIMIT.max))]
    pub limit: Option<u64>,
}

wire_names! {
    /// The wire names of [`Params`]' fields.
    pub struct ParamNames for Params { parent_path, cursor, limit }
}

impl Params {
    /// A JSON input as `Params`, and the fields it gave in a form they cannot hold.
    pub(crate) fn from_json(value: &Value) -> Result<(Params, Malformed), ToolError> {
        let mut reader = Reader::new(value, ToolName::ListTree.fields())?;
        let f = Params::WIRE;
        let params = Params {
            parent_path: reader.string(f.parent_path),
            limit: reader.integer(f.limit),
            cursor: reader.string(f.cursor),
        };
        Ok((params, reader.malformed))
    }
}

/// A validated request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The folder, `""` for the root.
    pub parent_path: String,
    pub limit: u64,
    pub cursor: Option<String>,
}

/// Validates typed parameters.
pub fn validate(params: &Params) -> Result<Request, ToolError> {
    validate_with(params, &Malformed::default())
}

fn validate_with(params: &Params, malformed: &Malformed) -> Result<Request, ToolError> {
    let f = Params::WIRE;
    Ok(Request {
        parent_path: parent_path(malformed, params.parent_path.as_deref())?,
        limit: input::limit(malformed, f.limit, params.limit, LIMIT)?,
        cursor: input::cursor(malformed, f.cursor, params.cursor.as_deref())?,
    })
}

/// Runs the tool with typed parameters.
pub fn run_params(kb: &KnowledgeBase, params: &Params) -> Result<Output, ToolError> {
    answer(kb, validate(params)?)
}

/// Runs the tool with its JSON input.
pub fn run(kb: &KnowledgeBase, input: &Value) -> Result<Output, ToolError> {
    let (params, malformed) = Params::from_json(input)?;
    answer(kb, validate_with(&params, &malformed)?)
}

fn answer(kb: &KnowledgeBase, request: Request) -> Result<Output, ToolError> {
    let Request {
        parent_path: parent,
        limit,
        cursor: cursor_text,
    } = request;
    let cursor_text = cursor_text.as_deref();
    let Some(revision) = kb.revision() else {
        return Ok(Output {
            active_content_revision: None,
            items: Vec::new(),
            next_cursor: None,
            parent_path: parent,
            paged: cursor_text.is_some(),
        });
    };
    let scope = json!({ "parentPath": parent, "limit": limit });
    let offset = cursor::start(cursor_text, NAME, &scope, revision)?;
    let children = kb.catalog.children(&parent);
    let (range, next_cursor) = cursor::page(NAME, &scope, revision, offset, limit, children.len());
    let items = children[range]
        .iter()
        .map(|(path, child)| entry(kb, revision, &parent, path, child))
        .collect();
    Ok(Output {
        active_content_revision: Some(revision),
        items,
        next_cursor,
        parent_path: parent,
        paged: cursor_text.is_some(),
    })
}

fn entry(
    kb: &KnowledgeBase,
    revision: u64,
    parent: &str,
    path: &str,
    child: &TreeChild,
) -> TreeEntry {
    let name = paths::name_of(path).to_string();
    match child {
        TreeChild::File(i) => {
            let file = kb.catalog.file(*i);
            TreeEntry {
                active_content_revision: Some(revision),
                id: file.file_id.clone(),
                file_id: Some(file.file_id.clone()),
                source_file_id: file.source_file_id().map(str::to_string),
                directory_id: None,
                parent_path: parent.to_string(),
                name,
                path: path.to_string(),
                sort_key: format!("{path}:{}", file.file_id),
                entry_type: EntryType::File,
                file_kind: Some(file.tree_file_kind()),
                direct_entry_count: 0,
                direct_directory_count: 0,
                direct_file_count: 0,
                descendant_file_count: 0,
                resource_revision: file.resource_revision,
                deletable: file.source_backed,
                content_available: true,
                read_actions: Some(read_actions(kb, file)),
            }
        }
        TreeChild::Directory(dir) => {
            let info = kb.catalog.directory(dir).cloned().unwrap_or_default();
            let id = ids::generated_directory_id(kb.kb_id(), dir);
            TreeEntry {
                active_content_revision: Some(revision),
                sort_key: format!("{path}:{id}"),
                id,
                file_id: None,
                source_file_id: None,
                directory_id: None,
                parent_path: parent.to_string(),
                name,
                path: path.to_string(),
                entry_type: EntryType::Directory,
                file_kind: None,
                direct_entry_count: info.direct_directories + info.direct_files,
                direct_directory_count: info.direct_directories,
                direct_file_count: info.direct_files,
                descendant_file_count: info.descendant_source_files,
                resource_revision: None,
                deletable: false,
                content_available: false,
                read_actions: None,
            }
        }
    }
}
