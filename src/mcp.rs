//! The local MCP server (stdio): the six tools over the Model Context Protocol with the official
//! Rust SDK `rmcp`. A result is compact text by default ([`crate::render`]) or, per call
//! (`format: "json"`) or per server, the exact contract JSON. Tool errors are tool results with
//! `isError: true`; an unknown tool or a malformed request is a JSON-RPC error. stdout carries
//! the protocol only. Each call answers from one snapshot of a [`LiveKnowledgeBase`], so a
//! rebuilt index is picked up between calls.
//!
//! The stdio framing is ours ([`LineTransport`]), not the SDK's: a line longer than
//! [`MAX_LINE_BYTES`] is discarded as it streams in (never held in memory); a line that is not
//! JSON is answered with a JSON-RPC parse error (id `null`), and JSON that is not a message (a
//! batch array, a wrong `jsonrpc`, an `id` of another type than string or integer, no `method`)
//! with an invalid-request error carrying the `id` when it has a valid one, as is a request that
//! reuses the id of one in flight. Each rejected line is also reported on the log (stderr), with
//! its line number. At most [`MAX_IN_FLIGHT`] requests are read ahead of their answers. End of
//! input ends the session.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rmcp::model::{CustomRequest, CustomResult, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use serde_json::{json, Map, Value};

use crate::error::{new_request_id, ErrorCode, ToolError};
use crate::kb::KnowledgeBase;
use crate::live::{Level, LiveKnowledgeBase, Log};
use crate::render;
use crate::tools::{self, ParamsDef, ToolName};

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

/// A tool's title and what its arguments are, for a client to show and a model to read.
fn title_and_arguments(tool: &str) -> (&'static str, &'static str) {
    match tool {
        "search_files" => (
            "Search files",
            "The question to search for (the user's whole question), and optional mode, filters and paging.",
        ),
        "read_file" => (
            "Read file",
            "The file to read (exactly one of fileId or path, as another tool returned it), and an optional partial read.",
        ),
        "list_tree" => (
            "List folder",
            "The folder to list (\"\" for the root) and optional paging.",
        ),
        "get_file" => ("File metadata", "The file whose metadata to return."),
        "read_related" => (
            "Related files",
            "The file already read whose related files to list, and optional paging.",
        ),
        "expand_graph" => (
            "Expand graph",
            "The file already read to start from, how far and how wide to walk, and paging.",
        ),
        _ => ("", ""),
    }
}

/// JSON Schema formats clients know (the tool structs' integer widths, `uint8` and the like,
/// are Rust's, not JSON Schema's: the bounds say the same in `minimum` and `maximum`).
const STANDARD_FORMATS: [&str; 10] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "uri",
    "uri-reference",
    "uuid",
    "regex",
    "hostname",
];

/// A schema as an MCP client shows it and a model reads it: the `$defs` it refers to inlined,
/// an optional field as its own type (`["string", "null"]` and `anyOf [X, null]` read as
/// "string" and X: a model leaves the field out rather than sending null), only standard
/// formats.
fn for_clients(schema: &Value, defs: &Map<String, Value>, depth: usize) -> Value {
    let Value::Object(object) = schema else {
        return match schema {
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|v| for_clients(v, defs, depth + 1))
                    .collect(),
            ),
            other => other.clone(),
        };
    };
    let mut out = Map::new();
    // `$ref` to a definition: the definition, with this object's own keys (its description).
    if let Some(target) = object
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        .and_then(|name| defs.get(name))
        .filter(|_| depth < 32)
    {
        if let Value::Object(inlined) = for_clients(target, defs, depth + 1) {
            out.extend(inlined);
        }
    }
    for (key, value) in object {
        match key.as_str() {
            "$ref" | "$defs" | "$schema" => {}
            "type" => {
                let types: Vec<&Value> = match value {
                    Value::Array(types) => types.iter().filter(|t| *t != "null").collect(),
                    other => vec![other],
                };
                match types.as_slice() {
                    [one] => out.insert(key.clone(), (*one).clone()),
                    _ => out.insert(key.clone(), json!(types)),
                };
            }
            "anyOf" | "oneOf" => {
                let options: Vec<Value> = value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|o| o.get("type") != Some(&json!("null")))
                    .map(|o| for_clients(o, defs, depth + 1))
                    .collect();
                if let [Value::Object(only)] = options.as_slice() {
                    for (k, v) in only {
                        out.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                } else {
                    out.insert(key.clone(), Value::Array(options));
                }
            }
            "enum" => {
                let values: Vec<Value> = value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|v| !v.is_null())
                    .cloned()
                    .collect();
                out.insert(key.clone(), Value::Array(values));
            }
            "format"
                if !value
                    .as_str()
                    .is_some_and(|f| STANDARD_FORMATS.contains(&f)) => {}
            "default" if value.is_null() => {}
            "properties" => {
                let properties: Map<String, Value> = value
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(name, v)| (name.clone(), for_clients(v, defs, depth + 1)))
                    .collect();
                out.insert(key.clone(), Value::Object(properties));
            }
            _ => {
                out.insert(key.clone(), for_clients(value, defs, depth + 1));
            }
        }
    }
    Value::Object(out)
}

/// The input schema of a tool as clients get it: its `Params`' schema made plain for clients
/// ([`for_clients`]), titled and described for a model, plus the `format` argument.
pub fn input_schema(tool: &str, params: &ParamsDef) -> JsonObject {
    let defs = params
        .schema
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut object = match for_clients(&params.schema, &defs, 0) {
        Value::Object(object) => object,
        _ => Map::new(),
    };
    let (title, arguments) = title_and_arguments(tool);
    object.insert("type".into(), json!("object"));
    object.insert("title".into(), json!(format!("{title}: arguments")));
    object.insert("description".into(), json!(arguments));
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
/// The tool list every server (every MCP-over-HTTP session) shares: built once, so that a
/// session costs a pointer to it rather than a copy of six schemas.
fn shared_tool_definitions() -> Arc<Vec<Tool>> {
    static TOOLS: std::sync::OnceLock<Arc<Vec<Tool>>> = std::sync::OnceLock::new();
    TOOLS.get_or_init(|| Arc::new(tool_definitions())).clone()
}

pub fn tool_definitions() -> Vec<Tool> {
    ToolName::ALL
        .into_iter()
        .map(|tool| {
            let annotations = ToolAnnotations::new()
                .read_only(true)
                .destructive(false)
                .idempotent(true)
                .open_world(false);
            let name = tool.as_str();
            let mut definition = Tool::new(
                name,
                description(name),
                Arc::new(input_schema(name, &tool.params())),
            );
            definition.title = Some(title_and_arguments(name).0.to_string());
            definition.annotations = Some(annotations);
            definition
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
            tools: shared_tool_definitions(),
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

    /// A request the SDK could not type: a known method whose params do not fit it (such as
    /// `tools/call` with `arguments` that are not an object) is invalid params, with the reason;
    /// anything else is an unknown method.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        let method = crate::text::truncate_chars(&request.method, 64);
        if !KNOWN_METHODS.contains(&request.method.as_str()) {
            return Err(McpError::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                format!("Unknown method `{method}`."),
                None,
            ));
        }
        let reason = match request.method.as_str() {
            "tools/call" => {
                let params = request.params.unwrap_or(Value::Null);
                match serde_json::from_value::<CallToolRequestParams>(params) {
                    Err(e) => e.to_string(),
                    Ok(_) => "they do not match its schema".to_string(),
                }
            }
            _ => "they do not match its schema".to_string(),
        };
        Err(McpError::invalid_params(
            format!(
                "Invalid params of `{method}`: {}.",
                crate::text::truncate_chars(&reason, 300)
            ),
            None,
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let tool: ToolName = match request.name.parse() {
            Ok(tool) => tool,
            Err(unknown) => return Err(McpError::invalid_params(unknown.message, None)),
        };
        let server = self.clone();
        let arguments = request.arguments;
        let cancelled = context.ct.clone();
        // A call cancelled while it waited for a thread is not run (its answer is dropped).
        let result = tokio::task::spawn_blocking(move || {
            (!cancelled.is_cancelled()).then(|| server.answer(tool.as_str(), arguments))
        })
        .await;
        match result {
            Ok(Some(answer)) => Ok(answer.into()),
            Ok(None) => Err(McpError::internal_error("The call was cancelled.", None)),
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

/// The requests this server knows (so params that do not fit one are invalid params, not an
/// unknown method).
const KNOWN_METHODS: [&str; 5] = [
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "server/discover",
];

/// Longest message line read from stdin (4 MiB; a tool input is a few KiB at most). A longer
/// line is discarded as it streams in and answered with an invalid-request error.
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// Most requests read and not yet answered (and error answers not yet written). Beyond it the
/// transport stops reading its input until answers are written, so a client that sends without
/// reading the answers blocks on its own pipe instead of growing the server's memory.
pub const MAX_IN_FLIGHT: usize = 64;

/// How long a full window waits with no answer being written before its count is presumed
/// stale (a request the SDK never answered) and reset, so the server cannot stall for good.
const STALL_RESET: std::time::Duration = std::time::Duration::from_secs(10);

/// The requests read and not yet answered, by id.
#[derive(Default)]
struct InFlight {
    state: Mutex<InFlightState>,
    freed: tokio::sync::Notify,
}

#[derive(Default)]
struct InFlightState {
    ids: std::collections::HashSet<RequestId>,
    /// Answers being written now.
    writing: usize,
}

impl InFlight {
    fn state(&self) -> std::sync::MutexGuard<'_, InFlightState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Counts request `id`; false when a request with this id is already in flight (the SDK
    /// would answer only one of them).
    fn start(&self, id: RequestId) -> bool {
        self.state().ids.insert(id)
    }

    /// An answer to `id` was written (or failed to be), or `id` was cancelled.
    fn finish(&self, id: &RequestId) {
        if self.state().ids.remove(id) {
            self.freed.notify_one();
        }
    }

    fn full(&self) -> bool {
        self.state().ids.len() >= MAX_IN_FLIGHT
    }

    fn writing(&self, delta: isize) {
        let mut state = self.state();
        state.writing = state.writing.saturating_add_signed(delta);
    }

    /// Forgets every request when nothing is being written: the count is stale.
    fn reset_if_stalled(&self) -> bool {
        let mut state = self.state();
        if state.writing > 0 {
            return false;
        }
        state.ids.clear();
        true
    }
}

/// The id of an answer the server sends.
fn answered_id(message: &TxJsonRpcMessage<RoleServer>) -> Option<RequestId> {
    match message {
        rmcp::model::JsonRpcMessage::Response(response) => Some(response.id.clone()),
        rmcp::model::JsonRpcMessage::Error(error) => error.id.clone(),
        _ => None,
    }
}

/// Rejected lines reported on the log one by one; after that, only every 1000th.
const LOGGED_REJECTIONS: u64 = 100;

/// JSON-RPC error codes of the framing.
pub(crate) const PARSE_ERROR: i64 = -32700;
pub(crate) const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

/// Newline-delimited JSON-RPC over a reader and a writer, with a bounded line length and a
/// clear answer to every line that is not a message (see the module documentation).
pub struct LineTransport<R, W> {
    read: tokio::io::BufReader<R>,
    /// The line read so far (at most [`MAX_LINE_BYTES`]).
    line: Vec<u8>,
    /// The bytes of a too-long line seen so far, while the rest of it is skipped.
    discarding: Option<usize>,
    /// Lines read, for the log.
    line_number: u64,
    rejected: u64,
    write: Arc<tokio::sync::Mutex<W>>,
    /// Error answers being written (waited for at end of input).
    replies: tokio::task::JoinSet<()>,
    in_flight: Arc<InFlight>,
    log: Log,
}

/// What one bounded line read found.
enum LineRead {
    /// A whole line (its newline included, or the last bytes before end of input) is in `line`.
    Complete,
    /// A line of this many bytes was longer than [`MAX_LINE_BYTES`]; it was skipped.
    TooLong(usize),
    Eof,
    Failed(std::io::Error),
}

/// What one message (a stdio line, an HTTP body) is.
pub(crate) enum Parsed {
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    Blank,
    /// Not answered (a notification never is), only logged.
    Ignored(String),
    /// Answered with this error.
    Rejected {
        id: Value,
        code: i64,
        message: String,
    },
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// A transport reading `read` and writing `write`; rejected lines are reported on `log`.
    pub fn new(read: R, write: W, log: Log) -> Self {
        LineTransport {
            read: tokio::io::BufReader::new(read),
            line: Vec::new(),
            discarding: None,
            line_number: 0,
            rejected: 0,
            write: Arc::new(tokio::sync::Mutex::new(write)),
            replies: tokio::task::JoinSet::new(),
            in_flight: Arc::new(InFlight::default()),
            log,
        }
    }

    /// Reads one line into `self.line` without ever holding more than [`MAX_LINE_BYTES`] of it.
    /// Cancel-safe: the only await is `fill_buf`, and the state a cancelled read leaves (a
    /// partial line, a skip in progress) is in `self`, where the next call resumes it.
    async fn read_line(&mut self) -> LineRead {
        loop {
            let available = match self.read.fill_buf().await {
                Ok(available) => available,
                Err(e) => return LineRead::Failed(e),
            };
            if available.is_empty() {
                if let Some(skipped) = self.discarding.take() {
                    return LineRead::TooLong(skipped);
                }
                if !self.line.is_empty() {
                    return LineRead::Complete;
                }
                return LineRead::Eof;
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let ended = newline.is_some();
            let outcome = match self.discarding {
                Some(skipped) => {
                    let skipped = skipped.saturating_add(take);
                    self.discarding = if ended { None } else { Some(skipped) };
                    ended.then_some(LineRead::TooLong(skipped))
                }
                None if self.line.len().saturating_add(take) > MAX_LINE_BYTES => {
                    let skipped = self.line.len().saturating_add(take);
                    self.line.clear();
                    self.line.shrink_to(64 * 1024);
                    self.discarding = if ended { None } else { Some(skipped) };
                    ended.then_some(LineRead::TooLong(skipped))
                }
                None => {
                    self.line.extend_from_slice(&available[..take]);
                    ended.then_some(LineRead::Complete)
                }
            };
            self.read.consume(take);
            if let Some(outcome) = outcome {
                return outcome;
            }
        }
    }

    /// Answers a rejected line (on a task of its own, so a cancelled `receive` cannot cut the
    /// answer in half) and reports it.
    fn reject(&mut self, id: Value, code: i64, message: String) {
        self.report(&message);
        let reply =
            json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } });
        let mut bytes = reply.to_string().into_bytes();
        bytes.push(b'\n');
        let write = self.write.clone();
        self.replies.spawn(async move {
            let mut write = write.lock().await;
            let _ = write.write_all(&bytes).await;
            let _ = write.flush().await;
        });
        // Forget the answers already written.
        while self.replies.try_join_next().is_some() {}
    }

    fn report(&mut self, message: &str) {
        self.rejected += 1;
        let n = self.rejected;
        if n <= LOGGED_REJECTIONS || n.is_multiple_of(1000) {
            let more = if n == LOGGED_REJECTIONS {
                " (further rejected lines are reported every 1000th)"
            } else {
                ""
            };
            (self.log)(
                Level::Warning,
                &format!("MCP input line {}: {message}{more}", self.line_number),
            );
        }
    }
}

/// Classifies one message: a stdio line (its newline included) or an HTTP request body.
pub(crate) fn parse_line(line: &[u8]) -> Parsed {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Parsed::Blank;
    }
    let typed_error = match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line) {
        Ok(message) => return Parsed::Message(Box::new(message)),
        Err(e) => e,
    };
    let short =
        |e: &dyn std::fmt::Display| crate::text::truncate_chars(&e.to_string(), 200).to_string();
    let value: Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(e) => {
            return Parsed::Rejected {
                id: Value::Null,
                code: PARSE_ERROR,
                message: format!("Parse error: the message is not JSON ({}).", short(&e)),
            }
        }
    };
    let invalid = |id: Value, why: String| Parsed::Rejected {
        id,
        code: INVALID_REQUEST,
        message: format!("Invalid request: {why}"),
    };
    let Value::Object(object) = &value else {
        return match value {
            Value::Array(_) => invalid(
                Value::Null,
                "batch arrays are not supported; send one message at a time (one per line on stdio).".into(),
            ),
            _ => invalid(Value::Null, "a message is a JSON object.".into()),
        };
    };
    let method = object.get("method");
    let id = object.get("id");
    if id.is_none() && method.is_some_and(Value::is_string) {
        // A notification is never answered (JSON-RPC), even a malformed one.
        let name = method.and_then(Value::as_str).unwrap_or_default();
        return Parsed::Ignored(format!(
            "notification `{}` ignored: {}.",
            crate::text::truncate_chars(name, 64),
            short(&typed_error)
        ));
    }
    let valid_id = match id {
        Some(Value::String(s)) => Value::String(s.clone()),
        Some(Value::Number(n)) if n.is_i64() => Value::Number(n.clone()),
        _ => Value::Null,
    };
    let why = if object.get("jsonrpc") != Some(&json!("2.0")) {
        "`jsonrpc` must be \"2.0\".".to_string()
    } else if valid_id.is_null() && id.is_some() {
        "`id` must be a string or an integer.".to_string()
    } else if !method.is_some_and(Value::is_string) {
        "a request needs a string `method` and an `id`.".to_string()
    } else if let Some(name) = method
        .and_then(Value::as_str)
        .filter(|m| KNOWN_METHODS.contains(m))
    {
        return Parsed::Rejected {
            id: valid_id,
            code: INVALID_PARAMS,
            message: format!("Invalid params of `{name}`: `params` must be an object."),
        };
    } else {
        format!("{}.", short(&typed_error))
    };
    invalid(valid_id, why)
}

impl<R, W> rmcp::transport::Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        let in_flight = self.in_flight.clone();
        let answered = answered_id(&item);
        async move {
            in_flight.writing(1);
            let written = async {
                let mut bytes = serde_json::to_vec(&item)?;
                bytes.push(b'\n');
                let mut write = write.lock().await;
                write.write_all(&bytes).await?;
                write.flush().await
            }
            .await;
            in_flight.writing(-1);
            if let Some(id) = answered {
                in_flight.finish(&id);
            }
            written
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            // Backpressure: wait for answers to be written before reading more.
            while self.replies.len() >= MAX_IN_FLIGHT {
                self.replies.join_next().await;
            }
            while self.in_flight.full() {
                let freed = self.in_flight.freed.notified();
                if tokio::time::timeout(STALL_RESET, freed).await.is_err()
                    && self.in_flight.reset_if_stalled()
                {
                    (self.log)(
                        Level::Warning,
                        "MCP: requests without an answer for a while; no longer counted",
                    );
                }
            }
            let read = self.read_line().await;
            self.line_number += 1;
            match read {
                LineRead::Complete => {}
                LineRead::TooLong(bytes) => {
                    let message = format!(
                        "Invalid request: the message is {bytes} bytes long, more than the {MAX_LINE_BYTES} accepted; it was discarded."
                    );
                    self.reject(Value::Null, INVALID_REQUEST, message);
                    continue;
                }
                LineRead::Eof => {
                    // Let the error answers already queued reach the client.
                    while self.replies.join_next().await.is_some() {}
                    return None;
                }
                LineRead::Failed(e) => {
                    (self.log)(Level::Warning, &format!("cannot read the MCP input: {e}"));
                    return None;
                }
            }
            let parsed = parse_line(&self.line);
            self.line.clear();
            if self.line.capacity() > 64 * 1024 {
                self.line.shrink_to(64 * 1024);
            }
            match parsed {
                Parsed::Message(message) => {
                    match message.as_ref() {
                        // Counts the request; a reused id is answered here instead.
                        rmcp::model::JsonRpcMessage::Request(request)
                            if !self.in_flight.start(request.id.clone()) =>
                        {
                            let id = serde_json::to_value(&request.id).unwrap_or_default();
                            let message = format!(
                                "Invalid request: id {} is already used by a request in flight.",
                                crate::text::truncate_chars(&id.to_string(), 64)
                            );
                            self.reject(id, INVALID_REQUEST, message);
                            continue;
                        }
                        rmcp::model::JsonRpcMessage::Notification(notification) => {
                            if let rmcp::model::ClientNotification::CancelledNotification(
                                cancelled,
                            ) = &notification.notification
                            {
                                if let Some(id) = &cancelled.params.request_id {
                                    self.in_flight.finish(id);
                                }
                            }
                        }
                        _ => {}
                    }
                    return Some(*message);
                }
                Parsed::Blank => {}
                Parsed::Ignored(why) => self.report(&why),
                Parsed::Rejected { id, code, message } => self.reject(id, code, message),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let mut write = self.write.lock().await;
        write.flush().await
    }
}

/// Serves `kb` over stdio until the client closes the connection (end of input); rejected
/// input lines are reported on `log`.
pub fn serve_stdio(
    kb: Arc<LiveKnowledgeBase>,
    options: McpOptions,
    log: Log,
) -> Result<(), McpServeError> {
    let server = KbServer::live(kb, options).map_err(McpServeError::AuditLog)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(McpServeError::Runtime)?;
    let result = runtime.block_on(async move {
        let transport = LineTransport::new(tokio::io::stdin(), tokio::io::stdout(), log);
        let running = match server.serve(transport).await {
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
    });
    // Do not wait for a blocking stdin read that may still be pending.
    runtime.shutdown_background();
    result
}
