//! Crash safety of the index (issue 7, items 2 and 4): `kbtools index` killed with SIGKILL at
//! random moments, and at each step of the publish, always leaves an index that opens and
//! answers exactly as revision A (the previous one) or revision B (the new one) — never a mix —
//! and the next build completes with B and removes what the killed one left; a damaged index
//! file of any kind is detected with an error naming it, then rebuilt, never served; and a
//! server keeps answering from A while builds are killed underneath it, then switches to B.
//!
//! The trials: a generated bundle (`kbtools::bundle_gen`) with index A is changed (pages
//! changed, added, removed); each trial starts from a hard-linked copy of A's index (a build
//! never writes a file of an existing generation, so the copies share A's files safely; a build
//! that did would change A and fail every later trial), runs the `kbtools index` binary
//! (incremental, or `--full`) and kills it after a random delay spread over its whole run time
//! (measured first). The seed is printed; `KBTOOLS_CRASH_SEED=<n>` repeats a run and
//! `KBTOOLS_CRASH_TRIALS=<n>` sets the number of trials (default 50; e.g. 500 by hand).

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kbtools::index::{self, BuildOptions, Verify};
use kbtools::kb::{KnowledgeBase, ServeOptions};
use kbtools::serve::live::LiveKnowledgeBase;
use serde_json::{json, Value};

/// Pages of the generated bundle: enough for a debug build to last long enough to be
/// interrupted at many points, few enough for the trials to fit the CI budget.
const PAGES: usize = 120;
/// Pages of the bundle of the damaged-file tests (one rebuild per case).
const SMALL_PAGES: usize = 24;
/// A word only revision B has (in a changed page and an added one).
const NEW_WORD: &str = "crashproofquokka";
/// A child process running longer than this is a hang (not a slow machine: a debug build of
/// these bundles takes seconds on a loaded one).
const WATCHDOG: Duration = common::HANG;

// ---------------------------------------------------------------------------------------------
// Helpers

/// splitmix64: a small seeded generator, so that a run can be repeated from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform fraction in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn env_u64(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value:?} is not a number")),
    )
}

fn serve_options(verify: Verify) -> ServeOptions {
    ServeOptions {
        verify,
        // A debug build on a loaded machine must not turn a search into SEARCH_TIMEOUT.
        search_deadline: Duration::from_secs(600),
        ..common::serve_options()
    }
}

/// Copies the index folder `from` to `to` with hard links.
fn link_copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            link_copy(&entry.path(), &target);
        } else {
            std::fs::hard_link(entry.path(), &target).unwrap();
        }
    }
}

/// Every file under `root`, relative, sorted.
fn files_under(root: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.push(
                    path.strip_prefix(root)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                );
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

/// `kbtools` with a pinned "today" and nothing of the caller's environment that changes what
/// it does.
fn kbtools() -> Command {
    let mut command = common::kbtools();
    command.stdin(Stdio::null());
    command
}

/// Waits for `child` at most `WATCHDOG`.
fn wait_bounded(child: &mut std::process::Child, what: &str) -> ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if started.elapsed() > WATCHDOG {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} still running after {WATCHDOG:?}: a hang");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs `command` to its end (bounded): status, stdout, stderr.
fn run(mut command: Command, what: &str) -> (ExitStatus, String, String) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).unwrap();
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut s).unwrap();
        s
    });
    let status = wait_bounded(&mut child, what);
    (status, out.join().unwrap(), err.join().unwrap())
}

/// Runs a `kbtools call` command made by `make`. A search that outlived the 3 s deadline (a
/// debug build on a busy machine) answers `SEARCH_TIMEOUT`, which is no wrong answer: it is
/// asked again, until `WATCHDOG` has passed (a search that never ends in time is a hang).
fn run_call(make: impl Fn() -> Command) -> (ExitStatus, String, String) {
    let started = Instant::now();
    let mut tries = 0;
    loop {
        let (status, stdout, stderr) = run(make(), "kbtools call");
        tries += 1;
        if !(status.code() == Some(1) && stdout.contains("SEARCH_TIMEOUT")) {
            return (status, stdout, stderr);
        }
        assert!(
            started.elapsed() < WATCHDOG,
            "kbtools call: SEARCH_TIMEOUT {tries} times in {:?}",
            started.elapsed()
        );
    }
}

fn index_command(bundle: &Path, index_dir: &Path, full: bool) -> Command {
    let mut command = kbtools();
    command
        .arg("-q")
        .arg("index")
        .arg(bundle)
        .arg("--index")
        .arg(index_dir);
    if full {
        command.arg("--full");
    }
    command
}

// ---------------------------------------------------------------------------------------------
// What an index answers

/// The calls every check makes: searches (a word only B has, words of both), listings, reads of
/// the changed, added and removed pages, their metadata, relations and graph.
struct Probe {
    calls: Vec<(&'static str, Value)>,
}

impl Probe {
    fn new(queries: &[String], changed: &str, added: &str, removed: &str) -> Probe {
        let mut calls = vec![
            ("search_files", json!({ "query": NEW_WORD, "mode": "file" })),
            (
                "search_files",
                json!({ "query": NEW_WORD, "mode": "hybrid" }),
            ),
        ];
        for query in queries {
            calls.push(("search_files", json!({ "query": query, "limit": 10 })));
        }
        for page in [changed, added, removed] {
            let parent = &page[..page.rfind('/').unwrap()];
            calls.push(("list_tree", json!({ "parentPath": parent, "limit": 200 })));
            calls.push(("read_file", json!({ "path": page })));
            calls.push(("get_file", json!({ "fileId": page })));
            calls.push(("read_related", json!({ "fileId": page, "limit": 50 })));
            calls.push(("expand_graph", json!({ "fileId": page, "depth": 2 })));
        }
        calls.push(("list_tree", json!({ "parentPath": "pages", "limit": 200 })));
        Probe { calls }
    }

    /// Each call's output, or its error code.
    fn answers(&self, kb: &KnowledgeBase) -> Vec<Value> {
        self.calls
            .iter()
            .map(|(tool, input)| {
                match kbtools::tools::call(kb, tool, input).and_then(|o| o.to_json()) {
                    Ok(out) => out,
                    Err(e) => json!({ "error": e.code.as_str() }),
                }
            })
            .collect()
    }

    /// Opens `index_dir` (checking every file) and answers.
    fn answers_of(&self, index_dir: &Path, bundle: &Path) -> Result<Vec<Value>, String> {
        let kb = KnowledgeBase::open(index_dir, Some(bundle), serve_options(Verify::Full))
            .map_err(|e| e.to_string())?;
        Ok(self.answers(&kb))
    }

    /// The first call whose answer differs between `a` and `b`.
    fn first_difference(&self, a: &[Value], b: &[Value]) -> Option<String> {
        self.calls
            .iter()
            .zip(a.iter().zip(b))
            .find(|(_, (x, y))| x != y)
            .map(|((tool, input), (x, y))| {
                let cut = |v: &Value| v.to_string().chars().take(400).collect::<String>();
                format!("{tool} {input}:\n  {}\n  {}", cut(x), cut(y))
            })
    }
}

/// Which revision answers are: A's, B's, or a mix (a defect).
fn which(probe: &Probe, got: &[Value], a: &[Value], b: &[Value]) -> Result<char, String> {
    if got == a {
        Ok('A')
    } else if got == b {
        Ok('B')
    } else {
        Err(format!(
            "answers are neither revision A's nor B's.\nvs A: {}\nvs B: {}",
            probe.first_difference(got, a).unwrap_or_default(),
            probe.first_difference(got, b).unwrap_or_default()
        ))
    }
}

/// What a killed build leaves in an index folder: `*.tmp` generation folders, `CURRENT.*.tmp`
/// files, and generation folders.
#[derive(Debug, Default, PartialEq, Eq)]
struct Leftovers {
    tmp_folders: usize,
    current_tmp: usize,
    generations: usize,
}

fn leftovers(index_dir: &Path) -> Leftovers {
    let mut found = Leftovers::default();
    for entry in std::fs::read_dir(index_dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.starts_with("CURRENT.") && name.ends_with(".tmp") {
            found.current_tmp += 1;
        } else if name.starts_with("gen-") && name.ends_with(".tmp") {
            found.tmp_folders += 1;
        } else if name.starts_with("gen-") {
            found.generations += 1;
        }
    }
    found
}

// ---------------------------------------------------------------------------------------------
// The scenario: bundle at revision B, index A, and the answers of uninterrupted builds

struct Scenario {
    _tmp: tempfile::TempDir,
    bundle: PathBuf,
    /// The index of revision A (never written after it is built).
    index_a: PathBuf,
    probe: Probe,
    answers_a: Vec<Value>,
    /// B's answers after an incremental build and after a full one.
    answers_b: [Vec<Value>; 2],
    /// The whole-process run time of `kbtools index` from A to B: incremental, full.
    run_time: [Duration; 2],
}

/// A generated bundle of `pages` pages in `dir`, and the texts of its benchmark queries.
fn generated_bundle(dir: &Path, pages: usize) -> Vec<String> {
    let options = kbtools::bundle_gen::GenOptions {
        pages,
        seed: 11,
        queries: 4,
        ..Default::default()
    };
    let report = kbtools::bundle_gen::generate(dir, &options).unwrap();
    let queries: Vec<String> = std::fs::read_to_string(&report.queries_path)
        .unwrap()
        .lines()
        .filter_map(|line| {
            let v: Value = serde_json::from_str(line).ok()?;
            Some(v["text"].as_str()?.to_string())
        })
        .take(3)
        .collect();
    assert!(!queries.is_empty(), "the generator wrote no queries");
    queries
}

fn document_pages(bundle: &Path) -> Vec<String> {
    files_under(&bundle.join("pages"))
        .into_iter()
        .filter(|p| p.ends_with(".md") && !p.rsplit('/').next().unwrap().starts_with("index"))
        .map(|p| format!("pages/{p}"))
        .collect()
}

impl Scenario {
    fn new() -> Scenario {
        let tmp = tempfile::tempdir().unwrap();
        let bundle = tmp.path().join("bundle");
        let queries = generated_bundle(&bundle, PAGES);

        // Revision A.
        let index_a = tmp.path().join("index-a");
        let (status, _, stderr) = run(index_command(&bundle, &index_a, false), "index A");
        assert!(status.success(), "index A: {stderr}");

        // Revision B: a page changed, one added, one removed, one retitled.
        let pages = document_pages(&bundle);
        let changed = pages[3].clone();
        let removed = pages[pages.len() / 2].clone();
        let retitled = pages[pages.len() - 2].clone();
        let added = format!(
            "{}/crash-added-page.md",
            &changed[..changed.rfind('/').unwrap()]
        );
        let mut text = std::fs::read_to_string(bundle.join(&changed)).unwrap();
        text.push_str(&format!("\n\nA new paragraph about the {NEW_WORD}.\n"));
        std::fs::write(bundle.join(&changed), text).unwrap();
        std::fs::write(
            bundle.join(&added),
            format!("---\ntitle: Added page\n---\n# Added page\n\nThe {NEW_WORD} lives here.\n"),
        )
        .unwrap();
        std::fs::remove_file(bundle.join(&removed)).unwrap();
        let text = std::fs::read_to_string(bundle.join(&retitled)).unwrap();
        std::fs::write(bundle.join(&retitled), format!("# Retitled page\n\n{text}")).unwrap();
        let probe = Probe::new(&queries, &changed, &added, &removed);
        let answers_a = probe.answers_of(&index_a, &bundle).unwrap();

        // B's answers, from uninterrupted runs of the binary on copies of A.
        let mut run_time = [Duration::ZERO; 2];
        let mut answers_b = [Vec::new(), Vec::new()];
        for (i, full) in [false, true].into_iter().enumerate() {
            let dir = tmp.path().join(format!("index-b-{i}"));
            link_copy(&index_a, &dir);
            let started = Instant::now();
            let (status, stdout, stderr) = run(index_command(&bundle, &dir, full), "index B");
            run_time[i] = started.elapsed();
            assert!(status.success(), "index B: {stderr}");
            let summary: Value = serde_json::from_str(&stdout).unwrap();
            assert_eq!(summary["activeContentRevision"], 2, "{summary}");
            assert_eq!(summary["work"]["incremental"], !full, "{summary}");
            answers_b[i] = probe.answers_of(&dir, &bundle).unwrap();
        }
        assert_ne!(answers_a, answers_b[0], "B must answer differently from A");
        let found = &answers_b[0][0];
        assert!(
            found["items"]
                .as_array()
                .is_some_and(|items| items.len() == 2),
            "B's search for {NEW_WORD}: {found}"
        );
        Scenario {
            _tmp: tmp,
            bundle,
            index_a,
            probe,
            answers_a,
            answers_b,
            run_time,
        }
    }

    /// A fresh copy of A's index for a trial.
    fn trial_dir(&self, name: &str) -> PathBuf {
        let dir = self._tmp.path().join(name);
        link_copy(&self.index_a, &dir);
        dir
    }

    /// After a crash: the index opens (every file checked) and answers as A or as B (`full`
    /// tells which B); a binary call answers what the library does. Returns 'A' or 'B'.
    fn check_after_crash(&self, dir: &Path, full: bool, what: &str) -> char {
        let got = self
            .probe
            .answers_of(dir, &self.bundle)
            .unwrap_or_else(|e| panic!("{what}: the index does not open: {e}"));
        let b = &self.answers_b[usize::from(full)];
        let revision =
            which(&self.probe, &got, &self.answers_a, b).unwrap_or_else(|e| panic!("{what}: {e}"));
        // The command line answers from the same index, without refreshing it.
        let (status, stdout, stderr) = run_call(|| {
            let mut command = kbtools();
            command
                .arg("--no-refresh")
                .arg("--bundle")
                .arg(&self.bundle)
                .arg("--index")
                .arg(dir)
                .arg("call")
                .arg("search_files")
                .arg(self.probe.calls[0].1.to_string());
            command
        });
        assert!(
            status.success(),
            "{what}: kbtools call: {status:?} {stdout} {stderr}"
        );
        let out: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(out, got[0], "{what}: the binary answers otherwise");
        revision
    }

    /// A normal build after a crash completes with B and leaves nothing of the killed build.
    fn check_next_build(&self, dir: &Path, what: &str) {
        let report = index::build(&self.bundle, dir, &BuildOptions::default(), &mut |_| {})
            .unwrap_or_else(|e| panic!("{what}: the next build fails: {e}"));
        assert_eq!(report.manifest.active_content_revision, 2, "{what}");
        let got = self.probe.answers_of(dir, &self.bundle).unwrap();
        assert!(
            got == self.answers_b[0] || got == self.answers_b[1],
            "{what}: after the next build: {}",
            self.probe
                .first_difference(&got, &self.answers_b[0])
                .unwrap_or_default()
        );
        let left = leftovers(dir);
        assert_eq!(
            (left.tmp_folders, left.current_tmp),
            (0, 0),
            "{what}: the next build left {left:?}: {:?}",
            files_under(dir)
        );
        assert!(
            (1..=2).contains(&left.generations),
            "{what}: {left:?}: {:?}",
            files_under(dir)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Item 2: SIGKILL at random moments, and crashes at each step of the publish

#[test]
fn kbtools_index_killed_at_random_moments_leaves_revision_a_or_b() {
    let started = Instant::now();
    let scenario = Scenario::new();
    let trials = env_u64("KBTOOLS_CRASH_TRIALS").unwrap_or(50) as usize;
    let seed = env_u64("KBTOOLS_CRASH_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    });
    eprintln!(
        "crash trials: {trials}, seed {seed} (KBTOOLS_CRASH_SEED={seed} repeats them); a full \
         run takes {:?} incremental, {:?} with --full; setup {:?}",
        scenario.run_time[0],
        scenario.run_time[1],
        started.elapsed()
    );
    let mut rng = Rng(seed);
    // The run time the delays spread over; a build seen finishing sooner (the machine got
    // less busy) shortens it.
    let mut run_time = scenario.run_time;
    // (mode, killed or finished, revision found) → count.
    let mut outcomes: BTreeMap<(&str, &str, char), usize> = BTreeMap::new();
    let mut leftover_seen = Leftovers::default();
    for trial in 0..trials {
        let full = trial % 2 == 1;
        let mode = if full { "full" } else { "incremental" };
        let dir = scenario.trial_dir(&format!("trial-{trial}"));
        // Spread over the whole run, and a little past it (a build that finished first).
        let delay = run_time[usize::from(full)].mul_f64(rng.unit() * 1.1);
        let spawned = Instant::now();
        let mut child = index_command(&scenario.bundle, &dir, full)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        while spawned.elapsed() < delay && child.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(2));
        }
        if child.try_wait().unwrap().is_some() {
            let took = spawned.elapsed();
            let estimate = &mut run_time[usize::from(full)];
            *estimate = (*estimate).min(took);
        }
        child.kill().unwrap();
        let status = wait_bounded(&mut child, "kbtools index");
        let ended = if status.success() {
            "finished"
        } else {
            "killed"
        };
        let what = format!("trial {trial} ({mode}, killed after {delay:?}, seed {seed})");
        let left = leftovers(&dir);
        leftover_seen.tmp_folders += left.tmp_folders;
        leftover_seen.current_tmp += left.current_tmp;
        let revision = scenario.check_after_crash(&dir, full, &what);
        if ended == "finished" {
            assert_eq!(revision, 'B', "{what}: a finished build must leave B");
        }
        *outcomes.entry((mode, ended, revision)).or_default() += 1;
        scenario.check_next_build(&dir, &what);
        std::fs::remove_dir_all(&dir).unwrap();
    }
    eprintln!("outcomes (mode, process, revision found): {outcomes:?}");
    eprintln!(
        "killed builds left {} temporary generation folders and {} CURRENT.*.tmp files, all \
         removed by the next build; {trials} trials in {:?}",
        leftover_seen.tmp_folders,
        leftover_seen.current_tmp,
        started.elapsed()
    );
    // The delays must have reached both sides of the switch, or the trials proved little.
    let killed_a: usize = outcomes
        .iter()
        .filter(|((_, ended, rev), _)| *ended == "killed" && *rev == 'A')
        .map(|(_, n)| n)
        .sum();
    assert!(
        trials < 10 || killed_a * 4 >= trials,
        "too few builds were killed before they finished: {outcomes:?}"
    );
}

/// The points of the publish step a crash is forced at (`KBTOOLS_CRASH_AT`), and the revision
/// each must leave.
const CRASH_POINTS: [(&str, char); 4] = [
    ("written", 'A'),
    ("renamed", 'A'),
    ("current-written", 'A'),
    ("published", 'B'),
];

#[test]
fn a_crash_at_each_step_of_the_publish_leaves_revision_a_or_b_and_no_leftover() {
    let scenario = Scenario::new();
    for full in [false, true] {
        for (point, expected) in CRASH_POINTS {
            let what = format!("crash at {point} (full: {full})");
            let dir = scenario.trial_dir(&format!("crash-{point}-{full}"));
            let mut command = index_command(&scenario.bundle, &dir, full);
            command.env("KBTOOLS_CRASH_AT", point);
            let (status, _, stderr) = run(command, &what);
            assert!(
                !status.success() && status.code().is_none(),
                "{what}: the process was not stopped by the crash: {status:?} {stderr}"
            );
            let left = leftovers(&dir);
            match point {
                "written" => assert_eq!(left.tmp_folders, 1, "{what}: {left:?}"),
                "renamed" => assert_eq!(left.generations, 2, "{what}: {left:?}"),
                "current-written" => assert_eq!(left.current_tmp, 1, "{what}: {left:?}"),
                _ => {}
            }
            let revision = scenario.check_after_crash(&dir, full, &what);
            assert_eq!(revision, expected, "{what}");
            scenario.check_next_build(&dir, &what);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Item 2: damaged index files

/// How a file is damaged.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Damage {
    /// One byte in the middle changed.
    FlipMiddle,
    /// The last byte changed (tantivy's footer, the manifest's checksum).
    FlipLast,
    /// Cut to half its size.
    Truncate,
    /// Emptied.
    Empty,
    /// One byte in the middle changed, the file's modification time restored (bit rot).
    Rot,
}

const DAMAGES: [Damage; 5] = [
    Damage::FlipMiddle,
    Damage::FlipLast,
    Damage::Truncate,
    Damage::Empty,
    Damage::Rot,
];

/// Damages `path` in place of a hard link: the file is replaced, the reference's copy stays.
fn damage(path: &Path, how: Damage) {
    let mut bytes = std::fs::read(path).unwrap();
    let modified = std::fs::metadata(path).unwrap().modified().unwrap();
    assert!(!bytes.is_empty(), "{} is empty already", path.display());
    match how {
        Damage::FlipMiddle | Damage::Rot => {
            let at = bytes.len() / 2;
            bytes[at] ^= 0x55;
        }
        Damage::FlipLast => *bytes.last_mut().unwrap() ^= 0x55,
        Damage::Truncate => bytes.truncate(bytes.len() / 2),
        Damage::Empty => bytes.clear(),
    }
    std::fs::remove_file(path).unwrap();
    std::fs::write(path, &bytes).unwrap();
    if how == Damage::Rot {
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(modified).unwrap();
    }
}

/// One file of each kind in an index: `CURRENT`, the generation's own files, and one tantivy
/// file of each kind (`meta.json`, `.managed.json`, one segment file per extension).
fn files_of_each_kind(index_dir: &Path) -> Vec<String> {
    let current = std::fs::read_to_string(index_dir.join("CURRENT")).unwrap();
    let generation = current.trim();
    let mut out = vec!["CURRENT".to_string()];
    for name in [
        "manifest.json",
        "catalog.bin",
        "ingest-cache.bin",
        "diagnostics.json",
        "search/meta.json",
        "search/.managed.json",
    ] {
        out.push(format!("{generation}/{name}"));
    }
    let mut extensions = BTreeMap::new();
    for name in files_under(&index_dir.join(generation).join("search")) {
        let (folder, base) = name.rsplit_once('/').unwrap_or(("", &name));
        if let Some((_, ext)) = base.split_once('.') {
            if !base.starts_with('.') && ext != "json" {
                extensions
                    .entry((folder.to_string(), ext.to_string()))
                    .or_insert(format!("{generation}/search/{name}"));
            }
        }
    }
    // Terms, postings, positions, fast fields, field norms, the document store.
    assert!(
        extensions.len() >= 6,
        "segment files of few kinds: {extensions:?}"
    );
    out.extend(extensions.into_values());
    out
}

/// Revision numbers and cursors left out: a rebuild after a damaged manifest or `CURRENT`
/// cannot know the revision, and takes the next one.
fn without_revisions(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| *k != "activeContentRevision" && *k != "resourceRevision")
                .map(|(k, v)| {
                    let v = if k == "nextCursor" || k == "cursor" {
                        json!(!v.is_null())
                    } else {
                        without_revisions(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_revisions).collect()),
        other => other.clone(),
    }
}

#[test]
fn a_damaged_index_file_is_refused_with_its_name_then_rebuilt_never_served() {
    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tmp.path().join("bundle");
    let queries = generated_bundle(&bundle, SMALL_PAGES);
    let reference = tmp.path().join("reference");
    index::build(&bundle, &reference, &BuildOptions::default(), &mut |_| {}).unwrap();
    let pages = document_pages(&bundle);
    let probe = Probe::new(&queries, &pages[0], &pages[1], &pages[2]);
    let expected = probe.answers_of(&reference, &bundle).unwrap();
    let kinds = files_of_each_kind(&reference);
    let mut cases = 0;
    for file in &kinds {
        let name = file.rsplit('/').next().unwrap();
        let keeps_revisions = file != "CURRENT" && !file.ends_with("manifest.json");
        for how in DAMAGES {
            let what = format!("{file} ({how:?})");
            let dir = tmp.path().join(format!("case-{cases}"));
            cases += 1;
            link_copy(&reference, &dir);
            damage(&dir.join(file), how);

            // Opening refuses it, naming the file: always with every file checked, and with the
            // cheap checks unless the damage kept the file's size and time (bit rot).
            let full = KnowledgeBase::open(&dir, Some(&bundle), serve_options(Verify::Full));
            let error = full
                .err()
                .unwrap_or_else(|| panic!("{what}: opened"))
                .to_string();
            assert!(
                (error.contains(name) || error.contains(&dir.join(file).display().to_string()))
                    && (error.contains("damaged") || error.contains("format version")),
                "{what}: {error}"
            );
            let quick = KnowledgeBase::open(&dir, Some(&bundle), serve_options(Verify::Quick));
            if how != Damage::Rot {
                let error = quick.err().unwrap_or_else(|| panic!("{what}: opened"));
                assert!(error.to_string().contains(name), "{what}: {error}");
            }

            // A build (or the refresh of a server, checking every file) finds it and rebuilds.
            let verify = if how == Damage::Rot {
                Verify::Full
            } else {
                Verify::Quick
            };
            let mut lines = Vec::new();
            let (kb, report) = KnowledgeBase::open_or_build(
                &bundle,
                &dir,
                &BuildOptions::default(),
                serve_options(verify),
                &mut |line| lines.push(line.to_string()),
            )
            .unwrap_or_else(|e| panic!("{what}: no rebuild: {e}"));
            let report = report.unwrap_or_else(|| panic!("{what}: not rebuilt: {lines:?}"));
            assert!(!report.work.unchanged && !report.work.incremental, "{what}");
            assert!(
                lines.iter().any(|l| l.contains(name)),
                "{what}: the rebuild does not say what was damaged: {lines:?}"
            );
            let generation = index::current_generation(&dir).unwrap();
            index::verify_generation(&generation, &kb.manifest, Verify::Full)
                .unwrap_or_else(|e| panic!("{what}: the rebuilt index: {e}"));
            let got = probe.answers(&kb);
            if keeps_revisions {
                assert!(
                    got == expected,
                    "{what}: {}",
                    probe.first_difference(&got, &expected).unwrap_or_default()
                );
            } else {
                let (got, expected) = (
                    without_revisions(&json!(got)),
                    without_revisions(&json!(expected)),
                );
                assert_eq!(got, expected, "{what}");
            }
        }
    }
    eprintln!(
        "{cases} damaged-file cases ({} files × {} damages) in {:?}",
        kinds.len(),
        DAMAGES.len(),
        started.elapsed()
    );
}

/// The command line: `kbtools call --no-refresh` refuses a damaged index with a message naming
/// the file (or rebuilds when there is no index to answer from: `CURRENT` or the manifest);
/// `kbtools call` and `kbtools index` rebuild it and answer as before.
#[test]
fn the_command_line_names_a_damaged_file_and_rebuilds_it() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tmp.path().join("bundle");
    let queries = generated_bundle(&bundle, SMALL_PAGES);
    let reference = tmp.path().join("reference");
    let (status, _, stderr) = run(index_command(&bundle, &reference, false), "index");
    assert!(status.success(), "{stderr}");
    let call = |dir: &Path, no_refresh: bool| {
        run_call(|| {
            let mut command = kbtools();
            if no_refresh {
                command.arg("--no-refresh");
            }
            command
                .arg("--bundle")
                .arg(&bundle)
                .arg("--index")
                .arg(dir)
                .arg("call")
                .arg("search_files")
                .arg(json!({ "query": queries[0] }).to_string());
            command
        })
    };
    let (status, expected, stderr) = call(&reference, true);
    assert!(status.success(), "{stderr}");
    let expected: Value = serde_json::from_str(&expected).unwrap();
    // One file of each of kbtools' own kinds and two of tantivy's (the library test above
    // covers every kind).
    let files: Vec<String> = files_of_each_kind(&reference)
        .into_iter()
        .filter(|f| !f.contains("/search/") || f.ends_with("meta.json") || f.ends_with(".idx"))
        .collect();
    assert_eq!(files.len(), 7, "{files:?}");
    for (i, file) in files.iter().enumerate() {
        let name = file.rsplit('/').next().unwrap();
        let no_index = file == "CURRENT" || file.ends_with("manifest.json");
        let same = |out: &str| {
            let out: Value = serde_json::from_str(out).unwrap();
            if no_index {
                without_revisions(&out) == without_revisions(&expected)
            } else {
                out == expected
            }
        };
        let damaged_copy = |step: &str| {
            let dir = tmp.path().join(format!("{step}-{i}"));
            link_copy(&reference, &dir);
            damage(&dir.join(file), Damage::FlipMiddle);
            dir
        };

        let dir = damaged_copy("no-refresh");
        let (status, stdout, stderr) = call(&dir, true);
        if no_index {
            assert!(
                status.success() && same(&stdout),
                "{file}: {status:?} {stdout} {stderr}"
            );
        } else {
            assert_eq!(status.code(), Some(2), "{file}: {stdout} {stderr}");
            assert!(
                stderr.contains("damaged") && stderr.contains(name),
                "{file}: {stderr}"
            );
            assert!(stdout.is_empty(), "{file}: answered {stdout}");
        }

        let dir = damaged_copy("refresh");
        let (status, stdout, stderr) = call(&dir, false);
        assert!(
            status.success() && same(&stdout),
            "{file}: {status:?} {stdout} {stderr}"
        );

        // Not quiet: the build says what it found.
        let dir = damaged_copy("index");
        let mut command = kbtools();
        command.arg("index").arg(&bundle).arg("--index").arg(&dir);
        let (status, _, stderr) = run(command, "kbtools index");
        assert!(status.success(), "{file}: {stderr}");
        assert!(
            stderr.contains(name) && stderr.contains("anew"),
            "{file}: the build does not say what it found: {stderr}"
        );
        let (status, stdout, stderr) = call(&dir, true);
        assert!(
            status.success() && same(&stdout),
            "{file}: {status:?} {stdout} {stderr}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Item 4: a server over builds that are killed, and over a damaged generation

#[test]
fn a_server_answers_from_a_while_builds_are_killed_then_switches_to_b() {
    let scenario = Scenario::new();
    let dir = scenario.trial_dir("server");
    let live = Arc::new(
        LiveKnowledgeBase::open(
            &dir,
            Some(&scenario.bundle),
            serve_options(Verify::Full),
            kbtools::serve::live::silent(),
        )
        .unwrap(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let requests = Arc::new(AtomicU64::new(0));
    let seen_b = Arc::new(AtomicU64::new(0));
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let calls: Arc<Vec<(&'static str, Value)>> = Arc::new(scenario.probe.calls.clone());
    let a = Arc::new(scenario.answers_a.clone());
    let b = Arc::new(scenario.answers_b.clone());
    let clients: Vec<_> = (0..2)
        .map(|_| {
            let (live, stop, requests, seen_b, failures, calls, a, b) = (
                live.clone(),
                stop.clone(),
                requests.clone(),
                seen_b.clone(),
                failures.clone(),
                calls.clone(),
                a.clone(),
                b.clone(),
            );
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    // One snapshot per request; every answer of one request from one revision.
                    let kb = live.get();
                    let got: Vec<Value> = calls
                        .iter()
                        .take(4)
                        .map(|(tool, input)| {
                            match kbtools::tools::call(&kb, tool, input).and_then(|o| o.to_json()) {
                                Ok(out) => out,
                                Err(e) => json!({ "error": e.code.as_str() }),
                            }
                        })
                        .collect();
                    requests.fetch_add(1, Ordering::SeqCst);
                    if got[..] == a[..4] {
                        continue;
                    }
                    if got[..] == b[0][..4] || got[..] == b[1][..4] {
                        seen_b.fetch_add(1, Ordering::SeqCst);
                    } else {
                        failures
                            .lock()
                            .unwrap()
                            .push(format!("neither A nor B: {}", json!(got)));
                    }
                }
            })
        })
        .collect();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut rng = Rng(7);
        for _ in 0..4 {
            let delay = scenario.run_time[0].mul_f64(rng.unit() * 0.5);
            let mut child = index_command(&scenario.bundle, &dir, false)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(delay);
            child.kill().unwrap();
            wait_bounded(&mut child, "kbtools index");
        }
        let served_a = requests.load(Ordering::SeqCst);
        let (status, _, stderr) = run(index_command(&scenario.bundle, &dir, false), "index");
        assert!(status.success(), "{stderr}");
        let started = Instant::now();
        while seen_b.load(Ordering::SeqCst) < 4 {
            assert!(
                started.elapsed() < WATCHDOG,
                "the server never switched to B"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        served_a
    }));
    stop.store(true, Ordering::SeqCst);
    for client in clients {
        client.join().unwrap();
    }
    let failures = failures.lock().unwrap();
    assert!(
        failures.is_empty(),
        "{} failures: {:?}",
        failures.len(),
        &failures[..1]
    );
    let served_a = result.unwrap_or_else(|p| std::panic::resume_unwind(p));
    assert!(
        served_a > 0,
        "no request was answered during the killed builds"
    );
    eprintln!(
        "{} requests, {served_a} of them during the killed builds; none failed or mixed",
        requests.load(Ordering::SeqCst)
    );
}

/// A generation whose file rotted (size and time kept) is not switched to by a server, which
/// checks every file of a generation it opens; it keeps answering from the old one.
#[test]
fn a_server_does_not_switch_to_a_generation_with_a_rotten_file() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tmp.path().join("bundle");
    common::copy_dir(&common::fixture("focowiki-docs"), &bundle);
    let dir = tmp.path().join("index");
    index::build(&bundle, &dir, &BuildOptions::default(), &mut |_| {}).unwrap();
    let warnings = Arc::new(Mutex::new(Vec::<String>::new()));
    let log: kbtools::serve::live::Log = {
        let warnings = warnings.clone();
        Arc::new(move |_, line: &str| warnings.lock().unwrap().push(line.to_string()))
    };
    let live =
        LiveKnowledgeBase::open(&dir, Some(&bundle), serve_options(Verify::Full), log).unwrap();
    let page = document_pages(&bundle)[0].clone();
    let mut text = std::fs::read_to_string(bundle.join(&page)).unwrap();
    text.push_str(&format!("\n{NEW_WORD}\n"));
    std::fs::write(bundle.join(&page), text).unwrap();
    // Build B beside, then rot its largest segment file before CURRENT names it.
    let report = index::build(&bundle, &dir, &BuildOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(report.manifest.active_content_revision, 2);
    let generation = index::current_generation(&dir).unwrap();
    let largest = files_under(&generation.join("search"))
        .into_iter()
        .filter(|n| !n.ends_with(".json"))
        .max_by_key(|n| {
            std::fs::metadata(generation.join("search").join(n))
                .unwrap()
                .len()
        })
        .unwrap();
    damage(&generation.join("search").join(&largest), Damage::Rot);
    assert!(
        !live.refresh(),
        "switched to a generation with a rotten file"
    );
    assert_eq!(live.get().manifest.active_content_revision, 1);
    let logged = warnings.lock().unwrap().join("\n");
    assert!(
        logged.contains(&largest) && logged.contains("checksum"),
        "{logged}"
    );
}
