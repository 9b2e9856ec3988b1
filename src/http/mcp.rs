//! MCP over Streamable HTTP (the transport of the current MCP revision) on the HTTP server:
//! `/mcp/{knowledgeBaseId}` for each knowledge base served, and `/mcp` when there is one. The
//! same tools as `kbtools mcp` on stdio, behind the same front door as the OpenAPI routes
//! (bearer token, head and connection limits, request id), through rmcp's service: sessions
//! (`Mcp-Session-Id`, `DELETE` ends one) as the specification says, `Host` and `Origin` checked
//! against DNS rebinding.

use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::live::LiveKnowledgeBase;
use crate::mcp::{KbServer, McpOptions};

/// Largest MCP message body accepted (a tool call's arguments are a few hundred bytes; the
/// OpenAPI routes, all GETs, take 16 KiB).
pub const MAX_MCP_BODY_BYTES: usize = 1024 * 1024;

/// Browser origins allowed to call: the local machine's only. A page elsewhere that makes a
/// browser send a request here (DNS rebinding) carries its own origin and is refused.
const LOCAL_ORIGINS: [&str; 3] = ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"];

pub type McpService = StreamableHttpService<KbServer, LocalSessionManager>;

/// The MCP service of one knowledge base. `loopback`: the server listens on loopback only, so
/// a request must name a loopback host (`Host`); a server bound beyond loopback takes any host
/// name (its clients name it as they reach it; `--token` guards it). `stop` ends every session
/// when the server stops.
pub fn service(kb: Arc<LiveKnowledgeBase>, loopback: bool, stop: CancellationToken) -> McpService {
    let config = StreamableHttpServerConfig::default()
        .with_allowed_origins(LOCAL_ORIGINS)
        .enforce_origin_validation()
        .with_max_request_body_bytes(MAX_MCP_BODY_BYTES)
        .with_cancellation_token(stop);
    let config = if loopback {
        config.with_allowed_hosts(["localhost", "127.0.0.1", "::1", "[::1]"])
    } else {
        config.disable_allowed_hosts()
    };
    StreamableHttpService::new(
        move || KbServer::live(kb.clone(), McpOptions::default()),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}
