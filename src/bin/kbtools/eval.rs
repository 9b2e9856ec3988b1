//! `kbtools eval`: the report of search quality against relevance judgments, and the gate a CI
//! job sets on it (thresholds per mode and group, a verdict per question, JUnit).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{anyhow, Context, Result};
use serde_json::{json, Map, Value};

use kbtools::eval::{EvalMode, Judgments, Metric, Metrics, QueryResult, Threshold, Verdict};
use kbtools::kb::KnowledgeBase;
use kbtools::tools::search_files::ExplainedResult;

use crate::args::EvalArgs;
use crate::open::open_embedded;
use crate::output::print_json;
use crate::Source;

/// What `kbtools eval` was asked for, besides the judgments.
pub(super) struct EvalOptions {
    pub modes: Vec<EvalMode>,
    pub json: bool,
    pub thresholds: Vec<Threshold>,
    /// The top k each question's verdict looks at.
    pub top_k: usize,
    pub per_query: bool,
    /// With `per_query`: each question's top k by lane.
    pub explain: bool,
    pub junit: Option<PathBuf>,
    /// Judgments naming unknown pages or queries are warnings, not an error.
    pub lenient: bool,
    /// A question that misses its pages fails the run.
    pub fail_on_miss: bool,
}

/// One mode's run: every question's result and verdict, the metrics over all questions and
/// per group.
struct ModeRun {
    mode: EvalMode,
    metrics: Metrics,
    groups: BTreeMap<String, Metrics>,
    verdicts: Vec<Verdict>,
    /// Each question's top k by lane (`--explain`), by question id.
    explained: BTreeMap<String, Vec<ExplainedResult>>,
}

/// A threshold held up against one mode's figure.
struct Checked {
    mode: EvalMode,
    label: String,
    value: f64,
    passed: bool,
}

pub(super) fn evaluate(source: &Source, judged: Judgments, options: EvalOptions) -> Result<i32> {
    // The default search alone unless modes are asked for: a threshold then means one thing.
    let modes = if options.modes.is_empty() {
        vec![EvalMode::Hybrid]
    } else {
        options.modes.clone()
    };
    let mut kb = open_embedded(source)?;
    // Thousands of queries: what they need is loaded before any is timed.
    kbtools::tools::warm_up(&kb, kbtools::tools::WarmUp::Batch);
    refuse_unknown_judgments(&kb, &judged, options.lenient)?;
    check_threshold_names(&options.thresholds, &modes, &judged)?;
    let semantic = kb.options.semantic;
    let runs = run_modes(&mut kb, &judged, &modes, &options);
    let checked = check_thresholds(&runs, &options.thresholds);
    let misses: usize = runs
        .iter()
        .map(|r| r.verdicts.iter().filter(|v| !v.passed).count())
        .sum();
    if let Some(path) = &options.junit {
        std::fs::write(path, junit(&runs, &checked, options.top_k))
            .with_context(|| format!("writing the JUnit report to {}", path.display()))?;
    }
    let name = &kb.manifest.knowledge_base_name;
    let revision = kb.manifest.active_content_revision;
    kb.options.semantic = semantic;
    // Which lanes `hybrid` ran with: the same thresholds on a machine without the models
    // measure another search, and the report says so.
    let lanes = match kbtools::search::semantic(&kb).0 {
        kbtools::search::SemanticState::Ready => "on",
        kbtools::search::SemanticState::Degraded => "on for part of the pages",
        kbtools::search::SemanticState::Unavailable => "off",
    };
    if options.json {
        print_json(
            &json_report(name, revision, lanes, &runs, &checked, &options),
            source.pretty,
        )?;
    } else {
        print!(
            "{}",
            text_report(name, revision, lanes, &runs, &checked, misses, &options)
        );
    }
    let failed: Vec<&Checked> = checked.iter().filter(|c| !c.passed).collect();
    for c in &failed {
        eprintln!(
            "kbtools: below the threshold: {} (measured {:.4})",
            c.label, c.value
        );
    }
    if options.fail_on_miss && misses > 0 {
        eprintln!(
            "kbtools: {misses} {} pages {} must find in the top {}",
            if misses == 1 {
                "question misses"
            } else {
                "questions miss"
            },
            if misses == 1 { "it" } else { "they" },
            options.top_k
        );
    }
    Ok(i32::from(
        !failed.is_empty() || (options.fail_on_miss && misses > 0),
    ))
}

/// Judgments that name pages the knowledge base lacks, or queries that do not exist: an error
/// naming them (the first 20), or with `lenient` warnings.
fn refuse_unknown_judgments(kb: &KnowledgeBase, judged: &Judgments, lenient: bool) -> Result<()> {
    let problems = kbtools::eval::unknown_judgments(kb, judged);
    if !problems.is_empty() {
        let shown: Vec<&str> = problems.iter().take(20).map(String::as_str).collect();
        let more = problems.len().saturating_sub(shown.len());
        let more = if more > 0 {
            format!("\n… and {more} more")
        } else {
            String::new()
        };
        if !lenient {
            return Err(anyhow!(
                "{} {} what the knowledge base or the queries do not have (they would score 0 \
                 whatever search does); fix them, or pass --lenient to evaluate anyway:\n{}{more}",
                problems.len(),
                if problems.len() == 1 {
                    "judgment names"
                } else {
                    "judgments name"
                },
                shown.join("\n")
            ));
        }
        for p in &shown {
            eprintln!("kbtools: warning: {p}");
        }
        if !more.is_empty() {
            eprintln!("kbtools: warning: {}", more.trim());
        }
    }
    Ok(())
}

/// Every threshold names a mode that is evaluated and a group some question is in.
fn check_threshold_names(
    thresholds: &[Threshold],
    modes: &[EvalMode],
    judged: &Judgments,
) -> Result<()> {
    for t in thresholds {
        if let Some(mode) = t.mode {
            if !modes.contains(&mode) {
                let evaluated: Vec<&str> = modes.iter().map(|m| m.as_str()).collect();
                return Err(anyhow!(
                    "{} names mode {mode}, which is not evaluated (modes: {})",
                    t.label(mode),
                    evaluated.join(", ")
                ));
            }
        }
        if let Some(group) = &t.group {
            if !judged.groups.contains_key(group) {
                let known: Vec<&str> = judged.groups.keys().map(String::as_str).collect();
                return Err(anyhow!(
                    "{} names group {group}, which no question is in (groups: {})",
                    t.label(t.mode.map_or("*", EvalMode::as_str)),
                    if known.is_empty() {
                        "none; groups come from the `lang` and `difficulty` of --questions".into()
                    } else {
                        known.join(", ")
                    }
                ));
            }
        }
    }
    Ok(())
}

/// Each mode run over every question (`hybrid-lexical`: `hybrid` with the semantic lanes off),
/// with each question's lanes when `explain`.
fn run_modes(
    kb: &mut KnowledgeBase,
    judged: &Judgments,
    modes: &[EvalMode],
    options: &EvalOptions,
) -> Vec<ModeRun> {
    let mut runs = Vec::new();
    let semantic = kb.options.semantic;
    for &eval_mode in modes {
        kb.options.semantic = semantic && eval_mode.semantic_lanes();
        let mode = eval_mode.search_mode();
        let results = kbtools::eval::run(kb, &judged.queries, &judged.qrels, mode);
        let mut run = mode_run(eval_mode, &results, judged, options.top_k);
        if options.explain {
            for (id, text) in &judged.queries {
                let params = kbtools::tools::search_files::Params {
                    limit: Some(options.top_k as u64),
                    ..kbtools::eval::search_params(text, mode)
                };
                let input = serde_json::to_value(params).unwrap_or(Value::Null);
                if let Ok(explained) = kbtools::tools::search_files::explain(kb, &input) {
                    run.explained.insert(id.clone(), explained);
                }
            }
        }
        runs.push(run);
    }
    runs
}

fn mode_run(mode: EvalMode, results: &[QueryResult], judged: &Judgments, top_k: usize) -> ModeRun {
    let groups = judged
        .groups
        .iter()
        .map(|(group, ids)| {
            let ids: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
            let subset = results.iter().filter(|r| ids.contains(r.id.as_str()));
            (group.clone(), kbtools::eval::metrics(subset))
        })
        .collect();
    let verdicts = results
        .iter()
        .map(|r| r.verdict(&judged.qrels[&r.id], top_k))
        .collect();
    ModeRun {
        mode,
        metrics: kbtools::eval::metrics(results),
        groups,
        verdicts,
        explained: BTreeMap::new(),
    }
}

fn check_thresholds(runs: &[ModeRun], thresholds: &[Threshold]) -> Vec<Checked> {
    let mut out = Vec::new();
    for t in thresholds {
        for run in runs {
            if t.mode.is_some_and(|m| m != run.mode) {
                continue;
            }
            let metrics = match &t.group {
                Some(group) => &run.groups[group],
                None => &run.metrics,
            };
            let value = t.metric.of(metrics);
            out.push(Checked {
                mode: run.mode,
                label: t.label(run.mode),
                value,
                passed: value >= t.min,
            });
        }
    }
    out
}

fn json_report(
    name: &str,
    revision: u64,
    lanes: &str,
    runs: &[ModeRun],
    checked: &[Checked],
    options: &EvalOptions,
) -> Value {
    let mut modes = Map::new();
    let mut groups = Map::new();
    let mut queries = Map::new();
    for run in runs {
        modes.insert(run.mode.to_string(), json!(run.metrics));
        if !run.groups.is_empty() {
            groups.insert(run.mode.to_string(), json!(run.groups));
        }
        if options.per_query {
            let mut verdicts = json!(run.verdicts);
            for verdict in verdicts.as_array_mut().into_iter().flatten() {
                let id = verdict["id"].as_str().unwrap_or_default().to_string();
                if let Some(explained) = run.explained.get(&id) {
                    verdict["explain"] = json!(explained);
                }
            }
            queries.insert(run.mode.to_string(), verdicts);
        }
    }
    let mut value = json!({
        "knowledgeBaseName": name,
        "activeContentRevision": revision,
        "semanticLanes": lanes,
        "modes": modes,
    });
    if !groups.is_empty() {
        value["groups"] = Value::Object(groups);
    }
    if !checked.is_empty() {
        value["thresholds"] = checked
            .iter()
            .map(|c| json!({"threshold": c.label, "value": c.value, "passed": c.passed}))
            .collect();
    }
    if options.per_query {
        value["topK"] = json!(options.top_k);
        value["queries"] = Value::Object(queries);
    }
    value
}

fn text_report(
    name: &str,
    revision: u64,
    lanes: &str,
    runs: &[ModeRun],
    checked: &[Checked],
    misses: usize,
    options: &EvalOptions,
) -> String {
    let mut out = format!("{name} (revision {revision}; semantic lanes {lanes})\n");
    let _ = writeln!(
        out,
        "{:<14} {:<20} {:>8} {:>10} {:>11} {:>8} {:>8} {:>7} {:>10}",
        "mode",
        "group",
        "nDCG@10",
        "Recall@10",
        "Recall@100",
        "MRR@10",
        "queries",
        "failed",
        "median ms"
    );
    let line = |out: &mut String, mode: &str, group: &str, m: &Metrics| {
        let _ = writeln!(
            out,
            "{:<14} {:<20} {:>8.4} {:>10.4} {:>11.4} {:>8.4} {:>8} {:>7} {:>10.2}",
            mode,
            group,
            m.ndcg_at_10,
            m.recall_at_10,
            m.recall_at_100,
            m.mrr_at_10,
            m.queries,
            m.failed,
            m.median_query_ms
        );
    };
    for run in runs {
        line(&mut out, run.mode.as_str(), "all", &run.metrics);
        for (group, m) in &run.groups {
            line(&mut out, run.mode.as_str(), group, m);
        }
    }
    for c in checked {
        let _ = writeln!(
            out,
            "{} {}: {:.4}",
            if c.passed { "PASS" } else { "FAIL" },
            c.label,
            c.value
        );
    }
    if options.per_query {
        for run in runs {
            for v in &run.verdicts {
                let _ = write!(
                    out,
                    "{} {} {} nDCG@10 {:.4}",
                    if v.passed { "PASS" } else { "FAIL" },
                    run.mode,
                    v.id,
                    v.ndcg_at_10
                );
                if !v.passed {
                    let _ = write!(out, ": {}", missing(v, options.top_k));
                }
                out.push('\n');
                // A failed question's ranking, lane by lane.
                if let Some(explained) = run.explained.get(&v.id).filter(|_| !v.passed) {
                    for line in kbtools::render::render_explained(explained).lines() {
                        let _ = writeln!(out, "    {line}");
                    }
                }
            }
        }
    }
    let total: usize = runs.iter().map(|r| r.verdicts.len()).sum();
    let _ = writeln!(
        out,
        "questions: {} of {total} runs find the pages they must in the top {} ({misses} miss{})",
        total - misses,
        options.top_k,
        if options.per_query {
            ""
        } else {
            "; --per-query lists them"
        }
    );
    out
}

/// What a question that failed did not find: each page and where it ranked.
fn missing(v: &Verdict, k: usize) -> String {
    if let Some(e) = &v.error {
        return format!("the search failed: {e}");
    }
    let pages: Vec<String> = v
        .required
        .iter()
        .filter(|(_, rank)| rank.is_none_or(|r| r > k))
        .map(|(path, rank)| match rank {
            Some(r) => format!("{path} at rank {r}"),
            None => format!("{path} not in the top 100"),
        })
        .collect();
    format!("missing {}", pages.join(", "))
}

/// JUnit XML: a test suite per mode, a test case per question (failing when it misses a page it
/// must find in the top k) and per threshold.
fn junit(runs: &[ModeRun], checked: &[Checked], k: usize) -> String {
    use kbtools::junit::{Case, Outcome, Suite};
    let suites: Vec<Suite> = runs
        .iter()
        .map(|run| {
            let classname = format!("kbtools.eval.{}", run.mode);
            let thresholds = checked.iter().filter(|c| c.mode == run.mode).map(|c| Case {
                name: c.label.clone(),
                classname: classname.clone(),
                outcome: if c.passed {
                    Outcome::Passed
                } else {
                    Outcome::Failed {
                        message: format!("measured {:.4}", c.value),
                        kind: "threshold".into(),
                        text: String::new(),
                    }
                },
            });
            let questions = run.verdicts.iter().map(|v| {
                let question: String = v.question.chars().take(120).collect();
                Case {
                    name: format!("{}: {question}", v.id),
                    classname: classname.clone(),
                    outcome: if v.passed {
                        Outcome::Passed
                    } else {
                        Outcome::Failed {
                            message: missing(v, k),
                            kind: "miss".into(),
                            text: format!("top {k}:\n{}", v.top.join("\n")),
                        }
                    },
                }
            });
            Suite {
                name: format!("kbtools eval {}", run.mode),
                cases: thresholds.chain(questions).collect(),
            }
        })
        .collect();
    kbtools::junit::write("kbtools eval", &suites)
}

/// The judgments named on the command line.
pub(super) fn load(
    queries: Option<PathBuf>,
    qrels: Option<PathBuf>,
    questions: Option<PathBuf>,
    must_find: Option<PathBuf>,
) -> Result<Judgments> {
    match (queries, qrels, questions, must_find) {
        (None, None, Some(questions), None) => {
            kbtools::eval::load_questions(&questions).map_err(|e| anyhow!(e))
        }
        (Some(queries), Some(qrels), None, None) => {
            kbtools::eval::load_beir(&queries, &qrels).map_err(|e| anyhow!(e))
        }
        (None, None, None, Some(must_find)) => {
            kbtools::eval::load_must_find(&must_find).map_err(|e| anyhow!(e))
        }
        _ => Err(anyhow!(
            "say what to evaluate, one of: --questions FILE, --queries FILE and --qrels FILE, or --must-find FILE"
        )),
    }
}

/// The thresholds of `--min-ndcg` and `--min-recall`.
pub(super) fn thresholds(min_ndcg: &[String], min_recall: &[String]) -> Result<Vec<Threshold>> {
    min_ndcg
        .iter()
        .map(|s| Threshold::parse(Metric::Ndcg, s))
        .chain(
            min_recall
                .iter()
                .map(|s| Threshold::parse(Metric::Recall, s)),
        )
        .collect::<Result<Vec<_>, String>>()
        .map_err(|e| anyhow!(e))
}

/// `kbtools eval`: the judgments loaded, every mode run, the report printed; 1 when a threshold
/// or a must-find question fails.
pub(crate) fn run(source: &Source, args: EvalArgs) -> Result<i32> {
    let thresholds = thresholds(&args.min_ndcg, &args.min_recall)?;
    let fail_on_miss = args.fail_on_miss || args.must_find.is_some();
    let judged = load(args.queries, args.qrels, args.questions, args.must_find)?;
    let options = EvalOptions {
        modes: args.mode,
        json: args.json,
        thresholds,
        top_k: usize::from(args.top_k),
        per_query: args.per_query,
        explain: args.explain,
        junit: args.junit,
        lenient: args.lenient,
        fail_on_miss,
    };
    evaluate(source, judged, options)
}
