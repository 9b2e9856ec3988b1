//! Warm `search_files` latency on a real bundle: BEIR SciFact (5,183 abstracts), its 300 test
//! queries (`queries.jsonl` filtered to the ids of `qrels/test.tsv`), hybrid mode.
//!
//! * The index is built once into a temporary folder, then every query is run once and must
//!   return at least one result (a fast wrong answer fails the bench).
//! * Criterion: one iteration is one `tools::call(kb, "search_files", {query, mode: "hybrid"})`,
//!   cycling through the 300 queries, so its per-iteration figure is the time of one query.
//! * Then our own measurement: 5 rounds over the 300 queries; each query's latency is the median
//!   of its rounds, and the median, p99 and max over the 300 queries are printed on stdout.
//!
//! Needs `../shared/bundles/scifact` and `../shared/corpora/scifact` beside the checkout; without
//! them it prints a skip line and exits 0. Run with `cargo bench --bench search_scifact`.
//! `benches/rg_compare.sh` times ripgrep and the `kbtools` binary (cold process) on the same
//! queries.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode};
use kbtools::eval;
use kbtools::index::{self, BuildOptions};
use kbtools::tools;
#[path = "common/latency.rs"]
mod latency;
#[path = "common/server.rs"]
mod server;

use latency::{ms, percentile, warm_latencies};
use serde_json::{json, Value};

const ROUNDS: usize = 5;

fn shared() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared");
    let ready = root.join("bundles/scifact").is_dir()
        && root.join("corpora/scifact/queries.jsonl").is_file()
        && root.join("corpora/scifact/qrels/test.tsv").is_file();
    ready.then_some(root)
}

/// The search inputs of the test queries, in `queries.jsonl` order.
fn test_queries(shared: &Path) -> Vec<Value> {
    let corpus = shared.join("corpora/scifact");
    let queries = eval::load_queries(&corpus.join("queries.jsonl")).unwrap();
    let qrels = eval::load_qrels(&corpus.join("qrels/test.tsv")).unwrap();
    let ids: HashSet<&str> = qrels.keys().map(String::as_str).collect();
    queries
        .iter()
        .filter(|(id, _)| ids.contains(id.as_str()))
        .map(|(_, text)| json!({ "query": eval::fit_query(text), "mode": "hybrid" }))
        .collect()
}

fn bench_scifact(c: &mut Criterion) {
    let Some(shared) = shared() else {
        println!("search_scifact: skipped, ../shared/bundles/scifact or ../shared/corpora/scifact is absent");
        return;
    };
    kbtools::no_transparent_huge_pages();
    let bundle = shared.join("bundles/scifact");
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let report = index::build(&bundle, dir.path(), &BuildOptions::default(), &mut |_| {}).unwrap();
    println!(
        "search_scifact: index of {} source pages built in {:.1} s",
        report.manifest.counts.source_pages,
        started.elapsed().as_secs_f64()
    );
    let kb = server::open_as_server(dir.path(), &bundle);

    let inputs = test_queries(&shared);
    assert_eq!(inputs.len(), 300, "SciFact has 300 test queries");
    // What a door does: the answer and its contract JSON.
    let run = |input: &Value| {
        tools::call(&kb, "search_files", input)
            .and_then(|o| o.to_json())
            .unwrap()
    };
    let mut fewest = usize::MAX;
    for input in &inputs {
        let out = run(input);
        let count = out["items"].as_array().map_or(0, Vec::len);
        assert!(count >= 1, "no result for {input}");
        assert_eq!(out["searchStatus"], "ok");
        fewest = fewest.min(count);
    }
    println!(
        "search_scifact: all 300 queries return results (fewest {fewest}, limit 10); warm-up done"
    );

    let mut group = c.benchmark_group("scifact");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(30)
        .measurement_time(Duration::from_secs(15));
    let mut next = 0;
    group.bench_function("search_files_hybrid_one_query", |b| {
        b.iter(|| {
            let input = &inputs[next % inputs.len()];
            next += 1;
            run(input)
        });
    });
    group.finish();

    // Our own per-query figures.
    if !latency::measuring() {
        return;
    }
    let (per_query, all) = warm_latencies(&inputs, ROUNDS, |input| {
        std::hint::black_box(run(input));
    });
    println!(
        "search_scifact: warm latency per query (median of {ROUNDS} rounds, 300 queries, hybrid): \
         median {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        ms(percentile(&per_query, 50.0)),
        ms(percentile(&per_query, 99.0)),
        ms(*per_query.last().unwrap()),
    );
    println!(
        "search_scifact: all {} timed calls: median {:.2} ms, p99 {:.2} ms",
        all.len(),
        ms(percentile(&all, 50.0)),
        ms(percentile(&all, 99.0)),
    );
}

criterion_group!(benches, bench_scifact);
criterion_main!(benches);
