//! The stdio framing: one JSON-RPC message a line, bounded (an over-long line is dropped as it
//! streams in), malformed lines answered with JSON-RPC errors and logged, at most
//! [`MAX_IN_FLIGHT`] requests read ahead of their answers.

use std::sync::{Arc, Mutex};

use rmcp::model::RequestId;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt};

use rmcp::service::RoleServer;
use serde_json::{json, Value};

use crate::serve::live::{Level, Log};

/// The requests this server knows (so params that do not fit one are invalid params, not an
/// unknown method).
pub(super) const KNOWN_METHODS: [&str; 5] = [
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
