//! The MCP server over one knowledge base: `tools/list`, `tools/call` on one snapshot, text or
//! JSON results, tool errors as results, the audit log.

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
use super::{Format, McpOptions};
use crate::error::{new_request_id, ErrorCode, ToolError};
use crate::kb::KnowledgeBase;
use crate::render;
use crate::serve::live::LiveKnowledgeBase;
use crate::tools::{self, ToolName};

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
        // The answer beside its contract JSON (the structured content, the audit record).
        let result = result.and_then(|answer| answer.to_json().map(|json| (answer, json)));
        let (output, is_error) = match &result {
            Ok((_, json)) => (json.clone(), false),
            Err(error) => (error.envelope(&new_request_id()), true),
        };
        let content = match (format, &result) {
            (Format::Json, _) => serde_json::to_string(&output).unwrap_or_default(),
            (Format::Text, Ok((answer, _))) => {
                render::render_output(answer, self.options.text_budget)
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
