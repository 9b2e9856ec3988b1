//! Criterion benchmarks of the six tools over the fixture bundle (warm, index built once).
//! Each benchmark asserts its result, so a fast wrong answer fails. Run with `cargo bench`.

use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion};
use kbtools::index::{self, BuildOptions};
use kbtools::kb::KnowledgeBase;
use kbtools::tools;
use serde_json::json;

#[path = "common/server.rs"]
mod server;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/focowiki-docs")
}

fn open() -> (KnowledgeBase, tempfile::TempDir) {
    kbtools::no_transparent_huge_pages();
    let dir = tempfile::tempdir().unwrap();
    index::build(
        &fixture(),
        dir.path(),
        &BuildOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    let kb = server::open_as_server(dir.path(), &fixture());
    (kb, dir)
}

fn bench_tools(c: &mut Criterion) {
    let (kb, _dir) = open();
    let cases = [
        (
            "search_files_en",
            "search_files",
            json!({"query": "How do agents read related files?"}),
            "items",
            10,
        ),
        (
            "search_files_zh",
            "search_files",
            json!({"query": "知识库 关系 图谱"}),
            "items",
            10,
        ),
        ("list_tree_root", "list_tree", json!({}), "items", 5),
        (
            "read_related",
            "read_related",
            json!({"fileId": "pages/en/README.md"}),
            "items",
            // Its graph record's three relationships (_graph/by-file/en/README.json).
            3,
        ),
        (
            "expand_graph_depth2",
            "expand_graph",
            json!({"fileId": "pages/en/README.md", "depth": 2}),
            "relationships",
            // As tests/golden/expand_graph_depth2.json (default fanout 3).
            7,
        ),
    ];
    for (name, tool, input, key, expected) in cases {
        // What a door does: the answer and its contract JSON.
        let answer = || tools::call(&kb, tool, &input).and_then(|o| o.to_json());
        let out = answer().unwrap();
        let count = out[key].as_array().map_or(0, Vec::len);
        assert!(
            count >= expected,
            "{name}: {count} {key}, expected at least {expected}"
        );
        c.bench_function(name, |b| b.iter(|| answer().unwrap()));
    }
    let read = json!({"path": "pages/en/README.md"});
    let answer = || tools::call(&kb, "read_file", &read).and_then(|o| o.to_json());
    assert!(answer().unwrap()["content"].as_str().unwrap().len() > 1000);
    c.bench_function("read_file", |b| {
        b.iter(|| answer().unwrap());
    });
}

fn bench_build(c: &mut Criterion) {
    let mut group = c.benchmark_group("index");
    group.sample_size(10);
    group.bench_function("build_focowiki_docs", |b| {
        b.iter(|| {
            let dir = tempfile::tempdir().unwrap();
            let report = index::build(
                &fixture(),
                dir.path(),
                &BuildOptions::default(),
                &mut |_| {},
            )
            .unwrap();
            assert_eq!(report.manifest.counts.source_pages, 36);
        });
    });
    group.finish();
}

criterion_group!(benches, bench_tools, bench_build);
criterion_main!(benches);
