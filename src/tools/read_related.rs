//! `read_related` → `listRelatedFiles`: the pages related to one source page, one item per
//! target (a `related` relation preferred over `references`, directions merged), in the order
//! of the targets' `sourceFileId`, paged by a cursor bound to the page, the limit and the revision.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::fields::{wire_names, Bounds};
use super::get_file::file_id;
use super::input::{self, Malformed, Reader};
use super::ToolName;
use super::{require_revision, RelatedFile};
use crate::cursor;
use crate::error::{messages, ErrorCode, ToolError};
use crate::index::catalog::CatalogRelation;
use crate::kb::KnowledgeBase;
use crate::relation::Direction;

pub const NAME: &str = ToolName::ReadRelated.as_str();
/// `limit`: related files per page.
pub(crate) const LIMIT: Bounds<u64> = Bounds {
    min: 1,
    max: 200,
    default: 50,
};

/// `RelatedFileListResponse`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Output {
    pub active_content_revision: u64,
    pub file_id: String,
    pub source_file_id: String,
    pub items: Vec<RelatedFile>,
    pub next_cursor: Option<String>,
    /// Whether the call gave a cursor (not in the contract: how the text renderer says to
    /// continue a cut page).
    #[serde(skip)]
    pub paged: bool,
}

/// One item per target: the preferred relation and the merged direction.
pub fn collapsed(kb: &KnowledgeBase, page: u32) -> Vec<(&CatalogRelation, Direction)> {
    let mut by_target: BTreeMap<&str, (&CatalogRelation, Direction)> = BTreeMap::new();
    // Keyed by the target's sourceFileId: the API orders related files by it (byte order).
    for (_, rel) in kb.graph().ordered_relations(page) {
        let path = kb.catalog.file(rel.to).file_id.as_str();
        by_target
            .entry(path)
            .and_modify(|(_, d)| *d = d.merged(rel.direction))
            .or_insert((rel, rel.direction));
    }
    by_target.into_values().collect()
}

/// The tool input (`read_related {fileId, cursor, limit}`), for Rust callers and schemas.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Params {
    /// A source page's fileId (or path).
    pub file_id: String,
    /// The `nextCursor` of the previous page (default the first page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Related files per page, 1–200 (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = LIMIT.min, max = LIMIT.max))]
    pub limit: Option<u64>,
}

wire_names! {
    /// The wire names of [`Params`]' fields.
    pub struct ParamNames for Params { file_id, cursor, limit }
}

impl Params {
    /// A JSON input as `Params`, and the fields it gave in a form they cannot hold.
    pub(crate) fn from_json(value: &Value) -> Result<(Params, Malformed), ToolError> {
        let mut reader = Reader::new(value, ToolName::ReadRelated.fields())?;
        let f = Params::WIRE;
        let params = Params {
            file_id: reader.string(f.file_id).unwrap_or_default(),
            cursor: reader.string(f.cursor),
            limit: reader.integer(f.limit),
        };
        Ok((params, reader.malformed))
    }
}

/// A validated request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub file_id: String,
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
        file_id: file_id(malformed, f.file_id, &params.file_id)?.to_string(),
        limit: input::limit(malformed, f.limit, params.limit, LIMIT)?,
        cursor: input::cursor(malformed, f.cursor, params.cursor.as_deref())?,
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
    let (requested, limit) = (request.file_id.as_str(), request.limit);
    let cursor_text = request.cursor.as_deref();
    let revision = require_revision(kb)?;
    let position = kb
        .catalog
        .by_id_or_path(requested)
        .ok_or_else(ToolError::not_found)?;
    let page = kb.catalog.file(position);
    if !page.source_backed {
        return Err(ToolError::new(
            ErrorCode::Conflict,
            messages::RELATED_CONFLICT,
        ));
    }
    let scope = json!({ "fileId": page.file_id, "limit": limit });
    let offset = cursor::start(cursor_text, NAME, &scope, revision)?;
    let all = collapsed(kb, position);
    let (range, next_cursor) = cursor::page(NAME, &scope, revision, offset, limit, all.len());
    let items = all[range]
        .iter()
        .map(|&(rel, direction)| RelatedFile::new(kb, revision, rel, direction, 1))
        .collect();
    Ok(Output {
        active_content_revision: revision,
        file_id: requested.to_string(),
        source_file_id: page.file_id.clone(),
        items,
        next_cursor,
        paged: cursor_text.is_some(),
    })
}
