//! The MCP server over one knowledge base: `tools/list`, `tools/call` (the `format` argument
//! read, the call answered as every door answers it, [`crate::door`], on the blocking pool),
//! tool errors as results, the audit log.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rmcp::model::{CustomRequest, CustomResult};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::{json, Value};

use super::stdio::KNOWN_METHODS;
use super::tool_list::{shared_tool_definitions, FORMAT_ARGUMENT, INSTRUCTIONS};
use super::McpOptions;
use crate::door::{Answer, Body, Call, OutputFormat};
use crate::error::{ErrorCode, ToolError};
use crate::kb::KnowledgeBase;
use crate::serve::live::LiveKnowledgeBase;
use crate::serve::pool;
use crate::tools::ToolName;

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

    /// Answers one call of the tool named `tool` as the client gave it (an unknown name is the
    /// tool error `UNSUPPORTED_ROUTE`): the result a client sees, and the audit record.
    pub fn answer(&self, tool: &str, arguments: Option<JsonObject>) -> CallToolResult {
        self.answer_on(&self.kb.get(), tool, tool.parse(), arguments)
    }

    /// Answers one call on the snapshot `kb` ([`Call::answer`]) in the call's format; `name` is
    /// the tool as the audit record names it.
    fn answer_on(
        &self,
        kb: &KnowledgeBase,
        name: &str,
        tool: Result<ToolName, ToolError>,
        arguments: Option<JsonObject>,
    ) -> CallToolResult {
        let started = Instant::now();
        let mut input = arguments.unwrap_or_default();
        let format = take_format(&mut input, self.options.format);
        let input = Value::Object(input);
        let (answer, format, input) = match (format, tool) {
            (Err(error), _) => (Answer::refused(error), self.options.format, input),
            (Ok(format), Err(unknown)) => (Answer::refused(unknown), format, input),
            (Ok(format), Ok(tool)) => {
                let call = Call::new(tool, input);
                (call.answer(kb), format, call.input)
            }
        };
        let rendered = answer.render(format, self.options.text_budget);
        let is_error = rendered.is_error;
        let (content, structured) = match rendered.body {
            Body::Json(json) => (serde_json::to_string(&json).unwrap_or_default(), Some(json)),
            Body::Text(text) => (text, None),
        };
        let mut result = if is_error {
            CallToolResult::error(vec![ContentBlock::text(content)])
        } else {
            CallToolResult::success(vec![ContentBlock::text(content)])
        };
        if self.audit.is_some() {
            // The record holds the contract JSON whatever the call's format.
            let output = match &structured {
                Some(json) => json.clone(),
                None => answer.json().body.into_json(),
            };
            self.audit(name, &input, &output, is_error, started);
        }
        result.structured_content = structured.filter(|_| !is_error);
        result
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

/// Takes the `format` argument out of a call's arguments: absent or `null` is the server's
/// `default`, else one of [`OutputFormat`]'s spellings (trimmed).
fn take_format(input: &mut JsonObject, default: OutputFormat) -> Result<OutputFormat, ToolError> {
    match input.remove(FORMAT_ARGUMENT) {
        None | Some(Value::Null) => return Ok(default),
        Some(Value::String(s)) => OutputFormat::parse(s.trim()),
        Some(_) => None,
    }
    .ok_or_else(|| {
        ToolError::invalid_field(
            &format!("{FORMAT_ARGUMENT} must be {}.", OutputFormat::choices()),
            FORMAT_ARGUMENT,
        )
    })
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
        let result = pool::on_snapshot(self.kb.clone(), move |kb| {
            (!cancelled.is_cancelled())
                .then(|| server.answer_on(kb, tool.as_str(), Ok(tool), arguments))
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
