//! Servers switch to a rebuilt index between requests: the library's `LiveKnowledgeBase`, the
//! MCP server in process and the HTTP server over real sockets keep answering while
//! `index::build` runs on another thread, and every response is from exactly one revision,
//! consistent with that revision's index. Then the watcher (`live::BundleWatcher`, events and
//! polling), and `kbtools serve --watch` and `kbtools mcp --watch` end to end: edit a page, and
//! search finds the new word within a bounded wait.
//!
//! Each test works on its own copy of `fixtures/focowiki-docs` in a temporary folder. Waits are
//! bounded; child processes are killed when a test ends, however it ends.

use crate::common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kbtools::door::OutputFormat;
use kbtools::index::{self, BuildOptions};
use kbtools::kb::KnowledgeBase;
use kbtools::serve::http::HttpOptions;
use kbtools::serve::live::{BundleWatcher, Level, LiveKnowledgeBase, Log, WatchOptions};
use kbtools::serve::mcp::{KbServer, McpOptions};
use serde_json::{json, Value};

/// The page every edit appends to.
const PAGE: &str = "pages/en/README.md";
/// One new word per edit; no fixture page has any of them.
const WORDS: [&str; 3] = ["quokkaflux", "zephyrquill", "marmotbrine"];
/// Threads sending requests at once.
const CLIENTS: usize = 4;

// ---------------------------------------------------------------------------------------------
// Fixture copies, edits, logs

/// A copy of the fixture bundle with a built index, both in temporary folders.
struct Fixture {
    bundle: tempfile::TempDir,
    index: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let bundle = tempfile::tempdir().unwrap();
        common::copy_dir(&common::fixture("focowiki-docs"), bundle.path());
        let index = tempfile::tempdir().unwrap();
        let fixture = Fixture { bundle, index };
        fixture.build();
        fixture
    }

    fn root(&self) -> &Path {
        self.bundle.path()
    }

    fn index_dir(&self) -> &Path {
        self.index.path()
    }

    fn build(&self) -> index::BuildReport {
        build(self.root(), self.index_dir())
    }

    fn live(&self, log: Log) -> Arc<LiveKnowledgeBase> {
        Arc::new(
            LiveKnowledgeBase::open(
                self.index_dir(),
                Some(self.root()),
                common::serve_options(),
                log,
            )
            .unwrap(),
        )
    }
}

fn build(root: &Path, index_dir: &Path) -> index::BuildReport {
    index::build(root, index_dir, &BuildOptions::default(), &mut |_| {})
        .unwrap_or_else(|e| panic!("building {}: {e}", root.display()))
}

/// Appends a sentence with `word` to the page.
fn edit_page(root: &Path, word: &str) {
    let path = root.join(PAGE);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    writeln!(file, "\nThis edit adds the word {word} to the page.").unwrap();
    file.sync_all().unwrap();
}

/// A log that keeps its lines, for assertions.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<(Level, String)>>>);

impl Lines {
    fn log(&self) -> Log {
        let lines = self.0.clone();
        Arc::new(move |level, line: &str| lines.lock().unwrap().push((level, line.to_string())))
    }

    fn warnings(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|(level, _)| *level == Level::Warning)
            .map(|(_, line)| line.clone())
            .collect()
    }

    fn all(&self) -> String {
        let lines = self.0.lock().unwrap();
        lines
            .iter()
            .map(|(level, line)| format!("{level:?}: {line}"))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Polls `done` every 50 ms until it holds; panics with `what` after [`common::HANG`] (a hang,
/// not a slow machine).
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < common::HANG,
            "waited {:?} for {what}",
            common::HANG
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every `activeContentRevision` anywhere in a response.
fn revisions(value: &Value, out: &mut Vec<u64>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                if key == "activeContentRevision" {
                    if let Some(n) = v.as_u64() {
                        out.push(n);
                    }
                }
                revisions(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| revisions(v, out)),
        _ => {}
    }
}

fn search(word: &str) -> Value {
    json!({ "query": word, "mode": "file" })
}

/// The directory of the page, in one page of the tree.
fn tree_input() -> Value {
    json!({ "parentPath": "pages/en", "limit": 20 })
}

/// The page's `resourceRevision` in a `list_tree` output.
fn page_resource_revision(tree: &Value) -> Option<u64> {
    tree["items"]
        .as_array()?
        .iter()
        .find(|item| item["path"] == PAGE)?["resourceRevision"]
        .as_u64()
}

fn finds_page(output: &Value) -> bool {
    output["items"]
        .as_array()
        .is_some_and(|items| items.iter().any(|item| item["path"] == PAGE))
}

// ---------------------------------------------------------------------------------------------
// Requests under a swap

/// Answers one tool call through some front door: the contract JSON, or why it failed.
type Client = Arc<dyn Fn(&str, &Value) -> Result<Value, String> + Send + Sync>;

/// What the responses must satisfy: one revision throughout, between `base` and
/// `base + WORDS.len()`, and that revision's index: `WORDS[i]` is found exactly from revision
/// `base + i + 1` on, and the page's `resourceRevision` in the tree is the revision that last
/// changed it.
struct Expect {
    base: u64,
    page_id: String,
    base_resource_revision: u64,
}

impl Expect {
    fn of(kb: &KnowledgeBase) -> Expect {
        let file = common::json_call(kb, "get_file", &json!({ "fileId": PAGE })).unwrap();
        let tree = common::json_call(kb, "list_tree", &tree_input()).unwrap();
        Expect {
            base: kb.manifest.active_content_revision,
            page_id: file["file"]["fileId"].as_str().unwrap().to_string(),
            base_resource_revision: page_resource_revision(&tree).unwrap(),
        }
    }

    /// The one revision of a response, or what is wrong with it.
    fn check(&self, tool: &str, input: &Value, output: &Value) -> Result<u64, String> {
        let mut found = Vec::new();
        revisions(output, &mut found);
        found.sort_unstable();
        found.dedup();
        let [revision] = found[..] else {
            return Err(format!(
                "{tool} {input}: revisions {found:?} in one response"
            ));
        };
        let last = self.base + WORDS.len() as u64;
        if !(self.base..=last).contains(&revision) {
            return Err(format!(
                "{tool}: revision {revision} outside {}..={last}",
                self.base
            ));
        }
        match tool {
            "search_files" => {
                let word = input["query"].as_str().unwrap_or_default();
                let i = WORDS.iter().position(|w| *w == word).unwrap_or(0) as u64;
                let expected = revision > self.base + i;
                if finds_page(output) != expected {
                    return Err(format!(
                        "search for {word} at revision {revision}: found the page = {}, \
                         expected {expected}",
                        !expected
                    ));
                }
            }
            "get_file" if output["file"]["path"] != PAGE => {
                return Err(format!("get_file: another file {output}"));
            }
            "list_tree" => {
                let resource = page_resource_revision(output);
                let expected = if revision == self.base {
                    self.base_resource_revision
                } else {
                    revision
                };
                if resource != Some(expected) {
                    return Err(format!(
                        "list_tree at revision {revision}: the page's resourceRevision {resource:?}, \
                         expected {expected}"
                    ));
                }
            }
            _ => {}
        }
        Ok(revision)
    }
}

/// What the client threads saw.
#[derive(Default)]
struct Stats {
    requests: AtomicU64,
    failures: Mutex<Vec<String>>,
    by_revision: Mutex<BTreeMap<u64, u64>>,
}

impl Stats {
    fn at(&self, revision: u64) -> u64 {
        self.by_revision
            .lock()
            .unwrap()
            .get(&revision)
            .copied()
            .unwrap_or(0)
    }
}

/// Sends requests in a loop until `stop`: a search for each word, the page's metadata, a
/// directory listing; checks each response.
fn client_loop(client: Client, expect: Arc<Expect>, stats: Arc<Stats>, stop: Arc<AtomicBool>) {
    let mut calls: Vec<(&str, Value)> = WORDS.iter().map(|w| ("search_files", search(w))).collect();
    calls.push(("get_file", json!({ "fileId": expect.page_id })));
    calls.push(("list_tree", tree_input()));
    while !stop.load(Ordering::SeqCst) {
        for (tool, input) in &calls {
            let checked = client(tool, input).and_then(|out| expect.check(tool, input, &out));
            stats.requests.fetch_add(1, Ordering::SeqCst);
            match checked {
                Ok(revision) => {
                    *stats
                        .by_revision
                        .lock()
                        .unwrap()
                        .entry(revision)
                        .or_default() += 1;
                }
                Err(e) => stats.failures.lock().unwrap().push(e),
            }
        }
    }
}

/// Runs `CLIENTS` client threads against `client` while the page is edited and the index
/// rebuilt on another thread, once per word; asserts that no request failed, that every
/// response was consistent with one revision, and that the clients moved to each new revision.
fn swap_under_load(fixture: &Fixture, client: Client, expect: Expect) {
    let expect = Arc::new(expect);
    let stats = Arc::new(Stats::default());
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<JoinHandle<()>> = (0..CLIENTS)
        .map(|_| {
            let (client, expect, stats, stop) =
                (client.clone(), expect.clone(), stats.clone(), stop.clone());
            std::thread::spawn(move || client_loop(client, expect, stats, stop))
        })
        .collect();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_until("the first requests", || {
            stats.requests.load(Ordering::SeqCst) >= 20
        });
        for (i, word) in WORDS.iter().enumerate() {
            edit_page(fixture.root(), word);
            let (root, index_dir) = (
                fixture.root().to_path_buf(),
                fixture.index_dir().to_path_buf(),
            );
            let report = std::thread::spawn(move || build(&root, &index_dir))
                .join()
                .unwrap();
            let target = expect.base + i as u64 + 1;
            assert_eq!(report.manifest.active_content_revision, target);
            wait_until(&format!("requests answered at revision {target}"), || {
                stats.at(target) >= 2 * CLIENTS as u64
            });
        }
    }));
    stop.store(true, Ordering::SeqCst);
    for thread in threads {
        thread.join().unwrap();
    }
    let failures = stats.failures.lock().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} requests failed or mixed revisions; the first:\n{}",
        failures.len(),
        stats.requests.load(Ordering::SeqCst),
        failures
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
    let seen = stats.by_revision.lock().unwrap();
    eprintln!(
        "{} requests; answered per revision: {seen:?}",
        stats.requests.load(Ordering::SeqCst)
    );
    let expected: Vec<u64> = (expect.base..=expect.base + WORDS.len() as u64).collect();
    assert_eq!(
        seen.keys().copied().collect::<Vec<_>>(),
        expected,
        "{seen:?}"
    );
}

#[test]
fn the_library_switches_between_calls_and_never_mixes_revisions() {
    let fixture = Fixture::new();
    let lines = Lines::default();
    let live = fixture.live(lines.log());
    let expect = Expect::of(&live.get());
    assert_eq!(expect.base, 1);
    let client: Client = {
        let live = live.clone();
        Arc::new(move |tool, input| {
            common::json_call(&live.get(), tool, input)
                .map_err(|e| format!("{tool}: {}", e.envelope("test")))
        })
    };
    swap_under_load(&fixture, client, expect);

    let kb = live.get();
    assert_eq!(kb.manifest.active_content_revision, 1 + WORDS.len() as u64);
    for word in WORDS {
        let found = common::json_call(&kb, "search_files", &search(word)).unwrap();
        assert!(finds_page(&found), "{word}: {found}");
    }
    assert!(lines.warnings().is_empty(), "{}", lines.all());
    assert!(lines.all().contains("revision 3 -> 4"), "{}", lines.all());
}

#[test]
fn the_mcp_server_switches_between_calls_and_never_mixes_revisions() {
    let fixture = Fixture::new();
    let live = fixture.live(kbtools::serve::live::silent());
    let expect = Expect::of(&live.get());
    let options = McpOptions {
        format: OutputFormat::Json,
        ..McpOptions::default()
    };
    let server = KbServer::live(live, options).unwrap();
    let client: Client = {
        let server = server.clone();
        Arc::new(move |tool, input| {
            let arguments = input.as_object().cloned();
            let answer = server.answer(tool, arguments);
            if answer.is_error == Some(true) {
                return Err(format!(
                    "{tool}: {}",
                    serde_json::to_string(&answer).unwrap()
                ));
            }
            answer
                .structured_content
                .ok_or_else(|| format!("{tool}: no structuredContent"))
        })
    };
    swap_under_load(&fixture, client, expect);
    assert_eq!(
        server.knowledge_base().manifest.active_content_revision,
        1 + WORDS.len() as u64
    );
}

#[test]
fn the_http_server_switches_between_requests_and_never_mixes_revisions() {
    let fixture = Fixture::new();
    let live = fixture.live(kbtools::serve::live::silent());
    let expect = Expect::of(&live.get());
    let base = format!("/openapi/v2/knowledge-bases/{}", live.kb_id());
    let server = HttpServer::start(vec![live]);
    let addr = server.addr;
    let client: Client = Arc::new(move |tool, input| {
        let target = match tool {
            "search_files" => format!(
                "{base}/files/search?query={}&mode=file",
                input["query"].as_str().unwrap_or_default()
            ),
            "get_file" => format!("{base}/files/{}", input["fileId"].as_str().unwrap_or("")),
            "list_tree" => format!("{base}/tree?parentPath=pages%2Fen&limit=20"),
            other => return Err(format!("no route for {other}")),
        };
        let (status, body) = http_get(addr, &target)?;
        if status != 200 {
            return Err(format!("GET {target}: {status} {body}"));
        }
        serde_json::from_str(&body).map_err(|e| format!("GET {target}: not JSON ({e})"))
    });
    swap_under_load(&fixture, client, expect);

    // The list of knowledge bases reports the live revision too.
    let (status, body) = http_get(addr, "/openapi/v2/knowledge-bases").unwrap();
    assert_eq!(status, 200, "{body}");
    let list: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        list["items"][0]["activeContentRevision"],
        1 + WORDS.len() as u64
    );
}

// ---------------------------------------------------------------------------------------------
// Generations that cannot be switched to

#[test]
fn a_generation_that_does_not_open_is_skipped_and_logged_once() {
    let fixture = Fixture::new();
    let lines = Lines::default();
    let live = fixture.live(lines.log());
    let good = index::current_generation(fixture.index_dir()).unwrap();

    // A damaged generation: a copy of the live one without its full-text index.
    let broken = fixture.index_dir().join("gen-broken");
    common::copy_dir(&good, &broken);
    std::fs::remove_dir_all(broken.join("search")).unwrap();
    let tmp = fixture.index_dir().join("CURRENT.test.tmp");
    std::fs::write(&tmp, "gen-broken").unwrap();
    std::fs::rename(&tmp, fixture.index_dir().join("CURRENT")).unwrap();

    for _ in 0..5 {
        let kb = live.get();
        let out =
            common::json_call(&kb, "search_files", &search("agents read related files")).unwrap();
        assert_eq!(out["activeContentRevision"], 1);
    }
    assert!(
        !live.refresh(),
        "switched to a generation without its search index"
    );
    let warnings = lines.warnings();
    assert_eq!(warnings.len(), 1, "{}", lines.all());
    assert!(
        warnings[0].contains("gen-broken")
            && warnings[0].contains("still answering from revision 1"),
        "{}",
        warnings[0]
    );

    // A good build after it is switched to.
    edit_page(fixture.root(), WORDS[0]);
    fixture.build();
    let kb = live.get();
    let found = common::json_call(&kb, "search_files", &search(WORDS[0])).unwrap();
    assert!(finds_page(&found), "{found}");
    assert_eq!(lines.warnings().len(), 1, "{}", lines.all());
}

#[test]
fn a_rebuild_under_another_knowledge_base_id_is_not_switched_to() {
    let fixture = Fixture::new();
    let lines = Lines::default();
    let live = fixture.live(lines.log());
    let id = live.kb_id().to_string();
    edit_page(fixture.root(), WORDS[0]);
    let options = BuildOptions {
        knowledge_base_id: Some("knowledge-base-someone-else".into()),
        ..BuildOptions::default()
    };
    index::build(fixture.root(), fixture.index_dir(), &options, &mut |_| {}).unwrap();
    for _ in 0..3 {
        assert_eq!(live.get().kb_id(), id);
    }
    let warnings = lines.warnings();
    assert_eq!(warnings.len(), 1, "{}", lines.all());
    assert!(
        warnings[0].contains("knowledge-base-someone-else") && warnings[0].contains("restart"),
        "{}",
        warnings[0]
    );
}

/// A request that still holds a snapshot while builds remove its generation folder (a build
/// keeps only the live generation and the one before it) keeps answering: the catalog is in
/// memory and the full-text index is memory-mapped, and an unlinked mapped file stays readable.
#[test]
fn a_snapshot_keeps_answering_after_its_generation_folder_is_removed() {
    let fixture = Fixture::new();
    let live = fixture.live(kbtools::serve::live::silent());
    let old = live.get();
    let old_generation = index::current_generation(fixture.index_dir()).unwrap();
    for word in WORDS {
        edit_page(fixture.root(), word);
        fixture.build();
        assert_eq!(
            live.get().manifest.active_content_revision,
            old.manifest.active_content_revision
                + 1
                + WORDS.iter().position(|w| *w == word).unwrap() as u64
        );
    }
    assert!(
        !old_generation.exists(),
        "{} was kept",
        old_generation.display()
    );
    let out =
        common::json_call(&old, "search_files", &search("agents read related files")).unwrap();
    assert_eq!(out["activeContentRevision"], 1);
    assert!(!out["items"].as_array().unwrap().is_empty(), "{out}");
    let read = common::json_call(&old, "read_file", &json!({ "path": PAGE })).unwrap();
    assert!(read["content"]
        .as_str()
        .unwrap()
        .contains("Project Introduction"));
    let related = common::json_call(&old, "read_related", &json!({ "fileId": PAGE }));
    assert!(related.is_ok(), "{related:?}");
}

// ---------------------------------------------------------------------------------------------
// The watcher

fn watch_options(force_polling: bool) -> WatchOptions {
    WatchOptions {
        debounce: Duration::from_millis(200),
        max_delay: Duration::from_secs(5),
        poll_interval: Duration::from_millis(200),
        force_polling,
    }
}

/// Starts a watcher, edits the page, and waits (bounded) until the live knowledge base finds
/// the new word.
fn watcher_picks_up_an_edit(force_polling: bool) {
    let fixture = Fixture::new();
    let lines = Lines::default();
    let live = fixture.live(lines.log());
    let watcher = BundleWatcher::start(
        fixture.root(),
        fixture.index_dir(),
        BuildOptions::default(),
        Some(live.clone()),
        watch_options(force_polling),
        lines.log(),
    )
    .unwrap();
    if force_polling {
        assert_eq!(watcher.mode(), kbtools::serve::live::WatchMode::Polling);
    }
    // Let the first check (nothing changed) pass, so the edit is a change of its own.
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(
        live.get().manifest.active_content_revision,
        1,
        "{}",
        lines.all()
    );
    edit_page(fixture.root(), WORDS[0]);
    wait_until("the watcher's rebuild", || {
        let kb = live.snapshot();
        finds_page(&common::json_call(&kb, "search_files", &search(WORDS[0])).unwrap())
    });
    assert_eq!(live.snapshot().manifest.active_content_revision, 2);
    watcher.shutdown();
    let log = lines.all();
    assert!(log.contains("rebuilding the index"), "{log}");
    assert!(lines.warnings().is_empty(), "{log}");
}

#[test]
fn the_watcher_rebuilds_on_file_events() {
    watcher_picks_up_an_edit(false);
}

#[test]
fn the_polling_watcher_rebuilds_on_a_changed_fingerprint() {
    watcher_picks_up_an_edit(true);
}

#[test]
fn a_failed_rebuild_keeps_the_old_index_answering() {
    let fixture = Fixture::new();
    let lines = Lines::default();
    let live = fixture.live(lines.log());
    let watcher = BundleWatcher::start(
        fixture.root(),
        fixture.index_dir(),
        BuildOptions::default(),
        Some(live.clone()),
        watch_options(true),
        lines.log(),
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(400));
    // The bundle's own folder goes away: nothing to build from.
    let root = fixture.root().to_path_buf();
    let moved = fixture.index_dir().with_extension("moved");
    std::fs::rename(&root, &moved).unwrap();
    wait_until("the failed rebuild's warning", || {
        !lines.warnings().is_empty()
    });
    let warning = lines.warnings().remove(0);
    assert!(
        warning.contains("failed") && warning.contains("still answering from revision 1"),
        "{warning}"
    );
    let kb = live.get();
    assert_eq!(kb.manifest.active_content_revision, 1);
    let out = common::json_call(&kb, "search_files", &search("agents read related files"));
    assert!(out.is_ok(), "{out:?}");
    watcher.shutdown();
    std::fs::rename(&moved, &root).unwrap();
}

#[test]
fn a_watch_refuses_an_index_folder_inside_the_bundle_it_watches() {
    let fixture = Fixture::new();
    let inside = fixture.root().join("kb-index");
    let refused = BundleWatcher::start(
        fixture.root(),
        &inside,
        BuildOptions::default(),
        None,
        watch_options(true),
        kbtools::serve::live::silent(),
    );
    let message = refused.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        message.contains("inside the bundle") && message.contains("kb-index"),
        "{message:?}"
    );
    // A hidden folder is skipped by the walk, so it may hold the index.
    let hidden = fixture.root().join(".kbtools-index");
    build(fixture.root(), &hidden);
    let watcher = BundleWatcher::start(
        fixture.root(),
        &hidden,
        BuildOptions::default(),
        None,
        watch_options(true),
        kbtools::serve::live::silent(),
    )
    .unwrap();
    watcher.shutdown();
}

// ---------------------------------------------------------------------------------------------
// End to end: `kbtools serve --watch` and `kbtools mcp --watch`

/// A child process killed (and reaped) when dropped; its stderr goes to a file shown on failure.
pub(crate) struct Process {
    pub(crate) child: Child,
    stderr: PathBuf,
    _dir: tempfile::TempDir,
}

impl Process {
    pub(crate) fn spawn(args: &[&std::ffi::OsStr], stdin: Stdio, stdout: Stdio) -> Process {
        let dir = tempfile::tempdir().unwrap();
        let stderr = dir.path().join("stderr.txt");
        let child = common::kbtools()
            .args(args)
            .stdin(stdin)
            .stdout(stdout)
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        Process {
            child,
            stderr,
            _dir: dir,
        }
    }

    /// [`Self::spawn`] with stdin and stdout piped and `envs` set.
    pub(crate) fn spawn_with(args: &[&std::ffi::OsStr], envs: &[(&str, &str)]) -> Process {
        let dir = tempfile::tempdir().unwrap();
        let stderr = dir.path().join("stderr.txt");
        let child = common::kbtools()
            .args(args)
            .envs(envs.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        Process {
            child,
            stderr,
            _dir: dir,
        }
    }

    pub(crate) fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    pub(crate) fn assert_running(&mut self) {
        if let Some(status) = self.child.try_wait().unwrap() {
            panic!("kbtools exited ({status}); stderr:\n{}", self.stderr());
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn kbtools_serve_watch_serves_an_edit_without_a_restart() {
    let bundle = tempfile::tempdir().unwrap();
    common::copy_dir(&common::fixture("focowiki-docs"), bundle.path());
    let index_dir = tempfile::tempdir().unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let addr_text = addr.to_string();
    let mut server = Process::spawn(
        &[
            "serve".as_ref(),
            bundle.path().as_os_str(),
            "--addr".as_ref(),
            addr_text.as_ref(),
            "--index".as_ref(),
            index_dir.path().as_os_str(),
            "--watch".as_ref(),
        ],
        Stdio::null(),
        Stdio::null(),
    );
    let started = Instant::now();
    let list = loop {
        server.assert_running();
        if let Ok((200, body)) = http_get(addr, "/openapi/v2/knowledge-bases") {
            break serde_json::from_str::<Value>(&body).unwrap();
        }
        // A hang guard: the server builds the index before it listens.
        assert!(
            started.elapsed() < common::HANG,
            "no answer from kbtools serve; stderr:\n{}",
            server.stderr()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(list["items"][0]["activeContentRevision"], 1, "{list}");
    let kb = list["items"][0]["knowledgeBaseId"]
        .as_str()
        .unwrap()
        .to_string();
    let search_path = |word: &str| {
        format!("/openapi/v2/knowledge-bases/{kb}/files/search?query={word}&mode=file")
    };
    let found = |word: &str| -> bool {
        let (status, body) = http_get(addr, &search_path(word)).unwrap();
        assert_eq!(status, 200, "{body}");
        finds_page(&serde_json::from_str(&body).unwrap())
    };
    assert!(!found(WORDS[0]));

    edit_page(bundle.path(), WORDS[0]);
    edit_page(bundle.path(), WORDS[1]);
    let started = Instant::now();
    while !(found(WORDS[0]) && found(WORDS[1])) {
        server.assert_running();
        // A hang guard: the watcher's rebuild may be slow, never absent.
        assert!(
            started.elapsed() < common::HANG,
            "the edit was not served within {:?}; stderr:\n{}",
            common::HANG,
            server.stderr()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (_, body) = http_get(addr, "/openapi/v2/knowledge-bases").unwrap();
    let list: Value = serde_json::from_str(&body).unwrap();
    assert!(
        list["items"][0]["activeContentRevision"].as_u64() >= Some(2),
        "{list}"
    );
    let stderr = server.stderr();
    assert!(stderr.contains("watching"), "{stderr}");
    assert!(stderr.contains("switched"), "{stderr}");
}

/// Reads stdout lines of a child on a thread, so a read can time out.
pub(crate) fn line_reader(stdout: std::process::ChildStdout) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// Sends one JSON-RPC message on a line.
pub(crate) fn send(stdin: &mut ChildStdin, message: &Value) {
    let mut line = message.to_string();
    line.push('\n');
    stdin.write_all(line.as_bytes()).unwrap();
    stdin.flush().unwrap();
}

/// The response to request `id`; every line on stdout must be a JSON-RPC message.
pub(crate) fn response(lines: &Receiver<String>, id: u64, process: &Process) -> Value {
    loop {
        let line = lines
            .recv_timeout(common::HANG)
            .unwrap_or_else(|e| panic!("no response to {id} ({e}); stderr:\n{}", process.stderr()));
        let message: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
            panic!("stdout carries something else than JSON-RPC ({e}): {line}")
        });
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        if message["id"] == id {
            return message;
        }
    }
}

#[test]
fn kbtools_mcp_watch_serves_an_edit_and_keeps_stdout_for_the_protocol() {
    let bundle = tempfile::tempdir().unwrap();
    common::copy_dir(&common::fixture("focowiki-docs"), bundle.path());
    let index_dir = tempfile::tempdir().unwrap();
    let mut process = Process::spawn(
        &[
            "mcp".as_ref(),
            bundle.path().as_os_str(),
            "--index".as_ref(),
            index_dir.path().as_os_str(),
            "--watch".as_ref(),
            "--format".as_ref(),
            "json".as_ref(),
        ],
        Stdio::piped(),
        Stdio::piped(),
    );
    let mut stdin = process.child.stdin.take().unwrap();
    let lines = line_reader(process.child.stdout.take().unwrap());
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "live-reload-test", "version": "1"}
        }}),
    );
    let init = response(&lines, 1, &process);
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    let mut next_id = 2;
    let mut search_call = |word: &str, stdin: &mut ChildStdin, process: &Process| -> Value {
        let id = next_id;
        next_id += 1;
        send(
            stdin,
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "search_files", "arguments": search(word)
            }}),
        );
        let reply = response(&lines, id, process);
        assert_ne!(reply["result"]["isError"], true, "{reply}");
        reply["result"]["structuredContent"].clone()
    };
    let before = search_call(WORDS[0], &mut stdin, &process);
    assert_eq!(before["activeContentRevision"], 1, "{before}");
    assert!(!finds_page(&before));

    edit_page(bundle.path(), WORDS[0]);
    let started = Instant::now();
    let after = loop {
        process.assert_running();
        let out = search_call(WORDS[0], &mut stdin, &process);
        if finds_page(&out) {
            break out;
        }
        // A hang guard: the watcher's rebuild may be slow, never absent.
        assert!(
            started.elapsed() < common::HANG,
            "the edit was not served within {:?}; stderr:\n{}",
            common::HANG,
            process.stderr()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(after["activeContentRevision"], 2, "{after}");
    drop(stdin);
    let stderr = process.stderr();
    assert!(stderr.contains("rebuilding the index"), "{stderr}");
}

// ---------------------------------------------------------------------------------------------
// An in-process HTTP server and a tiny client

/// `http::serve_live` on a background runtime, bound to a free loopback port; stops when dropped.
struct HttpServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl HttpServer {
    fn start(kbs: Vec<Arc<LiveKnowledgeBase>>) -> HttpServer {
        let stop = Arc::new(AtomicBool::new(false));
        let stop_flag = stop.clone();
        let (addr_tx, addr_rx) = mpsc::channel();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                let shutdown = async move {
                    while !stop_flag.load(Ordering::Relaxed) {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                };
                kbtools::serve::http::serve_live(listener, kbs, HttpOptions::default(), shutdown)
                    .await
                    .unwrap();
            });
        });
        let addr = addr_rx.recv_timeout(common::HANG).unwrap();
        HttpServer {
            addr,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// `GET target` over a fresh connection: the status and the body.
pub(crate) fn http_get(addr: SocketAddr, target: &str) -> Result<(u16, String), String> {
    let fail = |e: std::io::Error| format!("GET {target}: {e}");
    // Hang guards: a request under load may be slow, never unanswered.
    let mut stream = TcpStream::connect_timeout(&addr, common::HANG).map_err(fail)?;
    stream.set_read_timeout(Some(common::HANG)).map_err(fail)?;
    let request = format!("GET {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).map_err(fail)?;
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).map_err(fail)?;
    let text = String::from_utf8_lossy(&bytes);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("GET {target}: no complete response"))?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("GET {target}: bad status line in {head:?}"))?;
    Ok((status, body.to_string()))
}
