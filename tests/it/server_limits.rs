//! `kbtools serve` under the loads of issue 61, end to end on the binary (loopback, counts that
//! fit a 2-core CI runner): half-open connections of one client (slowloris), a message body that
//! never comes, clients that never read their large responses. Each is bounded (a client's
//! connections, a body deadline, a budget of unsent response bytes), and health and a search
//! from another client keep answering. Another client is another loopback address
//! (127.0.0.2, 127.0.0.3): the per-client caps count addresses.
//!
//! The full loads (1,100 slowloris connections, 200 unread 5 MB responses) and the server's
//! peak RSS under them: tests/hostile/server_load.py.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use super::hostile_http::{body_of, status_of, Server};

/// Longest wait for an answer that must come at once (a refusal): a hang guard only.
const REFUSAL_WAIT: Duration = Duration::from_secs(60);

/// The address of the client that holds connections open: not 127.0.0.1, where the server's
/// start-up probe came from (its connection may not be counted off yet when the test begins).
const SLOW_CLIENT: &str = "127.0.0.4";

/// An unfinished request head, as a slowloris client sends it.
const HALF_HEAD: &[u8] = b"GET /openapi/v2/health HTTP/1.1\r\nHo";

/// The size of the large page of [`big_page_index`].
const BIG_PAGE_BYTES: usize = 5 * 1024 * 1024;

/// The index of a folder with a 5 MB page (`pages/big.md`) and a small one, built once.
fn big_page_index() -> &'static PathBuf {
    static INDEX: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &INDEX
        .get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let bundle = dir.path().join("docs");
            std::fs::create_dir(&bundle).unwrap();
            let line = "A line of the long page that a client asks for and never reads. How do agents read related files?\n";
            let mut text = String::from("# Big\n\n");
            while text.len() < BIG_PAGE_BYTES {
                text.push_str(line);
            }
            std::fs::write(bundle.join("big.md"), text).unwrap();
            std::fs::write(
                bundle.join("small.md"),
                "# Small\n\nHow do agents read related files? With read_related.\n",
            )
            .unwrap();
            let index = dir.path().join("index");
            let status = crate::common::kbtools()
                .arg("index")
                .arg(&bundle)
                .arg("--index")
                .arg(&index)
                .arg("-q")
                .stdout(std::process::Stdio::null())
                .status()
                .unwrap();
            assert!(status.success(), "kbtools index failed: {status}");
            (dir, index)
        })
        .1
}

/// Reads one response to its end (the server closes): status and body.
fn refusal(stream: &mut TcpStream) -> (Option<u16>, Vec<u8>) {
    stream.set_read_timeout(Some(REFUSAL_WAIT)).unwrap();
    let mut bytes = Vec::new();
    let _ = stream.read_to_end(&mut bytes);
    (status_of(&bytes), body_of(&bytes).to_vec())
}

/// True while the server keeps `stream` open and has sent nothing on it.
fn held_open(stream: &TcpStream) -> bool {
    stream.set_nonblocking(true).unwrap();
    let mut byte = [0u8; 1];
    let open = matches!(
        (&*stream).read(&mut byte),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock
    );
    stream.set_nonblocking(false).unwrap();
    open
}

#[test]
fn half_open_connections_of_one_client_hold_at_most_its_share() {
    // A header timeout longer than the test: the half-open connections are held throughout,
    // as a slowloris client that renews them holds its slots. The per-client cap is its
    // default, a quarter of --max-connections: 25 of 100.
    let mut server = Server::start_with(&["--header-timeout", "600", "--max-connections", "100"]);
    let mut held: Vec<TcpStream> = Vec::new();
    let mut refused = 0;
    for i in 0..60 {
        let mut stream = server.connect_from(SLOW_CLIENT, None);
        stream.write_all(HALF_HEAD).unwrap();
        if i < 25 {
            held.push(stream);
            continue;
        }
        // Over the cap: answered at once (before its head is complete) and closed.
        let (status, body) = refusal(&mut stream);
        assert_eq!(status, Some(503), "connection {i}");
        let text = String::from_utf8_lossy(&body);
        assert!(text.contains("--max-connections-per-client"), "{text}");
        assert!(text.contains("SEARCH_UNAVAILABLE"), "{text}");
        refused += 1;
    }
    assert_eq!(refused, 35);
    // Another client is answered while the first holds its share.
    server.still_answers_from("127.0.0.2");
    for (i, stream) in held.iter().enumerate() {
        assert!(held_open(stream), "held connection {i} was closed");
    }
    // A connection of the first client that ends gives its place back.
    drop(held.pop());
    let deadline = std::time::Instant::now() + REFUSAL_WAIT;
    loop {
        let mut stream = server.connect_from(SLOW_CLIENT, None);
        stream
            .write_all(
                b"GET /openapi/v2/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
            )
            .unwrap();
        let (status, _) = refusal(&mut stream);
        if status == Some(200) {
            break;
        }
        assert_eq!(status, Some(503));
        assert!(std::time::Instant::now() < deadline, "no place given back");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_message_body_that_never_comes_is_cut_off_at_the_body_deadline() {
    // --request-timeout above the body deadline (10 s by default): the body deadline answers.
    let server = Server::start_with(&["--request-timeout", "120"]);
    let mut stream = server.connect();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\"",
        server.addr
    );
    stream.write_all(head.as_bytes()).unwrap();
    let (status, body) = refusal(&mut stream);
    assert_eq!(status, Some(408), "{}", String::from_utf8_lossy(&body));
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("--body-timeout")),
        "{body}"
    );
}

#[test]
fn clients_that_never_read_hold_at_most_the_unsent_budget_while_others_are_answered() {
    // The acceptance load of issue 61 at CI's size: 300 half-open connections of one client
    // and 100 clients that ask for a 5 MB page and never read, under the default limits (the
    // write timeout aside: longer than the test, so unread responses stay held).
    let mut server = Server::start_over(
        big_page_index(),
        &["--header-timeout", "600", "--write-timeout", "600"],
    );
    let mut half_open = Vec::new();
    let mut refused = 0;
    for _ in 0..300 {
        let mut stream = server.connect_from(SLOW_CLIENT, None);
        stream.write_all(HALF_HEAD).unwrap();
        if half_open.len() < 256 {
            half_open.push(stream);
        } else {
            assert_eq!(refusal(&mut stream).0, Some(503));
            refused += 1;
        }
    }
    assert_eq!(refused, 44, "a quarter of 1,024 connections for one client");
    // All asked at once, as a client that opens them together would: the calls that make the
    // pages take turns (--max-concurrent-calls), and the pages that do not fit the budget are
    // refused.
    let request = format!(
        "GET /files/content?path=pages/big.md HTTP/1.1\r\nHost: {}\r\n\r\n",
        server.addr
    );
    let mut unread: Vec<TcpStream> = (0..100)
        .map(|_| {
            let mut stream = server.connect_from("127.0.0.3", Some(4096));
            stream.write_all(request.as_bytes()).unwrap();
            stream
        })
        .collect();
    let (mut answered, mut over_budget) = (0usize, 0usize);
    for stream in &mut unread {
        let mut line = [0u8; 12];
        stream.read_exact(&mut line).unwrap();
        match status_of(&line) {
            Some(200) => answered += 1,
            Some(503) => over_budget += 1,
            other => panic!("status {other:?}"),
        }
    }
    eprintln!(
        "100 unread 5 MB pages: {answered} answered, {over_budget} refused (503) for the budget"
    );
    // The default budget (128 MiB) holds about 21 such responses; the rest are refused.
    assert!(
        answered >= 1 && over_budget >= 1,
        "{answered} {over_budget}"
    );
    assert!(
        answered * BIG_PAGE_BYTES <= 128 * 1024 * 1024,
        "{answered} responses of over 5 MB held"
    );
    // Health and a search from another client are answered meanwhile.
    server.still_answers_from("127.0.0.2");
    let peak_mib = server.peak_rss_kib() / 1024;
    eprintln!("kbtools serve peak RSS under the load: {peak_mib} MiB");
    assert!(peak_mib < 500, "peak RSS {peak_mib} MiB");
    assert!(half_open.iter().all(held_open));
}

#[test]
fn large_responses_beyond_the_unsent_budget_are_refused_with_retry_after() {
    // 30 clients ask for the 5 MB page and never read: the default budget (128 MiB) holds
    // about 25 of them; the next ones are 503 with Retry-After, and a reading client still
    // gets its small answers.
    let mut server = Server::start_over(big_page_index(), &["--write-timeout", "600"]);
    let mut unread = Vec::new();
    let mut refusals = Vec::new();
    for _ in 0..30 {
        let mut stream = server.connect_from("127.0.0.3", Some(4096));
        let request = format!(
            "GET /files/content?path=pages/big.md HTTP/1.1\r\nHost: {}\r\n\r\n",
            server.addr
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut line = [0u8; 12];
        stream.read_exact(&mut line).unwrap();
        if status_of(&line) == Some(503) {
            let mut rest = Vec::new();
            let mut chunk = [0u8; 4096];
            // The refusal is small: its head and body arrive together.
            while !String::from_utf8_lossy(&rest).contains("requestId") {
                let n = stream.read(&mut chunk).unwrap();
                assert!(n > 0, "{}", String::from_utf8_lossy(&rest));
                rest.extend_from_slice(&chunk[..n]);
            }
            refusals.push(String::from_utf8_lossy(&rest).to_ascii_lowercase());
        }
        unread.push(stream);
    }
    assert!(!refusals.is_empty(), "no response was refused");
    assert!(refusals.len() < 30);
    for refusal in &refusals {
        assert!(refusal.contains("retry-after: "), "{refusal}");
        assert!(refusal.contains("--max-unsent-mib"), "{refusal}");
    }
    server.still_answers_from("127.0.0.2");
}
