//! Shared test helpers: build a fixture's index in a temporary folder, call tools, and validate
//! outputs against the vendored contract schemas (`tests/contract/six-tools.schema.json`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use kbtools::index::{self, BuildOptions};
use kbtools::kb::{KnowledgeBase, ServeOptions};
use kbtools::ToolError;
use serde_json::Value;

/// "Today" for every test, so OKF freshness is reproducible.
pub const TODAY: &str = "2026-09-01";

/// How long a test waits for something that must happen (a server to answer, an edit to be
/// served, a child to exit) before it fails: a hang guard, not a speed bound. A debug build on a
/// loaded 2-core machine runs five to ten times slower than on a quiet one, and every wait
/// bounded by this takes seconds there at most. Tests assert behaviour, never speed; speed is
/// measured by `benches/`.
pub const HANG: std::time::Duration = std::time::Duration::from_secs(300);

/// `command` without any `KBTOOLS_*` variable of the environment running the tests, and with
/// [`TODAY`] pinned: a child answers the same whatever the shell has set.
pub fn clean_env(command: &mut std::process::Command) -> &mut std::process::Command {
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("KBTOOLS_") {
            command.env_remove(name);
        }
    }
    command.env("KBTOOLS_TODAY", TODAY)
}

/// The `kbtools` binary under test, with [`clean_env`].
pub fn kbtools() -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_kbtools"));
    clean_env(&mut command);
    command
}

pub fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The names of the files of a folder (none when it does not exist), sorted.
pub fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

pub fn fixture(name: &str) -> PathBuf {
    manifest_dir().join("fixtures").join(name)
}

/// `../shared/bundles/<name>` when it exists (it does on developer machines and in CI; a fresh
/// clone without it skips the tests that need it).
pub fn shared_bundle(name: &str) -> Option<PathBuf> {
    let path = manifest_dir()
        .join("..")
        .join("shared")
        .join("bundles")
        .join(name);
    path.is_dir().then_some(path)
}

/// The options every test opens a knowledge base with: a fixed "today", and a search deadline
/// far past the default 3 s (the tests check answers, not latency, in an unoptimized build that
/// shares two cores with the other tests of its binary; the deadline's own test sets its own).
pub fn serve_options() -> ServeOptions {
    ServeOptions {
        today: kbtools::okf::parse_date(TODAY).unwrap(),
        search_deadline: std::time::Duration::from_secs(600),
        ..ServeOptions::default()
    }
}

/// A knowledge base opened from a fresh index in a temporary folder.
pub struct Opened {
    pub kb: KnowledgeBase,
    pub index_dir: tempfile::TempDir,
    pub report: index::BuildReport,
}

pub fn open_bundle(bundle: &Path) -> Opened {
    let index_dir = tempfile::tempdir().unwrap();
    let report = index::build(
        bundle,
        index_dir.path(),
        &BuildOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    let kb = KnowledgeBase::open(index_dir.path(), Some(bundle), serve_options()).unwrap();
    Opened {
        kb,
        index_dir,
        report,
    }
}

pub fn open_fixture(name: &str) -> Opened {
    open_bundle(&fixture(name))
}

pub fn call(kb: &KnowledgeBase, tool: &str, input: Value) -> Result<Value, ToolError> {
    json_call(kb, tool, &input)
}

/// `kbtools::tools::call` as a door answers: the contract JSON of the answer.
pub fn json_call(kb: &KnowledgeBase, tool: &str, input: &Value) -> Result<Value, ToolError> {
    kbtools::tools::call(kb, tool, input).and_then(|output| output.to_json())
}

/// The compact text a door renders of `tool`'s answer to `input` (a generous budget).
pub fn call_text(kb: &KnowledgeBase, tool: &str, input: Value) -> String {
    let output =
        kbtools::tools::call(kb, tool, &input).unwrap_or_else(|e| panic!("{input}: {e:?}"));
    kbtools::render::render_output(&output, 100_000)
}

/// The `path` of each item of a `search_files` output, in order.
pub fn item_paths(out: &Value) -> Vec<String> {
    out["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap().to_string())
        .collect()
}

/// The paths `search_files` ranks for `query` in `mode`, at most `limit`.
pub fn search_paths(kb: &KnowledgeBase, query: &str, mode: &str, limit: usize) -> Vec<String> {
    let input = serde_json::json!({ "query": query, "mode": mode, "limit": limit });
    let out = call(kb, "search_files", input).unwrap_or_else(|e| panic!("{query}: {e:?}"));
    item_paths(&out)
}

/// The operationId whose schemas a tool's output must satisfy.
pub fn operation_of(tool: &str, input: &Value) -> &'static str {
    match tool {
        "list_tree" => "listKnowledgeBaseTree",
        "get_file" => "getFileById",
        "read_file" if input.get("path").is_some() => "getFileContentByPath",
        "read_file" => "getFileContentById",
        "read_related" => "listRelatedFiles",
        "expand_graph" => "expandGraph",
        "search_files" => "searchGeneratedFiles",
        other => panic!("no operation for tool {other}"),
    }
}

fn schema_doc() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let text =
            std::fs::read_to_string(manifest_dir().join("tests/contract/six-tools.schema.json"))
                .unwrap();
        serde_json::from_str(&text).unwrap()
    })
}

/// The response schema of `operation` (status 200) or its error schema for `status`.
pub fn schema_for(operation: &str, status: u16) -> Value {
    let op = &schema_doc()[operation];
    assert!(op.is_object(), "unknown operation {operation}");
    let schema = if status == 200 {
        &op["response"]["schema"]
    } else {
        // Statuses the spec does not declare for this operation use the shared Error schema.
        let errors = op["errors"].as_object().unwrap();
        errors
            .get(&status.to_string())
            .or_else(|| errors.values().next())
            .map(|e| &e["schema"])
            .unwrap()
    };
    assert!(schema.is_object(), "no schema for {operation} {status}");
    schema.clone()
}

/// Validates `instance` against a schema, returning every violation.
pub fn violations(schema: &Value, instance: &Value) -> Vec<String> {
    let validator = jsonschema::validator_for(schema).expect("schema compiles");
    validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect()
}

/// Calls a tool and checks its output (success or error envelope) against the contract schema;
/// returns the output, or the error.
pub fn checked_call(kb: &KnowledgeBase, tool: &str, input: Value) -> Result<Value, ToolError> {
    let operation = operation_of(tool, &input);
    let result = call(kb, tool, input.clone());
    let (status, instance) = match &result {
        Ok(output) => (200, output.clone()),
        Err(error) => (
            error.http_status(),
            error.envelope("req-00000000-0000-4000-8000-000000000000"),
        ),
    };
    let problems = violations(&schema_for(operation, status), &instance);
    assert!(
        problems.is_empty(),
        "{tool} {input} → {status} violates {operation}:\n{}\n{}",
        problems.join("\n"),
        serde_json::to_string_pretty(&instance).unwrap()
    );
    result
}

/// Copies the folder `from` into `to` (files and folders).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The index of `fixtures/focowiki-docs`, built once per test binary by the `kbtools` binary
/// (for tests that start `kbtools mcp` / `kbtools serve` children over it).
pub fn built_fixture_index() -> &'static PathBuf {
    use std::process::{Command, Stdio};
    static INDEX: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &INDEX
        .get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("index");
            let status = Command::new(env!("CARGO_BIN_EXE_kbtools"))
                .arg("index")
                .arg(fixture("focowiki-docs"))
                .arg("--index")
                .arg(&path)
                .arg("-q")
                .stdout(Stdio::null())
                .status()
                .unwrap();
            assert!(status.success(), "kbtools index failed: {status}");
            (dir, path)
        })
        .1
}
