//! Embedding in the background (docs/semantic.md): with the models installed, `kbtools mcp` and
//! `kbtools serve` answer over a folder whose embedding takes long before it is embedded (their
//! searches say `unavailable` or `degraded`, which proves it), then say `ready` once the
//! background build is published, without a restart; a `kbtools index` killed while it embeds
//! keeps what it finished, and the next build embeds only the rest. The models come from
//! `target/model` (CI installs them); elsewhere these skip, saying so.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common;
use crate::live_reload::{free_port, http_get, line_reader, response, send, Process};
use crate::semantic::model_dir;

/// Tokens per embedding chunk in these tests' builds (the `testing` hook): a progress line, a
/// health figure and an append to the embedding cache every few seconds in a debug build.
const CHUNK_TOKENS: &str = "1200";

/// A folder of `pages` Markdown pages, none alike (a window repeated is embedded once), about
/// 450 tokens each: a debug build on a 2-core machine embeds 300–600 tokens a second, so 16
/// pages keep it busy well beyond 10 s.
fn slow_folder(dir: &Path, pages: usize) {
    const WORDS: [&str; 32] = [
        "river", "ledger", "orbit", "meadow", "cipher", "lantern", "harbor", "quartz", "signal",
        "timber", "velvet", "glacier", "compass", "falcon", "granite", "harvest", "island",
        "jasmine", "kettle", "lattice", "marble", "nectar", "oyster", "pepper", "quiver", "saddle",
        "thistle", "walnut", "anchor", "bramble", "copper", "delta",
    ];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    std::fs::create_dir_all(dir).unwrap();
    for page in 0..pages {
        let mut text = format!("# Field notes {page}\n\n");
        for section in 0..3 {
            text.push_str(&format!("## Part {section} of notes {page}\n\n"));
            for _ in 0..8 {
                let sentence: Vec<&str> = (0..14)
                    .map(|_| WORDS[(next() % WORDS.len() as u64) as usize])
                    .collect();
                text.push_str(&sentence.join(" "));
                text.push_str(".\n");
            }
            text.push('\n');
        }
        std::fs::write(dir.join(format!("notes-{page:02}.md")), text).unwrap();
    }
}

/// The `semanticStatus.state` of a search result.
fn semantic_state(out: &Value) -> String {
    out["semanticStatus"]["state"]
        .as_str()
        .unwrap_or_else(|| panic!("no semanticStatus: {out}"))
        .to_string()
}

/// Asks `search` again until it says `ready` (a hang guard, not a speed bound).
fn until_ready(process: &mut Process, mut search: impl FnMut(&Process) -> Value) -> Value {
    let started = Instant::now();
    loop {
        process.assert_running();
        let out = search(process);
        if semantic_state(&out) == "ready" {
            return out;
        }
        assert!(
            started.elapsed() < common::HANG,
            "no search said ready within {:?}; stderr:\n{}",
            common::HANG,
            process.stderr()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// `kbtools mcp FOLDER` with the models in `model` (small embedding chunks) and `extra`
/// arguments, and its answer to `initialize`: the process, its stdin, its stdout's lines.
fn start_mcp(
    folder: &Path,
    index_dir: &Path,
    model: &Path,
    extra: &[&str],
) -> (
    Process,
    std::process::ChildStdin,
    std::sync::mpsc::Receiver<String>,
    Value,
) {
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "mcp".as_ref(),
        folder.as_os_str(),
        "--index".as_ref(),
        index_dir.as_os_str(),
        "--model-dir".as_ref(),
        model.as_os_str(),
    ];
    args.extend(extra.iter().map(|a| std::ffi::OsStr::new(*a)));
    let mut process = Process::spawn_with(&args, &[("KBTOOLS_EMBED_CHUNK_TOKENS", CHUNK_TOKENS)]);
    let mut stdin = process.child.stdin.take().unwrap();
    let lines = line_reader(process.child.stdout.take().unwrap());
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "background-embedding-test", "version": "1"}
        }}),
    );
    let init = response(&lines, 1, &process);
    (process, stdin, lines, init)
}

#[test]
fn kbtools_mcp_answers_before_the_folder_is_embedded_and_switches_to_it() {
    let Some(model) = model_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("notes");
    slow_folder(&folder, 16);
    let index_dir = dir.path().join("index");
    let (mut process, mut stdin, lines, init) =
        start_mcp(&folder, &index_dir, &model, &["--format", "json"]);
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    let tools = response(&lines, 2, &process);
    assert_eq!(
        tools["result"]["tools"].as_array().map(Vec::len),
        Some(6),
        "{tools}"
    );
    let mut id = 2;
    let mut search = |process: &Process| -> Value {
        id += 1;
        send(
            &mut stdin,
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "search_files",
                "arguments": {"query": "harbor lantern compass", "mode": "hybrid"}
            }}),
        );
        let reply = response(&lines, id, process);
        assert_ne!(reply["result"]["isError"], true, "{reply}");
        reply["result"]["structuredContent"].clone()
    };
    // Answered before the folder was embedded: the lane says so (docs/semantic.md).
    let first = search(&process);
    let state = semantic_state(&first);
    assert!(
        state == "unavailable" || state == "degraded",
        "{first}; stderr:\n{}",
        process.stderr()
    );
    assert!(!first["items"].as_array().unwrap().is_empty(), "{first}");
    let ready = until_ready(&mut process, &mut search);
    assert!(
        ready["evidenceStatus"]["completedFamilies"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f.as_str().is_some_and(|f| f.contains("vector"))),
        "{ready}"
    );
    let stderr = process.stderr();
    assert!(
        stderr.contains("embedding in the background") && stderr.contains("switched"),
        "{stderr}"
    );
}

#[test]
fn kbtools_serve_answers_before_the_folder_is_embedded_and_switches_to_it() {
    let Some(model) = model_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("notes");
    slow_folder(&folder, 16);
    let index_dir = dir.path().join("index");
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let addr_text = addr.to_string();
    let mut process = Process::spawn_with(
        &[
            "serve".as_ref(),
            folder.as_os_str(),
            "--addr".as_ref(),
            addr_text.as_ref(),
            "--index".as_ref(),
            index_dir.as_os_str(),
            "--model-dir".as_ref(),
            model.as_os_str(),
        ],
        &[("KBTOOLS_EMBED_CHUNK_TOKENS", CHUNK_TOKENS)],
    );
    let started = Instant::now();
    let health = loop {
        process.assert_running();
        if let Ok((200, body)) = http_get(addr, "/openapi/v2/health") {
            break serde_json::from_str::<Value>(&body).unwrap();
        }
        assert!(
            started.elapsed() < common::HANG,
            "no health answer; stderr:\n{}",
            process.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let kb = &health["knowledgeBases"][0];
    assert_ne!(kb["embedding"]["state"], "done", "{health}");
    let id = kb["knowledgeBaseId"].as_str().unwrap().to_string();
    let search = |process: &Process| -> Value {
        let target = format!(
            "/openapi/v2/knowledge-bases/{id}/files/search?query=harbor%20lantern%20compass&mode=hybrid"
        );
        let (status, body) = http_get(addr, &target)
            .unwrap_or_else(|e| panic!("{e}; stderr:\n{}", process.stderr()));
        assert_eq!(status, 200, "{body}");
        serde_json::from_str(&body).unwrap()
    };
    let first = search(&process);
    let state = semantic_state(&first);
    assert!(state == "unavailable" || state == "degraded", "{first}");
    until_ready(&mut process, search);
    let (_, body) = http_get(addr, "/openapi/v2/health").unwrap();
    let health: Value = serde_json::from_str(&body).unwrap();
    let embedding = &health["knowledgeBases"][0]["embedding"];
    assert_eq!(embedding["state"], "done", "{health}");
    assert!(embedding["windowsTotal"].as_u64() > Some(0), "{health}");
    assert_eq!(
        embedding["windowsDone"], embedding["windowsTotal"],
        "{health}"
    );
}

#[test]
fn a_killed_index_keeps_what_it_embedded_and_the_next_embeds_the_rest() {
    let Some(model) = model_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("notes");
    slow_folder(&folder, 12);
    let index_dir = dir.path().join("index");
    let index = || {
        let mut command = common::kbtools();
        command
            .arg("index")
            .arg(&folder)
            .arg("--index")
            .arg(&index_dir)
            .arg("--model-dir")
            .arg(&model)
            .env("KBTOOLS_EMBED_CHUNK_TOKENS", CHUNK_TOKENS);
        command
    };
    let mut child = index()
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let (lines, seen) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                return;
            }
        }
    });
    // SIGKILL once a chunk is embedded (its progress line comes after its append).
    let mut said = Vec::new();
    loop {
        let line = seen
            .recv_timeout(common::HANG)
            .unwrap_or_else(|e| panic!("no progress line from kbtools index ({e}): {said:?}"));
        said.push(line.clone());
        if line.starts_with("kbtools: embedded ") {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let out = index().output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    let work = &summary["work"]["vectors"];
    let windows = summary["semantic"]["windows"].as_u64().unwrap();
    let cached = work["windowsCached"].as_u64().unwrap();
    let embedded = work["windowsEmbedded"].as_u64().unwrap();
    assert!(cached > 0, "{summary}");
    assert!(embedded < windows, "{summary}");
    assert_eq!(summary["semantic"]["pagesWithout"], 0, "{summary}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{cached} windows from the embedding cache")),
        "{stderr}"
    );
}

#[test]
fn kbtools_mcp_exits_when_its_client_leaves_while_it_embeds() {
    let Some(model) = model_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("notes");
    slow_folder(&folder, 16);
    let index_dir = dir.path().join("index");
    let (mut process, stdin, _lines, _) = start_mcp(&folder, &index_dir, &model, &[]);
    // Once the background build has started embedding, the client goes.
    let started = Instant::now();
    while !process.stderr().contains("embedding in the background") {
        process.assert_running();
        assert!(started.elapsed() < common::HANG, "{}", process.stderr());
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(stdin);
    let started = Instant::now();
    let status = loop {
        if let Some(status) = process.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < common::HANG,
            "kbtools mcp did not exit; stderr:\n{}",
            process.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}; stderr:\n{}", process.stderr());
    let manifest = kbtools::index::read_manifest(&index_dir).unwrap().unwrap();
    assert!(
        manifest.semantic.is_some_and(|s| s.pages_without > 0),
        "the background build was not finished"
    );
}
