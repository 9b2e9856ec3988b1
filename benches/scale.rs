//! Criterion benchmarks at scale, over a generated bundle (`kbtools::bundle_gen`): ingest, full,
//! incremental and unchanged index builds, and the six tools warm.
//!
//! * The bundle: `KBTOOLS_BENCH_PAGES` pages (default 10,000), seed `KBTOOLS_BENCH_SEED`
//!   (default 1), generated once into `target/bench-bundles/scale-<N>-seed-<S>/` and reused
//!   while its stamp (`.scale-stamp.json`, written last) names the same generator options.
//! * The index: `target/bench-index/scale-<N>-seed-<S>/`, refreshed with `open_or_build` (reused
//!   when the bundle's stat fingerprint still matches).
//! * Every benchmark asserts its results, once at setup over all its inputs and cheaply inside
//!   the timed loop, so a fast wrong answer (or an error) fails instead of being measured.
//! * One iteration of a tool benchmark is one `tools::call`, cycling through its inputs: up to
//!   `SAMPLE_PAGES` pages spread evenly over the bundle, the directories of `pages/`, or the
//!   generator's benchmark queries (`.bench-queries.jsonl`).
//! * `search_files` also gets our own figures (criterion reports the mean and median of a
//!   batch, not tail latency): `ROUNDS` rounds over all the queries; each query's latency is the
//!   median of its rounds; the median, p99 and max over the queries are printed.
//! * `build_incremental_one_page` appends a line to one page (a new word and an explicit mtime
//!   each iteration) and builds over the live index; the page is restored afterwards, also after
//!   a panic (and at the next start if the process was killed: `.scale-restore.json`).
//!
//! Run: `cargo bench --bench scale` (10,000 pages); `KBTOOLS_BENCH_PAGES=100000 cargo bench
//! --bench scale` (the scale: about 1.1 GB of bundle, and the ten full builds alone take
//! many minutes); `cargo bench --bench scale -- --quick` for a quick look; `cargo bench --bench
//! scale -- search_files` for one group (the setup, with its checks, runs in full either way).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, SamplingMode};
use kbtools::bundle_gen::{self, GenOptions};
use kbtools::eval;
use kbtools::index::{self, BuildOptions, BuildReport};
use kbtools::kb::{KnowledgeBase, ServeOptions};
use kbtools::tools;
#[path = "common/latency.rs"]
mod latency;
#[path = "common/server.rs"]
mod server;

use latency::{ms, percentile, warm_latencies};
use serde_json::{json, Value};

/// Pages per tool benchmark's input cycle (spread evenly over the bundle).
const SAMPLE_PAGES: usize = 1_000;
/// Rounds of our own `search_files` latency figures.
const ROUNDS: usize = 3;
/// `list_tree` page size.
const TREE_LIMIT: usize = 50;
const STAMP_FILE: &str = ".scale-stamp.json";
const RESTORE_FILE: &str = ".scale-restore.json";

/// A tool's answer as a door gives it: the contract JSON (what the benchmarks always timed).
fn json_answer(
    kb: &KnowledgeBase,
    tool: &str,
    input: &Value,
) -> Result<Value, kbtools::error::ToolError> {
    tools::call(kb, tool, input).and_then(|o| o.to_json())
}

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"))
}

/// A document page of the bundle.
struct Page {
    /// Bundle path (`pages/…/x.md`).
    path: String,
    /// Its byte length on disk.
    size: usize,
}

/// The generated bundle and its live index, with what the generator says it holds.
struct Scale {
    bundle: PathBuf,
    index_dir: PathBuf,
    pages: usize,
    /// Distinct related pairs (each is two relation records, one per side).
    relations: usize,
    files: usize,
    /// Every document page, in path order.
    all_pages: Vec<Page>,
}

impl Scale {
    /// Up to `SAMPLE_PAGES` pages spread evenly over the bundle.
    fn sample(&self) -> Vec<&Page> {
        let step = self.all_pages.len().div_ceil(SAMPLE_PAGES).max(1);
        self.all_pages.iter().step_by(step).collect()
    }

    fn open(&self) -> KnowledgeBase {
        server::open_as_server(&self.index_dir, &self.bundle)
    }

    fn build(&self, index_dir: &Path) -> BuildReport {
        index::build(
            &self.bundle,
            index_dir,
            &BuildOptions::default(),
            &mut |_| {},
        )
        .expect("index build")
    }
}

/// Puts back a page the incremental benchmark left modified when its process was killed.
fn restore_interrupted_edit(bundle: &Path) {
    let restore = bundle.join(RESTORE_FILE);
    let Ok(text) = std::fs::read_to_string(&restore) else {
        return;
    };
    let record: Value = serde_json::from_str(&text).expect("restore record");
    let path = bundle.join(record["path"].as_str().unwrap());
    std::fs::write(&path, record["content"].as_str().unwrap()).unwrap();
    let mtime =
        SystemTime::UNIX_EPOCH + Duration::from_nanos(record["mtimeNanos"].as_u64().unwrap());
    set_mtime(&path, mtime);
    std::fs::remove_file(&restore).unwrap();
    println!(
        "scale: restored {} after an interrupted run",
        path.display()
    );
}

fn set_mtime(path: &Path, mtime: SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(mtime))
        .unwrap_or_else(|e| panic!("set mtime of {}: {e}", path.display()));
}

/// The directory navigation of a bundle (`index.md` and its leaves), not a document page.
fn is_navigation(name: &str) -> bool {
    name == "index.md"
        || name.starts_with("index-directory-leaf-")
        || name.starts_with("index-extension-leaf-")
}

/// Every document page under `pages/` (not the navigation), in path order.
fn document_pages(bundle: &Path) -> Vec<Page> {
    let mut out = Vec::new();
    let mut dirs = vec![bundle.join("pages")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                dirs.push(entry.path());
            } else if name.ends_with(".md") && !is_navigation(&name) {
                let relative = entry.path().strip_prefix(bundle).unwrap().to_owned();
                out.push(Page {
                    path: relative.to_str().unwrap().replace('\\', "/"),
                    size: meta.len() as usize,
                });
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// Generates (or reuses) the bundle and builds (or reuses) its index.
fn prepare() -> Scale {
    kbtools::no_transparent_huge_pages();
    let pages = env_number("KBTOOLS_BENCH_PAGES", 10_000) as usize;
    let seed = env_number("KBTOOLS_BENCH_SEED", 1);
    let options = GenOptions {
        pages,
        seed,
        replace: true,
        ..GenOptions::default()
    };
    let name = format!("scale-{pages}-seed-{seed}");
    let bundle = target_dir().join("bench-bundles").join(&name);
    let index_dir = target_dir().join("bench-index").join(&name);
    let stamp_path = bundle.join(STAMP_FILE);
    let wanted = format!("{options:?}");
    let stamp: Option<Value> = std::fs::read_to_string(&stamp_path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .filter(|s: &Value| s["options"] == wanted.as_str());
    let stamp = match stamp {
        Some(stamp) => {
            restore_interrupted_edit(&bundle);
            println!("scale: reusing {}", bundle.display());
            stamp
        }
        None => {
            let started = Instant::now();
            let report = bundle_gen::generate(&bundle, &options).expect("generate the bundle");
            println!(
                "scale: generated {} pages ({} MB) into {} in {:.1} s",
                report.pages,
                report.bytes / 1_000_000,
                bundle.display(),
                started.elapsed().as_secs_f64()
            );
            let stamp = json!({
                "options": wanted,
                "pages": report.pages,
                "relations": report.relations,
                "files": report.files,
            });
            std::fs::write(&stamp_path, stamp.to_string()).unwrap();
            // A build does not trust files modified within the racy window before it started
            // (`RACY_WINDOW_NS`, src/index/build.rs: 2 s) and reads them again next time; waited
            // out, the incremental benchmark's builds read only the edited page.
            std::thread::sleep(Duration::from_millis(2_100));
            stamp
        }
    };
    let scale = Scale {
        pages: stamp["pages"].as_u64().unwrap() as usize,
        relations: stamp["relations"].as_u64().unwrap() as usize,
        files: stamp["files"].as_u64().unwrap() as usize,
        all_pages: document_pages(&bundle),
        bundle,
        index_dir,
    };
    assert_eq!(scale.all_pages.len(), scale.pages, "pages on disk");

    let started = Instant::now();
    let opened = KnowledgeBase::open_or_build(
        &scale.bundle,
        &scale.index_dir,
        &BuildOptions::default(),
        ServeOptions::default(),
        &mut |_| {},
    );
    let report = match opened {
        Ok((_, report)) => report,
        Err(e) => {
            // An index of another format version: start over.
            println!("scale: rebuilding the index ({e})");
            let _ = std::fs::remove_dir_all(&scale.index_dir);
            Some(scale.build(&scale.index_dir))
        }
    };
    match report {
        Some(r) => println!(
            "scale: index built in {:.1} s ({:?})",
            started.elapsed().as_secs_f64(),
            r.work
        ),
        None => println!("scale: reusing the index {}", scale.index_dir.display()),
    }
    let manifest = index::read_manifest(&scale.index_dir).unwrap().unwrap();
    assert_eq!(manifest.counts.source_pages as usize, scale.pages);
    assert_eq!(manifest.counts.relations as usize, 2 * scale.relations);
    assert_eq!(manifest.counts.files as usize, scale.files);
    assert_eq!(manifest.counts.diagnostics, 0);
    // The tools are measured as a server answers them, with jieba's whole dictionary loaded (a
    // build loads it; a reused index is not built).
    kbtools::ingest::analysis::load_dictionary();
    scale
}

fn bench_ingest_and_full_build(c: &mut Criterion, scale: &Scale) {
    let mut group = c.benchmark_group("ingest");
    group.sample_size(10).sampling_mode(SamplingMode::Flat);
    group.bench_function("bundle", |b| {
        b.iter(|| {
            let ingested = kbtools::ingest::bundle::ingest(&scale.bundle).unwrap();
            let source_pages = ingested.source_page_count();
            assert_eq!(source_pages, scale.pages);
            assert_eq!(ingested.assembly.relations.len(), 2 * scale.relations);
            assert!(ingested.diagnostics.is_empty());
            ingested
        });
    });
    group.finish();

    let scratch = target_dir().join("bench-index");
    let mut group = c.benchmark_group("build_full");
    group.sample_size(10).sampling_mode(SamplingMode::Flat);
    group.bench_function("fresh_index_dir", |b| {
        b.iter_batched(
            || tempfile::tempdir_in(&scratch).unwrap(),
            |dir| {
                let report = scale.build(dir.path());
                assert!(!report.work.incremental && !report.work.unchanged);
                assert_eq!(report.work.pages_indexed as usize, scale.pages);
                assert_eq!(report.manifest.counts.source_pages as usize, scale.pages);
                assert_eq!(
                    report.manifest.counts.relations as usize,
                    2 * scale.relations
                );
                dir
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

fn items(out: &Value, key: &str) -> usize {
    out[key].as_array().map_or(0, Vec::len)
}

/// One benchmark cycling through `inputs`, each output checked by `check` (at setup, every
/// input; in the timed loop, the one just answered).
fn bench_cycle(
    c: &mut Criterion,
    kb: &KnowledgeBase,
    group: &str,
    name: &str,
    tool: &str,
    inputs: &[(Value, usize)],
    check: fn(&Value, usize) -> bool,
) {
    assert!(!inputs.is_empty(), "{group}/{name}: no inputs");
    for (input, expected) in inputs {
        let out = json_answer(kb, tool, input).unwrap_or_else(|e| panic!("{tool} {input}: {e}"));
        assert!(
            check(&out, *expected),
            "{group}/{name}: {tool} {input} answered wrong (expected {expected}):\n{out:#}"
        );
    }
    let mut group = c.benchmark_group(group);
    let mut next = 0;
    group.bench_function(name, |b| {
        b.iter(|| {
            let (input, expected) = &inputs[next % inputs.len()];
            next += 1;
            let out = json_answer(kb, tool, input).unwrap();
            assert!(check(&out, *expected), "{tool} {input}");
            out
        });
    });
    group.finish();
}

/// The relation records of a page's `_graph/by-file` record (0 when it has none).
fn relation_count(bundle: &Path, page: &str) -> usize {
    let stem = &page["pages/".len()..page.len() - ".md".len()];
    let record = bundle.join(format!("_graph/by-file/{stem}.json"));
    match std::fs::read(record) {
        Ok(bytes) => {
            let value: Value = serde_json::from_slice(&bytes).unwrap();
            value["relationships"].as_array().unwrap().len()
        }
        Err(_) => 0,
    }
}

/// Every directory under `pages/` (itself included) with its direct entries on disk.
fn directories(bundle: &Path) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut dirs = vec!["pages".to_string()];
    while let Some(dir) = dirs.pop() {
        let mut entries = 0;
        for entry in std::fs::read_dir(bundle.join(&dir)).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            entries += 1;
            if entry.file_type().unwrap().is_dir() {
                dirs.push(format!("{dir}/{name}"));
            }
        }
        out.push((dir, entries));
    }
    out.sort();
    out
}

fn bench_search(c: &mut Criterion, scale: &Scale, kb: &KnowledgeBase) {
    let queries_path = scale.bundle.join(bundle_gen::QUERIES_FILE);
    let qrels_path = scale.bundle.join(bundle_gen::QRELS_FILE);
    let queries = eval::load_queries(&queries_path).unwrap();
    let qrels = eval::load_qrels(&qrels_path).unwrap();
    assert!(!queries.is_empty());
    for mode in ["hybrid", "file"] {
        let inputs: Vec<Value> = queries
            .iter()
            .map(|(_, text)| json!({ "query": eval::fit_query(text), "mode": mode }))
            .collect();
        // Every query answers, and (file mode, where the page's own words rank it) the judged
        // page is mostly in the top 10.
        let mut found = 0;
        for ((id, _), input) in queries.iter().zip(&inputs) {
            let out = json_answer(kb, "search_files", input).unwrap();
            assert!(items(&out, "items") >= 1, "no result for {input}");
            assert_eq!(out["searchStatus"], "ok", "{input}");
            let relevant = qrels[id].keys().next().unwrap();
            let path = format!("pages/{relevant}.md");
            found += usize::from(
                out["items"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|i| i["path"] == path.as_str()),
            );
        }
        let share = found as f64 / queries.len() as f64;
        println!(
            "search_files/{mode}: {} queries answered; judged page in the top 10 for {:.1}%",
            queries.len(),
            share * 100.0
        );
        if mode == "file" {
            assert!(
                share >= 0.9,
                "file mode finds the judged page for only {share:.3}"
            );
        }

        let mut group = c.benchmark_group("search_files");
        group.sampling_mode(SamplingMode::Flat);
        let mut next = 0;
        group.bench_function(mode, |b| {
            b.iter(|| {
                let input = &inputs[next % inputs.len()];
                next += 1;
                let out = json_answer(kb, "search_files", input).unwrap();
                assert!(items(&out, "items") >= 1, "no result for {input}");
                out
            });
        });
        group.finish();

        if !latency::measuring() {
            continue;
        }
        let (per_query, _) = warm_latencies(&inputs, ROUNDS, |input| {
            std::hint::black_box(json_answer(kb, "search_files", input).unwrap());
        });
        println!(
            "search_files/{mode}: warm latency per query (median of {ROUNDS} rounds, {} queries, \
             {} pages): median {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            inputs.len(),
            scale.pages,
            ms(percentile(&per_query, 50.0)),
            ms(percentile(&per_query, 99.0)),
            ms(*per_query.last().unwrap()),
        );
    }
}

fn bench_reads(c: &mut Criterion, scale: &Scale, kb: &KnowledgeBase) {
    let sample = scale.sample();

    let reads: Vec<(Value, usize)> = sample
        .iter()
        .map(|p| (json!({ "path": p.path }), p.size))
        .collect();
    bench_cycle(
        c,
        kb,
        "read_file",
        "by_path",
        "read_file",
        &reads,
        |out, size| out["content"].as_str().map(str::len) == Some(size),
    );

    let details: Vec<(Value, usize)> = sample
        .iter()
        .map(|p| (json!({ "fileId": p.path }), p.size))
        .collect();
    bench_cycle(
        c,
        kb,
        "get_file",
        "by_path",
        "get_file",
        &details,
        |out, size| {
            out["file"]["sizeBytes"].as_u64() == Some(size as u64)
                && out["file"]["fileKind"] == "page"
        },
    );

    let trees: Vec<(Value, usize)> = directories(&scale.bundle)
        .into_iter()
        .map(|(dir, entries)| {
            (
                json!({ "parentPath": dir, "limit": TREE_LIMIT }),
                entries.min(TREE_LIMIT),
            )
        })
        .collect();
    println!("list_tree: {} directories of pages/", trees.len());
    bench_cycle(
        c,
        kb,
        "list_tree",
        "page_of_50",
        "list_tree",
        &trees,
        |out, n| items(out, "items") == n,
    );

    // Pages with relations; read_related lists one item per relation record of the page.
    let related: Vec<(Value, usize)> = sample
        .iter()
        .map(|p| (p, relation_count(&scale.bundle, &p.path)))
        .filter(|(_, n)| *n > 0)
        .map(|(p, n)| (json!({ "fileId": p.path, "limit": 200 }), n))
        .collect();
    assert!(
        related.len() * 2 > sample.len(),
        "most pages have relations"
    );
    bench_cycle(
        c,
        kb,
        "read_related",
        "by_path",
        "read_related",
        &related,
        |out, n| items(out, "items") == n,
    );

    // Depth 2, default fanout (10), the whole walk (limit 200), from the pages whose walk has a
    // second level (most): every direct relation up to the fanout comes first, then more. In
    // the timed loop, the walk has the size it had at setup.
    let mut expands: Vec<(Value, usize)> = Vec::new();
    let mut relationships = 0;
    for (input, direct) in &related {
        let input = json!({ "fileId": input["fileId"], "depth": 2, "limit": 200 });
        let out = json_answer(kb, "expand_graph", &input).unwrap();
        let walked = out["relationships"].as_array().unwrap();
        let first_level = (*direct).min(10);
        assert!(walked.len() >= first_level, "{input}: {out:#}");
        assert!(
            walked[..first_level]
                .iter()
                .all(|r| r["relationshipDepth"] == 1),
            "{input}: the direct relations come first"
        );
        assert_eq!(
            out["graphPaths"].as_array().unwrap().is_empty(),
            walked.is_empty()
        );
        if walked.len() > first_level {
            relationships += walked.len();
            expands.push((input, walked.len()));
        }
    }
    assert!(
        expands.len() * 10 >= related.len() * 8,
        "only {} of {} walks reach a second level",
        expands.len(),
        related.len()
    );
    println!(
        "expand_graph: {} depth-2 walks, {:.1} relationships each on average",
        expands.len(),
        relationships as f64 / expands.len() as f64
    );
    bench_cycle(
        c,
        kb,
        "expand_graph",
        "depth_2",
        "expand_graph",
        &expands,
        |out, walked| items(out, "relationships") == walked && items(out, "graphPaths") >= 1,
    );
}

/// Restores the edited page (bytes and mtime) when dropped, also on a panic.
struct EditedPage {
    path: PathBuf,
    restore_record: PathBuf,
    original: String,
    mtime: SystemTime,
}

impl EditedPage {
    fn new(bundle: &Path, page: &str) -> Self {
        let path = bundle.join(page);
        let original = std::fs::read_to_string(&path).unwrap();
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        let restore_record = bundle.join(RESTORE_FILE);
        let nanos = mtime
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        let record = json!({ "path": page, "content": original, "mtimeNanos": nanos });
        std::fs::write(&restore_record, record.to_string()).unwrap();
        EditedPage {
            path,
            restore_record,
            original,
            mtime,
        }
    }

    /// Writes edit `n`: the page plus a line with a word of its own, at an mtime of its own.
    fn edit(&self, n: u64) -> String {
        let word = format!("scalebenchedit{n}");
        std::fs::write(&self.path, format!("{}\nEdited: {word}.\n", self.original)).unwrap();
        set_mtime(&self.path, self.mtime + Duration::from_secs(n + 1));
        word
    }
}

impl Drop for EditedPage {
    fn drop(&mut self) {
        std::fs::write(&self.path, &self.original).unwrap();
        set_mtime(&self.path, self.mtime);
        let _ = std::fs::remove_file(&self.restore_record);
    }
}

fn bench_rebuilds(c: &mut Criterion, scale: &Scale) {
    // Nothing changed since the live generation.
    let before = index::read_manifest(&scale.index_dir).unwrap().unwrap();
    let check_unchanged = |report: &BuildReport| {
        assert!(
            report.work.unchanged && report.work.files_read == 0,
            "build_unchanged: the build over an unchanged bundle did work: {:?}",
            report.work
        );
        assert_eq!(
            report.manifest.active_content_revision,
            before.active_content_revision
        );
        assert_eq!(report.manifest.counts, before.counts);
    };
    check_unchanged(&scale.build(&scale.index_dir));
    let mut group = c.benchmark_group("build_unchanged");
    group.sample_size(10).sampling_mode(SamplingMode::Flat);
    group.bench_function("recheck", |b| {
        b.iter(|| {
            let report = scale.build(&scale.index_dir);
            check_unchanged(&report);
            report
        });
    });
    group.finish();

    // One page changed since the live generation: each iteration edits it again.
    let page = &scale.all_pages[scale.all_pages.len() / 2];
    let edited = EditedPage::new(&scale.bundle, &page.path);
    let mut edits = 0;
    let mut revision = before.active_content_revision;
    let mut incremental_build = |timed: &mut Duration| {
        edits += 1;
        let word = edited.edit(edits);
        let started = Instant::now();
        let report = scale.build(&scale.index_dir);
        *timed += started.elapsed();
        assert!(
            report.work.incremental && report.work.pages_indexed == 1,
            "build_incremental_one_page: not an incremental one-page build: {:?}",
            report.work
        );
        assert!(report.work.files_read <= 3, "{:?}", report.work);
        assert_eq!(report.manifest.active_content_revision, revision + 1);
        revision += 1;
        assert_eq!(report.manifest.counts.source_pages as usize, scale.pages);
        word
    };
    // Once at setup: the edit is searchable in the new generation, and only there.
    let word = incremental_build(&mut Duration::default());
    let kb = scale.open();
    let out = json_answer(
        &kb,
        "search_files",
        &json!({ "query": word, "mode": "file" }),
    )
    .unwrap();
    let found: Vec<&str> = out["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        found,
        [page.path.as_str()],
        "the edited page by its new word"
    );
    drop(kb);
    let mut group = c.benchmark_group("build_incremental_one_page");
    group.sample_size(10).sampling_mode(SamplingMode::Flat);
    group.bench_function("edit_and_build", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                incremental_build(&mut timed);
            }
            timed
        });
    });
    group.finish();
    drop(edited);
    // Back in step with the restored bundle.
    let report = scale.build(&scale.index_dir);
    assert_eq!(report.manifest.counts, before.counts);
}

fn bench_scale(c: &mut Criterion) {
    let scale = prepare();
    bench_ingest_and_full_build(c, &scale);
    let kb = scale.open();
    bench_search(c, &scale, &kb);
    bench_reads(c, &scale, &kb);
    drop(kb);
    bench_rebuilds(c, &scale);
}

criterion_group!(benches, bench_scale);
criterion_main!(benches);
