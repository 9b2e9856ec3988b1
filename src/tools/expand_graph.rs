//! `expand_graph` → `expandGraph`: a bounded breadth-first walk of the relation graph from one
//! source page (depth 0–2, fanout 0–25 per explored node), each target listed once at its
//! shallowest depth, with the per-file graph records that describe them.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::fields::{wire_names, Bounds};
use super::input::{self, Malformed, Reader};
use super::ToolName;
use super::{require_revision, GeneratedFile, RelatedFile};
use crate::cursor;
use crate::error::{messages, ErrorCode, ToolError};
use crate::ingest::bundle::paths;
use crate::kb::KnowledgeBase;

pub const NAME: &str = ToolName::ExpandGraph.as_str();
/// `depth`: relation steps walked from the seed.
pub const DEPTH: Bounds<u8> = Bounds {
    min: 0,
    max: 2,
    default: 1,
};
/// `fanout`: new relations taken per explored page.
pub(crate) const FANOUT: Bounds<u64> = Bounds {
    min: 0,
    max: 25,
    default: 10,
};
/// `limit`: relationships per page.
pub(crate) const LIMIT: Bounds<u64> = Bounds {
    min: 1,
    max: 200,
    default: 50,
};
const MEANING: &str =
    "Relationships connect readable source-backed files in the current knowledge-base version.";

/// `GraphExpansionResponse`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Output {
    pub active_content_revision: u64,
    pub seed_file: GeneratedFile,
    pub relationships: Vec<RelatedFile>,
    pub graph_paths: Vec<String>,
    pub next_cursor: Option<String>,
    pub result_summary: ResultSummary,
    /// Whether the call gave a cursor (not in the contract: how the text renderer says to
    /// continue a cut page).
    #[serde(skip)]
    pub paged: bool,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResultSummary {
    pub relationship_count: u64,
    pub has_more: bool,
    pub depth: u8,
    pub fanout: u64,
    pub meaning: &'static str,
}

crate::wire::wire_enum! {
    /// A graph expansion's validation error: its `details.code`.
    pub enum InvalidExpansion {
        FileIdRequired = "GRAPH_EXPANSION_FILE_ID_REQUIRED",
        Depth = "INVALID_GRAPH_EXPANSION_DEPTH",
        Fanout = "INVALID_GRAPH_EXPANSION_FANOUT",
    }
}

impl InvalidExpansion {
    /// The input field the error is about, when it is about one field (the hints name it).
    pub fn field(self) -> Option<&'static str> {
        match self {
            Self::FileIdRequired => None,
            Self::Depth => Some(Params::WIRE.depth),
            Self::Fanout => Some(Params::WIRE.fanout),
        }
    }
}

fn invalid(code: InvalidExpansion) -> ToolError {
    ToolError::invalid_code(messages::EXPAND_INVALID, code.as_str())
}

/// The per-file graph paths of `pages`, de-duplicated in order, keeping only readable ones.
pub fn graph_paths<'a>(kb: &KnowledgeBase, pages: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for page in pages {
        let graph_path = paths::per_file_graph_path(page);
        if kb.catalog.by_path(&graph_path).is_some() && !out.contains(&graph_path) {
            out.push(graph_path);
        }
    }
    out
}

/// The tool input (`expand_graph {fileId, depth, fanout, cursor}`; `limit` as the API takes
/// it), for Rust callers and schemas.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Params {
    /// The seed: a source page's fileId (or path).
    pub file_id: String,
    /// How many relation steps to walk from the seed, 0–2 (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = DEPTH.min, max = DEPTH.max))]
    pub depth: Option<u8>,
    /// New relations taken per explored page, 0–25 (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = FANOUT.min, max = FANOUT.max))]
    pub fanout: Option<u64>,
    /// The `nextCursor` of the previous page (default the first page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Relationships per page, 1–200 (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = LIMIT.min, max = LIMIT.max))]
    pub limit: Option<u64>,
}

wire_names! {
    /// The wire names of [`Params`]' fields.
    pub struct ParamNames for Params { file_id, depth, fanout, cursor, limit }
}

impl Params {
    /// A JSON input as `Params`, and the fields it gave in a form they cannot hold.
    pub(crate) fn from_json(value: &Value) -> Result<(Params, Malformed), ToolError> {
        let mut reader = Reader::new(value, ToolName::ExpandGraph.fields())?;
        let f = Params::WIRE;
        let params = Params {
            file_id: reader.string(f.file_id).unwrap_or_default(),
            depth: reader.integer(f.depth),
            fanout: reader.integer(f.fanout),
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
    pub depth: u8,
    pub fanout: usize,
    pub limit: u64,
    pub cursor: Option<String>,
}

/// Validates typed parameters.
pub fn validate(params: &Params) -> Result<Request, ToolError> {
    validate_with(params, &Malformed::default())
}

fn validate_with(params: &Params, malformed: &Malformed) -> Result<Request, ToolError> {
    let f = Params::WIRE;
    let file_id = match malformed.check(f.file_id, params.file_id.trim()) {
        Ok(id) if !id.is_empty() => id.to_string(),
        _ => return Err(invalid(InvalidExpansion::FileIdRequired)),
    };
    let depth = malformed
        .check(f.depth, params.depth)
        .ok()
        .and_then(|depth| DEPTH.check(depth))
        .ok_or_else(|| invalid(InvalidExpansion::Depth))?;
    let fanout = malformed
        .check(f.fanout, params.fanout)
        .ok()
        .and_then(|fanout| FANOUT.check(fanout))
        .ok_or_else(|| invalid(InvalidExpansion::Fanout))?;
    Ok(Request {
        file_id,
        depth,
        fanout: fanout as usize,
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
    let (seed_id, depth, fanout, limit) = (
        request.file_id.as_str(),
        request.depth,
        request.fanout,
        request.limit,
    );
    let cursor_text = request.cursor.as_deref();
    let revision = require_revision(kb)?;
    let seed = kb
        .catalog
        .by_id_or_path(seed_id)
        .filter(|&p| kb.catalog.file(p).source_backed)
        .ok_or_else(ToolError::not_found)?;
    let seed_file = kb.catalog.file(seed);
    if seed_file.size > kb.options.read_limit {
        return Err(ToolError::new(
            ErrorCode::PayloadTooLarge,
            messages::PAYLOAD_TOO_LARGE,
        ));
    }
    let scope =
        json!({ "fileId": seed_file.file_id, "depth": depth, "fanout": fanout, "limit": limit });
    let offset = cursor::start(cursor_text, NAME, &scope, revision)?;
    let steps = crate::graph::walk(kb.graph(), seed, depth, fanout, usize::MAX);
    let (range, next_cursor) = cursor::page(NAME, &scope, revision, offset, limit, steps.len());
    let page = &steps[range];
    let relationships: Vec<RelatedFile> = page
        .iter()
        .map(|step| {
            let rel = kb.catalog.relation(step.relation);
            RelatedFile::new(kb, revision, rel, rel.direction, step.depth)
        })
        .collect();
    let graph_paths = graph_paths(
        kb,
        std::iter::once(seed_file.path.as_str())
            .chain(relationships.iter().map(|r| r.path.as_str())),
    );
    Ok(Output {
        active_content_revision: revision,
        seed_file: GeneratedFile::new(kb, revision, seed_file, seed_file.size),
        result_summary: ResultSummary {
            relationship_count: relationships.len() as u64,
            has_more: next_cursor.is_some(),
            depth,
            fanout: fanout as u64,
            meaning: MEANING,
        },
        relationships,
        graph_paths,
        next_cursor,
        paged: cursor_text.is_some(),
    })
}
