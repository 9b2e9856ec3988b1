//! `kbtools serve` against hostile clients, end to end: the binary runs as a child process on a
//! free loopback port (so its file descriptors and peak memory are its own) with a 2 s header
//! timeout, and the tests speak raw bytes over `std::net::TcpStream`. Oversized URLs and
//! headers (414, 431), very many headers (431), garbage, HTTP/0.9, truncated and pipelined
//! requests, connections closed mid-request, slow clients (a header byte per second, hundreds
//! of idle connections: each closed after the header timeout) and 200 parallel requests. After
//! each, the server keeps answering others; the normal client's latency under slowloris and
//! the server's peak RSS are printed.
//!
//! Waits are bounded (hang detection, not performance bounds); the child is killed when a test
//! ends, however it ends.

use crate::common;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Longest wait for any one answer (hang detection, not a performance bound): 200 parallel
/// searches of a debug build on a loaded machine take their time.
const WAIT: Duration = common::HANG;
/// The server's header timeout in these tests, in seconds.
const HEADER_TIMEOUT_SECS: u64 = 2;

/// The fixture's index, built once for every server of this file.
fn index_dir() -> &'static PathBuf {
    common::built_fixture_index()
}

/// `kbtools serve` as a child: killed (and reaped) when dropped; stderr goes to a file.
pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) addr: SocketAddr,
    stderr: PathBuf,
    _dir: tempfile::TempDir,
}

impl Server {
    pub(crate) fn start() -> Server {
        Server::start_with(&[])
    }

    /// A server with extra `kbtools serve` arguments.
    pub(crate) fn start_with(extra: &[&str]) -> Server {
        Server::spawn(None, extra)
    }

    /// A server listening on all interfaces (beyond loopback), reached on 127.0.0.1.
    pub(crate) fn start_beyond_loopback(extra: &[&str]) -> Server {
        Server::spawn_on("0.0.0.0", None, extra)
    }

    /// A server listening on `bind` (an address as `--addr` takes it, without the port), reached
    /// on 127.0.0.1.
    pub(crate) fn start_on(bind: &str, extra: &[&str]) -> Server {
        Server::spawn_on(bind, None, extra)
    }

    /// A server with extra arguments, under a soft limit on open files when one is given (the
    /// shell's `ulimit -n`, then `exec`, so the child is kbtools itself).
    fn spawn(open_files: Option<u32>, extra: &[&str]) -> Server {
        Server::spawn_on("127.0.0.1", open_files, extra)
    }

    /// [`Server::spawn`] listening on `bind` (an IPv4 address, or an IPv6 one in brackets that
    /// IPv4 loopback reaches); the tests connect on 127.0.0.1.
    fn spawn_on(bind: &str, open_files: Option<u32>, extra: &[&str]) -> Server {
        Server::spawn_full(bind, open_files, index_dir(), extra)
    }

    /// A server over the index in `index` (another bundle than the fixture's).
    pub(crate) fn start_over(index: &std::path::Path, extra: &[&str]) -> Server {
        Server::spawn_full("127.0.0.1", None, index, extra)
    }

    fn spawn_full(
        bind: &str,
        open_files: Option<u32>,
        index: &std::path::Path,
        extra: &[&str],
    ) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let stderr = dir.path().join("stderr.txt");
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let listen = format!("{bind}:{port}");
        let mut command = match open_files {
            None => Command::new(env!("CARGO_BIN_EXE_kbtools")),
            Some(n) => {
                let mut shell = Command::new("sh");
                shell
                    .arg("-c")
                    .arg(format!("ulimit -n {n} && exec \"$0\" \"$@\""))
                    .arg(env!("CARGO_BIN_EXE_kbtools"));
                shell
            }
        };
        let child = common::clean_env(&mut command)
            .arg("serve")
            .arg("--index")
            .arg(index)
            .arg("--no-refresh")
            .arg("--addr")
            .arg(&listen)
            .args(if extra.contains(&"--header-timeout") {
                vec![]
            } else {
                vec![
                    "--header-timeout".to_string(),
                    HEADER_TIMEOUT_SECS.to_string(),
                ]
            })
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let mut server = Server {
            child,
            addr,
            stderr,
            _dir: dir,
        };
        let started = Instant::now();
        while server.try_get("/openapi/v2/health").is_err() {
            server.assert_running();
            assert!(
                started.elapsed() < WAIT,
                "kbtools serve did not answer; stderr:\n{}",
                server.stderr()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    pub(crate) fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    pub(crate) fn assert_running(&mut self) {
        if let Some(status) = self.child.try_wait().unwrap() {
            panic!(
                "kbtools serve exited ({status}); stderr:\n{}",
                self.stderr()
            );
        }
    }

    pub(crate) fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect_timeout(&self.addr, WAIT).unwrap();
        stream.set_read_timeout(Some(WAIT)).unwrap();
        stream.set_write_timeout(Some(WAIT)).unwrap();
        stream
    }

    /// Sends `request` and reads until the server closes: the whole reply, or the I/O error.
    pub(crate) fn exchange(&self, request: &[u8]) -> std::io::Result<Vec<u8>> {
        let mut stream = self.connect();
        stream.write_all(request)?;
        read_all(&mut stream)
    }

    /// A connection from `source`, a loopback address: one other than 127.0.0.1 is another
    /// client for the server's per-client caps. `receive_buffer` sets the socket's receive
    /// buffer before it connects (a small one makes a client that does not read hold its
    /// response on the server).
    pub(crate) fn connect_from(&self, source: &str, receive_buffer: Option<u32>) -> TcpStream {
        self.try_connect_from(source, receive_buffer).unwrap()
    }

    fn try_connect_from(
        &self,
        source: &str,
        receive_buffer: Option<u32>,
    ) -> std::io::Result<TcpStream> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let addr = self.addr;
        let source: SocketAddr = format!("{source}:0").parse().unwrap();
        let stream = runtime.block_on(async move {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind(source)?;
            if let Some(n) = receive_buffer {
                socket.set_recv_buffer_size(n)?;
            }
            tokio::time::timeout(WAIT, socket.connect(addr))
                .await
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??
                .into_std()
        })?;
        stream.set_nonblocking(false)?;
        stream.set_read_timeout(Some(WAIT))?;
        stream.set_write_timeout(Some(WAIT))?;
        Ok(stream)
    }

    pub(crate) fn try_get(&self, target: &str) -> Result<(u16, Value), String> {
        self.try_get_from("127.0.0.1", target)
    }

    /// `GET target` on a new connection from `source` (see [`Server::connect_from`]).
    pub(crate) fn try_get_from(&self, source: &str, target: &str) -> Result<(u16, Value), String> {
        let request = format!(
            "GET {target} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.addr
        );
        let mut stream = if source == "127.0.0.1" {
            TcpStream::connect_timeout(&self.addr, WAIT).map_err(|e| e.to_string())?
        } else {
            self.try_connect_from(source, None)
                .map_err(|e| e.to_string())?
        };
        stream
            .set_read_timeout(Some(WAIT))
            .map_err(|e| e.to_string())?;
        stream
            .write_all(request.as_bytes())
            .map_err(|e| e.to_string())?;
        let bytes = read_all(&mut stream).map_err(|e| e.to_string())?;
        let status = status_of(&bytes).ok_or("no status line")?;
        let body = body_of(&bytes);
        let json = serde_json::from_slice(body).map_err(|e| format!("{e}: {bytes:?}"))?;
        Ok((status, json))
    }

    /// The server still answers a search correctly.
    pub(crate) fn still_answers(&mut self) {
        self.still_answers_from("127.0.0.1");
    }

    /// The server still answers health and a search from `source` (see
    /// [`Server::connect_from`]).
    pub(crate) fn still_answers_from(&mut self, source: &str) {
        self.assert_running();
        let (status, body) = self
            .try_get_from(source, "/openapi/v2/health")
            .unwrap_or_else(|e| panic!("health: {e}; stderr:\n{}", self.stderr()));
        assert_eq!((status, &body["status"]), (200, &Value::from("ok")));
        let (status, body) = self.try_get_from(source, &search_target()).unwrap();
        assert_eq!(status, 200, "{body}");
        assert!(!body["items"].as_array().unwrap().is_empty(), "{body}");
    }

    /// The child's peak resident set (VmHWM), in KiB.
    pub(crate) fn peak_rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM in /proc/<pid>/status")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn search_target() -> String {
    "/search?query=How%20do%20agents%20read%20related%20files%3F&mode=file&limit=3".to_string()
}

pub(crate) fn read_all(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes)?;
    Ok(bytes)
}

pub(crate) fn status_of(bytes: &[u8]) -> Option<u16> {
    let line = bytes.split(|&b| b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    line.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
}

pub(crate) fn body_of(bytes: &[u8]) -> &[u8] {
    match bytes.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(i) => &bytes[i + 4..],
        None => &[],
    }
}

/// Every status line in a reply (pipelined replies have several).
fn statuses(bytes: &[u8]) -> Vec<u16> {
    let text = String::from_utf8_lossy(bytes);
    text.match_indices("HTTP/1.1 ")
        .filter_map(|(i, _)| text.get(i + 9..i + 12)?.parse().ok())
        .collect()
}

/// The soft limit on open files of this process (from /proc), to size the idle-connection load.
fn open_file_limit() -> u64 {
    std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|limits| {
            limits
                .lines()
                .find(|l| l.starts_with("Max open files"))
                .and_then(|l| l.split_whitespace().nth(3))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(1024)
}

#[test]
fn oversized_urls_and_headers_get_414_or_431_and_the_server_keeps_serving() {
    let mut server = Server::start();
    // A 100 KB URL: the head fits hyper's buffer, the URI is over its 64 KiB limit.
    let target = format!("/openapi/v2/health?pad={}", "a".repeat(100_000));
    let reply = server
        .exchange(format!("GET {target} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes())
        .unwrap();
    assert_eq!(
        status_of(&reply),
        Some(414),
        "{:?}",
        &reply[..reply.len().min(200)]
    );
    server.still_answers();

    // One 200 KB header, and a head of 5,000 small headers: over the 128 KiB head limit.
    let big_header = format!(
        "GET /openapi/v2/health HTTP/1.1\r\nHost: localhost\r\nX-Pad: {}\r\n\r\n",
        "b".repeat(200_000)
    );
    let many_small: String = (0..5_000).map(|i| format!("X-H{i}: {i}\r\n")).collect();
    // 101 headers: one over the count limit, in a small head.
    let too_many: String = (0..101).map(|i| format!("X-H{i}: v\r\n")).collect();
    for (what, request) in [
        ("a 200 KB header", big_header),
        (
            "5,000 headers",
            format!("GET /openapi/v2/health HTTP/1.1\r\nHost: localhost\r\n{many_small}\r\n"),
        ),
        (
            "101 headers",
            format!("GET /openapi/v2/health HTTP/1.1\r\n{too_many}\r\n"),
        ),
    ] {
        let reply = server.exchange(request.as_bytes());
        match reply {
            Ok(reply) => assert_eq!(status_of(&reply), Some(431), "{what}"),
            // The server answers 431 and closes while the rest is still being sent; the close
            // can reset the connection before the answer is read. Never a hang, never a 2xx.
            Err(e) => eprintln!("{what}: connection reset ({e})"),
        }
        server.still_answers();
    }

    // A 10 MB request line: the server answers 431 at 128 KiB and closes; the client's write
    // of the rest fails or is reset. Sent from a thread so the reply is read concurrently.
    let mut stream = server.connect();
    let mut writer = stream.try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        let _ = writer.write_all(b"GET /openapi/v2/health?pad=");
        let chunk = vec![b'c'; 64 * 1024];
        let mut sent = 0;
        while sent < 10_000_000 {
            if writer.write_all(&chunk).is_err() {
                return sent;
            }
            sent += chunk.len();
        }
        let _ = writer.write_all(b" HTTP/1.1\r\nHost: localhost\r\n\r\n");
        sent
    });
    let mut reply = Vec::new();
    let read = stream.read_to_end(&mut reply);
    let sent = sender.join().unwrap();
    eprintln!(
        "10 MB request line: {} after {sent} bytes sent; reply status {:?}",
        match &read {
            Ok(_) => "closed".to_string(),
            Err(e) => format!("read error {e}"),
        },
        status_of(&reply)
    );
    assert!(
        sent < 10_000_000,
        "the server read a 10 MB request line to its end"
    );
    assert!(
        matches!(status_of(&reply), None | Some(431)),
        "{:?}",
        status_of(&reply)
    );
    server.still_answers();
    eprintln!(
        "kbtools serve peak RSS after oversized requests: {} KiB",
        server.peak_rss_kib()
    );
}

#[test]
fn garbage_truncated_http09_and_pipelined_requests() {
    let mut server = Server::start();
    for (what, request) in [
        (
            "binary garbage",
            b"\x00\xff\xfe\x01garbage\r\n\r\n".to_vec(),
        ),
        (
            "a bad method",
            b"G\x01T / HTTP/1.1\r\nHost: localhost\r\n\r\n".to_vec(),
        ),
        (
            "a bad version",
            b"GET / HTTP/9.9\r\nHost: localhost\r\n\r\n".to_vec(),
        ),
        ("HTTP/0.9", b"GET /openapi/v2/health\r\n\r\n".to_vec()),
        (
            "a header without colon",
            b"GET / HTTP/1.1\r\nHost x\r\n\r\n".to_vec(),
        ),
        (
            "a bad Content-Length",
            b"GET / HTTP/1.1\r\nHost: localhost\r\nContent-Length: -5\r\n\r\n".to_vec(),
        ),
        (
            "two Content-Lengths",
            b"GET / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab"
                .to_vec(),
        ),
    ] {
        let reply = server.exchange(&request).unwrap();
        assert_eq!(
            status_of(&reply),
            Some(400),
            "{what}: {}",
            String::from_utf8_lossy(&reply)
        );
        server.still_answers();
    }

    for seed in 1..=20u64 {
        let mut state = seed;
        let bytes: Vec<u8> = (0..2048)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (state >> 56) as u8
            })
            .collect();
        // Random bytes end in a 400 or a plain close (the head never completes); never a hang.
        let mut stream = server.connect();
        let _ = stream.write_all(&bytes);
        let _ = stream.shutdown(Shutdown::Write);
        let mut reply = Vec::new();
        let _ = stream.read_to_end(&mut reply);
        assert!(matches!(status_of(&reply), None | Some(400)), "seed {seed}");
    }
    server.still_answers();

    // Truncated: the head stops and the client closes its side: closed without an answer.
    let mut stream = server.connect();
    stream
        .write_all(b"GET /openapi/v2/health HTTP/1.1\r\nHost: localhost\r\n")
        .unwrap();
    stream.shutdown(Shutdown::Write).unwrap();
    let reply = read_all(&mut stream).unwrap_or_default();
    assert!(matches!(status_of(&reply), None | Some(400)), "{reply:?}");

    // Closed mid-request, mid-body and right after connecting.
    for partial in [
        &b"GET /openapi/v2/heal"[..],
        b"GET /openapi/v2/health HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\nabc",
        b"",
    ] {
        let mut stream = server.connect();
        stream.write_all(partial).unwrap();
        drop(stream);
    }
    server.still_answers();

    // Pipelined: three requests in one write are answered in order on one connection.
    let target = search_target();
    let pipelined = format!(
        "GET /openapi/v2/health HTTP/1.1\r\nHost: localhost\r\n\r\n\
         GET {target} HTTP/1.1\r\nHost: localhost\r\n\r\n\
         GET /no/such/route HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    );
    let reply = server.exchange(pipelined.as_bytes()).unwrap();
    assert_eq!(statuses(&reply), vec![200, 200, 404]);
    server.still_answers();
}

#[test]
fn slow_and_idle_clients_do_not_stop_others_and_are_disconnected() {
    // One address opens every connection: no per-client cap (tests/it/server_limits.rs has it).
    let mut server = Server::start_with(&["--max-connections-per-client", "0"]);
    let idle = 300.min(open_file_limit().saturating_sub(200) / 2) as usize;
    eprintln!(
        "holding {idle} idle connections (open-file limit {})",
        open_file_limit()
    );
    assert!(idle >= 100, "too few file descriptors for this test");

    // Idle connections: a third send nothing, a third half a request head, a third one
    // complete request and then stay open (keep-alive).
    let mut held = Vec::new();
    for i in 0..idle {
        let mut stream = server.connect();
        match i % 3 {
            0 => {}
            1 => stream
                .write_all(b"GET /openapi/v2/health HTTP/1.1\r\nHo")
                .unwrap(),
            _ => stream
                .write_all(b"GET /openapi/v2/health HTTP/1.1\r\nHost: localhost\r\n\r\n")
                .unwrap(),
        }
        held.push(stream);
    }
    let opened = Instant::now();

    // Slowloris: a header byte per second on a few connections, until they are cut off.
    let stop = Arc::new(AtomicBool::new(false));
    let slow: Vec<_> = (0..4)
        .map(|_| {
            let mut stream = server.connect();
            let stop = stop.clone();
            std::thread::spawn(move || -> Result<Duration, String> {
                let started = Instant::now();
                let head = b"GET /openapi/v2/health HTTP/1.1\r\nX-Slow: ".to_vec();
                stream.write_all(&head).map_err(|e| e.to_string())?;
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_secs(1));
                    if stream.write_all(b"a").is_err() {
                        return Ok(started.elapsed());
                    }
                    // The server closed: a read sees the end (or a reset) at once.
                    stream.set_nonblocking(true).unwrap();
                    let mut byte = [0u8; 1];
                    match stream.read(&mut byte) {
                        Ok(0) => return Ok(started.elapsed()),
                        Err(e) if e.kind() != std::io::ErrorKind::WouldBlock => {
                            return Ok(started.elapsed())
                        }
                        _ => {}
                    }
                    stream.set_nonblocking(false).unwrap();
                }
                Err("still open when the test gave up".into())
            })
        })
        .collect();

    // A normal client meanwhile: every request answered.
    let mut latencies = Vec::new();
    for _ in 0..10 {
        let started = Instant::now();
        server.still_answers();
        latencies.push(started.elapsed());
    }
    latencies.sort();
    eprintln!(
        "normal client under {idle} idle + 4 slowloris connections: 10 × (health + search), \
         median {:?}, max {:?}",
        latencies[latencies.len() / 2],
        latencies[latencies.len() - 1]
    );
    eprintln!(
        "kbtools serve peak RSS with {idle} idle connections: {} KiB",
        server.peak_rss_kib()
    );

    // Every idle connection is closed by the server after the header timeout (the kept-alive
    // ones after answering their request).
    for (i, stream) in held.iter_mut().enumerate() {
        let mut bytes = Vec::new();
        // The server closes (end of stream, or a reset for the ones with unread bytes); a
        // read timeout means it kept the connection open.
        if let Err(e) = stream.read_to_end(&mut bytes) {
            assert_eq!(
                e.kind(),
                std::io::ErrorKind::ConnectionReset,
                "connection {i} was not closed by the server: {e}"
            );
        }
        if i % 3 == 2 {
            assert_eq!(status_of(&bytes), Some(200), "connection {i}");
        }
    }
    let all_closed = opened.elapsed();
    eprintln!("all {idle} idle connections closed by the server after {all_closed:?}");
    assert!(all_closed >= Duration::from_secs(HEADER_TIMEOUT_SECS - 1));

    let give_up = Instant::now();
    while !slow.iter().all(|t| t.is_finished()) && give_up.elapsed() < WAIT {
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::Relaxed);
    for thread in slow {
        let cut = thread.join().unwrap().unwrap();
        eprintln!("slowloris connection cut off after {cut:?}");
    }
    server.still_answers();
}

#[test]
fn two_hundred_parallel_requests_are_all_answered() {
    let mut server = Server::start();
    let addr = server.addr;
    let threads: Vec<_> = (0..200)
        .map(|i| {
            std::thread::spawn(move || -> Result<u16, String> {
                let target = if i % 2 == 0 {
                    search_target()
                } else {
                    "/tree?parentPath=pages&limit=5".to_string()
                };
                let mut stream =
                    TcpStream::connect_timeout(&addr, WAIT).map_err(|e| e.to_string())?;
                stream
                    .set_read_timeout(Some(WAIT))
                    .map_err(|e| e.to_string())?;
                let request = format!(
                    "GET {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
                );
                stream
                    .write_all(request.as_bytes())
                    .map_err(|e| e.to_string())?;
                let bytes = read_all(&mut stream).map_err(|e| e.to_string())?;
                let body: Value =
                    serde_json::from_slice(body_of(&bytes)).map_err(|e| e.to_string())?;
                if body["items"]
                    .as_array()
                    .is_none_or(|items| items.is_empty())
                {
                    return Err(format!("no items: {body}"));
                }
                status_of(&bytes).ok_or_else(|| "no status".to_string())
            })
        })
        .collect();
    let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let ok = results.iter().filter(|r| matches!(r, Ok(200))).count();
    assert_eq!(
        ok,
        200,
        "{:?}",
        results.iter().find(|r| !matches!(r, Ok(200)))
    );
    eprintln!(
        "kbtools serve peak RSS after 200 parallel requests: {} KiB",
        server.peak_rss_kib()
    );
    server.still_answers();
}

#[test]
fn connections_over_the_cap_wait_and_are_served_when_slots_free() {
    // One client opens every connection here: no cap of its own below the server's.
    let mut server = Server::start_with(&[
        "--max-connections",
        "20",
        "--max-connections-per-client",
        "20",
    ]);
    // The health probe of `start` has ended; hold every slot with connections that send nothing.
    let held: Vec<TcpStream> = (0..20).map(|_| server.connect()).collect();
    // Over the cap: accepted by the kernel, served once the idle ones are cut off.
    let started = Instant::now();
    server.still_answers();
    eprintln!(
        "a request over a 20-connection cap held by idle clients was answered after {:?} \
         (header timeout {HEADER_TIMEOUT_SECS} s)",
        started.elapsed()
    );
    drop(held);
    server.still_answers();
}

#[test]
fn running_out_of_file_descriptors_does_not_stop_the_server() {
    // 128 open files for the server; 300 connections exhaust them. Accepting fails (EMFILE)
    // until idle connections are cut off; the server waits, then accepts again.
    let mut server = Server::spawn(Some(128), &[]);
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", server.child.id())).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    assert_eq!(line.split_whitespace().nth(3), Some("128"), "{line}");
    let held: Vec<TcpStream> = (0..300).map(|_| server.connect()).collect();
    let started = Instant::now();
    server.still_answers();
    eprintln!(
        "with 300 idle connections against a 128-file limit, a request was answered after {:?}",
        started.elapsed()
    );
    drop(held);
    server.still_answers();
    assert!(!server.stderr().contains("panicked"), "{}", server.stderr());
}

#[test]
fn a_client_that_stops_reading_is_disconnected_after_the_write_timeout() {
    let mut server = Server::start_with(&["--write-timeout", "2"]);
    let (status, spec) = server.try_get("/openapi/v2/openapi.json").unwrap();
    assert_eq!(status, 200);
    let size = spec.to_string().len();
    // 2,000 pipelined requests for the served document (far more than the socket buffers
    // hold), and no read while the server writes.
    let mut stream = server.connect();
    let mut writer = stream.try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        let one = "GET /openapi/v2/openapi.json HTTP/1.1\r\nHost: localhost\r\n\r\n";
        let _ = writer.write_all(one.repeat(2_000).as_bytes());
    });
    // Meanwhile others are answered; the stalled connection is cut 2 s into its stall.
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(5) {
        server.still_answers();
        std::thread::sleep(Duration::from_millis(250));
    }
    let mut bytes = Vec::new();
    let read = stream.read_to_end(&mut bytes);
    if let Err(e) = &read {
        assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}");
    }
    let answered = statuses(&bytes).len();
    eprintln!(
        "a client that stopped reading got {answered} of 2,000 pipelined responses of {size} \
         bytes before the server closed the connection ({})",
        match &read {
            Ok(_) => "end of stream".to_string(),
            Err(e) => e.to_string(),
        }
    );
    assert!(answered < 2_000, "the connection was never cut off");
    let _ = sender.join();
    server.still_answers();
}
