//! `kbtools serve` against a hostile web page and hostile MCP clients (issue 38), end to end on
//! the binary: the `Host` check on every route in both bind modes (DNS rebinding), the whole
//! `Origin` compared on `/mcp`, the cap on MCP sessions, event streams that cannot take every
//! connection, JSON-RPC errors for bad messages, `DELETE`'s statuses, and the bearer scheme in
//! any case.

use std::io::Write;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::hostile_http::{body_of, read_all, status_of, Server};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"guards","version":"1"}}}"#;

/// One reply: status, lowercase header names, body.
struct Reply {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "status {}: not JSON ({e}): {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// Asserts a JSON-RPC error object with `code`.
    fn rpc_error(&self, status: u16, code: i64) -> Value {
        assert_eq!(
            self.status,
            status,
            "{}",
            String::from_utf8_lossy(&self.body)
        );
        let body = self.json();
        assert_eq!(body["jsonrpc"], "2.0", "{body}");
        assert_eq!(body["error"]["code"], code, "{body}");
        assert!(body["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()));
        body
    }
}

/// Sends one request (`Connection: close`) with `host` as its `Host` (none when `None`).
fn send(
    server: &Server,
    method: &str,
    target: &str,
    host: Option<&str>,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    send_from(server, "127.0.0.1", method, target, host, headers, body)
}

/// [`send`] from the loopback address `source` (another client for the per-client caps).
fn send_from(
    server: &Server,
    source: &str,
    method: &str,
    target: &str,
    host: Option<&str>,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    let mut text = format!("{method} {target} HTTP/1.1\r\n");
    if let Some(host) = host {
        text.push_str(&format!("Host: {host}\r\n"));
    }
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        text.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    text.push_str("Connection: close\r\n\r\n");
    text.push_str(body);
    let mut stream = server.connect_from(source, None);
    stream.write_all(text.as_bytes()).expect("the request sent");
    let bytes = read_all(&mut stream).expect("a reply");
    let split = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    Reply {
        status: status_of(&bytes).expect("a status line"),
        head: String::from_utf8_lossy(&bytes[..split]).into_owned(),
        body: body_of(&bytes).to_vec(),
    }
}

const MCP_HEADERS: [(&str, &str); 2] = [
    ("Accept", "application/json, text/event-stream"),
    ("Content-Type", "application/json"),
];

/// An MCP POST to `/mcp` from a loopback host, with extra headers.
fn mcp_post(server: &Server, extra: &[(&str, &str)], body: &str) -> Reply {
    let mut headers = MCP_HEADERS.to_vec();
    headers.extend_from_slice(extra);
    let host = server.addr.to_string();
    send(server, "POST", "/mcp", Some(&host), &headers, body)
}

/// A new MCP session's id.
fn initialize(server: &Server) -> String {
    initialize_from(server, "127.0.0.1")
}

/// A new MCP session's id, opened from the loopback address `source`.
fn initialize_from(server: &Server, source: &str) -> String {
    let host = server.addr.to_string();
    let reply = send_from(
        server,
        source,
        "POST",
        "/mcp",
        Some(&host),
        &MCP_HEADERS,
        INITIALIZE,
    );
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    reply
        .header("mcp-session-id")
        .expect("a session")
        .to_string()
}

/// Every route the server has, with a target that answers 200 from a loopback host.
fn routes(server: &Server) -> Vec<(&'static str, String, &'static str)> {
    let (_, listed) = server.try_get("/openapi/v2/knowledge-bases").unwrap();
    let kb = listed["items"][0]["knowledgeBaseId"]
        .as_str()
        .unwrap()
        .to_string();
    let long = format!("/openapi/v2/knowledge-bases/{kb}");
    vec![
        ("GET", "/openapi/v2/health".into(), ""),
        ("GET", "/openapi/v2/openapi.json".into(), ""),
        ("GET", "/openapi/v2/knowledge-bases".into(), ""),
        ("GET", format!("{long}/tree"), ""),
        ("GET", format!("{long}/files/search?query=agents"), ""),
        ("GET", "/search?query=agents".into(), ""),
        ("GET", "/files/search?query=agents".into(), ""),
        ("GET", "/tree".into(), ""),
        ("GET", "/".into(), ""),
        ("GET", format!("/kb/{kb}"), ""),
        ("GET", "/assets/app.js".into(), ""),
        ("GET", "/assets/app.css".into(), ""),
        ("POST", "/mcp".into(), INITIALIZE),
        ("POST", format!("/mcp/{kb}"), INITIALIZE),
    ]
}

fn assert_forbidden(reply: &Reply, what: &str) {
    assert_eq!(
        reply.status,
        403,
        "{what}: {}",
        String::from_utf8_lossy(&reply.body)
    );
    let body = reply.json();
    assert_eq!(body["error"]["code"], "FORBIDDEN", "{what}: {body}");
    assert_eq!(body["error"]["httpStatus"], 403, "{what}: {body}");
    assert!(
        !String::from_utf8_lossy(&reply.body).contains("Agent"),
        "{what}: no knowledge-base content"
    );
}

#[test]
fn bound_to_loopback_every_route_refuses_a_foreign_host() {
    let server = Server::start();
    let port = server.addr.port();
    for (method, target, body) in routes(&server) {
        let headers: &[(&str, &str)] = if method == "POST" { &MCP_HEADERS } else { &[] };
        for foreign in [
            "evil.example".to_string(),
            format!("evil.example:{port}"),
            "localhost.evil.example".to_string(),
            format!("127.0.0.1.evil.example:{port}"),
            "10.1.2.3".to_string(),
        ] {
            let reply = send(&server, method, &target, Some(&foreign), headers, body);
            assert_forbidden(&reply, &format!("{method} {target} Host: {foreign}"));
        }
        for local in [
            "localhost".to_string(),
            format!("localhost:{port}"),
            "LOCALHOST:1".to_string(),
            format!("127.0.0.1:{port}"),
            format!("[::1]:{port}"),
        ] {
            let reply = send(&server, method, &target, Some(&local), headers, body);
            assert_eq!(
                reply.status,
                200,
                "{method} {target} Host: {local}: {}",
                String::from_utf8_lossy(&reply.body)
            );
        }
    }
    // A request without Host (HTTP/1.0; browsers always send one) is answered.
    let bytes = server
        .exchange(b"GET /openapi/v2/health HTTP/1.0\r\n\r\n")
        .unwrap();
    let line = String::from_utf8_lossy(&bytes[..bytes.len().min(12)]).into_owned();
    assert!(
        line.starts_with("HTTP/1.") && line.ends_with(" 200"),
        "{line}"
    );
}

#[test]
fn bound_to_ipv4_mapped_loopback_the_host_check_stays_on() {
    // `[::ffff:127.0.0.1]` is loopback: the server must not count itself beyond it (which
    // turns the Host check off and warns about it).
    let server = Server::start_on("[::ffff:127.0.0.1]", &[]);
    for (method, target, body) in routes(&server) {
        let headers: &[(&str, &str)] = if method == "POST" { &MCP_HEADERS } else { &[] };
        let reply = send(&server, method, &target, Some("evil.com"), headers, body);
        assert_forbidden(&reply, &format!("{method} {target} Host: evil.com"));
        let local = server.addr.to_string();
        let reply = send(&server, method, &target, Some(&local), headers, body);
        assert_eq!(reply.status, 200, "{method} {target} Host: {local}");
    }
    assert!(
        !server.stderr().contains("beyond loopback"),
        "no beyond-loopback warning: {}",
        server.stderr()
    );
}

#[test]
fn allowed_hosts_add_names_a_proxy_uses() {
    let server = Server::start_with(&[
        "--allowed-host",
        "kb.test",
        "--allowed-host",
        "proxy.test:8443",
    ]);
    for (host, answered) in [
        ("kb.test:80", true),
        ("proxy.test:8443", true),
        ("proxy.test:9", false),
        ("evil.example", false),
    ] {
        let reply = send(&server, "GET", "/openapi/v2/health", Some(host), &[], "");
        if answered {
            assert_eq!(reply.status, 200, "{host}");
        } else {
            assert_forbidden(&reply, host);
        }
    }
}

#[test]
fn beyond_loopback_any_host_is_answered_unless_hosts_are_named() {
    let open = Server::start_beyond_loopback(&[]);
    let reply = send(
        &open,
        "GET",
        "/openapi/v2/health",
        Some("anything.example"),
        &[],
        "",
    );
    assert_eq!(reply.status, 200);
    assert!(
        open.stderr().contains("--allowed-host"),
        "a warning names the flag: {}",
        open.stderr()
    );

    let named = Server::start_beyond_loopback(&["--allowed-host", "kb.test"]);
    for (method, target, body) in routes(&named) {
        let headers: &[(&str, &str)] = if method == "POST" { &MCP_HEADERS } else { &[] };
        let reply = send(&named, method, &target, Some("evil.example"), headers, body);
        assert_forbidden(&reply, &format!("{method} {target}"));
        for ok in ["kb.test:7700", "192.0.2.10:7700", "localhost"] {
            let reply = send(&named, method, &target, Some(ok), headers, body);
            assert_eq!(reply.status, 200, "{method} {target} Host: {ok}");
        }
    }
}

#[test]
fn a_bad_allowed_host_is_a_usage_error() {
    let out = crate::common::kbtools()
        .args([
            "serve",
            "--allowed-host",
            "http://kb.test/",
            "--no-refresh",
            "--index",
        ])
        .arg(crate::common::built_fixture_index())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--allowed-host \"http://kb.test/\""),
        "{stderr}"
    );
}

#[test]
fn mcp_origins_are_compared_whole() {
    let server = Server::start();
    for refused in [
        "http://localhost:1234.evil.example",
        "http://localhost:1/evil",
        "http://localhost.evil.example",
        "http://evil.example",
        "http://user@localhost:1",
        "null",
    ] {
        let reply = mcp_post(&server, &[("Origin", refused)], INITIALIZE);
        assert_forbidden(&reply, refused);
    }
    for allowed in [
        "http://localhost:5173",
        "https://127.0.0.1",
        "http://[::1]:3000",
    ] {
        let reply = mcp_post(&server, &[("Origin", allowed)], INITIALIZE);
        assert_eq!(reply.status, 200, "{allowed}");
    }
}

/// A `tools/list` in `session`: its status (404 once the session has ended).
fn list_tools(server: &Server, source: &str, session: &str) -> Reply {
    let host = server.addr.to_string();
    let mut headers = MCP_HEADERS.to_vec();
    headers.push(("Mcp-Session-Id", session));
    headers.push(("Mcp-Protocol-Version", "2025-11-25"));
    send_from(
        server,
        source,
        "POST",
        "/mcp",
        Some(&host),
        &headers,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    )
}

#[test]
fn mcp_sessions_are_capped_and_delete_frees_one() {
    // One client opens every session here: no cap of its own below the server's.
    let server = Server::start_with(&[
        "--max-mcp-sessions",
        "3",
        "--max-mcp-sessions-per-client",
        "3",
    ]);
    let sessions: Vec<String> = (0..3).map(|_| initialize(&server)).collect();
    // Every session busy (an open event stream): nothing to end, so the cap refuses.
    let streams = open_streams(&server, &sessions);
    let over = mcp_post(&server, &[], INITIALIZE);
    let body = over.rpc_error(503, -32000);
    assert_eq!(body["id"], 7, "the request's id: {body}");
    assert!(over
        .header("retry-after")
        .is_some_and(|s| s.parse::<u64>().is_ok()));
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("--max-mcp-sessions"));
    // A call in a live session still works at the cap.
    let host = server.addr.to_string();
    let mut in_session = MCP_HEADERS.to_vec();
    in_session.push(("Mcp-Session-Id", &sessions[0]));
    in_session.push(("Mcp-Protocol-Version", "2025-11-25"));
    let listed = list_tools(&server, "127.0.0.1", &sessions[0]);
    assert_eq!(listed.status, 200);
    assert!(String::from_utf8_lossy(&listed.body).contains("search_files"));
    // DELETE ends one (204), which frees its place; a second DELETE finds nothing (404).
    let ended = send(&server, "DELETE", "/mcp", Some(&host), &in_session, "");
    assert_eq!(
        ended.status,
        204,
        "{}",
        String::from_utf8_lossy(&ended.body)
    );
    assert!(ended.body.is_empty());
    let again = send(&server, "DELETE", "/mcp", Some(&host), &in_session, "");
    again.rpc_error(404, -32001);
    let unknown = send(
        &server,
        "DELETE",
        "/mcp",
        Some(&host),
        &[("Mcp-Session-Id", "no-such-session")],
        "",
    );
    unknown.rpc_error(404, -32001);
    initialize(&server);
    drop(streams);
}

#[test]
fn idle_mcp_sessions_make_room_least_recently_used_first_and_per_client() {
    // A client holding every session (idle) does not lock another out: the least recently
    // used idle session is ended to make room.
    let server = Server::start_with(&[
        "--max-mcp-sessions",
        "4",
        "--max-mcp-sessions-per-client",
        "4",
    ]);
    let first: Vec<String> = (0..4).map(|_| initialize(&server)).collect();
    // The oldest session used again: the second is now the least recently used.
    assert_eq!(list_tools(&server, "127.0.0.1", &first[0]).status, 200);
    let other = initialize_from(&server, "127.0.0.2");
    assert_eq!(list_tools(&server, "127.0.0.2", &other).status, 200);
    list_tools(&server, "127.0.0.1", &first[1]).rpc_error(404, -32001);
    for session in [&first[0], &first[2], &first[3]] {
        assert_eq!(list_tools(&server, "127.0.0.1", session).status, 200);
    }

    // One client's own cap (a quarter of --max-mcp-sessions by default: 2 of 8): its next
    // session ends its own least recently used one, never another client's.
    let server = Server::start_with(&["--max-mcp-sessions", "8"]);
    let theirs = initialize_from(&server, "127.0.0.2");
    let mine: Vec<String> = (0..5).map(|_| initialize(&server)).collect();
    for ended in &mine[..3] {
        list_tools(&server, "127.0.0.1", ended).rpc_error(404, -32001);
    }
    for live in &mine[3..] {
        assert_eq!(list_tools(&server, "127.0.0.1", live).status, 200);
    }
    assert_eq!(list_tools(&server, "127.0.0.2", &theirs).status, 200);
    // With both of its sessions busy (open event streams), the client's next is refused.
    let streams = open_streams(&server, &mine[3..]);
    let over = mcp_post(&server, &[], INITIALIZE);
    let body = over.rpc_error(503, -32000);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--max-mcp-sessions-per-client"),
        "{body}"
    );
    // Another client is still served.
    initialize_from(&server, "127.0.0.3");
    drop(streams);
}

#[test]
fn event_streams_leave_connections_for_the_api() {
    // 8 connections: at most 2 event streams (a quarter), one per session.
    // One client opens every connection here: no cap of its own below the server's.
    let mut server = Server::start_with(&[
        "--max-connections",
        "8",
        "--max-connections-per-client",
        "8",
    ]);
    let sessions: Vec<String> = (0..8).map(|_| initialize(&server)).collect();
    let mut open = Vec::new();
    let mut refused = 0;
    for session in &sessions {
        let (status, mut stream) = open_stream(&server, session);
        match status {
            200 => open.push(stream),
            429 => {
                // Answered at once, and the connection closed: it holds no slot.
                let rest = read_all(&mut stream).unwrap();
                let rest = String::from_utf8_lossy(&rest).to_ascii_lowercase();
                assert!(rest.contains("retry-after"), "{rest}");
                refused += 1;
            }
            other => panic!("GET stream: {other}"),
        }
    }
    assert_eq!((open.len(), refused), (2, 6));
    // A second stream of a session that has one is refused too (409, or 429 at the total).
    let (status, _) = open_stream(&server, &sessions[0]);
    assert!(matches!(status, 409 | 429), "{status}");
    // The API and the page still answer with the streams open (streams that took every
    // connection would leave the request waiting: `still_answers` fails after its hang guard).
    let started = Instant::now();
    server.still_answers();
    eprintln!(
        "answered with {} event streams open after {:?}",
        open.len(),
        started.elapsed()
    );
    // A stream that ends gives its place back (bounded against a hang only).
    drop(open);
    let deadline = Instant::now() + crate::common::HANG;
    loop {
        let (status, stream) = open_stream(&server, &sessions[7]);
        drop(stream);
        if status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "the slots were not given back");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Opens each session's event stream, each answered 200: the open connections.
fn open_streams(server: &Server, sessions: &[String]) -> Vec<std::net::TcpStream> {
    sessions
        .iter()
        .map(|session| {
            let (status, stream) = open_stream(server, session);
            assert_eq!(status, 200);
            stream
        })
        .collect()
}

/// Opens a session's event stream: the status, and the connection (still open on 200).
fn open_stream(server: &Server, session: &str) -> (u16, std::net::TcpStream) {
    let mut stream = server.connect();
    let request = format!(
        "GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-11-25\r\n\r\n",
        server.addr
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut head = [0u8; 12];
    std::io::Read::read_exact(&mut stream, &mut head).unwrap();
    (status_of(&head).expect("a status line"), stream)
}

#[test]
fn mcp_errors_are_json_rpc_over_http() {
    let server = Server::start();
    mcp_post(&server, &[], "{not json").rpc_error(400, -32700);
    mcp_post(&server, &[], "").rpc_error(400, -32700);
    mcp_post(
        &server,
        &[],
        r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
    )
    .rpc_error(400, -32600);
    let body = mcp_post(
        &server,
        &[],
        r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
    )
    .rpc_error(400, -32600);
    assert_eq!(body["id"], Value::Null);
    let body = mcp_post(
        &server,
        &[],
        r#"{"jsonrpc":"1.0","id":"x","method":"ping"}"#,
    )
    .rpc_error(400, -32600);
    assert_eq!(body["id"], "x");
    // A session that does not exist.
    mcp_post(
        &server,
        &[
            ("Mcp-Session-Id", "gone"),
            ("Mcp-Protocol-Version", "2025-11-25"),
        ],
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#,
    )
    .rpc_error(404, -32001);
    // rmcp's own refusals (a wrong media type) are JSON-RPC errors too.
    let host = server.addr.to_string();
    let reply = send(
        &server,
        "POST",
        "/mcp",
        Some(&host),
        &[
            ("Accept", "application/json, text/event-stream"),
            ("Content-Type", "text/plain"),
        ],
        INITIALIZE,
    );
    reply.rpc_error(415, -32600);
    // The server still answers a good message.
    initialize(&server);
}

#[test]
fn the_bearer_scheme_is_case_insensitive() {
    let server = Server::start_with(&["--token", "sesame"]);
    let host = server.addr.to_string();
    for (value, status) in [
        ("Bearer sesame", 200),
        ("bearer sesame", 200),
        ("BEARER  sesame", 200),
        ("Bearer wrong", 401),
        ("Basic sesame", 401),
        ("Bearersesame", 401),
        ("sesame", 401),
    ] {
        let reply = send(
            &server,
            "GET",
            "/tree",
            Some(&host),
            &[("Authorization", value)],
            "",
        );
        assert_eq!(reply.status, status, "{value}");
        // A 401 names the scheme (RFC 6750), so that a client knows a bearer token is wanted.
        let challenge = reply.header("WWW-Authenticate");
        match (status, value) {
            (401, "Bearer wrong") => assert_eq!(
                challenge,
                Some(r#"Bearer realm="kbtools", error="invalid_token""#),
                "{value}"
            ),
            (401, _) => assert_eq!(challenge, Some(r#"Bearer realm="kbtools""#), "{value}"),
            _ => assert_eq!(challenge, None, "{value}"),
        }
    }
    // No Authorization at all: the challenge without an error.
    let reply = send(&server, "GET", "/tree", Some(&host), &[], "");
    assert_eq!(reply.status, 401);
    assert_eq!(
        reply.header("WWW-Authenticate"),
        Some(r#"Bearer realm="kbtools""#)
    );
}
