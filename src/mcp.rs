//! The local MCP server (stdio): the six tools over the Model Context Protocol with the official
//! Rust SDK `rmcp`. A result is compact text by default ([`crate::render`]) or, per call
//! (`format: "json"`) or per server, the exact contract JSON. Tool errors are tool results with
//! `isError: true`; an unknown tool or a malformed request is a JSON-RPC error. stdout carries
//! the protocol only. Each call answers from one snapshot of a [`LiveKnowledgeBase`], so a
//! rebuilt index is picked up between calls.

use std::borrow::Cow;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use serde_json::{json, Map, Value};

use crate::error::{new_request_id, ErrorCode, ToolError};
use crate::index::KnowledgeBase;
use crate::live::LiveKnowledgeBase;
use crate::render;
use crate::tools::{self, TOOL_NAMES};

/// What a tool result is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Compact text for models (`docs/text-format.md`).
    #[default]
    Text,
    /// The exact contract JSON (also as `structuredContent`).
    Json,
}

impl Format {
    /// Parses `text` or `json`.
    pub fn parse(value: &str) -> Option<Format> {
        match value {
            "text" => Some(Format::Text),
            "json" => Some(Format::Json),
            _ => None,
        }
    }
}

/// How the server answers.
#[derive(Debug, Clone)]
pub struct McpOptions {
    /// The format of a call that does not name one.
    pub format: Format,
    /// The character budget of a text result.
    pub text_budget: usize,
    /// Appends one JSON line per call: tool, input, the contract JSON output, duration.
    pub audit_log: Option<PathBuf>,
}

impl Default for McpOptions {
    fn default() -> Self {
        McpOptions {
            format: Format::Text,
            text_budget: render::DEFAULT_TEXT_BUDGET,
            audit_log: None,
        }
    }
}

/// The argument every tool takes on top of its contract input.
const FORMAT_ARGUMENT: &str = "format";

/// What the server tells a model about the whole tool set (sent with `initialize`).
const INSTRUCTIONS: &str = "Read-only tools over one local knowledge base. Answer only from file \
content you have read. Loop: search_files with the user's complete question -> read_file the most \
useful candidates (search results are candidates, not evidence) -> if a gap remains, read_related \
or expand_graph from a file already read, or one follow-up search derived from that gap. Use \
list_tree when search finds nothing useful. Reuse fileId, path, graphRef and cursor values \
exactly as returned; never invent or assemble one. Cite the titles or paths of the files that \
support the answer, and say so when the files do not cover the question. Every tool takes \
`format`: \"text\" (compact, default) or \"json\" (the full contract JSON).";

/// A tool's description for a model: when to use it and what to do with what it returns.
fn description(tool: &str) -> &'static str {
    match tool {
        "search_files" => {
            "Find candidate files for a question. Pass the user's complete, standalone question \
             (2-512 characters, English or Chinese), not keywords. Returns ranked candidates with \
             path, title, fileId, score and a short excerpt: they are leads, not evidence; read \
             the useful ones with read_file before answering. Options: mode file|graph|hybrid \
             (default hybrid adds relationship lanes), scope all|path|metadata, limit 1-50, cursor \
             (nextCursor of the previous page, same query and options), okf filters. Run at most \
             two follow-up searches, each derived from a concrete gap in files already read."
        }
        "read_file" => {
            "Read one file: give exactly one of fileId or path, as returned by another tool (a \
             graphRef is a path too). type=read (default) returns the full content, the evidence to \
             answer from. For a long file, type=search with a query returns only the matching \
             line snippets with line numbers, and type=extract with segments [{label, start, end}] \
             returns those line ranges. Do not read the same file twice."
        }
        "list_tree" => {
            "Browse the knowledge base's folders and files (parentPath \"\" for the root, e.g. \
             \"pages\"). Use it when search finds nothing useful or to discover what exists; start \
             with the root index.md. Paged: pass nextCursor with the same parentPath and limit."
        }
        "get_file" => {
            "Inspect one file's metadata (title, path, kind, size, dates, tags, OKF fields, \
             graphRef) without its content. Use it only when metadata matters; read_file is what \
             gives evidence."
        }
        "read_related" => {
            "List the files related to a file already read (by fileId or path): relation type, \
             reason, score and the related file's id and path. Use it when the file read leaves a \
             gap that a related file may fill; then read_file the useful ones. Paged with cursor."
        }
        "expand_graph" => {
            "Explore relationships outward from a file already read, bounded by depth (1-2) and \
             fanout: returns nodes and edges with relation types and reasons. Optional: use it when \
             read_related is not enough. Summaries are leads, not evidence; read the files."
        }
        _ => "",
    }
}

/// The input schema of `tool`: generated from the same typed parameters the library uses, plus
/// the `format` argument.
fn input_schema(tool: &str) -> JsonObject {
    let schema = match tool {
        "search_files" => schemars::schema_for!(tools::search_files::Params),
        "read_file" => schemars::schema_for!(tools::read_file::Params),
        "list_tree" => schemars::schema_for!(tools::list_tree::Params),
        "get_file" => schemars::schema_for!(tools::get_file::Params),
        "read_related" => schemars::schema_for!(tools::read_related::Params),
        "expand_graph" => schemars::schema_for!(tools::expand_graph::Params),
        _ => schemars::schema_for!(()),
    };
    let mut object = match serde_json::to_value(schema) {
        Ok(Value::Object(object)) => object,
        _ => Map::new(),
    };
    object.remove("$schema");
    object.insert("type".into(), json!("object"));
    let properties = object
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(properties) = properties {
        properties.insert(
            FORMAT_ARGUMENT.into(),
            json!({
                "type": "string",
                "enum": ["text", "json"],
                "description": "text (default): compact text for reading; json: the full contract JSON."
            }),
        );
    }
    object
}

/// The six tools as MCP tool definitions.
pub fn tool_definitions() -> Vec<Tool> {
    TOOL_NAMES
        .iter()
        .map(|&name| {
            let annotations = ToolAnnotations::new()
                .read_only(true)
                .destructive(false)
                .idempotent(true)
                .open_world(false);
            let mut tool = Tool::new(name, description(name), Arc::new(input_schema(name)));
            tool.annotations = Some(annotations);
            tool
        })
        .collect()
}

/// The MCP server over one knowledge base.
#[derive(Clone)]
pub struct KbServer {
    kb: Arc<LiveKnowledgeBase>,
    options: Arc<McpOptions>,
    audit: Option<Arc<Mutex<File>>>,
    tools: Arc<Vec<Tool>>,
}

impl KbServer {
    /// A server over `kb` as it is; opens the audit log (append) when one is configured.
    pub fn new(kb: KnowledgeBase, options: McpOptions) -> std::io::Result<Self> {
        Self::live(Arc::new(LiveKnowledgeBase::fixed(kb)), options)
    }

    /// A server over a live knowledge base: each call answers from the generation live when it
    /// starts.
    pub fn live(kb: Arc<LiveKnowledgeBase>, options: McpOptions) -> std::io::Result<Self> {
        let audit = match &options.audit_log {
            Some(path) => Some(Arc::new(Mutex::new(
                OpenOptions::new().create(true).append(true).open(path)?,
            ))),
            None => None,
        };
        Ok(KbServer {
            kb,
            options: Arc::new(options),
            audit,
            tools: Arc::new(tool_definitions()),
        })
    }

    /// A snapshot of the knowledge base the server answers from now.
    pub fn knowledge_base(&self) -> Arc<KnowledgeBase> {
        self.kb.get()
    }

    /// Answers one tool call: the result a client sees, and the audit record.
    pub fn answer(&self, tool: &str, arguments: Option<JsonObject>) -> CallToolResult {
        let started = Instant::now();
        let mut input = arguments.unwrap_or_default();
        let format = match input.remove(FORMAT_ARGUMENT) {
            None | Some(Value::Null) => Ok(self.options.format),
            Some(Value::String(s)) => Format::parse(s.trim()).ok_or(()),
            Some(_) => Err(()),
        };
        let input = Value::Object(input);
        let (result, format) = match format {
            Ok(format) => (tools::call(&self.kb.get(), tool, &input), format),
            Err(()) => (
                Err(ToolError::invalid_field(
                    "format must be \"text\" or \"json\".",
                    FORMAT_ARGUMENT,
                )),
                self.options.format,
            ),
        };
        let (output, is_error) = match &result {
            Ok(output) => (output.clone(), false),
            Err(error) => (error.envelope(&new_request_id()), true),
        };
        let content = match (format, &result) {
            (Format::Json, _) => serde_json::to_string(&output).unwrap_or_default(),
            (Format::Text, Ok(output)) => {
                render::render_output(tool, &input, output, self.options.text_budget)
            }
            (Format::Text, Err(error)) => render::render_error(error),
        };
        let mut answer = if is_error {
            CallToolResult::error(vec![ContentBlock::text(content)])
        } else {
            CallToolResult::success(vec![ContentBlock::text(content)])
        };
        if format == Format::Json && !is_error {
            answer.structured_content = Some(output.clone());
        }
        self.audit(tool, &input, &output, is_error, started);
        answer
    }

    /// Appends the audit record of one call (a write failure must not fail the call).
    fn audit(&self, tool: &str, input: &Value, output: &Value, is_error: bool, started: Instant) {
        let Some(audit) = &self.audit else { return };
        let record = json!({
            "time": time::OffsetDateTime::now_utc()
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
            "tool": tool,
            "input": input,
            "isError": is_error,
            "output": output,
            "durationMs": started.elapsed().as_secs_f64() * 1000.0,
        });
        if let Ok(mut file) = audit.lock() {
            let mut line = record.to_string();
            line.push('\n');
            let _ = file.write_all(line.as_bytes()).and_then(|_| file.flush());
        }
    }
}

impl ServerHandler for KbServer {
    fn get_info(&self) -> ServerConfig {
        let mut config = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        config.server_info = Implementation::new("kbtools", env!("CARGO_PKG_VERSION"));
        config.instructions = Some(INSTRUCTIONS.to_string());
        config
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name: Cow<'static, str> = request.name;
        if !TOOL_NAMES.contains(&name.as_ref()) {
            return Err(McpError::invalid_params(
                format!(
                    "Unknown tool `{}`. Tools: {}.",
                    crate::text::truncate_chars(&name, 64),
                    TOOL_NAMES.join(", ")
                ),
                None,
            ));
        }
        let server = self.clone();
        let arguments = request.arguments;
        let result = tokio::task::spawn_blocking(move || server.answer(&name, arguments)).await;
        match result {
            Ok(answer) => Ok(answer.into()),
            Err(e) => Err(McpError::internal_error(
                format!("{}: {e}", ErrorCode::InternalError.as_str()),
                None,
            )),
        }
    }
}

/// Why the server stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum McpServeError {
    #[error("cannot open the audit log: {0}")]
    AuditLog(std::io::Error),
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    #[error("MCP transport: {0}")]
    Transport(String),
}

/// Serves `kb` over stdio until the client closes the connection.
pub fn serve_stdio(kb: Arc<LiveKnowledgeBase>, options: McpOptions) -> Result<(), McpServeError> {
    let server = KbServer::live(kb, options).map_err(McpServeError::AuditLog)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(McpServeError::Runtime)?;
    runtime.block_on(async move {
        let running = match server.serve(rmcp::transport::stdio()).await {
            Ok(running) => running,
            // A client that closes before (or instead of) the `initialize` handshake, such as a
            // handshake-less client that only asked `server/discover`, ends the session normally.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(e) => return Err(McpServeError::Transport(e.to_string())),
        };
        running
            .waiting()
            .await
            .map_err(|e| McpServeError::Transport(e.to_string()))?;
        Ok(())
    })
}
