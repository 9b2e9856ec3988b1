//! The semantic lane's encoder: passage embedding throughput with two threads over
//! ~300-token passages of the fixture's pages, and one short query's latency, in each
//! precision this CPU runs (the f32 GEMMs, and the integer products where a SIMD kernel runs
//! them), side by side.
//! Needs the model (`KBTOOLS_TEST_MODEL_DIR`, else `target/model`); says so and skips without
//! it. `cargo bench --bench encoder`; CI runs it in criterion's test mode (one pass, checks
//! only).

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use kbtools::embed::{Kind, Model, Precision};

fn model(precision: Precision) -> Option<Model> {
    let dir = std::env::var_os("KBTOOLS_TEST_MODEL_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/model"));
    let path = dir.join(kbtools::embed::install::MODEL_FILE);
    if !path.exists() {
        eprintln!("SKIPPED: encoder bench: no model at {}", path.display());
        return None;
    }
    Some(Model::load_in(&path, precision).expect("the model loads"))
}

/// Windows of at most 320 tokens from the fixture's English and Chinese pages, the first
/// `count` of those that hold at least 250.
fn passages(model: &Model, count: usize) -> Vec<Vec<u32>> {
    let root =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/focowiki-docs/pages");
    let mut files: Vec<_> = walk(&root);
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for w in model.passage_windows("Focowiki", &text, 320) {
            if w.len() >= 250 && out.len() < count {
                out.push(w);
            }
        }
    }
    assert_eq!(out.len(), count, "the fixture has {count} long passages");
    out
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
    out
}

fn bench_encoder(c: &mut Criterion) {
    let mut precisions = vec![("f32", Precision::F32)];
    let kernel = kbtools::embed::int8::Kernel::detect();
    if kernel != kbtools::embed::int8::Kernel::Portable {
        precisions.push(("int8", Precision::Int8(kernel)));
    }
    for (name, precision) in precisions {
        let Some(model) = model(precision) else {
            return;
        };
        bench_precision(c, name, &model);
    }
}

fn bench_precision(c: &mut Criterion, name: &str, model: &Model) {
    // 64 passages when measuring; criterion's test mode (CI, a test-profile build) checks 4.
    let measuring = std::env::args().any(|a| a == "--bench");
    let windows = passages(model, if measuring { 64 } else { 4 });
    let tokens: usize = windows.iter().map(|w| w.len() + 2).sum();
    let vectors = model.embed_windows(&windows, 2, &|_| {});
    assert_eq!(vectors.len(), windows.len());
    assert!(vectors
        .iter()
        .all(|v| v.len() == 384 && v.iter().all(|x| x.is_finite())));

    let mut group = c.benchmark_group(format!("encoder_{name}"));
    group.sampling_mode(SamplingMode::Flat).sample_size(10);
    group.throughput(Throughput::Elements(tokens as u64));
    group.bench_function("passages_320_tokens_2_threads", |b| {
        b.iter(|| model.embed_windows(&windows, 2, &|_| {}));
    });
    group.throughput(Throughput::Elements(1));
    group.sample_size(50);
    let query = "how do I install the model offline";
    group.bench_function("short_query_2_threads", |b| {
        b.iter(|| model.embed_query(query, 2));
    });
    group.finish();
    let q = model.embed(&[query], Kind::Query, 1);
    assert_eq!(q[0].len(), 384);

    if measuring {
        let started = Instant::now();
        let mut rounds = 0;
        while started.elapsed() < Duration::from_secs(10) {
            model.embed_windows(&windows, 2, &|_| {});
            rounds += 1;
        }
        let secs = started.elapsed().as_secs_f64();
        eprintln!(
            "encoder ({name}, {:?}): {} passages, {tokens} tokens: {:.0} tokens/s with 2 threads ({rounds} rounds)",
            model.precision(),
            windows.len(),
            (tokens * rounds) as f64 / secs
        );
    }
}

criterion_group!(benches, bench_encoder);
criterion_main!(benches);
