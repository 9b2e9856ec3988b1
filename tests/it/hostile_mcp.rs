//! `kbtools mcp` against a hostile client, end to end: the binary runs as a child process on the
//! fixture's index and the tests write raw bytes to its stdin. Malformed JSON-RPC (not JSON, a
//! wrong `jsonrpc`, no `method`, ids of other types, params of the wrong type, unknown methods
//! and tools, garbage tool arguments, batch arrays), binary garbage (random bytes, NUL, invalid
//! UTF-8), a 64 MiB line (discarded with bounded memory: the child's peak RSS is measured),
//! requests before `initialize`, and end of input (a prompt, clean exit 0, no panic).
//!
//! After each hostile input the same server still answers a valid `tools/call` correctly, and
//! every line on its stdout is a JSON-RPC message. Waits are bounded; the child is killed when a
//! test ends, however it ends.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Longest wait for any one answer or for the exit (hang detection, not a performance bound).
const WAIT: Duration = common::HANG;

/// The fixture's index, built once for every server of this file.
fn index_dir() -> &'static PathBuf {
    common::built_fixture_index()
}

/// `kbtools mcp` as a child: killed (and reaped) when dropped; stderr goes to a file.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: PathBuf,
    next_id: u64,
    /// Starts the stdout reader.
    go: mpsc::Sender<()>,
    _dir: tempfile::TempDir,
}

impl Server {
    fn start() -> Server {
        let server = Server::start_unread();
        server.read_stdout();
        server
    }

    /// A started server whose stdout is not read until [`Server::read_stdout`].
    fn start_unread() -> Server {
        let dir = tempfile::tempdir().unwrap();
        let stderr = dir.path().join("stderr.txt");
        let mut child = common::kbtools()
            .arg("mcp")
            .arg("--index")
            .arg(index_dir())
            .arg("--no-refresh")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        let (go, wait) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            if wait.recv().is_err() {
                return;
            }
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Server {
            child,
            stdin,
            lines,
            stderr,
            next_id: 1000,
            go,
            _dir: dir,
        }
    }

    fn read_stdout(&self) {
        self.go.send(()).unwrap();
    }

    /// A started server after the `initialize` handshake.
    fn initialized() -> Server {
        let mut server = Server::start();
        server.initialize(1);
        server
    }

    fn initialize(&mut self, id: u64) {
        self.send_json(
            &json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "hostile-mcp-test", "version": "1"}
            }}),
        );
        let init = self.message();
        assert_eq!(init["id"], id, "{init}");
        assert_eq!(init["result"]["serverInfo"]["name"], "kbtools", "{init}");
        self.send_json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    fn send(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    fn send_json(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.send(line.as_bytes());
    }

    /// The next message on stdout; every line there must be a JSON-RPC 2.0 message.
    fn message(&self) -> Value {
        let line = self.lines.recv_timeout(WAIT).unwrap_or_else(|e| {
            panic!(
                "no message on stdout within {WAIT:?} ({e}); stderr:\n{}",
                self.stderr()
            )
        });
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carries something else than JSON ({e}): {line}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        message
    }

    /// Messages until the one whose id is `id` (other answers in between are returned too).
    fn until_id(&self, id: &Value) -> (Value, Vec<Value>) {
        let mut others = Vec::new();
        loop {
            let message = self.message();
            if &message["id"] == id {
                return (message, others);
            }
            others.push(message);
        }
    }

    /// A valid `tools/call` (list_tree of `pages`) answers correctly: the proof that the server
    /// still works. Returns the messages that arrived before its answer.
    fn still_answers(&mut self) -> Vec<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send_json(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "list_tree", "arguments": {"parentPath": "pages", "format": "json"}
            }}),
        );
        let (reply, others) = self.until_id(&json!(id));
        assert_ne!(reply["result"]["isError"], true, "{reply}");
        let items = reply["result"]["structuredContent"]["items"]
            .as_array()
            .unwrap_or_else(|| panic!("no items in {reply}"));
        let paths: Vec<&str> = items.iter().filter_map(|i| i["path"].as_str()).collect();
        assert!(paths.contains(&"pages/en"), "{paths:?}");
        others
    }

    /// Closes stdin and waits (bounded) for the exit.
    fn close_and_wait(&mut self) -> ExitStatus {
        drop(self.stdin.take());
        self.wait_exit()
    }

    fn wait_exit(&mut self) -> ExitStatus {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                started.elapsed() < WAIT,
                "kbtools mcp did not exit within {WAIT:?} of end of input; stderr:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The child's peak resident set (VmHWM), in KiB.
    fn peak_rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM in /proc/<pid>/status")
    }

    /// Closes stdin, expects exit code 0 and no panic on stderr; returns stderr.
    fn finish(mut self) -> String {
        let status = self.close_and_wait();
        let stderr = self.stderr();
        assert!(status.success(), "exit {status}; stderr:\n{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        // Nothing after the last answer but protocol messages.
        while let Ok(line) = self.lines.try_recv() {
            let message: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(message["jsonrpc"], "2.0", "{line}");
        }
        stderr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One error answer: its id, code and message.
fn error_of(message: &Value) -> (Value, i64, String) {
    let error = &message["error"];
    assert!(error.is_object(), "not an error: {message}");
    (
        message["id"].clone(),
        error["code"].as_i64().unwrap(),
        error["message"].as_str().unwrap().to_string(),
    )
}

#[test]
fn malformed_json_rpc_gets_a_clear_error_and_the_server_keeps_answering() {
    let mut server = Server::initialized();
    // (line, expected id, expected code, a word of the message); id `null` when the line has no
    // usable id.
    let cases: Vec<(String, Value, i64, &str)> = vec![
        ("not json".into(), Value::Null, -32700, "not JSON"),
        ("{\"jsonrpc\":\"2.0\",\"id\":2,".into(), Value::Null, -32700, "not JSON"),
        (
            json!({"jsonrpc": "1.0", "id": 3, "method": "ping"}).to_string(),
            json!(3),
            -32600,
            "jsonrpc",
        ),
        (
            json!({"id": 4, "method": "ping"}).to_string(),
            json!(4),
            -32600,
            "jsonrpc",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 5}).to_string(),
            json!(5),
            -32600,
            "method",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 6, "method": 17}).to_string(),
            json!(6),
            -32600,
            "method",
        ),
        (
            json!({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}).to_string(),
            Value::Null,
            -32600,
            "`id`",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}).to_string(),
            Value::Null,
            -32600,
            "`id`",
        ),
        (
            json!({"jsonrpc": "2.0", "id": [7], "method": "ping"}).to_string(),
            Value::Null,
            -32600,
            "`id`",
        ),
        (
            json!({"jsonrpc": "2.0", "id": true, "method": "ping"}).to_string(),
            Value::Null,
            -32600,
            "`id`",
        ),
        (
            json!({"jsonrpc": "2.0", "id": null, "method": "ping"}).to_string(),
            Value::Null,
            -32600,
            "`id`",
        ),
        (
            json!({"jsonrpc": "2.0", "id": "s8", "method": "tools/call", "params": "x"})
                .to_string(),
            json!("s8"),
            -32602,
            "params",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": 7}).to_string(),
            json!(9),
            -32602,
            "params",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params":
                {"name": "search_files", "arguments": [1, 2]}})
            .to_string(),
            json!(10),
            -32602,
            "tools/call",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 11, "method": "tools/call"}).to_string(),
            json!(11),
            -32602,
            "tools/call",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": "rm_rf"}})
                .to_string(),
            json!(12),
            -32602,
            "Unknown tool",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 13, "method": "no/such/method"}).to_string(),
            json!(13),
            -32601,
            "Unknown method",
        ),
        (
            json!([{"jsonrpc": "2.0", "id": 14, "method": "ping"}]).to_string(),
            Value::Null,
            -32600,
            "batch",
        ),
        ("[]".into(), Value::Null, -32600, "batch"),
        ("42".into(), Value::Null, -32600, "object"),
        ("\"ping\"".into(), Value::Null, -32600, "object"),
        (
            format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)),
            Value::Null,
            -32700,
            "not JSON",
        ),
    ];
    for (line, id, code, word) in &cases {
        server.send(format!("{line}\n").as_bytes());
        let others = server.still_answers();
        assert_eq!(others.len(), 1, "one answer to {line:.200}: {others:?}");
        let (got_id, got_code, message) = error_of(&others[0]);
        assert_eq!((&got_id, got_code), (id, *code), "{line:.200} -> {message}");
        assert!(message.contains(word), "{line:.200} -> {message}");
    }

    // A tool call with garbage arguments is a tool error result, not a crash.
    let garbage_arguments = [
        json!({"query": {"x": []}}),
        json!({"query": "x".repeat(100_000)}),
        json!({"query": "How do agents read related files?", "limit": -1}),
        json!({"query": "How do agents read related files?", "cursor": "\u{0}\u{fffd}"}),
        json!({"query": "How do agents read related files?", "format": 7}),
    ];
    for (n, arguments) in garbage_arguments.iter().enumerate() {
        let id = 100 + n as u64;
        server.send_json(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "search_files", "arguments": arguments
            }}),
        );
        let (reply, _) = server.until_id(&json!(id));
        assert_eq!(reply["result"]["isError"], true, "{reply}");
        let text = reply["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.starts_with("失败: "), "{text}");
        server.still_answers();
    }

    // Notifications are never answered, even malformed ones; blank lines are skipped.
    for line in [
        json!({"jsonrpc": "2.0", "method": "notifications/bogus"}).to_string(),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": 5}).to_string(),
        String::new(),
        "   \r".to_string(),
    ] {
        server.send(format!("{line}\n").as_bytes());
        assert_eq!(server.still_answers(), Vec::<Value>::new(), "{line}");
    }

    let stderr = server.finish();
    assert!(stderr.contains("MCP input line 3: Parse error"), "{stderr}");
    assert!(
        stderr.contains("batch arrays are not supported"),
        "{stderr}"
    );
}

/// A deterministic byte generator (xorshift), so a failure reproduces.
fn garbage(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

#[test]
fn binary_garbage_is_answered_as_parse_errors_and_skipped() {
    let mut server = Server::initialized();
    let mut inputs: Vec<Vec<u8>> = vec![
        b"\0\0\0\0\n".to_vec(),
        b"\xff\xfe\xfd invalid utf-8\n".to_vec(),
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\xc3\x28\"}\n".to_vec(),
        b"\xef\xbb\xbf\xef\xbb\xbf{}\n".to_vec(),
        b"\r\r\r\x1b[2J\x07\n".to_vec(),
    ];
    for seed in 1..=20 {
        let mut bytes = garbage(seed, 4096);
        bytes.push(b'\n');
        inputs.push(bytes);
    }
    for bytes in &inputs {
        let lines = bytes
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty() && !l.iter().all(u8::is_ascii_whitespace))
            .count();
        server.send(bytes);
        let others = server.still_answers();
        // Every non-blank line is answered with one error (parse error, or invalid request
        // for JSON that is not a message), and nothing else.
        assert_eq!(others.len(), lines, "{others:?}");
        for message in &others {
            let (id, code, _) = error_of(message);
            assert_eq!(id, Value::Null, "{message}");
            assert!([-32700, -32600].contains(&code), "{message}");
        }
    }

    // 100 requests with one id: each gets exactly one answer, an error for a request reusing the
    // id of one in flight, so none is silently dropped.
    let mut burst = Vec::new();
    for _ in 0..100 {
        burst.extend_from_slice(
            json!({"jsonrpc": "2.0", "id": "same", "method": "tools/call", "params": {
                "name": "list_tree", "arguments": {"parentPath": "pages"}
            }})
            .to_string()
            .as_bytes(),
        );
        burst.push(b'\n');
    }
    server.send(&burst);
    let others = server.still_answers();
    let same: Vec<&Value> = others.iter().filter(|m| m["id"] == "same").collect();
    assert_eq!((same.len(), others.len()), (100, 100), "{others:?}");
    let reused = same.iter().filter(|m| m["error"]["code"] == -32600).count();
    assert!(
        same.iter()
            .all(|m| m["result"]["isError"] == false || m["error"]["code"] == -32600),
        "{same:?}"
    );
    // The first is answered; how many reuse an id still in flight depends on timing.
    assert!(reused < 100, "{reused} of 100 rejected");
    eprintln!("100 requests with one id: {reused} rejected as reusing the id of one in flight");

    // A flood of garbage lines: each answered, the server still works, and the log stays short
    // (the first 100 rejected lines, then every 1000th).
    let flood: Vec<u8> = b"\x01\x02 not json\n".repeat(5_000);
    server.send(&flood);
    let others = server.still_answers();
    assert_eq!(others.len(), 5_000);
    let stderr = server.finish();
    let logged = stderr
        .lines()
        .filter(|l| l.contains("MCP input line"))
        .count();
    assert!(
        (100..=110).contains(&logged),
        "{logged} lines logged:\n{stderr}"
    );
    assert!(stderr.contains("reported every 1000th"), "{stderr}");
}

#[test]
fn a_64_mib_line_is_discarded_with_bounded_memory() {
    let mut server = Server::initialized();
    server.still_answers();
    let before_kib = server.peak_rss_kib();

    // A line just within the 4 MiB limit is read and answered (a tool error: the query is too
    // long), so the limit does not cut legitimate large messages short.
    let within = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "search_files", "arguments": {"query": "q".repeat(3 << 20)}
    }});
    server.send_json(&within);
    let (reply, _) = server.until_id(&json!(7));
    assert_eq!(
        reply["result"]["isError"],
        true,
        "{}",
        &reply.to_string()[..200]
    );
    let within_kib = server.peak_rss_kib();

    // 64 MiB of a JSON request without a newline until the end, written in 1 MiB chunks.
    let huge_len = 64usize << 20;
    let head = br#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"search_files","arguments":{"query":""#;
    server.send(head);
    let chunk = vec![b'a'; 1 << 20];
    let mut sent = head.len();
    while sent + chunk.len() < huge_len {
        server.send(&chunk);
        sent += chunk.len();
    }
    server.send(b"\"}}}\n");
    let others = server.still_answers();
    assert_eq!(others.len(), 1, "{others:?}");
    let (id, code, message) = error_of(&others[0]);
    assert_eq!((id, code), (Value::Null, -32600), "{message}");
    assert!(
        message.contains("more than the 4194304 accepted"),
        "{message}"
    );

    let after_kib = server.peak_rss_kib();
    eprintln!(
        "kbtools mcp peak RSS: {before_kib} KiB after initialize, {within_kib} KiB after a 3 MiB \
         message, {after_kib} KiB after a 64 MiB line"
    );
    // The 64 MiB line was never held: it raised the peak by far less than its size (at most
    // the 4 MiB line buffer and some slack).
    assert!(
        after_kib < within_kib + 16 * 1024,
        "peak RSS grew from {within_kib} KiB to {after_kib} KiB with a 64 MiB line"
    );

    // A huge line cut off by end of input is discarded too, and the server exits cleanly.
    server.send(&vec![b'x'; 8 << 20]);
    let status = server.close_and_wait();
    assert!(status.success(), "{status}; stderr:\n{}", server.stderr());
    let stderr = server.stderr();
    assert!(stderr.contains("bytes long, more than the"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_client_that_does_not_read_its_answers_cannot_grow_the_server() {
    let mut server = Server::start_unread();
    server.send_json(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "hostile-mcp-test", "version": "1"}
        }}),
    );
    server.send_json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    // 20,000 requests (2.7 MB) and 1,000 garbage lines, while nobody reads stdout.
    let mut flood = Vec::new();
    for id in 0..20_000u64 {
        flood.extend_from_slice(
            json!({"jsonrpc": "2.0", "id": 10_000 + id, "method": "ping", "params": {"pad": "p".repeat(60)}})
                .to_string()
                .as_bytes(),
        );
        flood.push(b'\n');
        if id % 20 == 0 {
            flood.extend_from_slice(b"garbage\n");
        }
    }
    let mut stdin = server.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let written = stdin.write_all(&flood).and_then(|()| stdin.flush());
        (stdin, written)
    });
    std::thread::sleep(Duration::from_secs(2));
    // The server stopped reading once its answers backed up: the writer is still blocked, and
    // the server's memory did not grow with the flood.
    assert!(
        !writer.is_finished(),
        "the server read the whole flood without answering"
    );
    let blocked_kib = server.peak_rss_kib();

    server.read_stdout();
    let mut answered = std::collections::BTreeSet::new();
    let mut errors = 0;
    let mut first = true;
    while answered.len() < 20_000 {
        let message = server.message();
        if first {
            assert_eq!(message["id"], 1, "{message}");
            first = false;
            continue;
        }
        match message["id"].as_u64() {
            Some(id) => {
                assert!(message["result"].is_object(), "{message}");
                answered.insert(id);
            }
            None => {
                assert_eq!(error_of(&message).1, -32700, "{message}");
                errors += 1;
            }
        }
    }
    let (stdin, written) = writer.join().unwrap();
    written.unwrap();
    server.stdin = Some(stdin);
    assert_eq!(answered.first(), Some(&10_000));
    assert_eq!(answered.last(), Some(&29_999));
    server.still_answers();
    while errors < 1_000 {
        assert_eq!(error_of(&server.message()).1, -32700);
        errors += 1;
    }
    eprintln!(
        "kbtools mcp peak RSS: {blocked_kib} KiB while 2.7 MB of requests waited unread, {} KiB \
         after answering them all",
        server.peak_rss_kib()
    );
    assert!(blocked_kib < 64 * 1024, "{blocked_kib} KiB");
    server.finish();
}

#[test]
fn requests_before_initialize_get_an_error_and_initialize_still_works() {
    let mut server = Server::start();
    server.send_json(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "list_tree", "arguments": {}
        }}),
    );
    let (reply, _) = server.until_id(&json!(1));
    let (_, code, message) = error_of(&reply);
    assert_eq!(code, -32602, "{message}");
    server.send(b"garbage before the handshake\n");
    let (id, code, _) = error_of(&server.message());
    assert_eq!((id, code), (Value::Null, -32700));
    server.initialize(2);
    server.still_answers();
    server.finish();
}

#[test]
fn end_of_input_ends_the_server_promptly_with_exit_code_0() {
    // Closed before anything was sent.
    let mut server = Server::start();
    let closed = Instant::now();
    let status = server.close_and_wait();
    eprintln!(
        "kbtools mcp exited {:?} after end of input",
        closed.elapsed()
    );
    assert!(status.success(), "{status}; {}", server.stderr());
    assert!(!server.stderr().contains("panicked"));

    // Closed right after a request with no newline: it is answered, then the server exits.
    let mut server = Server::initialized();
    server.send(br#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#);
    drop(server.stdin.take());
    let (reply, _) = server.until_id(&json!(5));
    assert!(reply["result"].is_object(), "{reply}");
    let status = server.wait_exit();
    assert!(status.success(), "{status}; {}", server.stderr());

    // Closed in the middle of a message, and after garbage: nothing is answered but the
    // garbage, the exit is clean.
    let mut server = Server::initialized();
    server.send(b"\xff\xfe\n{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"to");
    let stderr = server.finish();
    assert!(stderr.contains("Parse error"), "{stderr}");

    // Closed while tool calls are in flight: every call is still answered, then a clean exit.
    let mut server = Server::initialized();
    for id in 10..40 {
        server.send_json(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "search_files", "arguments": {"query": "How do agents read related files?"}
            }}),
        );
    }
    drop(server.stdin.take());
    let mut answered: Vec<u64> = (0..30)
        .map(|_| {
            let reply = server.message();
            assert_ne!(reply["result"]["isError"], true, "{reply}");
            reply["id"].as_u64().unwrap()
        })
        .collect();
    answered.sort();
    assert_eq!(answered, (10..40).collect::<Vec<u64>>());
    server.finish();
}
