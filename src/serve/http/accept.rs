//! The accept loop: hyper's HTTP/1 connections with their limits (head size and time, fields,
//! connections at once and per client, blocked writes, the budget of unsent response bytes),
//! graceful shutdown, and the signal that asks for it.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use crate::kb::KnowledgeBase;
use crate::serve::live::LiveKnowledgeBase;

use super::clients::{ClientAddr, ClientKey, ConnectionsPerClient};
use super::unsent::UnsentBudget;
use super::{build_router, fixed, HttpError, HttpOptions};

/// Most connections refused for their client's cap that are being answered at once; beyond
/// it a refused connection is closed without an answer.
const MAX_REFUSING: usize = 256;

/// Longest time an answer to a refused connection may take (written, then the client's request
/// read so that closing does not reset the connection before the client reads the answer).
const REFUSAL_TIME: Duration = Duration::from_secs(2);

/// The raw 503 a connection over its client's cap gets, before its request is read.
fn over_client_cap(client: ClientKey, max: usize, options: &HttpOptions) -> Vec<u8> {
    let id = crate::error::new_request_id();
    let error = crate::error::ToolError::new(
        crate::error::ErrorCode::SearchUnavailable,
        format!(
            "This client ({client}) has {max} connections open to the server, the most one client may hold (--max-connections-per-client); close connections it does not use, or retry later."
        ),
    );
    let body = serde_json::to_vec(&error.envelope(&id)).unwrap_or_default();
    let mut answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: {}\r\nretry-after: {}\r\nx-request-id: {id}\r\nconnection: close\r\n\r\n",
        body.len(),
        options.header_read_timeout.as_secs().max(1)
    )
    .into_bytes();
    answer.extend_from_slice(&body);
    answer
}

/// Writes `answer`, ends the connection's sending side, and reads what the client sent (up to
/// 64 KiB, within [`REFUSAL_TIME`]) so that the close does not reset the connection first.
async fn refuse(mut stream: tokio::net::TcpStream, answer: Vec<u8>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let _ = tokio::time::timeout(REFUSAL_TIME, async {
        stream.write_all(&answer).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 4096];
        let mut left = 64 * 1024usize;
        loop {
            let n = stream.read(&mut sink).await?;
            if n == 0 || n >= left {
                return Ok::<_, std::io::Error>(());
            }
            left -= n;
        }
    })
    .await;
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
        loopback: super::hosts::is_loopback_ip(listener.local_addr()?.ip()),
        ..options
    };
    if let Some(n) = options.max_concurrent_calls {
        crate::serve::pool::limit_calls(n);
    }
    let app = build_router(kbs, &options, stop.clone())?;
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(options.header_read_timeout)
        // hyper's floor for its read buffer is 8 KiB.
        .max_buf_size(options.max_head_bytes.max(8192))
        .max_headers(options.max_headers);
    let max_connections = options.max_connections.clamp(1, 1 << 20);
    let slots = Arc::new(Semaphore::new(max_connections));
    let per_client = ConnectionsPerClient::new(options.connections_per_client());
    let refusing = Arc::new(Semaphore::new(MAX_REFUSING));
    let budget = UnsentBudget::new(options.max_unsent_bytes);
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
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            // A connection reset before it was accepted: nothing to serve.
            Err(e) if is_connection_error(&e) => continue,
            // Out of file descriptors (or memory): wait for connections to close.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let client = ClientKey::of(peer.ip());
        let Some(counted) = per_client.open(client) else {
            // Over its client's cap: answered at once, holding no slot.
            drop(slot);
            if let Ok(permit) = refusing.clone().try_acquire_owned() {
                let answer = over_client_cap(client, per_client.max(), &options);
                tokio::spawn(async move {
                    let _permit = permit;
                    refuse(stream, answer).await;
                });
            }
            continue;
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let budget = budget.clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<_>| {
            request.extensions_mut().insert(ClientAddr(client));
            let mut app = app.clone();
            let budget = budget.clone();
            async move {
                let response = tower::Service::call(&mut app, request).await?;
                Ok::<_, std::convert::Infallible>(budget.hold(response))
            }
        });
        let stream = WriteTimeout::new(stream, options.write_timeout);
        let connection = http.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
        let mut close = closing.subscribe();
        tokio::spawn(async move {
            let _slot = slot;
            let _counted = counted;
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
