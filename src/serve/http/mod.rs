//! The local HTTP server: the online Developer OpenAPI's read routes of the six tools (and the
//! short backend-adapter routes) over one or more knowledge bases, read-only, with the contract's
//! error envelope and status codes. axum on tokio, confined to this module; every route is a
//! thin mapping onto a tool call answered as at every door ([`crate::door`]), off the async
//! threads.
//!
//! Safe by default: the caller picks the address (the CLI defaults to loopback); an optional
//! bearer token answers 401 `UNAUTHORIZED` before anything else, as online; request bodies are
//! refused beyond a few KiB (every route is a `GET`); a request that runs too long is cut off; the
//! server stops gracefully when the shutdown future resolves.
//!
//! Hostile clients are bounded by hyper's HTTP/1 connection settings, configured in
//! [`serve_live`]'s own accept loop (`axum::serve` exposes none of them): a request head must
//! arrive within [`HttpOptions::header_read_timeout`] (a slow or idle client, including an idle
//! keep-alive connection, is disconnected), the head is at most [`HttpOptions::max_head_bytes`]
//! (431; a URI over 64 KiB is 414) with at most [`HttpOptions::max_headers`] fields (431), and at
//! most [`HttpOptions::max_connections`] connections are served at once (more wait in the
//! listen backlog), of which one client address holds at most
//! [`HttpOptions::max_connections_per_client`] (one more is answered 503 at once and closed); a
//! write that stays blocked for [`HttpOptions::write_timeout`] (a client that stops reading)
//! closes the connection, and the bodies of responses not yet sent hold at most
//! [`HttpOptions::max_unsent_bytes`] (a response beyond it is 503). A garbage request is 400 and
//! closes that connection only.
//!
//! Each knowledge base is a [`LiveKnowledgeBase`]: a request takes one snapshot when it starts
//! and answers from it, so a rebuilt index is picked up between requests and a response is never
//! a mix of two revisions.
mod accept;
mod clients;
mod front_door;
pub mod hosts;
pub mod mcp;
mod responses;
mod routes;
pub mod spec;
mod unsent;
pub mod web;

pub use accept::{serve, serve_live, shutdown_signal};

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::{self};
use axum::routing::get;
use axum::Router;
use serde_json::Value;

use crate::kb::KnowledgeBase;
use crate::serve::live::LiveKnowledgeBase;

use front_door::{digest, front_door};
use routes::{health, kb_route, list_kbs, now_rfc3339, openapi, short_route, unsupported};
/// How the server behaves.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// When set, every request needs `Authorization: Bearer <token>`.
    pub token: Option<String>,
    /// Longest time one request may take before the server answers 503.
    pub request_timeout: Duration,
    /// Largest request body accepted (every route is a GET).
    pub max_body_bytes: usize,
    /// Longest time a client may take to send a request head (and longest idle time of a
    /// keep-alive connection between requests); the connection is closed after it.
    pub header_read_timeout: Duration,
    /// Largest request head (request line and headers) in bytes: 431 beyond it.
    pub max_head_bytes: usize,
    /// Most header fields in one request: 431 beyond it.
    pub max_headers: usize,
    /// Most connections served at once; further connections wait to be accepted.
    pub max_connections: usize,
    /// Most connections one client address (an IPv6 /64) may have open at once; one beyond it
    /// is answered 503 with `Retry-After` at once and closed. `None`: a quarter of
    /// `max_connections`; `Some(0)`: no cap.
    pub max_connections_per_client: Option<usize>,
    /// Longest time a client may take to send a request body once its head has arrived (the
    /// MCP routes read one; the connection is closed after it, with a 408).
    pub body_timeout: Duration,
    /// Most tool calls answered at once in the process (the others wait their turn): each holds
    /// its answer while it makes it. `None`: the number of CPUs. Set by the first server of a
    /// process.
    pub max_concurrent_calls: Option<usize>,
    /// Most bytes of response bodies held for clients that have not read them yet, over all
    /// connections (bodies over 64 KiB count); a response that does not fit is 503 with
    /// `Retry-After`.
    pub max_unsent_bytes: usize,
    /// Longest time a write to a client may stay blocked (a client that stops reading its
    /// response); the connection is closed after it.
    pub write_timeout: Duration,
    /// The server listens on loopback only: requests must name a loopback `Host` (or one of
    /// `allowed_hosts`); set by [`serve_live`] from the address it listens on.
    pub loopback: bool,
    /// `--allowed-host`: names (`name` or `name:port`) a request's `Host` may give besides
    /// loopback ones ([`hosts`]).
    pub allowed_hosts: Vec<String>,
    /// Most live MCP sessions over the server's knowledge bases; at the cap, an `initialize`
    /// ends the least recently used idle session first.
    pub max_mcp_sessions: usize,
    /// Most live MCP sessions of one client address; at it, an `initialize` of that client ends
    /// its own least recently used idle session. `None`: a quarter of `max_mcp_sessions`;
    /// `Some(0)`: no cap.
    pub max_mcp_sessions_per_client: Option<usize>,
    /// Most open MCP event streams; `None`: a quarter of `max_connections`.
    pub max_event_streams: Option<usize>,
}

/// The default of `--max-mcp-sessions`: far more than the agents of one machine open, and
/// about 17 MiB at most (a session costs about 67 KiB; docs/benchmarks.md has the figure).
pub const DEFAULT_MAX_MCP_SESSIONS: usize = 256;

/// The default of `--max-unsent-mib`, in bytes: a few dozen large pages held for clients that
/// stopped reading (docs/http.md#security).
pub const DEFAULT_MAX_UNSENT_BYTES: usize = 128 * 1024 * 1024;

impl HttpOptions {
    /// The cap on one client's connections (`0`: none).
    pub(crate) fn connections_per_client(&self) -> usize {
        self.max_connections_per_client
            .unwrap_or_else(|| (self.max_connections / 4).max(1))
    }

    /// The caps of the MCP routes these options give.
    pub(crate) fn mcp_limits(&self) -> mcp::McpLimits {
        mcp::McpLimits {
            max_sessions: self.max_mcp_sessions,
            max_sessions_per_client: self
                .max_mcp_sessions_per_client
                .unwrap_or_else(|| (self.max_mcp_sessions / 4).max(1)),
            body_timeout: self.body_timeout,
            max_event_streams: self
                .max_event_streams
                .unwrap_or_else(|| mcp::McpLimits::default_event_streams(self.max_connections)),
        }
    }
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            token: None,
            request_timeout: Duration::from_secs(30),
            max_body_bytes: 16 * 1024,
            header_read_timeout: Duration::from_secs(10),
            max_head_bytes: 128 * 1024,
            max_headers: 100,
            max_connections: 1024,
            max_connections_per_client: None,
            body_timeout: Duration::from_secs(10),
            max_unsent_bytes: DEFAULT_MAX_UNSENT_BYTES,
            max_concurrent_calls: None,
            write_timeout: Duration::from_secs(30),
            loopback: true,
            allowed_hosts: Vec::new(),
            max_mcp_sessions: DEFAULT_MAX_MCP_SESSIONS,
            max_mcp_sessions_per_client: None,
            max_event_streams: None,
        }
    }
}

/// The knowledge bases one server answers for, by id; the first is the default of the short
/// routes.
struct Served {
    by_id: HashMap<String, Arc<LiveKnowledgeBase>>,
    order: Vec<String>,
    token_digest: Option<[u8; 32]>,
    spec: Value,
    /// When the server started (RFC 3339, milliseconds, UTC).
    started: String,
    max_body_bytes: usize,
    max_head_bytes: usize,
    hosts: hosts::HostPolicy,
}

type Shared = Arc<Served>;

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error(
        "two bundles have the same knowledge-base id {0}; pass --kb-id or serve them separately"
    )]
    DuplicateId(String),
    #[error("no knowledge base to serve")]
    Empty,
    #[error("{0}")]
    Options(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}
/// Builds the router over `kbs` as they are (each under its manifest's knowledge-base id).
pub fn router(kbs: Vec<KnowledgeBase>, options: &HttpOptions) -> Result<Router, HttpError> {
    router_live(fixed(kbs), options)
}

fn fixed(kbs: Vec<KnowledgeBase>) -> Vec<Arc<LiveKnowledgeBase>> {
    kbs.into_iter()
        .map(|kb| Arc::new(LiveKnowledgeBase::fixed(kb)))
        .collect()
}

/// Builds the router over live knowledge bases (each under its knowledge-base id), which switch
/// to a rebuilt index between requests.
pub(crate) fn router_live(
    kbs: Vec<Arc<LiveKnowledgeBase>>,
    options: &HttpOptions,
) -> Result<Router, HttpError> {
    build_router(kbs, options, tokio_util::sync::CancellationToken::new())
}

/// The router; `stop` ends the MCP sessions (whose event streams would otherwise keep their
/// connections open through a graceful shutdown).
fn build_router(
    kbs: Vec<Arc<LiveKnowledgeBase>>,
    options: &HttpOptions,
    stop: tokio_util::sync::CancellationToken,
) -> Result<Router, HttpError> {
    if kbs.is_empty() {
        return Err(HttpError::Empty);
    }
    let hosts = hosts::HostPolicy::new(options.loopback, &options.allowed_hosts)
        .map_err(HttpError::Options)?;
    let mut by_id = HashMap::new();
    let mut order = Vec::new();
    for kb in kbs {
        let id = kb.kb_id().to_string();
        if by_id.contains_key(&id) {
            return Err(HttpError::DuplicateId(id));
        }
        order.push(id.clone());
        by_id.insert(id, kb);
    }
    // The document describes the knowledge bases as they are when the server starts.
    let first = order
        .first()
        .and_then(|id| by_id.get(id))
        .map(|kb| kb.get());
    let spec_options = spec::SpecOptions {
        with_auth: options.token.is_some(),
        knowledge_base_ids: order.clone(),
        virtual_index_graphs: by_id
            .values()
            .any(|kb| renders_index_graphs(&kb.snapshot())),
        example_page: first.as_deref().and_then(example_page),
    };
    let served: Shared = Arc::new(Served {
        by_id,
        order,
        token_digest: options.token.as_deref().map(digest),
        spec: spec::served_spec(&spec_options),
        started: now_rfc3339(),
        max_body_bytes: options.max_body_bytes,
        max_head_bytes: options.max_head_bytes,
        hosts,
    });
    let base = "/openapi/v2/knowledge-bases/{knowledgeBaseId}";
    let mut app = Router::new()
        .route("/", get(web::index).fallback(unsupported))
        .route(
            "/kb/{knowledgeBaseId}",
            get(web::index).fallback(unsupported),
        )
        .route(
            "/kb/{knowledgeBaseId}/{*rest}",
            get(web::index).fallback(unsupported),
        )
        .route("/assets/app.js", get(web::script).fallback(unsupported))
        .route("/assets/app.css", get(web::style).fallback(unsupported))
        .route("/favicon.ico", get(web::no_icon).fallback(unsupported))
        .route("/openapi/v2/health", get(health).fallback(unsupported))
        .route(
            "/openapi/v2/openapi.json",
            get(openapi).fallback(unsupported),
        )
        .route(
            "/openapi/v2/knowledge-bases",
            get(list_kbs).fallback(unsupported),
        );
    // One handler per route: the route (and so the tool) is the router's choice.
    for route in &spec::KB_ROUTES {
        let long = format!("{base}{}", route.path);
        app = app
            .route(
                &long,
                get(move |served, params, request| kb_route(route, served, params, request))
                    .fallback(unsupported),
            )
            .route(
                route.short,
                get(move |served, request| short_route(route, served, request))
                    .fallback(unsupported),
            );
        if route.path != route.short {
            // The long route's own tail answers on the short routes too (`/files/search`).
            app = app.route(
                route.path,
                get(move |served, request| short_route(route, served, request))
                    .fallback(unsupported),
            );
        }
    }
    // The OpenAPI routes' body limit (they are GETs); the MCP routes take their messages up to
    // their own limit, which rmcp enforces while it reads them.
    let mut app = app.layer(tower_http::limit::RequestBodyLimitLayer::new(
        options.max_body_bytes,
    ));
    let sessions = mcp::McpShared::new(options.mcp_limits());
    for id in &served.order {
        let endpoint = mcp::endpoint(served.by_id[id].clone(), sessions.clone(), stop.clone());
        let route = axum::routing::any(move |request: Request| endpoint.clone().handle(request));
        if served.order.len() == 1 {
            app = app.route("/mcp", route.clone());
        }
        app = app.route(&format!("/mcp/{id}"), route);
    }
    // Outermost last: the front door sees every request first (request id, authentication,
    // body size), then the timeout.
    let app = app
        .fallback(unsupported)
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            options.request_timeout,
        ))
        .layer(middleware::from_fn_with_state(served.clone(), front_door))
        .with_state(served);
    Ok(app)
}

/// The first source page of a knowledge base with relations (else the first source page), for
/// the document's parameter examples.
fn example_page(kb: &KnowledgeBase) -> Option<(String, String)> {
    let pages = || {
        kb.catalog
            .iter_files()
            .enumerate()
            .filter(|(_, f)| f.source_backed)
    };
    pages()
        .find(|(i, _)| !kb.catalog.relations_of(*i as u32).is_empty())
        .or_else(|| pages().next())
        .map(|(_, f)| (f.file_id.clone(), f.path.clone()))
}

/// True when the knowledge base renders `_graph/by-file/**/index.json` records (a plain folder
/// with a page named `index.md`); `read_file` opens those paths although the bundle path table
/// does not list them.
fn renders_index_graphs(kb: &KnowledgeBase) -> bool {
    kb.catalog.iter_files().any(|f| {
        f.is_virtual() && f.path.starts_with("_graph/by-file/") && f.path.ends_with("/index.json")
    })
}
