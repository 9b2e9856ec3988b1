//! MCP over Streamable HTTP (the transport of the current MCP revision) on the HTTP server:
//! `/mcp/{knowledgeBaseId}` for each knowledge base served, and `/mcp` when there is one. The
//! same tools as `kbtools mcp` on stdio, behind the same front door as the OpenAPI routes
//! (bearer token, `Host` and `Origin` checks, head and connection limits, request id), through
//! rmcp's service, with a gate of ours in front of it:
//!
//! - **Messages** are read up to `MAX_MCP_BODY_BYTES` and classified as on stdio: a body that
//!   is not JSON is 400 with a JSON-RPC parse error (-32700), a batch array, a wrong `jsonrpc` or
//!   an invalid `id` 400 with an invalid-request error (-32600). rmcp's own refusals (plain text)
//!   are answered as JSON-RPC error objects with their status.
//! - **Message bodies** must arrive within [`McpLimits::body_timeout`] of the head: 408 with a
//!   JSON-RPC error after it, and the connection is closed.
//! - **Sessions** (`Mcp-Session-Id`, one per `initialize`, ended by `DELETE` or after
//!   `SESSION_IDLE` idle) are capped across the server's knowledge bases
//!   ([`McpLimits::max_sessions`]) and per client address
//!   ([`McpLimits::max_sessions_per_client`]). At either cap an `initialize` first ends the least
//!   recently used idle session (the client's own at its cap, anyone's at the server's); a
//!   session is busy while a request of its is under way, its event stream included. With none
//!   idle, the `initialize` is 503 with `Retry-After` and a JSON-RPC error. A session keeps no
//!   finished response: its replay cache is dropped as soon as a response is sent (a resumed
//!   stream of a finished request is empty). `DELETE` of an unknown session is 404, of a live
//!   one 204.
//! - **Event streams** (a session's `GET`) are capped per session (one) and in total
//!   ([`McpLimits::max_event_streams`]), so that long-lived streams never take every connection:
//!   beyond either cap the answer is immediate (409 or 429 with `Retry-After`) and closes its
//!   connection.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::Response;
use http_body::Body as HttpBody;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{SessionId, SessionManager};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{json, Value};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use super::clients::{ClientAddr, ClientKey};
use crate::serve::live::LiveKnowledgeBase;
use crate::serve::mcp::{parse_line, KbServer, McpOptions, Parsed, INVALID_REQUEST, PARSE_ERROR};

/// Largest MCP message body accepted (a tool call's arguments are a few hundred bytes; the
/// OpenAPI routes, all GETs, take 16 KiB).
pub(crate) const MAX_MCP_BODY_BYTES: usize = 1024 * 1024;

/// How long a session lives without a request (rmcp's default).
pub(crate) const SESSION_IDLE: Duration = Duration::from_secs(300);

/// What `Retry-After` says when a cap is reached: a session or a stream of another client may
/// end any moment, and idle sessions end within [`SESSION_IDLE`].
const RETRY_AFTER_SECONDS: &str = "30";

/// JSON-RPC's implementation-defined server error, for a refusal by a cap.
const SERVER_BUSY: i64 = -32000;
/// The error of a request naming a session that does not exist (ended, or never made).
const SESSION_NOT_FOUND: i64 = -32001;
/// JSON-RPC's internal error.
const INTERNAL_ERROR: i64 = -32603;

/// The caps of the MCP routes.
#[derive(Debug, Clone, Copy)]
pub struct McpLimits {
    /// Most live sessions, over all the knowledge bases of the server.
    pub max_sessions: usize,
    /// Most live sessions of one client address (`0`: no cap of its own).
    pub max_sessions_per_client: usize,
    /// Longest time a message body may take to arrive.
    pub body_timeout: Duration,
    /// Most open event streams (`GET`), over all sessions; one per session besides.
    pub max_event_streams: usize,
}

impl McpLimits {
    /// The default of `max_event_streams` for a server with `max_connections`: a quarter of
    /// them (at least one), so three quarters stay for everything else.
    pub(crate) fn default_event_streams(max_connections: usize) -> usize {
        (max_connections / 4).max(1)
    }
}

/// What the gate knows of a live session: whose it is, when it was last used, and how many of
/// its requests (an open event stream included) are under way.
struct SessionUse {
    /// The session's manager (its knowledge base's), by its place in `McpShared::managers`.
    manager: usize,
    client: Option<ClientKey>,
    last_used: Instant,
    busy: usize,
}

/// What the MCP routes of one server share: every knowledge base's sessions, counted against
/// one cap, and the open event streams.
pub struct McpShared {
    limits: McpLimits,
    managers: Mutex<Vec<Arc<LocalSessionManager>>>,
    /// The live sessions by id, for the caps and the choice of which idle one to end.
    uses: Arc<Mutex<HashMap<String, SessionUse>>>,
    /// Held while an `initialize` is counted and its session made, so that concurrent ones
    /// cannot pass the cap together.
    opening: tokio::sync::Mutex<()>,
    streams: Arc<Semaphore>,
    /// Sessions with an open event stream.
    streaming: Arc<Mutex<HashSet<String>>>,
}

impl McpShared {
    pub fn new(limits: McpLimits) -> Arc<McpShared> {
        let limits = McpLimits {
            max_sessions: limits.max_sessions.max(1),
            max_event_streams: limits.max_event_streams.clamp(1, Semaphore::MAX_PERMITS),
            ..limits
        };
        Arc::new(McpShared {
            limits,
            managers: Mutex::new(Vec::new()),
            uses: Arc::new(Mutex::new(HashMap::new())),
            opening: tokio::sync::Mutex::new(()),
            streams: Arc::new(Semaphore::new(limits.max_event_streams)),
            streaming: Arc::new(Mutex::new(HashSet::new())),
        })
    }

    fn managers(&self) -> Vec<Arc<LocalSessionManager>> {
        self.managers.lock().map(|m| m.clone()).unwrap_or_default()
    }

    /// Live sessions over every knowledge base; the record of uses forgets the sessions that
    /// ended (`DELETE`, idle time).
    pub async fn live_sessions(&self) -> usize {
        let mut live = HashSet::new();
        for manager in self.managers() {
            live.extend(
                manager
                    .sessions
                    .read()
                    .await
                    .keys()
                    .map(|id| id.to_string()),
            );
        }
        self.lock_uses().retain(|id, _| live.contains(id));
        live.len()
    }

    fn lock_uses(&self) -> std::sync::MutexGuard<'_, HashMap<String, SessionUse>> {
        self.uses.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Live sessions of `client`.
    fn sessions_of(&self, client: Option<ClientKey>) -> usize {
        self.lock_uses()
            .values()
            .filter(|u| u.client == client)
            .count()
    }

    /// The least recently used session with no request under way (of `client` when given).
    fn least_recent_idle(&self, client: Option<Option<ClientKey>>) -> Option<(String, usize)> {
        self.lock_uses()
            .iter()
            .filter(|(_, u)| u.busy == 0 && client.is_none_or(|c| u.client == c))
            .min_by_key(|(_, u)| u.last_used)
            .map(|(id, u)| (id.clone(), u.manager))
    }

    /// Ends an idle session to make room for a new one.
    async fn evict(&self, id: &str, manager: usize, why: &str) {
        self.lock_uses().remove(id);
        if let Some(manager) = self.managers().get(manager) {
            let _ = manager.close_session(&SessionId::from(id)).await;
        }
        tracing::info!(target: "kbtools", "ended the idle MCP session {id}: {why}");
    }

    /// Marks a request of session `id` under way until the returned guard is dropped; `None`
    /// when the gate does not know the session.
    fn begin_use(&self, id: &str) -> Option<InUse> {
        let mut uses = self.lock_uses();
        let entry = uses.get_mut(id)?;
        entry.busy += 1;
        entry.last_used = Instant::now();
        Some(InUse {
            id: id.to_string(),
            uses: self.uses.clone(),
        })
    }
}

/// A request of a session under way: the session is not idle while one is held.
struct InUse {
    id: String,
    uses: Arc<Mutex<HashMap<String, SessionUse>>>,
}

impl Drop for InUse {
    fn drop(&mut self) {
        let mut uses = self.uses.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(entry) = uses.get_mut(&self.id) {
            entry.busy = entry.busy.saturating_sub(1);
            entry.last_used = Instant::now();
        }
    }
}

type McpService = StreamableHttpService<KbServer, LocalSessionManager>;

/// The MCP endpoint of one knowledge base: rmcp's service behind our gate.
#[derive(Clone)]
pub struct McpEndpoint {
    service: McpService,
    sessions: Arc<LocalSessionManager>,
    /// `sessions`' place in the shared list of managers.
    manager: usize,
    shared: Arc<McpShared>,
}

/// The MCP endpoint of one knowledge base. `Host` and `Origin` are the front door's to check
/// (for every route alike), so rmcp's own checks are off; `stop` ends every session when the
/// server stops.
pub fn endpoint(
    kb: Arc<LiveKnowledgeBase>,
    shared: Arc<McpShared>,
    stop: CancellationToken,
) -> McpEndpoint {
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(MAX_MCP_BODY_BYTES)
        .with_cancellation_token(stop);
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(SESSION_IDLE);
    // A finished request's events are dropped at once instead of kept a minute for a resume
    // (the cache is only trimmed when the session next hears from its client, so a minute
    // could be the whole idle life of the session: a 10 MB `read_file` held that long).
    sessions.session_config.completed_cache_ttl = Duration::ZERO;
    let sessions = Arc::new(sessions);
    let manager = {
        let mut managers = shared.managers.lock().unwrap_or_else(|e| e.into_inner());
        managers.push(sessions.clone());
        managers.len() - 1
    };
    let service = StreamableHttpService::new(
        move || KbServer::live(kb.clone(), McpOptions::default()),
        sessions.clone(),
        config,
    );
    McpEndpoint {
        service,
        sessions,
        manager,
        shared,
    }
}

impl McpEndpoint {
    /// Answers one request of the endpoint; a session's request keeps it from being idle
    /// until its response has been sent.
    pub async fn handle(self, request: Request) -> Response {
        let session = request
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let in_use = session.as_deref().and_then(|id| self.shared.begin_use(id));
        let response = self.answer(request, session).await;
        match in_use {
            None => response,
            Some(in_use) => {
                let (parts, body) = response.into_parts();
                Response::from_parts(
                    parts,
                    Body::new(Holding {
                        inner: body,
                        _held: in_use,
                    }),
                )
            }
        }
    }

    async fn answer(&self, request: Request, session: Option<String>) -> Response {
        match *request.method() {
            Method::POST => self.post(request, session).await,
            Method::GET => match session {
                Some(session) => self.get(request, session).await,
                // rmcp's answer: a stream needs a session.
                None => self.forward(request, Value::Null).await,
            },
            Method::DELETE => self.delete(request, session).await,
            _ => self.forward(request, Value::Null).await,
        }
    }

    async fn has_session(&self, id: &str) -> bool {
        self.sessions.sessions.read().await.contains_key(id)
    }

    async fn post(&self, request: Request, session: Option<String>) -> Response {
        let is_json = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
        if !is_json {
            // rmcp's 415, as a JSON-RPC error.
            return self.forward(request, Value::Null).await;
        }
        let (parts, body) = request.into_parts();
        let read = tokio::time::timeout(
            self.shared.limits.body_timeout,
            read_capped(body, MAX_MCP_BODY_BYTES),
        );
        let Ok(read) = read.await else {
            let mut response = rpc_error(
                StatusCode::REQUEST_TIMEOUT,
                Value::Null,
                PARSE_ERROR,
                &format!(
                    "The request body did not arrive within {} s (--body-timeout); send the whole message at once.",
                    self.shared.limits.body_timeout.as_secs_f64()
                ),
            );
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return response;
        };
        let bytes = match read {
            Ok(bytes) => bytes,
            Err(BodyError::TooLarge) => {
                return rpc_error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    Value::Null,
                    INVALID_REQUEST,
                    &format!("The message is larger than {MAX_MCP_BODY_BYTES} bytes; an MCP message is a small JSON-RPC object."),
                )
            }
            Err(BodyError::Failed) => {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    Value::Null,
                    PARSE_ERROR,
                    "The request body could not be read.",
                )
            }
        };
        let message = match parse_line(&bytes) {
            Parsed::Message(message) => message,
            Parsed::Blank => {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    Value::Null,
                    PARSE_ERROR,
                    "Parse error: the body is empty; send one JSON-RPC message.",
                )
            }
            Parsed::Ignored(why) => {
                // A notification has no id to answer with: refused with a null id.
                return rpc_error(StatusCode::BAD_REQUEST, Value::Null, INVALID_REQUEST, &why);
            }
            Parsed::Rejected { id, code, message } => {
                return rpc_error(StatusCode::BAD_REQUEST, id, code, &message)
            }
        };
        // The id a refusal answers with (a notification has none).
        let id = match &*message {
            rmcp::model::JsonRpcMessage::Request(r) => json!(r.id),
            _ => Value::Null,
        };
        let initialize = session.is_none()
            && matches!(
                &*message,
                rmcp::model::JsonRpcMessage::Request(r)
                    if matches!(r.request, rmcp::model::ClientRequest::InitializeRequest(_))
            );
        let request = Request::from_parts(parts, Body::from(bytes));
        if !initialize {
            return self.forward(request, id).await;
        }
        let client = parts_client(&request);
        let _opening = self.shared.opening.lock().await;
        let live = self.shared.live_sessions().await;
        let limits = self.shared.limits;
        let mine = self.shared.sessions_of(client);
        let own_cap = limits.max_sessions_per_client != 0 && mine >= limits.max_sessions_per_client;
        if own_cap || live >= limits.max_sessions {
            // At the client's own cap its least recently used idle session makes room; at the
            // server's, the least recently used idle one of anyone's.
            let (whose, why) = if own_cap {
                (
                    Some(client),
                    "its client opened one more than --max-mcp-sessions-per-client",
                )
            } else {
                (
                    None,
                    "the server is at --max-mcp-sessions and it was the least recently used",
                )
            };
            let Some((victim, manager)) = self.shared.least_recent_idle(whose) else {
                let message = if own_cap {
                    format!("This client has {mine} MCP sessions open, each with a request under way, the most one client may hold (--max-mcp-sessions-per-client); retry later, or end sessions you no longer use with DELETE.")
                } else {
                    format!("The server has {live} MCP sessions open, its limit (--max-mcp-sessions), each with a request under way; retry later, or end sessions you no longer use with DELETE.")
                };
                return busy(id, &message);
            };
            self.shared.evict(&victim, manager, why).await;
        }
        let response = self.forward(request, id).await;
        if let Some(new) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            self.shared.lock_uses().insert(
                new.to_string(),
                SessionUse {
                    manager: self.manager,
                    client,
                    last_used: Instant::now(),
                    busy: 0,
                },
            );
        }
        response
    }

    async fn get(&self, request: Request, session: String) -> Response {
        if !self.has_session(&session).await {
            return session_not_found();
        }
        let Ok(permit) = self.shared.streams.clone().try_acquire_owned() else {
            let mut response = rpc_error(
                StatusCode::TOO_MANY_REQUESTS,
                Value::Null,
                SERVER_BUSY,
                &format!(
                    "The server has {} event streams open, its limit (--max-event-streams); retry later.",
                    self.shared.limits.max_event_streams
                ),
            );
            refuse_and_close(&mut response);
            return response;
        };
        let claimed = self
            .shared
            .streaming
            .lock()
            .map(|mut open| open.insert(session.clone()))
            .unwrap_or(false);
        if !claimed {
            let mut response = rpc_error(
                StatusCode::CONFLICT,
                Value::Null,
                SERVER_BUSY,
                "This session already has an open event stream; a session gets one.",
            );
            refuse_and_close(&mut response);
            return response;
        }
        let release = StreamSlot {
            session,
            streaming: self.shared.streaming.clone(),
            _permit: permit,
        };
        let response = self.forward(request, Value::Null).await;
        if response.status() != StatusCode::OK {
            return response;
        }
        // The slot is given back when the stream ends (its body is dropped).
        let (parts, body) = response.into_parts();
        Response::from_parts(
            parts,
            Body::new(Holding {
                inner: body,
                _held: release,
            }),
        )
    }

    async fn delete(&self, request: Request, session: Option<String>) -> Response {
        if let Some(session) = &session {
            if !self.has_session(session).await {
                return session_not_found();
            }
        }
        let mut response = self.forward(request, Value::Null).await;
        if response.status() == StatusCode::ACCEPTED {
            // The session is ended: 204, what clients expect of a DELETE (the Python SDK logs
            // a failure for anything but 200 and 204).
            *response.status_mut() = StatusCode::NO_CONTENT;
            *response.body_mut() = Body::empty();
        }
        response
    }

    /// rmcp's answer to `request`, its plain-text refusals made JSON-RPC error objects (with
    /// `id` when the request had one).
    async fn forward(&self, request: Request, id: Value) -> Response {
        let response = self.service.handle(request).await;
        let (parts, body) = response.into_parts();
        let response = Response::from_parts(parts, Body::new(body));
        let status = response.status();
        let is_json = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        if !(status.is_client_error() || status.is_server_error()) || is_json {
            return response;
        }
        let (parts, body) = response.into_parts();
        // rmcp's refusals are a line of text.
        let text = match read_capped(body, 4096).await {
            Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_string(),
            Err(_) => String::new(),
        };
        let text = if text.is_empty() {
            status.canonical_reason().unwrap_or("Refused").to_string()
        } else {
            text
        };
        let code = match status {
            StatusCode::NOT_FOUND => SESSION_NOT_FOUND,
            s if s.is_server_error() => INTERNAL_ERROR,
            _ => INVALID_REQUEST,
        };
        let mut out = rpc_error(status, id, code, &text);
        for (name, value) in &parts.headers {
            if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
                out.headers_mut().insert(name, value.clone());
            }
        }
        out
    }
}

/// The client a request came from (put there by the accept loop).
fn parts_client(request: &Request) -> Option<ClientKey> {
    request.extensions().get::<ClientAddr>().map(|c| c.0)
}

/// 503 for an `initialize` refused by a cap, with `Retry-After`, closing its connection.
fn busy(id: Value, message: &str) -> Response {
    let mut response = rpc_error(StatusCode::SERVICE_UNAVAILABLE, id, SERVER_BUSY, message);
    refuse_and_close(&mut response);
    response
}

/// A session's claim on an event stream: the session's mark and a slot of the total, given
/// back when dropped.
struct StreamSlot {
    session: String,
    streaming: Arc<Mutex<HashSet<String>>>,
    _permit: OwnedSemaphorePermit,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        if let Ok(mut open) = self.streaming.lock() {
            open.remove(&self.session);
        }
    }
}

/// A response body that holds something (a stream's slot) until it is dropped.
struct Holding<T> {
    inner: Body,
    _held: T,
}

impl<T: Send + Unpin + 'static> HttpBody for Holding<T> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

enum BodyError {
    TooLarge,
    Failed,
}

/// The whole body, refused as soon as it passes `max` bytes (never held beyond that).
async fn read_capped(body: Body, max: usize) -> Result<Bytes, BodyError> {
    let mut body = std::pin::pin!(body);
    let mut out = Vec::new();
    while let Some(frame) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
        let frame = frame.map_err(|_| BodyError::Failed)?;
        if let Ok(data) = frame.into_data() {
            if out.len() + data.len() > max {
                return Err(BodyError::TooLarge);
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(Bytes::from(out))
}

/// A JSON-RPC error object as the whole response.
fn rpc_error(status: StatusCode, id: Value, code: i64, message: &str) -> Response {
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": code, "message": message },
    });
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn session_not_found() -> Response {
    rpc_error(
        StatusCode::NOT_FOUND,
        Value::Null,
        SESSION_NOT_FOUND,
        "Session not found: it ended (DELETE, idle time or a restart) or never existed; initialize a new one.",
    )
}

/// A refusal by a cap: try again later, and this connection is closed so that it holds no slot
/// of the server's connections meanwhile.
fn refuse_and_close(response: &mut Response) {
    let headers = response.headers_mut();
    headers.insert(
        header::RETRY_AFTER,
        HeaderValue::from_static(RETRY_AFTER_SECONDS),
    );
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
}
