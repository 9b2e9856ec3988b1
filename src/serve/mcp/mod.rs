//! The local MCP server (stdio): the six tools over the Model Context Protocol with the official
//! Rust SDK `rmcp`. A result is compact text by default ([`crate::render`]) or, per call
//! (`format: "json"`) or per server, the exact contract JSON ([`OutputFormat`]). Tool errors are tool results with
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

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::ServiceExt;

use crate::door::OutputFormat;
use crate::render;
use crate::serve::live::{LiveKnowledgeBase, Log};

mod server;
mod stdio;
mod tool_list;

pub use server::KbServer;
pub(crate) use stdio::{parse_line, Parsed, INVALID_REQUEST, PARSE_ERROR};
pub use stdio::{LineTransport, MAX_IN_FLIGHT, MAX_LINE_BYTES};
pub use tool_list::{input_schema, tool_definitions};

/// How the server answers.
#[derive(Debug, Clone)]
pub struct McpOptions {
    /// The format of a call that does not name one.
    pub format: OutputFormat,
    /// The character budget of a text result.
    pub text_budget: usize,
    /// Appends one JSON line per call: tool, input, the contract JSON output, duration.
    pub audit_log: Option<PathBuf>,
}

impl Default for McpOptions {
    fn default() -> Self {
        McpOptions {
            format: OutputFormat::default(),
            text_budget: render::DEFAULT_TEXT_BUDGET,
            audit_log: None,
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
