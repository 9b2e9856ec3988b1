//! The reduced generated-bundle smoke of the scale benchmarks (`benches/scale.rs`), run by
//! `cargo test` in CI: a 1,000-page generated bundle (fixed seed) indexes with the generator's
//! counts, every tool answers on it within the contract schemas, and the benchmark queries find
//! their judged pages. Floors are a little under the figures measured when they were set
//! (see the constants).

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{call, checked_call, open_bundle};
use kbtools::bundle_gen::{generate, GenOptions, GenReport};
use kbtools::eval;
use serde_json::{json, Value};

const PAGES: usize = 1_000;
const SEED: u64 = 20_260_901;
/// Every this many benchmark queries is judged (125 of 500: a debug build searches slowly).
const QUERY_STEP: usize = 4;
/// Share of the judged queries whose judged page is in the top 10, `file` mode: measured
/// 0.992 (124 of 125) for this seed.
const FILE_MODE_FLOOR: f64 = 0.97;
/// The same in the default `hybrid` mode: measured 0.680 (85 of 125). The graph lanes rank the
/// judged page's neighbours (which share its topic words on a generated bundle) above it, a
/// known weakness of hybrid on generated bundles; the floor guards against it getting worse.
const HYBRID_MODE_FLOOR: f64 = 0.62;

fn generated() -> (tempfile::TempDir, GenReport) {
    let tmp = tempfile::tempdir().unwrap();
    let options = GenOptions {
        pages: PAGES,
        seed: SEED,
        ..GenOptions::default()
    };
    let report = generate(&tmp.path().join("bundle"), &options).unwrap();
    (tmp, report)
}

fn items(out: &Value, key: &str) -> Vec<Value> {
    out[key].as_array().cloned().unwrap_or_default()
}

/// The relation records of a page's `_graph/by-file` record (0 when it has none).
fn relation_count(bundle: &Path, page: &str) -> usize {
    let stem = &page["pages/".len()..page.len() - ".md".len()];
    match std::fs::read(bundle.join(format!("_graph/by-file/{stem}.json"))) {
        Ok(bytes) => serde_json::from_slice::<Value>(&bytes).unwrap()["relationships"]
            .as_array()
            .unwrap()
            .len(),
        Err(_) => 0,
    }
}

#[test]
fn a_generated_bundle_indexes_answers_every_tool_and_finds_its_queries() {
    let (_tmp, report) = generated();
    let bundle = report.dir.clone();
    let opened = open_bundle(&bundle);
    let kb = &opened.kb;

    // The index holds what the generator wrote: its pages, both sides of each relation, every
    // file, and nothing it could not use.
    let counts = &opened.report.manifest.counts;
    assert_eq!(counts.source_pages as usize, report.pages);
    assert_eq!(counts.relations as usize, 2 * report.relations);
    assert_eq!(counts.files as usize, report.files);
    assert_eq!(counts.diagnostics, 0, "{:?}", opened.report.diagnostics);

    // list_tree: the root, then down the first directory of each level to a page.
    let root = checked_call(kb, "list_tree", json!({})).unwrap();
    let names: Vec<Value> = items(&root, "items")
        .iter()
        .map(|i| i["path"].clone())
        .collect();
    for expected in ["_graph", "_index", "index.md", "log.md", "pages"] {
        assert!(names.contains(&json!(expected)), "{expected} in {names:?}");
    }
    let mut parent = "pages".to_string();
    let mut pages: Vec<String> = Vec::new();
    for _ in 0..8 {
        let mut cursor: Option<String> = None;
        let mut children = Vec::new();
        loop {
            let input = json!({ "parentPath": parent, "limit": 40, "cursor": cursor });
            let out = checked_call(kb, "list_tree", input).unwrap();
            let page = items(&out, "items");
            assert!(page.len() <= 40);
            children.extend(page);
            cursor = out["nextCursor"].as_str().map(str::to_string);
            if cursor.is_none() {
                break;
            }
        }
        let on_disk = std::fs::read_dir(bundle.join(&parent)).unwrap().count();
        assert_eq!(children.len(), on_disk, "{parent}");
        pages.extend(
            children
                .iter()
                .filter(|c| c["fileKind"] == "page")
                .map(|c| c["path"].as_str().unwrap().to_string()),
        );
        match children.iter().find(|c| c["entryType"] == "directory") {
            Some(dir) => parent = dir["path"].as_str().unwrap().to_string(),
            None => break,
        }
    }
    assert!(pages.len() >= 50, "{} pages listed", pages.len());

    // The file tools on pages spread over what was listed.
    let step = pages.len() / 12;
    let mut related_total = 0;
    for path in pages.iter().step_by(step) {
        let bytes = std::fs::read(bundle.join(path)).unwrap();
        let detail = checked_call(kb, "get_file", json!({ "fileId": path })).unwrap();
        assert_eq!(detail["file"]["sizeBytes"], bytes.len(), "{path}");
        let id = detail["file"]["fileId"].as_str().unwrap().to_string();
        for input in [json!({ "path": path }), json!({ "fileId": id })] {
            let read = checked_call(kb, "read_file", input).unwrap();
            assert_eq!(
                read["content"].as_str().unwrap().as_bytes(),
                bytes,
                "{path}"
            );
        }
        let expected = relation_count(&bundle, path);
        let related =
            checked_call(kb, "read_related", json!({ "fileId": id, "limit": 200 })).unwrap();
        assert_eq!(items(&related, "items").len(), expected, "{path}");
        related_total += expected;
        let expand = checked_call(kb, "expand_graph", json!({ "fileId": id, "depth": 2 })).unwrap();
        let walked = items(&expand, "relationships").len();
        assert!(walked >= expected.min(10), "{path}: {walked} < {expected}");
        if expected > 0 {
            assert!(!items(&expand, "graphPaths").is_empty(), "{path}");
        }
    }
    assert!(related_total > 0);

    // The benchmark queries: a few through the schema check in every mode, then every
    // `QUERY_STEP`th for the judged page in the top 10.
    let queries = eval::load_queries(&report.queries_path).unwrap();
    let qrels = eval::load_qrels(&report.qrels_path).unwrap();
    assert_eq!(queries.len(), report.queries);
    for (_, text) in queries.iter().step_by(queries.len() / 4) {
        for mode in ["file", "graph", "hybrid"] {
            let input = json!({ "query": eval::fit_query(text), "mode": mode, "limit": 5 });
            let out = checked_call(kb, "search_files", input).unwrap();
            assert!(!items(&out, "items").is_empty(), "{mode}: {text}");
            if let Some(next) = out["nextCursor"].as_str() {
                let input = json!({ "query": eval::fit_query(text), "mode": mode, "limit": 5, "cursor": next });
                checked_call(kb, "search_files", input).unwrap();
            }
        }
    }
    let judged_queries: Vec<&(String, String)> = queries.iter().step_by(QUERY_STEP).collect();
    let mut shares = BTreeMap::new();
    for mode in ["file", "hybrid"] {
        let mut found = 0;
        for (id, text) in judged_queries.iter().copied() {
            let input = json!({ "query": eval::fit_query(text), "mode": mode, "limit": 10 });
            let out = call(kb, "search_files", input).unwrap();
            let judged = format!("pages/{}.md", qrels[id].keys().next().unwrap());
            found += usize::from(items(&out, "items").iter().any(|i| i["path"] == judged));
        }
        shares.insert(mode, found as f64 / judged_queries.len() as f64);
    }
    println!("judged page in the top 10: {shares:?}");
    assert!(shares["file"] >= FILE_MODE_FLOOR, "{shares:?}");
    assert!(shares["hybrid"] >= HYBRID_MODE_FLOOR, "{shares:?}");
}
