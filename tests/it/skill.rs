//! The installable Skill (`skill/knowledge-base-tools/`): `kbtools::skill::install` and `kbtools
//! skill install` write exactly the repository's files and refuse to overwrite edited ones without
//! `--force`; every example in the Skill works: each ```tool line runs against the fixture
//! through the library and the MCP server, and each ```sh block runs with bash against a real
//! `kbtools serve fixtures/focowiki-docs`.

use crate::common;

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use kbtools::serve::mcp::{KbServer, McpOptions};
use serde_json::Value;

const SKILL_FILES: [&str; 4] = [
    "SKILL.md",
    "references/tool-contract.md",
    "references/exploration-workflow.md",
    "references/answer-style.md",
];

fn skill_dir() -> PathBuf {
    common::manifest_dir()
        .join("skill")
        .join("knowledge-base-tools")
}

fn repo_file(relative: &str) -> Vec<u8> {
    std::fs::read(skill_dir().join(relative)).unwrap()
}

/// Every file under `dir`, relative, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let relative = path.strip_prefix(root).unwrap();
                let parts: Vec<_> = relative.iter().map(|p| p.to_string_lossy()).collect();
                out.push(parts.join("/"));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn sorted_skill_files(prefix: &str) -> Vec<String> {
    let mut expected: Vec<String> = SKILL_FILES.iter().map(|f| format!("{prefix}{f}")).collect();
    expected.sort();
    expected
}

/// The installed tree under `dir` is exactly the repository's Skill, byte for byte.
fn assert_installed(dir: &Path) {
    assert_eq!(
        files_under(dir),
        sorted_skill_files("knowledge-base-tools/")
    );
    for relative in SKILL_FILES {
        let installed = std::fs::read(dir.join("knowledge-base-tools").join(relative)).unwrap();
        assert!(
            installed == repo_file(relative),
            "{relative} differs from skill/knowledge-base-tools/{relative}"
        );
    }
}

#[test]
fn the_embedded_skill_is_the_repository_skill() {
    assert_eq!(files_under(&skill_dir()), sorted_skill_files(""));
    let embedded = kbtools::skill::files();
    assert_eq!(embedded.len(), SKILL_FILES.len());
    for ((path, content), relative) in embedded.iter().zip(SKILL_FILES) {
        let expected: PathBuf = Path::new("knowledge-base-tools")
            .join(relative.replace('/', std::path::MAIN_SEPARATOR_STR));
        assert_eq!(path, &expected);
        assert!(content.as_bytes() == repo_file(relative), "{relative}");
    }
}

#[test]
fn install_writes_exactly_the_four_files() {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join("skills");
    let written = kbtools::skill::install(&skills, false).unwrap();
    let expected: Vec<PathBuf> = SKILL_FILES
        .iter()
        .map(|f| skills.join("knowledge-base-tools").join(f))
        .collect();
    assert_eq!(written, expected);
    assert_installed(&skills);
    // Installing the same Skill again is fine.
    kbtools::skill::install(&skills, false).unwrap();
    assert_installed(&skills);
}

#[test]
fn install_refuses_to_overwrite_an_edited_file_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    kbtools::skill::install(dir.path(), false).unwrap();
    let edited = dir
        .path()
        .join("knowledge-base-tools/references/answer-style.md");
    std::fs::write(&edited, "my own notes\n").unwrap();
    std::fs::remove_file(dir.path().join("knowledge-base-tools/SKILL.md")).unwrap();

    let error = kbtools::skill::install(dir.path(), false).unwrap_err();
    assert!(
        matches!(&error, kbtools::skill::SkillError::Modified(path) if path == &edited),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains("answer-style.md"), "{message}");
    assert!(message.contains("--force"), "{message}");
    // A refusal writes nothing: the edit stays and the removed file is not restored.
    assert_eq!(std::fs::read_to_string(&edited).unwrap(), "my own notes\n");
    assert!(!dir.path().join("knowledge-base-tools/SKILL.md").exists());

    kbtools::skill::install(dir.path(), true).unwrap();
    assert_installed(dir.path());
}

#[test]
fn install_refuses_a_folder_where_a_file_belongs() {
    let dir = tempfile::tempdir().unwrap();
    let blocked = dir.path().join("knowledge-base-tools/SKILL.md");
    std::fs::create_dir_all(&blocked).unwrap();
    for force in [false, true] {
        let error = kbtools::skill::install(dir.path(), force).unwrap_err();
        assert!(
            matches!(&error, kbtools::skill::SkillError::NotAFile(path) if path == &blocked),
            "{error:?}"
        );
    }
}

fn kbtools_command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kbtools"));
    command.current_dir(common::manifest_dir());
    command
}

fn run(command: &mut Command) -> Output {
    command.stdin(Stdio::null()).output().unwrap()
}

fn describe(output: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn cli_skill_install() {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join("skills");
    let output = run(kbtools_command().args(["skill", "install"]).arg(&skills));
    assert!(output.status.success(), "{}", describe(&output));
    assert!(output.stdout.is_empty(), "{}", describe(&output));
    let stderr = String::from_utf8(output.stderr).unwrap();
    let printed: Vec<&str> = stderr.lines().collect();
    let expected: Vec<String> = SKILL_FILES
        .iter()
        .map(|f| {
            skills
                .join("knowledge-base-tools")
                .join(f)
                .display()
                .to_string()
        })
        .collect();
    assert_eq!(printed, expected);
    assert_installed(&skills);

    let skill_md = skills.join("knowledge-base-tools/SKILL.md");
    std::fs::write(&skill_md, "edited\n").unwrap();
    let refused = run(kbtools_command().args(["skill", "install"]).arg(&skills));
    assert_eq!(refused.status.code(), Some(2), "{}", describe(&refused));
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(message.contains("SKILL.md"), "{message}");
    assert!(message.contains("--force"), "{message}");
    assert_eq!(std::fs::read_to_string(&skill_md).unwrap(), "edited\n");

    let forced = run(kbtools_command()
        .args(["skill", "install", "--force", "-q"])
        .arg(&skills));
    assert!(forced.status.success(), "{}", describe(&forced));
    assert!(forced.stderr.is_empty(), "{}", describe(&forced));
    assert_installed(&skills);
}

/// A fenced example in the Skill: its file, first line number and body.
struct Example {
    file: &'static str,
    line: usize,
    body: String,
}

/// The fenced blocks tagged `tag` (```sh, ```tool) in every Skill file.
fn examples(tag: &str) -> Vec<Example> {
    let mut found = Vec::new();
    for file in SKILL_FILES {
        let text = String::from_utf8(repo_file(file)).unwrap();
        let mut current: Option<(usize, String)> = None;
        for (number, line) in text.lines().enumerate() {
            match &mut current {
                None => {
                    if let Some(info) = line.strip_prefix("```") {
                        if info.trim() == tag {
                            current = Some((number + 2, String::new()));
                        }
                    }
                }
                Some((start, body)) => {
                    if line.trim_start().starts_with("```") {
                        found.push(Example {
                            file,
                            line: *start,
                            body: std::mem::take(body),
                        });
                        current = None;
                    } else {
                        body.push_str(line);
                        body.push('\n');
                    }
                }
            }
        }
        assert!(current.is_none(), "{file}: unclosed ```{tag} block");
    }
    found
}

/// One `name {json}` line of a ```tool block.
struct ToolCall {
    at: String,
    name: String,
    input: Value,
}

fn tool_calls() -> Vec<ToolCall> {
    let mut calls = Vec::new();
    for example in examples("tool") {
        for (offset, line) in example.body.lines().enumerate() {
            let at = format!("{}:{}", example.file, example.line + offset);
            assert!(!line.trim().is_empty(), "{at}: empty line in a tool block");
            let (name, json) = line
                .split_once(' ')
                .unwrap_or_else(|| panic!("{at}: expected `name {{json}}`: {line}"));
            let input: Value = serde_json::from_str(json)
                .unwrap_or_else(|e| panic!("{at}: the input is not JSON ({e}): {json}"));
            assert!(input.is_object(), "{at}: the input is not an object");
            calls.push(ToolCall {
                at,
                name: name.to_string(),
                input,
            });
        }
    }
    calls
}

#[test]
fn every_tool_example_runs_against_the_fixture() {
    let calls = tool_calls();
    let mut names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
    names.sort();
    names.dedup();
    let mut all: Vec<&str> = kbtools::tools::ToolName::ALL.map(|t| t.as_str()).to_vec();
    all.sort();
    assert_eq!(
        names, all,
        "the examples cover every tool, and only the tools"
    );
    assert!(calls.len() >= 20, "only {} tool examples", calls.len());
    assert!(calls
        .iter()
        .any(|c| c.name == "read_file" && c.input["type"] == "search"));
    assert!(calls
        .iter()
        .any(|c| c.name == "read_file" && c.input["type"] == "extract"));

    let opened = common::open_fixture("focowiki-docs");
    let served = common::open_fixture("focowiki-docs");
    let server = KbServer::new(served.kb, McpOptions::default()).unwrap();
    for call in &calls {
        // `format` is an MCP argument, not part of the tool's input.
        let mut input = call.input.clone();
        input.as_object_mut().unwrap().remove("format");
        let output = common::checked_call(&opened.kb, &call.name, input.clone())
            .unwrap_or_else(|e| panic!("{}: {} {input} failed: {e:?}", call.at, call.name));
        if call.name == "search_files" {
            assert!(
                !output["items"].as_array().unwrap().is_empty(),
                "{}: no candidates",
                call.at
            );
        }
        if call.name == "read_file" {
            assert!(
                !output["content"].as_str().unwrap().is_empty(),
                "{}: empty content",
                call.at
            );
        }
        // Exactly as an agent sends it, format included, through the MCP server.
        let arguments = call.input.as_object().cloned();
        let result = server.answer(&call.name, arguments);
        let result = serde_json::to_value(&result).unwrap();
        assert_ne!(result["isError"], true, "{}: {result}", call.at);
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(!text.trim().is_empty(), "{}: empty MCP result", call.at);
    }
}

/// A free local port (bound, then released for the server to take).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Runs `script` with `bash -euo pipefail` and the given environment.
fn bash(script: &str, env: &[(&str, &str)]) -> Output {
    let mut command = Command::new("bash");
    command
        .args(["-euo", "pipefail", "-c", script])
        .env_remove("KBTOOLS_TOKEN")
        .current_dir(common::manifest_dir());
    for (key, value) in env {
        command.env(key, value);
    }
    run(&mut command)
}

/// Fails loudly when a program the examples need is missing.
fn require_program(name: &str) {
    let found = bash(&format!("command -v {name}"), &[]);
    assert!(
        found.status.success(),
        "`{name}` is not installed; the Skill's HTTP examples need it"
    );
}

/// A running `kbtools serve`, killed when dropped (also when a test panics).
struct Server {
    child: Child,
    base: String,
    _index: tempfile::TempDir,
}

impl Server {
    fn start(extra: &[&str]) -> Server {
        require_program("curl");
        require_program("jq");
        let index = tempfile::tempdir().unwrap();
        let addr = format!("127.0.0.1:{}", free_port());
        let child = kbtools_command()
            .args(["serve", "fixtures/focowiki-docs", "--addr", &addr, "-q"])
            .args(extra)
            .arg("--index")
            .arg(index.path())
            .env("KBTOOLS_TODAY", common::TODAY)
            .env_remove("KBTOOLS_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut server = Server {
            child,
            base: format!("http://{addr}"),
            _index: index,
        };
        server.wait_until_healthy();
        server
    }

    fn wait_until_healthy(&mut self) {
        let started = Instant::now();
        let health = format!("{}/openapi/v2/health", self.base);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                let mut stderr = String::new();
                if let Some(mut pipe) = self.child.stderr.take() {
                    pipe.read_to_string(&mut stderr).unwrap();
                }
                panic!(
                    "`kbtools serve` exited before answering ({status}); is the `serve` \
                     subcommand there?\nstderr:\n{stderr}"
                );
            }
            // Any HTTP answer means the server is up (a token server answers 401 here); a probe
            // that times out is tried again.
            let probe = run(Command::new("curl").args(["-s", "--max-time", "2", &health]));
            if probe.status.success() {
                return;
            }
            // A hang guard: the server builds the index before it listens.
            assert!(
                started.elapsed() < common::HANG,
                "`kbtools serve` did not answer {health} within {:?}",
                common::HANG
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The id of the one knowledge base the server serves, as the Skill finds it.
fn knowledge_base_id(base: &str) -> String {
    let output = bash(
        r#"curl -sf "$BASE/openapi/v2/knowledge-bases" | jq -r '.items[0].knowledgeBaseId'"#,
        &[("BASE", base)],
    );
    assert!(output.status.success(), "{}", describe(&output));
    let id = String::from_utf8(output.stdout).unwrap().trim().to_string();
    assert!(id.starts_with("knowledge-base-"), "{id:?}");
    id
}

#[test]
fn every_sh_example_runs_against_kbtools_serve() {
    let blocks = examples("sh");
    assert!(blocks.len() >= 10, "only {} sh examples", blocks.len());
    let server = Server::start(&[]);
    let kb = knowledge_base_id(&server.base);
    let env = [("BASE", server.base.as_str()), ("KB", kb.as_str())];
    let mut failures = Vec::new();
    for block in &blocks {
        let output = bash(&block.body, &env);
        let stdout = String::from_utf8_lossy(&output.stdout);
        // A `null` line is jq reading a field the answer does not have.
        let null_line = stdout.lines().any(|l| l.trim() == "null");
        if !output.status.success() || stdout.trim().is_empty() || null_line {
            failures.push(format!(
                "{}:{}\n{}\n{}",
                block.file,
                block.line,
                block.body,
                describe(&output)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} sh examples failed:\n\n{}",
        failures.len(),
        blocks.len(),
        failures.join("\n\n")
    );
}

/// The Skill tells agents to add `Authorization: Bearer $KBTOOLS_TOKEN` when the server wants a
/// token (a 401 says so); check that this is what `kbtools serve --token` wants.
#[test]
fn a_token_server_wants_the_bearer_header_the_skill_names() {
    let server = Server::start(&["--token", "skill-test-token"]);
    let header = r#"-H "Authorization: Bearer $KBTOOLS_TOKEN""#;
    let kb = bash(
        &format!(
            r#"curl -sf {header} "$BASE/openapi/v2/knowledge-bases" | jq -r '.items[0].knowledgeBaseId'"#
        ),
        &[
            ("BASE", server.base.as_str()),
            ("KBTOOLS_TOKEN", "skill-test-token"),
        ],
    );
    assert!(kb.status.success(), "{}", describe(&kb));
    let kb = String::from_utf8(kb.stdout).unwrap().trim().to_string();
    let tree = r#"curl -s -o /dev/null -w '%{http_code}' {HEADER} "$BASE/openapi/v2/knowledge-bases/$KB/tree""#;
    let env = [
        ("BASE", server.base.as_str()),
        ("KB", kb.as_str()),
        ("KBTOOLS_TOKEN", "skill-test-token"),
    ];
    let without = bash(&tree.replace("{HEADER}", ""), &env);
    assert_eq!(
        String::from_utf8_lossy(&without.stdout),
        "401",
        "{}",
        describe(&without)
    );
    let with = bash(&tree.replace("{HEADER}", header), &env);
    assert_eq!(
        String::from_utf8_lossy(&with.stdout),
        "200",
        "{}",
        describe(&with)
    );
}
