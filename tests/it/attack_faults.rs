//! Faults an attack on the binary from outside found, each driven as that attack drove it (the
//! CLI, `kbtools serve`, `kbtools mcp`): reads outside the bundle through a directory swapped for
//! a link, a sparse 100 GiB page and a growing page stalling a build, a full disk and a read-only
//! index folder taking the index down, and the small ones (`KBTOOLS_NO_REFRESH=1`, a head just
//! over 128 KiB, the beyond-loopback warning under `-q`, an empty `--token`, `--index` pointing
//! into the bundle, excerpts of files changed after the build).
//!
//! The full-disk and read-only tests mount a small tmpfs, which needs root (as in CI); elsewhere
//! they say they are skipped. `KBTOOLS_UNDER_TEST=/path/to/kbtools` runs the suite against
//! another binary (an older build, to see each test fail there).

#![cfg(unix)]

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// In every file outside the bundle; no answer may ever hold it.
const SECRET: &str = "zqxoutsidesecretzqx";

/// Longest wait for a server to start or for any one answer: a hang guard, not a speed bound.
const WAIT: Duration = common::HANG;

fn binary() -> PathBuf {
    std::env::var_os("KBTOOLS_UNDER_TEST")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_kbtools")))
}

fn kbtools() -> Command {
    let mut command = Command::new(binary());
    common::clean_env(&mut command);
    command.stdin(Stdio::null());
    command
}

fn run(args: &[&str]) -> Output {
    kbtools().args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A plain folder of three pages under `dir/bundle`, with `dir/outside` beside it holding the
/// same names with [`SECRET`] in them.
fn plain_bundle(dir: &Path) -> PathBuf {
    let bundle = dir.join("bundle");
    let outside = dir.join("outside");
    std::fs::create_dir_all(bundle.join("notes")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(
        bundle.join("README.md"),
        "# Lamp notes\n\nSee [the guide](notes/guide.md).\n",
    )
    .unwrap();
    std::fs::write(
        bundle.join("notes/guide.md"),
        "# Lamp guide\n\nThe brass lamp is lit at dusk and trimmed at dawn.\n",
    )
    .unwrap();
    std::fs::write(
        bundle.join("notes/care.md"),
        "# Lamp care\n\nPolish the brass lamp once a week.\n",
    )
    .unwrap();
    for name in ["guide.md", "care.md"] {
        std::fs::write(
            outside.join(name),
            format!("# Outside\n\nThe brass lamp {SECRET} lives outside.\n"),
        )
        .unwrap();
    }
    bundle
}

fn index(bundle: &Path, index: &Path) -> Output {
    let out = run(&[
        "index",
        bundle.to_str().unwrap(),
        "--index",
        index.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "index failed: {}", text(&out.stderr));
    out
}

fn free_port() -> SocketAddr {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("127.0.0.1:{port}").parse().unwrap()
}

/// A running `kbtools serve`, killed when dropped.
struct HttpServer {
    child: Child,
    addr: SocketAddr,
    stderr: PathBuf,
}

impl HttpServer {
    fn start(args: &[&str], stderr: PathBuf) -> HttpServer {
        let addr = free_port();
        let child = kbtools()
            .arg("serve")
            .args(args)
            .arg("--addr")
            .arg(addr.to_string())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let mut server = HttpServer {
            child,
            addr,
            stderr,
        };
        let started = Instant::now();
        while server.get("/openapi/v2/health").is_err() {
            if let Some(status) = server.child.try_wait().unwrap() {
                panic!("kbtools serve exited ({status}): {}", server.stderr());
            }
            assert!(started.elapsed() < WAIT, "serve did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// The status and body of `GET target`.
    fn get(&self, target: &str) -> std::io::Result<(u16, String)> {
        let reply = self.exchange(
            format!(
                "GET {target} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
                self.addr
            )
            .as_bytes(),
        )?;
        let reply = text(&reply);
        let status = reply
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let body = reply
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default();
        Ok((status, body))
    }

    fn exchange(&self, request: &[u8]) -> std::io::Result<Vec<u8>> {
        let mut stream = TcpStream::connect_timeout(&self.addr, WAIT)?;
        stream.set_read_timeout(Some(WAIT))?;
        stream.write_all(request)?;
        let mut reply = Vec::new();
        match stream.read_to_end(&mut reply) {
            Ok(_) => Ok(reply),
            // A reset after the answer (the server closed with unread input).
            Err(_) if !reply.is_empty() => Ok(reply),
            Err(e) => Err(e),
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A running `kbtools mcp`, initialized, killed when dropped.
struct McpServer {
    child: Child,
    lines: mpsc::Receiver<String>,
    next_id: u64,
}

impl McpServer {
    fn start(args: &[&str], stderr: &Path) -> McpServer {
        let mut child = kbtools()
            .arg("mcp")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(stderr).unwrap())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let mut server = McpServer {
            child,
            lines,
            next_id: 1,
        };
        let init = server.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "attack-faults", "version": "1"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "kbtools", "{init}");
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let line = self.lines.recv_timeout(WAIT).expect("an MCP answer");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    /// The text of a tool call's result, and whether it is an error.
    fn call(&mut self, tool: &str, arguments: Value) -> (String, bool) {
        let answer = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        let result = &answer["result"];
        let text = result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        (text, result["isError"] == true)
    }
}

impl Drop for McpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Swaps `bundle/notes` for a link to `outside` and back, as fast as it can, until `stop`.
fn race_directory_swap(bundle: &Path, outside: &Path, stop: Arc<AtomicBool>) -> u64 {
    let notes = bundle.join("notes");
    let real = bundle.join("notes.real");
    let mut swaps = 0;
    while !stop.load(Ordering::Relaxed) {
        std::fs::rename(&notes, &real).unwrap();
        std::os::unix::fs::symlink(outside, &notes).unwrap();
        // About half the time swapped: a reader checking then opening often straddles a swap.
        std::thread::sleep(Duration::from_micros(300));
        std::fs::remove_file(&notes).unwrap();
        std::fs::rename(&real, &notes).unwrap();
        std::thread::sleep(Duration::from_micros(300));
        swaps += 1;
    }
    swaps
}

/// `read_file`, partial reads and `search_files` excerpts over HTTP, MCP and the CLI while a
/// directory of the bundle is swapped for a link to an outside folder, for 10 s and until each
/// door has read enough: nothing of the outside folder is ever served.
#[test]
fn a_directory_swapped_for_a_link_never_serves_outside_files() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = plain_bundle(dir.path());
    let outside = dir.path().join("outside");
    let index_dir = dir.path().join("index");
    index(&bundle, &index_dir);
    let idx = index_dir.to_str().unwrap();
    let b = bundle.to_str().unwrap();
    let common_args = ["--bundle", b, "--index", idx, "--no-refresh", "-q"];
    let http = HttpServer::start(&common_args, dir.path().join("serve.txt"));
    let mut mcp = McpServer::start(
        &[&common_args[..], &["--format", "json"]].concat(),
        &dir.path().join("mcp.txt"),
    );

    let stop = Arc::new(AtomicBool::new(false));
    let racer = {
        let (bundle, outside, stop) = (bundle.clone(), outside.clone(), stop.clone());
        std::thread::spawn(move || race_directory_swap(&bundle, &outside, stop))
    };
    let leaks = Arc::new(AtomicUsize::new(0));
    // Each door reads for 10 s, and on until it has made more reads than its `ENOUGH_*` (a
    // loaded machine reads less in 10 s): a count of reads, not a speed. Only a door that cannot
    // read that much before `WAIT` (a hang) stops short, and fails the count below.
    const ENOUGH_HTTP: u64 = 50;
    const ENOUGH_CLI: u64 = 10;
    const ENOUGH_MCP: u64 = 50;
    let until = Instant::now() + Duration::from_secs(10);
    let give_up = Instant::now() + WAIT;
    let reading = |reads: u64, enough: u64| {
        let now = Instant::now();
        now < give_up && (now < until || reads <= enough)
    };
    let check = |door: &str, answer: &str, leaks: &AtomicUsize| {
        if answer.contains(SECRET) {
            leaks.fetch_add(1, Ordering::Relaxed);
            eprintln!("{door} served an outside file: {answer}");
        }
    };

    let http_reads = std::thread::scope(|scope| {
        let http_thread = scope.spawn(|| {
            let mut reads = 0u64;
            while reading(reads, ENOUGH_HTTP) {
                for target in [
                    "/files/content?path=pages/notes/guide.md",
                    "/files/content?path=pages/notes/care.md",
                    "/search?query=brass%20lamp",
                ] {
                    if let Ok((_, body)) = http.get(target) {
                        check("HTTP", &body, &leaks);
                        reads += 1;
                    }
                }
            }
            reads
        });
        let cli_thread = scope.spawn(|| {
            let mut reads = 0u64;
            while reading(reads, ENOUGH_CLI) {
                let out = run(&[
                    "read",
                    "pages/notes/guide.md",
                    "--bundle",
                    b,
                    "--index",
                    idx,
                    "--no-refresh",
                    "-q",
                ]);
                check("CLI", &text(&out.stdout), &leaks);
                reads += 1;
            }
            reads
        });
        let mut mcp_reads = 0u64;
        while reading(mcp_reads, ENOUGH_MCP) {
            for (tool, arguments) in [
                ("read_file", json!({"path": "pages/notes/guide.md"})),
                (
                    "read_file",
                    json!({"path": "pages/notes/care.md", "type": "search", "query": "brass"}),
                ),
                ("search_files", json!({"query": "brass lamp"})),
            ] {
                let (answer, _) = mcp.call(tool, arguments);
                check("MCP", &answer, &leaks);
                mcp_reads += 1;
            }
        }
        (
            http_thread.join().unwrap(),
            cli_thread.join().unwrap(),
            mcp_reads,
        )
    });
    stop.store(true, Ordering::Relaxed);
    let swaps = racer.join().unwrap();
    let (http_n, cli_n, mcp_n) = http_reads;
    eprintln!("{swaps} swaps; reads: HTTP {http_n}, CLI {cli_n}, MCP {mcp_n}");
    assert!(swaps > 100 && http_n > ENOUGH_HTTP && cli_n > ENOUGH_CLI && mcp_n > ENOUGH_MCP);
    assert_eq!(
        leaks.load(Ordering::Relaxed),
        0,
        "outside files were served"
    );
    // With the directory back in place the page reads as before.
    let (status, body) = http
        .get("/files/content?path=pages/notes/guide.md")
        .unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("trimmed at dawn"), "{body}");
}

/// How long a build may run before the test calls it stalled: a hang guard, not a timing (the
/// faults kept builds running for minutes; the debug build takes seconds, the release build well
/// under one). It must stay well below the growing page's time to reach its 1 GiB cap (over
/// four minutes), or a build that reads the page to its end would finish in time.
const BUILD_WATCHDOG: Duration = Duration::from_secs(120);

/// `kbtools index` with a timeout: its output, or a panic naming how long it ran.
fn index_within(bundle: &Path, index_dir: &Path, limit: Duration) -> (Output, Duration) {
    let started = Instant::now();
    let mut child = kbtools()
        .arg("index")
        .arg(bundle)
        .arg("--index")
        .arg(index_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    loop {
        if child.try_wait().unwrap().is_some() {
            return (child.wait_with_output().unwrap(), started.elapsed());
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "kbtools index still ran after {limit:?}; stderr: {}",
                text(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A sparse page of 100 GiB (a few bytes on disk) is read, hashed and indexed by its first
/// 16 MiB, and said so; the build does not read it to its end.
#[test]
fn a_sparse_100_gib_page_is_indexed_by_a_bounded_prefix_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = plain_bundle(dir.path());
    let huge = bundle.join("notes/huge.md");
    {
        let mut file = std::fs::File::create(&huge).unwrap();
        file.write_all(b"# Huge page\n\nA sparse page about quartz.\n")
            .unwrap();
        file.set_len(100 << 30).unwrap();
    }
    let (out, took) = index_within(&bundle, &dir.path().join("index"), BUILD_WATCHDOG);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("notes/huge.md") && stderr.contains("only the first 16777216 bytes"),
        "{stderr}"
    );
    eprintln!("built in {took:?}");
    let found = run(&[
        "search",
        "quartz",
        "--index",
        dir.path().join("index").to_str().unwrap(),
        "--no-refresh",
        "--mode",
        "file",
    ]);
    let found: Value = serde_json::from_slice(&found.stdout).unwrap();
    assert_eq!(found["items"][0]["path"], "pages/notes/huge.md", "{found}");
}

/// A page that keeps growing while the build runs does not keep the build running: it is read
/// up to the limit at most, said changed or cut at the limit, and the build finishes.
#[test]
fn a_page_growing_during_the_build_is_reported_and_the_build_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = plain_bundle(dir.path());
    let growing = bundle.join("notes/growing.md");
    // Past the read limit (16 MiB) before the build starts, so the build always has something
    // to report about the page: whether a read sees the writer's appends is up to the
    // scheduler (a read between two appends sees a page that did not change), its size is not.
    let mut page = String::from("# Growing page\n\nA log about basalt.\n");
    let line = "basalt line that keeps coming and coming\n";
    page.push_str(&line.repeat((17 << 20) / line.len()));
    std::fs::write(&growing, page).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (growing, stop) = (growing.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut file = std::fs::OpenOptions::new()
                .append(true)
                .open(&growing)
                .unwrap();
            let line = "basalt line that keeps coming and coming\n".repeat(100);
            let mut written = 0u64;
            // About 4 MB/s, at most 1 GiB, whatever happens: it grows during the whole build.
            while !stop.load(Ordering::Relaxed) && written < 1 << 30 {
                file.write_all(line.as_bytes()).unwrap();
                written += line.len() as u64;
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let result = std::panic::catch_unwind(|| {
        index_within(&bundle, &dir.path().join("index"), BUILD_WATCHDOG)
    });
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let (out, took) = result.unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("notes/growing.md")
            && (stderr.contains("changed while it was read")
                || stderr.contains("only the first 16777216 bytes")),
        "{stderr}"
    );
    eprintln!("built in {took:?}");
}

/// A small tmpfs mounted at `path` (root only), unmounted when dropped.
struct Mount(PathBuf);

impl Mount {
    fn tmpfs(path: &Path, size: &str) -> Option<Mount> {
        std::fs::create_dir_all(path).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(path)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Mount(path.to_path_buf()))
    }

    fn remount(&self, how: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,{how}")])
            .arg(&self.0)
            .status()
            .unwrap();
        assert!(status.success(), "remount {how}");
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn skip(test: &str) {
    eprintln!(
        "SKIPPED {test}: it mounts a small tmpfs, which needs root (mount -t tmpfs); run it as root to check"
    );
}

/// Fills the file system at `dir` to the last byte.
fn fill(dir: &Path) {
    let mut file = std::fs::File::create(dir.join("filler")).unwrap();
    let block = vec![7u8; 1 << 16];
    while file.write_all(&block).is_ok() {}
    let small = [7u8; 512];
    while file.write_all(&small).is_ok() {}
    let _ = file.sync_all();
}

fn leftovers(index_dir: &Path) -> Vec<String> {
    std::fs::read_dir(index_dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect()
}

/// Adds a page, so the next call's refresh has something to write.
fn change_bundle(bundle: &Path) {
    std::fs::write(
        bundle.join("notes/new.md"),
        "# New page\n\nAbout obsidian glass and the brass lamp.\n",
    )
    .unwrap();
}

/// The index on a full disk and a changed bundle: `call`, `serve` and `mcp` answer from the old
/// index, say on stderr that it is stale and why, and leave no `.tmp` behind.
#[test]
fn a_full_disk_answers_from_the_old_index_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let Some(mount) = Mount::tmpfs(&dir.path().join("disk"), "4m") else {
        return skip("a_full_disk_answers_from_the_old_index_and_leaves_nothing_behind");
    };
    let bundle = plain_bundle(dir.path());
    let index_dir = mount.0.join("index");
    index(&bundle, &index_dir);
    fill(&mount.0);
    change_bundle(&bundle);
    let idx = index_dir.to_str().unwrap();
    let b = bundle.to_str().unwrap();

    let out = run(&["search", "brass lamp", "--bundle", b, "--index", idx]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let found: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!found["items"].as_array().unwrap().is_empty(), "{found}");
    assert!(
        stderr.contains("stale") && stderr.contains("No space left on device"),
        "{stderr}"
    );
    // Said even with -q.
    let quiet = run(&["tree", "--bundle", b, "--index", idx, "-q"]);
    assert_eq!(quiet.status.code(), Some(0), "{}", text(&quiet.stderr));
    assert!(text(&quiet.stderr).contains("stale"));
    assert_eq!(leftovers(&index_dir), Vec::<String>::new());

    let http = HttpServer::start(
        &["--bundle", b, "--index", idx],
        dir.path().join("serve.txt"),
    );
    let (status, body) = http.get("/search?query=brass%20lamp").unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(http.stderr().contains("stale"), "{}", http.stderr());
    drop(http);
    let mut mcp = McpServer::start(
        &["--bundle", b, "--index", idx],
        &dir.path().join("mcp.txt"),
    );
    let (answer, is_error) = mcp.call("search_files", json!({"query": "brass lamp"}));
    assert!(!is_error, "{answer}");
    drop(mcp);
    assert!(std::fs::read_to_string(dir.path().join("mcp.txt"))
        .unwrap()
        .contains("stale"));
    assert_eq!(leftovers(&index_dir), Vec::<String>::new());

    // Space again: the next call rebuilds, and finds the new page.
    std::fs::remove_file(mount.0.join("filler")).unwrap();
    let out = run(&[
        "search", "obsidian", "--bundle", b, "--index", idx, "--mode", "file",
    ]);
    assert!(
        !text(&out.stderr).contains("stale"),
        "{}",
        text(&out.stderr)
    );
    let found: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(found["items"][0]["path"], "pages/notes/new.md", "{found}");
}

/// An intact index on a read-only file system answers every tool, with and without
/// `--no-refresh`, from the CLI, `serve` and `mcp`; a changed bundle is answered from it, said
/// stale because the index folder is read-only.
#[test]
fn a_read_only_index_answers_every_tool() {
    let dir = tempfile::tempdir().unwrap();
    let Some(mount) = Mount::tmpfs(&dir.path().join("ro"), "16m") else {
        return skip("a_read_only_index_answers_every_tool");
    };
    let bundle = plain_bundle(dir.path());
    let index_dir = mount.0.join("index");
    index(&bundle, &index_dir);
    mount.remount("ro");
    let idx = index_dir.to_str().unwrap();
    let b = bundle.to_str().unwrap();
    let file_id = {
        let out = run(&[
            "file",
            "pages/notes/guide.md",
            "--bundle",
            b,
            "--index",
            idx,
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let detail: Value = serde_json::from_slice(&out.stdout).unwrap();
        detail["file"]["fileId"].as_str().unwrap().to_string()
    };
    let commands: Vec<Vec<&str>> = vec![
        vec!["search", "brass lamp"],
        vec!["read", "pages/notes/guide.md"],
        vec!["tree"],
        vec!["file", &file_id],
        vec!["related", "pages/README.md"],
        vec!["expand", "pages/README.md"],
        vec!["index", b],
    ];
    for refresh in [&[][..], &["--no-refresh"][..]] {
        for command in &commands {
            let mut args = command.clone();
            args.extend(["--bundle", b, "--index", idx]);
            args.extend(refresh);
            let out = run(&args);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{args:?}: {}{}",
                text(&out.stdout),
                text(&out.stderr)
            );
        }
    }
    let http = HttpServer::start(
        &["--bundle", b, "--index", idx],
        dir.path().join("serve.txt"),
    );
    for target in [
        "/search?query=brass",
        "/files/content?path=pages/notes/guide.md",
        "/tree",
    ] {
        let (status, body) = http.get(target).unwrap();
        assert_eq!(status, 200, "{target}: {body}");
    }
    drop(http);
    let mut mcp = McpServer::start(
        &["--bundle", b, "--index", idx],
        &dir.path().join("mcp.txt"),
    );
    let (answer, is_error) = mcp.call("list_tree", json!({}));
    assert!(!is_error, "{answer}");
    drop(mcp);

    change_bundle(&bundle);
    let out = run(&["search", "brass lamp", "--bundle", b, "--index", idx]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("read-only") && stderr.contains("stale"),
        "{stderr}"
    );
}

/// `KBTOOLS_NO_REFRESH=1`, as the README writes it, is taken, and means what `--no-refresh`
/// does: the changed bundle is not indexed.
#[test]
fn kbtools_no_refresh_1_is_taken_as_yes() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = plain_bundle(dir.path());
    let index_dir = dir.path().join("index");
    index(&bundle, &index_dir);
    change_bundle(&bundle);
    for (value, refreshed) in [("1", false), ("yes", false), ("0", true)] {
        let out = kbtools()
            .env("KBTOOLS_NO_REFRESH", value)
            .args(["search", "obsidian", "--mode", "file", "--bundle"])
            .arg(&bundle)
            .arg("--index")
            .arg(&index_dir)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{value}: {}", text(&out.stderr));
        let found: Value = serde_json::from_slice(&out.stdout).unwrap();
        let has_new = found["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["path"] == "pages/notes/new.md");
        assert_eq!(has_new, refreshed, "KBTOOLS_NO_REFRESH={value}: {found}");
    }
}

/// A request head of 139,264 bytes (136 KiB) is over the README's 128 KiB and answers 431; one
/// just under the limit is served.
#[test]
fn a_head_just_over_128_kib_answers_431() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = plain_bundle(dir.path());
    let http = HttpServer::start(
        &[
            "--bundle",
            bundle.to_str().unwrap(),
            "--index",
            dir.path().join("i").to_str().unwrap(),
        ],
        dir.path().join("serve.txt"),
    );
    let head = |total: usize| {
        let start = format!(
            "GET /openapi/v2/health HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nX-Pad: ",
            http.addr
        );
        let pad = total - start.len() - 4;
        format!("{start}{}\r\n\r\n", "a".repeat(pad)).into_bytes()
    };
    for (total, expected) in [(139_264, 431), (128 * 1024 + 1, 431), (120 * 1024, 200)] {
        let request = head(total);
        assert_eq!(request.len(), total);
        let reply = http.exchange(&request).unwrap();
        let status: u16 = text(&reply)
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        assert_eq!(status, expected, "a head of {total} bytes");
    }
}

/// `-q` keeps the warning that the server listens beyond loopback without a token.
#[test]
fn quiet_keeps_the_beyond_loopback_warning() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = plain_bundle(dir.path());
    let stderr = dir.path().join("serve.txt");
    let mut child = kbtools()
        .arg("serve")
        .arg("--bundle")
        .arg(&bundle)
        .arg("--index")
        .arg(dir.path().join("i"))
        .args(["--addr", "0.0.0.0:0", "-q"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let mut said = String::new();
    // Bounded against a hang only: the loop ends as soon as the warning is there.
    while started.elapsed() < WAIT && !said.contains("beyond loopback") {
        std::thread::sleep(Duration::from_millis(50));
        said = std::fs::read_to_string(&stderr).unwrap_or_default();
        if child.try_wait().unwrap().is_some() {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        said.contains("warning") && said.contains("beyond loopback"),
        "{said}"
    );
}

/// `--token ''` (or only spaces, or an empty `KBTOOLS_TOKEN`) is refused instead of silently
/// turning authentication off.
#[test]
fn an_empty_token_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = plain_bundle(dir.path());
    let serve = |token: Option<&str>, env_token: Option<&str>| {
        let mut command = kbtools();
        command
            .arg("serve")
            .arg("--bundle")
            .arg(&bundle)
            .arg("--index")
            .arg(dir.path().join("i"))
            .args(["--addr", &free_port().to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(token) = token {
            command.args(["--token", token]);
        }
        if let Some(token) = env_token {
            command.env("KBTOOLS_TOKEN", token);
        }
        // A server that takes the token runs until killed: `WAIT` bounds it (a refusal comes
        // at once, so only a server that took the token waits that long).
        let mut child = command.spawn().unwrap();
        let started = Instant::now();
        while child.try_wait().unwrap().is_none() && started.elapsed() < WAIT {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        child.wait_with_output().unwrap()
    };
    for (token, env_token) in [(Some(""), None), (Some("  "), None), (None, Some(""))] {
        let out = serve(token, env_token);
        assert_eq!(out.status.code(), Some(2), "{token:?} {env_token:?}");
        assert!(
            text(&out.stderr).contains("--token"),
            "{}",
            text(&out.stderr)
        );
    }
}

/// `--index` naming the bundle's own folder, or a folder inside it that the walk reads, is
/// refused and writes nothing there; a hidden folder inside it is fine.
#[test]
fn an_index_folder_inside_the_bundle_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = plain_bundle(dir.path());
    let before = tree_of(&bundle);
    for index_dir in [bundle.clone(), bundle.join("notes"), bundle.join("idx")] {
        for args in [
            vec!["index".to_string(), bundle.display().to_string()],
            vec![
                "tree".into(),
                "--bundle".into(),
                bundle.display().to_string(),
            ],
        ] {
            let out = kbtools()
                .args(&args)
                .arg("--index")
                .arg(&index_dir)
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(2), "{args:?} {index_dir:?}");
            let stderr = text(&out.stderr);
            assert!(
                stderr.contains("inside the bundle") || stderr.contains("bundle's own folder"),
                "{stderr}"
            );
        }
    }
    assert_eq!(
        tree_of(&bundle),
        before,
        "files were written into the bundle"
    );
    let out = run(&[
        "tree",
        "--bundle",
        bundle.to_str().unwrap(),
        "--index",
        bundle.join(".kbtools-index").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

fn tree_of(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(|e| e.ok())
        .map(|e| e.path().to_path_buf())
        .collect();
    paths.sort();
    paths
}

/// With `--no-refresh` and a page changed after the build, the hits come from the index as
/// built, and so do their excerpts: an excerpt never shows text that was not searched.
#[test]
fn excerpts_never_come_from_a_file_changed_after_the_build() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = plain_bundle(dir.path());
    let index_dir = dir.path().join("index");
    index(&bundle, &index_dir);
    std::fs::write(
        bundle.join("notes/guide.md"),
        "# Lamp guide\n\nThe brass lamp is now a zqxchangedtextzqx lantern, same size.\n",
    )
    .unwrap();
    let out = run(&[
        "search",
        "trimmed at dawn",
        "--bundle",
        bundle.to_str().unwrap(),
        "--index",
        index_dir.to_str().unwrap(),
        "--no-refresh",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let found: Value = serde_json::from_slice(&out.stdout).unwrap();
    let guide = found["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == "pages/notes/guide.md")
        .unwrap_or_else(|| panic!("the old index finds the page: {found}"))
        .clone();
    assert!(!guide.to_string().contains("zqxchangedtextzqx"), "{guide}");
    assert!(guide["sourceExcerpt"].is_null(), "{guide}");
}
