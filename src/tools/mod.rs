//! The six tools. Each module holds its tool's input rules and output types, once; every front
//! door (CLI, MCP, HTTP) reaches [`run`] through the doors' one recipe (`door.rs`), which
//! writes the typed [`Output`] as JSON ([`Output::to_json`]) or text (`render/`).
//! This module holds what the tools share: input parsing in the API's validation style, the
//! `GeneratedFile` and `RelatedFile` shapes, and content reads.

pub mod expand_graph;
pub mod fields;
pub mod get_file;
pub mod hints;
mod input;
pub mod list_tree;
pub mod read_file;
pub mod read_related;
pub mod search_files;
mod texts;
mod warm_up;

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{ErrorCode, ToolError};
use crate::ids::ReadActions;
use crate::index::catalog::{CatalogFile, CatalogRelation};
use crate::ingest::bundle::paths::ContractFileKind;
use crate::ingest::bundle::BundleKind;
use crate::kb::KnowledgeBase;
use crate::okf::OkfSignals;
use crate::relation::Direction;
pub use fields::ParamsDef;
pub use input::{page_limit, Input, Malformed, Reader, WrongType};
pub use warm_up::{warm_up, WarmUp};

/// A tool, by its MCP name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ToolName {
    SearchFiles,
    ReadFile,
    ListTree,
    GetFile,
    ReadRelated,
    ExpandGraph,
}

impl ToolName {
    /// Every tool, in the order the design lists them.
    pub const ALL: [ToolName; 6] = [
        ToolName::SearchFiles,
        ToolName::ReadFile,
        ToolName::ListTree,
        ToolName::GetFile,
        ToolName::ReadRelated,
        ToolName::ExpandGraph,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            ToolName::SearchFiles => "search_files",
            ToolName::ReadFile => "read_file",
            ToolName::ListTree => "list_tree",
            ToolName::GetFile => "get_file",
            ToolName::ReadRelated => "read_related",
            ToolName::ExpandGraph => "expand_graph",
        }
    }

    /// The tool's input as every door sees it, from its `Params`: the fields (what its parser
    /// accepts, what the MCP schema lists, what the HTTP routes and the CLI offer, less what a
    /// route or command takes elsewhere, such as a path segment or a positional argument) and
    /// the JSON Schema (what the MCP server shows and the HTTP document and CLI help describe).
    pub fn params(self) -> ParamsDef {
        match self {
            ToolName::SearchFiles => ParamsDef::of::<search_files::Params>(),
            ToolName::ReadFile => ParamsDef::of::<read_file::Params>(),
            ToolName::ListTree => ParamsDef::of::<list_tree::Params>(),
            ToolName::GetFile => ParamsDef::of::<get_file::Params>(),
            ToolName::ReadRelated => ParamsDef::of::<read_related::Params>(),
            ToolName::ExpandGraph => ParamsDef::of::<expand_graph::Params>(),
        }
    }

    /// The tool's input fields, in its `Params`' order (read without building the schema).
    pub fn fields(self) -> &'static [&'static str] {
        match self {
            ToolName::SearchFiles => fields::field_names::<search_files::Params>(),
            ToolName::ReadFile => fields::field_names::<read_file::Params>(),
            ToolName::ListTree => fields::field_names::<list_tree::Params>(),
            ToolName::GetFile => fields::field_names::<get_file::Params>(),
            ToolName::ReadRelated => fields::field_names::<read_related::Params>(),
            ToolName::ExpandGraph => fields::field_names::<expand_graph::Params>(),
        }
    }

    /// The error for a name that is no tool.
    pub fn unknown(name: &str) -> ToolError {
        let names: Vec<&str> = ToolName::ALL.iter().map(|t| t.as_str()).collect();
        ToolError::new(
            ErrorCode::UnsupportedRoute,
            format!(
                "Unknown tool `{}`. Tools: {}.",
                crate::text::truncate_chars(name, 64),
                names.join(", ")
            ),
        )
    }
}

impl std::str::FromStr for ToolName {
    type Err = ToolError;

    fn from_str(name: &str) -> Result<Self, ToolError> {
        ToolName::ALL
            .into_iter()
            .find(|t| t.as_str() == name)
            .ok_or_else(|| ToolName::unknown(name))
    }
}

impl std::fmt::Display for ToolName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a tool answered, typed. A door turns it into the contract JSON ([`Output::to_json`])
/// or the compact text ([`crate::render::render_output`]); nothing between reads it as JSON.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Output {
    SearchFiles(search_files::Output),
    ReadFile(read_file::Output),
    ListTree(list_tree::Output),
    GetFile(get_file::Output),
    ReadRelated(read_related::Output),
    ExpandGraph(expand_graph::Output),
}

impl Output {
    /// The tool that answered.
    pub fn tool(&self) -> ToolName {
        match self {
            Output::SearchFiles(_) => ToolName::SearchFiles,
            Output::ReadFile(_) => ToolName::ReadFile,
            Output::ListTree(_) => ToolName::ListTree,
            Output::GetFile(_) => ToolName::GetFile,
            Output::ReadRelated(_) => ToolName::ReadRelated,
            Output::ExpandGraph(_) => ToolName::ExpandGraph,
        }
    }

    /// The contract JSON of the answer (`INTERNAL_ERROR` if it cannot be made, which no
    /// output of the six tools gives: every map in them has string keys).
    pub fn to_json(&self) -> Result<Value, ToolError> {
        serde_json::to_value(self)
            .map_err(|e| ToolError::new(ErrorCode::InternalError, e.to_string()))
    }
}

/// Runs the tool named `name` with its JSON input (an unknown name is `UNSUPPORTED_ROUTE`).
pub fn call(kb: &KnowledgeBase, name: &str, input: &Value) -> Result<Output, ToolError> {
    run(kb, name.parse()?, input)
}

/// Runs `tool` with its JSON input. A plain folder's path may be given as the user sees it
/// (`user_paths`); an error carries what to do next in its `details.hint` ([`hints`]), the
/// same at every door.
pub fn run(kb: &KnowledgeBase, tool: ToolName, input: &Value) -> Result<Output, ToolError> {
    let input = user_paths(kb, tool, input);
    run_unhinted(kb, tool, &input).map_err(|mut error| {
        if let Some(hint) = hints::error_hint(kb, tool, &input, &error) {
            error
                .details
                .get_or_insert_with(Map::new)
                .insert("hint".into(), Value::String(hint));
        }
        error
    })
}

/// In a plain folder the pages are the user's own files, which the contract names under
/// `pages/`: a path given as the user sees it (`README.md`, `doc/x.md`, the folder `doc`) means
/// the same file or folder as `pages/README.md`. Rewrites each path field of `input` that names
/// nothing as given but something with `pages/` before it; the outputs keep `pages/…`.
fn user_paths<'a>(kb: &KnowledgeBase, tool: ToolName, input: &'a Value) -> Cow<'a, Value> {
    if kb.catalog.kind() != BundleKind::PlainFolder {
        return Cow::Borrowed(input);
    }
    let fields: &[&str] = match tool {
        ToolName::SearchFiles => &[],
        ToolName::ListTree => &[list_tree::Params::WIRE.parent_path],
        ToolName::ReadFile => &[
            read_file::Params::WIRE.path,
            read_file::Params::WIRE.file_id,
        ],
        ToolName::GetFile => &[get_file::Params::WIRE.file_id],
        ToolName::ReadRelated => &[read_related::Params::WIRE.file_id],
        ToolName::ExpandGraph => &[expand_graph::Params::WIRE.file_id],
    };
    let mut rewritten: Option<Value> = None;
    for field in fields {
        let Some(given) = input.get(*field).and_then(Value::as_str) else {
            continue;
        };
        if let Some(path) = in_pages(kb, tool == ToolName::ListTree, given) {
            rewritten.get_or_insert_with(|| input.clone())[*field] = Value::String(path);
        }
    }
    rewritten.map_or(Cow::Borrowed(input), Cow::Owned)
}

/// `pages/<given>` when `given` names no file (or, for a `folder`, no folder) but that does.
fn in_pages(kb: &KnowledgeBase, folder: bool, given: &str) -> Option<String> {
    let bare = given.trim_start_matches("./").trim_matches('/');
    if bare.is_empty() || given == "root" {
        return None;
    }
    let candidate = format!("pages/{bare}");
    let found = if folder {
        kb.catalog.directory(given).is_none() && kb.catalog.directory(&candidate).is_some()
    } else {
        // `by_path` finds the exact path too.
        kb.catalog.by_id(given).is_none()
            && kb.catalog.by_path(given).is_none()
            && kb.catalog.by_path(&candidate).is_some()
    };
    found.then_some(candidate)
}

/// [`run`] without the plain-folder paths and the hints.
pub fn run_unhinted(
    kb: &KnowledgeBase,
    tool: ToolName,
    input: &Value,
) -> Result<Output, ToolError> {
    // A panic below (a bug, or tantivy reading an index file damaged in a way its checksums
    // miss) answers this call with `INTERNAL_ERROR`; the process and the other calls go on.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| dispatch(kb, tool, input)))
        .unwrap_or_else(|_| {
            Err(ToolError::new(
                ErrorCode::InternalError,
                format!("`{tool}` failed unexpectedly; the error was logged."),
            ))
        })
}

fn dispatch(kb: &KnowledgeBase, tool: ToolName, input: &Value) -> Result<Output, ToolError> {
    Ok(match tool {
        ToolName::ListTree => Output::ListTree(list_tree::run(kb, input)?),
        ToolName::GetFile => Output::GetFile(get_file::run(kb, input)?),
        ToolName::ReadFile => Output::ReadFile(read_file::run(kb, input)?),
        ToolName::ReadRelated => Output::ReadRelated(read_related::run(kb, input)?),
        ToolName::ExpandGraph => Output::ExpandGraph(expand_graph::run(kb, input)?),
        ToolName::SearchFiles => Output::SearchFiles(search_files::run(kb, input)?),
    })
}

/// `GeneratedFile` of the contract (`getFileById`, `read_file.file`, `seedFile`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GeneratedFile {
    pub active_content_revision: u64,
    pub file_id: String,
    pub knowledge_base_id: String,
    pub source_file_id: Option<String>,
    pub path: String,
    pub file_kind: ContractFileKind,
    pub content_type: String,
    pub size_bytes: u64,
    pub okf_type: Option<String>,
    pub title: Option<String>,
    pub description: Option<String>,
    pub tags: Vec<String>,
    pub frontmatter: Map<String, Value>,
    pub okf_signals: OkfSignals,
    pub deletable: bool,
    pub content_available: bool,
    pub read_actions: ReadActions,
}

/// `tags`: the string items of `frontmatter.tags` when it is an array.
pub(crate) fn tags_of(frontmatter: &Map<String, Value>) -> Vec<String> {
    match frontmatter.get("tags") {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

fn str_field(frontmatter: &Map<String, Value>, key: &str) -> Option<String> {
    frontmatter
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
}

pub fn read_actions(kb: &KnowledgeBase, file: &CatalogFile) -> ReadActions {
    ReadActions::for_file(kb.kb_id(), &file.file_id, &file.path, file.source_backed)
}

impl GeneratedFile {
    pub fn new(kb: &KnowledgeBase, revision: u64, file: &CatalogFile, size_bytes: u64) -> Self {
        GeneratedFile {
            active_content_revision: revision,
            file_id: file.file_id.clone(),
            knowledge_base_id: kb.kb_id().to_string(),
            source_file_id: file.source_file_id().map(str::to_string),
            path: file.path.clone(),
            file_kind: file.detail_file_kind(),
            content_type: file.content_type().to_string(),
            size_bytes,
            okf_type: str_field(&file.frontmatter, "type"),
            title: file.title.clone(),
            description: str_field(&file.frontmatter, "description"),
            tags: tags_of(&file.frontmatter),
            frontmatter: file.frontmatter.map().clone(),
            okf_signals: OkfSignals::compute(&file.frontmatter, kb.options.today),
            deletable: file.source_backed,
            content_available: true,
            read_actions: read_actions(kb, file),
        }
    }
}

/// `RelatedFile` of the contract (`read_related` items, `expand_graph` relationships, search
/// `graphContext.relationships`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RelatedFile {
    pub active_content_revision: u64,
    pub file_id: String,
    pub source_file_id: String,
    pub path: String,
    pub title: String,
    pub relation_type: String,
    pub direction: Direction,
    pub from_file_id: String,
    pub relationship_depth: u8,
    pub reason: Option<String>,
    pub content_available: bool,
    pub read_actions: ReadActions,
}

impl RelatedFile {
    pub fn new(
        kb: &KnowledgeBase,
        revision: u64,
        relation: &CatalogRelation,
        direction: Direction,
        depth: u8,
    ) -> Self {
        let from = kb.catalog.file(relation.from);
        let target = kb.catalog.file(relation.to);
        RelatedFile {
            active_content_revision: revision,
            file_id: target.file_id.clone(),
            source_file_id: target.file_id.clone(),
            path: target.path.clone(),
            title: target.title.clone().unwrap_or_else(|| "Untitled".into()),
            relation_type: relation.relation_type.clone(),
            direction,
            from_file_id: from.file_id.clone(),
            relationship_depth: depth,
            reason: relation.reason.clone(),
            content_available: true,
            read_actions: read_actions(kb, target),
        }
    }
}

/// The revision for tools that answer 404 when the knowledge base has no readable content.
pub(crate) fn require_revision(kb: &KnowledgeBase) -> Result<u64, ToolError> {
    kb.revision().ok_or_else(ToolError::not_found)
}
