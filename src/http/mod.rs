//! The local HTTP server: the online Developer OpenAPI's read routes of the six tools (and the
//! short backend-adapter routes) over one or more knowledge bases, read-only, with the contract's
//! error envelope and status codes. axum on tokio, confined to this module; every route is a
//! thin mapping onto [`crate::tools::call`], run off the async threads.
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
//! listen backlog); a write that stays blocked for [`HttpOptions::write_timeout`] (a client that
//! stops reading) closes the connection. A garbage request is 400 and closes that connection
//! only.
//!
//! Each knowledge base is a [`LiveKnowledgeBase`]: a request takes one snapshot when it starts
//! and answers from it, so a rebuilt index is picked up between requests and a response is never
//! a mix of two revisions.

pub mod hosts;
pub mod mcp;
pub mod spec;
pub mod web;

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{MatchedPath, Path, RawQuery, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use tokio::sync::Semaphore;

use crate::error::{new_request_id, ErrorCode, ToolError};
use crate::kb::KnowledgeBase;
use crate::live::LiveKnowledgeBase;
use crate::tools;

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
    /// Longest time a write to a client may stay blocked (a client that stops reading its
    /// response); the connection is closed after it.
    pub write_timeout: Duration,
    /// The server listens on loopback only: requests must name a loopback `Host` (or one of
    /// `allowed_hosts`); set by [`serve_live`] from the address it listens on.
    pub loopback: bool,
    /// `--allowed-host`: names (`name` or `name:port`) a request's `Host` may give besides
    /// loopback ones ([`hosts`]).
    pub allowed_hosts: Vec<String>,
    /// Most live MCP sessions over the server's knowledge bases.
    pub max_mcp_sessions: usize,
    /// Most open MCP event streams; `None`: a quarter of `max_connections`.
    pub max_event_streams: Option<usize>,
}

/// The default of `--max-mcp-sessions`: far more than the agents of one machine open, and
/// about 17 MiB at most (a session costs about 67 KiB; docs/benchmarks.md has the figure).
pub const DEFAULT_MAX_MCP_SESSIONS: usize = 256;

impl HttpOptions {
    /// The caps of the MCP routes these options give.
    pub fn mcp_limits(&self) -> mcp::McpLimits {
        mcp::McpLimits {
            max_sessions: self.max_mcp_sessions,
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
            write_timeout: Duration::from_secs(30),
            loopback: true,
            allowed_hosts: Vec::new(),
            max_mcp_sessions: DEFAULT_MAX_MCP_SESSIONS,
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

/// The request id of a request: the incoming `x-request-id` when it is a sane token, otherwise
/// `req-<uuid v4>`.
#[derive(Clone)]
struct RequestId(String);

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
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
pub fn router_live(
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

/// Serves `kbs` as they are on `listener` until `shutdown` resolves, then finishes the requests
/// in flight.
pub async fn serve(
    listener: tokio::net::TcpListener,
    kbs: Vec<KnowledgeBase>,
    options: HttpOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), HttpError> {
    serve_live(listener, fixed(kbs), options, shutdown).await
}

/// Serves live knowledge bases on `listener` until `shutdown` resolves, then finishes the
/// requests in flight; each request answers from the generation live when it starts.
pub async fn serve_live(
    listener: tokio::net::TcpListener,
    kbs: Vec<Arc<LiveKnowledgeBase>>,
    options: HttpOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), HttpError> {
    let stop = tokio_util::sync::CancellationToken::new();
    let options = HttpOptions {
        loopback: listener.local_addr()?.ip().is_loopback(),
        ..options
    };
    let app = build_router(kbs, &options, stop.clone())?;
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(options.header_read_timeout)
        // hyper's floor for its read buffer is 8 KiB.
        .max_buf_size(options.max_head_bytes.max(8192))
        .max_headers(options.max_headers);
    let max_connections = options.max_connections.clamp(1, 1 << 20);
    let slots = Arc::new(Semaphore::new(max_connections));
    // Connections watch this to start their graceful shutdown.
    let (closing, _) = tokio::sync::watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot,
            () = &mut shutdown => break,
        };
        let Ok(slot) = slot else { break };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            // A connection reset before it was accepted: nothing to serve.
            Err(e) if is_connection_error(&e) => continue,
            // Out of file descriptors (or memory): wait for connections to close.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let stream = WriteTimeout::new(stream, options.write_timeout);
        let connection = http.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
        let mut close = closing.subscribe();
        tokio::spawn(async move {
            let _slot = slot;
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                // A client error (garbage, a head too large, a timeout) ends this connection only.
                _ = connection.as_mut() => return,
                _ = close.wait_for(|closing| *closing) => {}
            }
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        });
    }
    drop(listener);
    stop.cancel();
    let _ = closing.send(true);
    // Every connection holds a slot until it ends: wait for them all.
    let _ = slots.acquire_many(max_connections as u32).await;
    Ok(())
}

/// A connection whose writes fail with `TimedOut` once one stays blocked for `timeout` (a
/// client that stops reading would otherwise hold its connection, and its response, forever).
struct WriteTimeout<T> {
    inner: T,
    timeout: Duration,
    /// Started when a write blocks; cleared when one completes.
    stalled: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl<T> WriteTimeout<T> {
    fn new(inner: T, timeout: Duration) -> Self {
        WriteTimeout {
            inner,
            timeout,
            stalled: None,
        }
    }

    /// Passes a ready result through; on `Pending`, fails once the stall outlasts the timeout.
    fn check<R>(
        &mut self,
        cx: &mut std::task::Context<'_>,
        poll: std::task::Poll<std::io::Result<R>>,
    ) -> std::task::Poll<std::io::Result<R>> {
        use std::task::Poll;
        if poll.is_ready() {
            self.stalled = None;
            return poll;
        }
        let timeout = self.timeout;
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match stalled.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the client stopped reading",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Most bytes one read of a connection takes. hyper checks a head against its size limit
/// between reads, and offers reads the whole spare capacity of its buffer: a head that arrived
/// all at once (a loaded machine, a fast client) could be read whole and parsed, over the limit,
/// in one go. Reads of at most this much let the buffer reach the limit first.
const MAX_READ: usize = 16 * 1024;

impl<T: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for WriteTimeout<T> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        if buf.remaining() <= MAX_READ {
            return std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        }
        let mut chunk = [0u8; MAX_READ];
        let mut limited = tokio::io::ReadBuf::new(&mut chunk);
        let poll = std::pin::Pin::new(&mut self.inner).poll_read(cx, &mut limited);
        if let std::task::Poll::Ready(Ok(())) = poll {
            buf.put_slice(limited.filled());
        }
        poll
    }
}

impl<T: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for WriteTimeout<T> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let poll = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        self.check(cx, poll)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let poll = std::pin::Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.check(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let poll = std::pin::Pin::new(&mut self.inner).poll_flush(cx);
        self.check(cx, poll)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let poll = std::pin::Pin::new(&mut self.inner).poll_shutdown(cx);
        self.check(cx, poll)
    }
}

fn is_connection_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}

/// The size of a request's head as sent in HTTP/1.1 (request line, `name: value` lines, the blank
/// line).
fn head_bytes(request: &Request) -> usize {
    let line = request.method().as_str().len() + 1 + request.uri().to_string().len() + 11;
    let fields: usize = request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + 2 + value.len() + 2)
        .sum();
    line + fields + 2
}

/// 431 for a head over the limit, closing the connection, as hyper answers one it caught.
fn head_too_large() -> Response {
    let mut response =
        axum::response::IntoResponse::into_response(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// Request id, then authentication (before any routing or validation, as online), then the
/// body size, then the route; the request id is echoed on every response, and the bare
/// responses of the timeout and body-limit layers get the contract's error envelope.
async fn front_door(State(served): State<Shared>, mut request: Request, next: Next) -> Response {
    // hyper checks its limit between reads, so a head up to one read past it gets through.
    if head_bytes(&request) > served.max_head_bytes {
        return head_too_large();
    }
    let is_mcp = is_mcp_path(request.uri().path());
    let id = request
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty() && v.len() <= 200 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map(str::to_string)
        .unwrap_or_else(new_request_id);
    // DNS rebinding: every route, before anything else (hosts.rs).
    let headers = request.headers();
    let checked = served.hosts.check(
        headers.get(header::HOST).map(HeaderValue::as_bytes),
        headers.get(header::ORIGIN).map(HeaderValue::as_bytes),
        is_mcp,
    );
    if let Err(refusal) = checked {
        let mut response = error_response(
            &ToolError::new(ErrorCode::Forbidden, refusal.message()),
            &id,
        );
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        return response;
    }
    // The page and its assets hold no knowledge-base data: served without the token, which
    // the page asks for before it calls the API.
    if let Some(expected) = served
        .token_digest
        .filter(|_| !web::is_page_path(request.uri().path()))
    {
        let presented = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer_token)
            .map(digest);
        if presented != Some(expected) {
            return error_response(
                &ToolError::new(ErrorCode::Unauthorized, "Valid bearer API key is required."),
                &id,
            );
        }
    }
    let declared_length = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let max_body = if is_mcp {
        mcp::MAX_MCP_BODY_BYTES
    } else {
        served.max_body_bytes
    };
    if declared_length.is_some_and(|n| n > max_body as u64) {
        return body_too_large(max_body, is_mcp, &id);
    }
    request.extensions_mut().insert(RequestId(id.clone()));
    let mut response = next.run(request).await;
    let bare = response.headers().get(header::CONTENT_TYPE)
        != Some(&HeaderValue::from_static(JSON_CONTENT_TYPE));
    if response.headers().get(header::CONTENT_TYPE).is_none()
        && response.status() == StatusCode::SERVICE_UNAVAILABLE
    {
        // The timeout layer's bare 503 (no body, no type).
        return error_response(
            &ToolError::new(
                ErrorCode::SearchUnavailable,
                "The request took too long and was stopped.",
            ),
            &id,
        );
    }
    if bare && response.status() == StatusCode::PAYLOAD_TOO_LARGE && !is_mcp {
        return body_too_large(served.max_body_bytes, false, &id);
    }
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert("x-request-id", value);
    }
    let headers = response.headers_mut();
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// The token of an `Authorization: Bearer <token>` value; the scheme's case does not matter
/// (RFC 9110 §11.1).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once([' ', '\t'])?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

fn body_too_large(max: usize, mcp: bool, request_id: &str) -> Response {
    let why = if mcp {
        "an MCP message is a small JSON-RPC object"
    } else {
        "every OpenAPI route is a GET"
    };
    error_response(
        &ToolError::new(
            ErrorCode::PayloadTooLarge,
            format!("The request body is larger than {max} bytes; {why}."),
        ),
        request_id,
    )
}

/// `/mcp` or `/mcp/{knowledgeBaseId}`.
fn is_mcp_path(path: &str) -> bool {
    path == "/mcp" || path.starts_with("/mcp/")
}

const JSON_CONTENT_TYPE: &str = "application/json; charset=utf-8";

fn json_response(status: StatusCode, body: &Value) -> Response {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let mut response = Response::new(Body::from(bytes));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(JSON_CONTENT_TYPE),
    );
    response
}

fn error_response(error: &ToolError, request_id: &str) -> Response {
    let status =
        StatusCode::from_u16(error.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = json_response(status, &error.envelope(request_id));
    if let Ok(value) = HeaderValue::from_str(request_id) {
        response.headers_mut().insert("x-request-id", value);
    }
    response
}

fn request_id(headers_source: &axum::http::Extensions) -> String {
    headers_source
        .get::<RequestId>()
        .map(|r| r.0.clone())
        .unwrap_or_else(new_request_id)
}

async fn unsupported(request: Request) -> Response {
    let id = request_id(request.extensions());
    error_response(&unsupported_route(), &id)
}

fn unsupported_route() -> ToolError {
    ToolError::new(ErrorCode::UnsupportedRoute, "Route is not supported.")
}

async fn health() -> Response {
    json_response(StatusCode::OK, &json!({ "status": "ok" }))
}

async fn openapi(State(served): State<Shared>) -> Response {
    json_response(StatusCode::OK, &served.spec)
}

async fn list_kbs(
    State(served): State<Shared>,
    RawQuery(query): RawQuery,
    request: Request,
) -> Response {
    let id = request_id(request.extensions());
    // On the blocking pool: the page takes a snapshot of each knowledge base it lists.
    let page = tokio::task::spawn_blocking(move || knowledge_base_page(&served, query.as_deref()))
        .await
        .unwrap_or_else(|e| {
            Err(ToolError::new(
                ErrorCode::InternalError,
                format!("The request failed: {e}"),
            ))
        });
    match page {
        Ok(page) => json_response(StatusCode::OK, &page),
        Err(e) => error_response(&e, &id),
    }
}

/// A page of `GET /openapi/v2/knowledge-bases`: `limit` as the other list routes read it, and
/// the cursor this route issues (`kb-<offset>`).
fn knowledge_base_page(served: &Served, query: Option<&str>) -> Result<Value, ToolError> {
    let params = Value::Object(parse_query(query)?);
    if let Some(key) = params.as_object().and_then(|m| {
        m.keys()
            .find(|k| !spec::KNOWLEDGE_BASES_PARAMETERS.contains(&k.as_str()))
    }) {
        return Err(unknown_parameter(key, &spec::KNOWLEDGE_BASES_PARAMETERS));
    }
    let input = tools::Input::new(&params, &spec::KNOWLEDGE_BASES_PARAMETERS)?;
    let limit = tools::page_limit(
        &input,
        spec::KNOWLEDGE_BASES_DEFAULT_LIMIT,
        spec::KNOWLEDGE_BASES_MAX_LIMIT,
    )? as usize;
    let offset = match input.cursor()? {
        None => 0,
        Some(text) => match text
            .strip_prefix("kb-")
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse::<usize>().ok())
        {
            Some(n) if n > 0 && n < served.order.len() => n,
            _ => return Err(ToolError::cursor_invalid()),
        },
    };
    let items: Vec<Value> = served
        .order
        .iter()
        .skip(offset)
        .take(limit)
        .filter_map(|kb_id| served.by_id.get(kb_id))
        .map(|kb| knowledge_base_record(&kb.get(), &served.started))
        .collect();
    let end = offset.saturating_add(limit);
    let next = if end < served.order.len() {
        Value::String(format!("kb-{end}"))
    } else {
        Value::Null
    };
    Ok(json!({ "items": items, "nextCursor": next }))
}

/// 422 for a query parameter the operation does not take.
fn unknown_parameter(key: &str, accepted: &[&str]) -> ToolError {
    let shown = crate::text::truncate_chars(key, 64);
    let accepted = if accepted.is_empty() {
        "none".to_string()
    } else {
        accepted.join(", ")
    };
    ToolError::invalid_field(
        &format!("Unknown query parameter `{shown}`. This operation takes: {accepted}."),
        shown,
    )
}

/// A served knowledge base as the `KnowledgeBase` schema describes it.
/// `createdAt`/`updatedAt` are the time the server started serving it.
fn knowledge_base_record(kb: &KnowledgeBase, started: &str) -> Value {
    let m = &kb.manifest;
    let built = started;
    json!({
        "knowledgeBaseId": m.knowledge_base_id,
        "name": m.knowledge_base_name,
        "description": Value::Null,
        "activeContentRevision": m.active_content_revision,
        "resourceRevision": m.active_content_revision.max(1),
        "createdAt": built,
        "updatedAt": built,
    })
}

fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    now.format(&format).unwrap_or_default()
}

/// Query parameters, percent-decoded (`+` is a space); a parameter given twice is refused, as
/// the online API refuses an array where it expects one value.
fn parse_query(query: Option<&str>) -> Result<Map<String, Value>, ToolError> {
    let mut map = Map::new();
    let Some(query) = query else { return Ok(map) };
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let (Some(key), Some(value)) = (decode_component(k), decode_component(v)) else {
            return Err(ToolError::invalid_field(
                "A query parameter is not valid percent-encoded UTF-8.",
                "query",
            ));
        };
        if map.contains_key(&key) {
            return Err(ToolError::invalid_field(
                &format!(
                    "Query parameter `{}` is given more than once.",
                    crate::text::truncate_chars(&key, 64)
                ),
                &key,
            ));
        }
        map.insert(key, Value::String(value));
    }
    Ok(map)
}

fn decode_component(s: &str) -> Option<String> {
    crate::text::percent_decode_once(&s.replace('+', " "))
}

/// The tool input of a route's request: its query, and the fileId of its path.
fn tool_input(
    route: &spec::KbRoute,
    file_id: Option<String>,
    mut query: Map<String, Value>,
) -> Value {
    if let Some(id) = file_id {
        query.insert("fileId".into(), Value::String(id));
    }
    if route.path == "/files/content" && !query.contains_key("path") {
        // The route's required parameter: absent is a validation error of `path`.
        query.insert("path".into(), Value::String(String::new()));
    }
    Value::Object(query)
}

/// The `{fileId}` segment of a request path matched by `template`, percent-decoded: `Ok(None)`
/// when the route has none, `Err` when it is empty or does not decode to UTF-8.
fn file_id_segment(template: &str, path: &str) -> Result<Option<String>, ()> {
    let Some((_, raw)) = template
        .split('/')
        .zip(path.split('/'))
        .find(|(t, _)| *t == "{fileId}")
    else {
        return Ok(None);
    };
    if raw.is_empty() {
        return Err(());
    }
    crate::text::percent_decode_once(raw).map(Some).ok_or(())
}

/// 422 for a query parameter the route does not take (the served document lists exactly the
/// ones it does); any `query` on the tree is the online API's own message.
fn check_parameters(route: &spec::KbRoute, query: &Map<String, Value>) -> Result<(), ToolError> {
    if route.path == "/tree" && query.contains_key("query") {
        return Err(ToolError::invalid_field(
            "Tree search is not supported. Use the file search endpoint.",
            "query",
        ));
    }
    match query.keys().find(|k| !route.query().contains(&k.as_str())) {
        Some(key) => Err(unknown_parameter(key, route.query())),
        None => Ok(()),
    }
}

async fn kb_route(
    route: &'static spec::KbRoute,
    State(served): State<Shared>,
    Path(params): Path<HashMap<String, String>>,
    request: Request,
) -> Response {
    let id = request_id(request.extensions());
    let kb_id = params.get("knowledgeBaseId").cloned().unwrap_or_default();
    let Some(kb) = served.by_id.get(&kb_id).cloned() else {
        return error_response(
            &ToolError::new(ErrorCode::NotFound, crate::error::messages::NOT_FOUND),
            &id,
        );
    };
    answer(kb, route, matched(&request), request.uri().clone(), &id).await
}

async fn short_route(
    route: &'static spec::KbRoute,
    State(served): State<Shared>,
    request: Request,
) -> Response {
    let id = request_id(request.extensions());
    let Some(kb) = served
        .order
        .first()
        .and_then(|kb_id| served.by_id.get(kb_id))
        .cloned()
    else {
        return error_response(
            &ToolError::new(ErrorCode::NotFound, crate::error::messages::NOT_FOUND),
            &id,
        );
    };
    answer(kb, route, matched(&request), request.uri().clone(), &id).await
}

/// The route the router matched a request to (its `{fileId}` segment is the file id).
fn matched(request: &Request) -> String {
    request
        .extensions()
        .get::<MatchedPath>()
        .map_or("", MatchedPath::as_str)
        .to_string()
}

/// Answers one tool route from one snapshot of `kb`, taken on the blocking pool (switching to a
/// rebuilt index opens it there, never on the async threads).
async fn answer(
    kb: Arc<LiveKnowledgeBase>,
    route: &'static spec::KbRoute,
    template: String,
    uri: axum::http::Uri,
    id: &str,
) -> Response {
    let Ok(file_id) = file_id_segment(&template, uri.path()) else {
        return error_response(&unsupported_route(), id);
    };
    let query = match parse_query(uri.query()).and_then(|q| check_parameters(route, &q).map(|()| q))
    {
        Ok(q) => q,
        Err(e) => return error_response(&e, id),
    };
    let input = tool_input(route, file_id, query);
    let tool = route.tool;
    let result = tokio::task::spawn_blocking(move || tools::run(&kb.get(), tool, &input)).await;
    match result {
        Ok(Ok(output)) => json_response(StatusCode::OK, &output),
        Ok(Err(error)) => error_response(&error, id),
        Err(e) => error_response(
            &ToolError::new(ErrorCode::InternalError, format!("The request failed: {e}")),
            id,
        ),
    }
}

/// Resolves when the process gets Ctrl-C (or SIGTERM on Unix).
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
}
