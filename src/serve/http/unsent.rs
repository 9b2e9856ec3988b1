//! The budget of bytes in responses not yet sent: a client that stops reading keeps its
//! response in the server's memory until the write timeout closes its connection, so many such
//! clients could hold gigabytes. Every response body over [`SMALL_BODY`] holds its size against
//! one budget for the server until the body is sent (or its connection ends); a response that
//! does not fit is answered 503 with `Retry-After` instead, and a streamed one (MCP's event
//! stream) whose next large message does not fit is ended. Bodies are handed to hyper in pieces
//! of [`PIECE`] bytes, so that hyper takes the next piece only once it has written the last: a
//! body is dropped, and its share given back, when its last piece has gone out.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue};
use axum::response::Response;
use http_body::{Body as HttpBody, Frame, SizeHint};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::{new_request_id, ErrorCode, ToolError};

use super::responses::error_response;

/// Bodies up to this size are not counted: at most one such body per connection is held.
pub(crate) const SMALL_BODY: usize = 64 * 1024;

/// The most bytes of a body handed to hyper at once.
const PIECE: usize = 64 * 1024;

/// The budget's unit: a KiB (a semaphore counts at most `u32::MAX` permits of one acquire).
const UNIT: usize = 1024;

/// What `Retry-After` says: unread responses are cut off within the write timeout, and read
/// ones leave in moments.
const RETRY_AFTER_SECONDS: &str = "5";

/// The server's budget of bytes in unsent response bodies.
#[derive(Clone)]
pub(crate) struct UnsentBudget {
    units: Arc<Semaphore>,
    max_bytes: usize,
}

impl UnsentBudget {
    /// A budget of `max_bytes` (at least one [`SMALL_BODY`], so any body fits an empty budget).
    pub(crate) fn new(max_bytes: usize) -> UnsentBudget {
        let max_bytes = max_bytes.max(SMALL_BODY + UNIT);
        let units = (max_bytes / UNIT).min(Semaphore::MAX_PERMITS);
        UnsentBudget {
            units: Arc::new(Semaphore::new(units)),
            max_bytes,
        }
    }

    /// Bytes held by unsent bodies now.
    #[cfg(test)]
    fn held_bytes(&self) -> usize {
        (self.max_bytes / UNIT).min(Semaphore::MAX_PERMITS) * UNIT
            - self.units.available_permits() * UNIT
    }

    /// `response` with its body counted against the budget; a 503 when it does not fit.
    pub(crate) fn hold(&self, response: Response) -> Response {
        let (parts, body) = response.into_parts();
        match body.size_hint().exact() {
            Some(n) if n as usize > SMALL_BODY => match self.take(n as usize) {
                Some(permit) => Response::from_parts(
                    parts,
                    Body::new(Counted {
                        inner: body,
                        budget: self.clone(),
                        piece: Bytes::new(),
                        held: Some(permit),
                        streamed: false,
                    }),
                ),
                None => {
                    let id = parts
                        .headers
                        .get("x-request-id")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_string)
                        .unwrap_or_else(new_request_id);
                    self.refusal(n as usize, &id)
                }
            },
            Some(_) => Response::from_parts(parts, body),
            None => Response::from_parts(
                parts,
                Body::new(Counted {
                    inner: body,
                    budget: self.clone(),
                    piece: Bytes::new(),
                    held: None,
                    streamed: true,
                }),
            ),
        }
    }

    fn take(&self, bytes: usize) -> Option<OwnedSemaphorePermit> {
        let units = u32::try_from(bytes.div_ceil(UNIT)).ok()?;
        self.units.clone().try_acquire_many_owned(units).ok()
    }

    fn refusal(&self, bytes: usize, request_id: &str) -> Response {
        let error = ToolError::new(
            ErrorCode::SearchUnavailable,
            format!(
                "The server holds as many bytes of responses its clients have not read yet as it allows ({} MiB, --max-unsent-mib), and this response ({bytes} bytes) does not fit; retry in a moment.",
                self.max_bytes / (1024 * 1024)
            ),
        );
        let mut response = error_response(&error, request_id);
        response.headers_mut().insert(
            header::RETRY_AFTER,
            HeaderValue::from_static(RETRY_AFTER_SECONDS),
        );
        response
    }
}

/// A body counted against the budget and handed out in pieces of at most [`PIECE`] bytes.
struct Counted {
    inner: Body,
    budget: UnsentBudget,
    /// What is left of the frame being handed out.
    piece: Bytes,
    /// The share of the budget held: the whole body's for a body of known size, the current
    /// frame's for a stream.
    held: Option<OwnedSemaphorePermit>,
    streamed: bool,
}

impl HttpBody for Counted {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        if !this.piece.is_empty() {
            let n = this.piece.len().min(PIECE);
            return Poll::Ready(Some(Ok(Frame::data(this.piece.split_to(n)))));
        }
        if this.streamed {
            // The last frame has gone out: its share is free.
            this.held = None;
        }
        let frame = match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => frame,
            other => return other,
        };
        let data = match frame.into_data() {
            Ok(data) => data,
            Err(frame) => return Poll::Ready(Some(Ok(frame))),
        };
        if this.streamed && data.len() > SMALL_BODY {
            match this.budget.take(data.len()) {
                Some(permit) => this.held = Some(permit),
                None => {
                    tracing::warn!(
                        target: "kbtools",
                        "a streamed response's message of {} bytes was dropped and its stream ended: the server holds as many bytes of unsent responses as it allows ({} MiB, --max-unsent-mib)",
                        data.len(),
                        this.budget.max_bytes / (1024 * 1024)
                    );
                    return Poll::Ready(Some(Err(axum::Error::new(
                        "the budget of unsent response bytes is spent",
                    ))));
                }
            }
        }
        this.piece = data;
        let n = this.piece.len().min(PIECE);
        Poll::Ready(Some(Ok(Frame::data(this.piece.split_to(n)))))
    }

    fn is_end_stream(&self) -> bool {
        self.piece.is_empty() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let mut hint = self.inner.size_hint();
        let piece = self.piece.len() as u64;
        hint.set_lower(hint.lower() + piece);
        if let Some(upper) = hint.upper() {
            hint.set_upper(upper + piece);
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn big(n: usize) -> Response {
        Response::new(Body::from(vec![b'x'; n]))
    }

    async fn drain(response: Response) -> (usize, usize) {
        let mut body = std::pin::pin!(response.into_body());
        let (mut frames, mut bytes) = (0, 0);
        while let Some(frame) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
            let data = frame.unwrap().into_data().unwrap();
            assert!(data.len() <= PIECE);
            frames += 1;
            bytes += data.len();
        }
        (frames, bytes)
    }

    #[tokio::test]
    async fn large_bodies_hold_their_size_until_sent_and_the_rest_are_refused() {
        let budget = UnsentBudget::new(1024 * 1024);
        let first = budget.hold(big(600 * 1024));
        assert_eq!(first.status(), 200);
        assert_eq!(budget.held_bytes(), 600 * 1024);
        let refused = budget.hold(big(600 * 1024));
        assert_eq!(refused.status(), 503);
        assert!(refused.headers().contains_key(header::RETRY_AFTER));
        // Small bodies are never counted nor refused.
        assert_eq!(budget.hold(big(SMALL_BODY)).status(), 200);
        assert_eq!(budget.held_bytes(), 600 * 1024);
        let (frames, bytes) = drain(first).await;
        assert_eq!((frames, bytes), (10, 600 * 1024));
        assert_eq!(budget.held_bytes(), 0);
        assert_eq!(budget.hold(big(600 * 1024)).status(), 200);
    }

    #[tokio::test]
    async fn a_dropped_body_gives_its_share_back() {
        let budget = UnsentBudget::new(1024 * 1024);
        let held = budget.hold(big(900 * 1024));
        assert_eq!(budget.hold(big(200 * 1024)).status(), 503);
        drop(held);
        assert_eq!(budget.held_bytes(), 0);
        assert_eq!(budget.hold(big(200 * 1024)).status(), 200);
    }
}
