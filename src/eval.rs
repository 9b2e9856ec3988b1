//! Retrieval evaluation over BEIR-style judgments: nDCG@10, Recall@10, Recall@100 and MRR@10
//! (the standard definitions, graded gains, log2 discount), per search mode. A qrel document id
//! `<id>` is the page `pages/<id>.md`.

use std::collections::BTreeMap;
use std::path::Path;

use rayon::prelude::*;
use serde::Serialize;
use unicode_segmentation::UnicodeSegmentation;

use crate::kb::KnowledgeBase;
use crate::search::Mode;
use crate::tools::search_files;

/// Relevance judgments: query id → document id → grade.
pub(crate) type Qrels = BTreeMap<String, BTreeMap<String, i64>>;

/// Reads `queries.jsonl` (`{"_id", "text"}` per line).
pub fn load_queries(path: &Path) -> Result<Vec<(String, String)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("{}:{}: {e}", path.display(), n + 1))?;
        let id = value.get("_id").and_then(|v| {
            v.as_str()
                .map(str::to_string)
                .or_else(|| Some(v.to_string()))
        });
        let query = value.get("text").and_then(|v| v.as_str());
        match (id, query) {
            (Some(id), Some(query)) => out.push((id, query.to_string())),
            _ => {
                return Err(format!(
                    "{}:{}: a query needs `_id` and `text`",
                    path.display(),
                    n + 1
                ))
            }
        }
    }
    Ok(out)
}

/// Reads a qrels TSV (`query-id \t corpus-id \t score`, an optional header line).
pub fn load_qrels(path: &Path) -> Result<Qrels, String> {
    read_qrels(path).map(|(qrels, _)| qrels)
}

/// BEIR files: `queries.jsonl` and a qrels TSV, with where each judgment was read.
pub fn load_beir(queries: &Path, qrels: &Path) -> Result<Judgments, String> {
    let (qrels, origins) = read_qrels(qrels)?;
    Ok(Judgments {
        queries: load_queries(queries)?,
        qrels,
        groups: Groups::new(),
        origins,
    })
}

fn read_qrels(path: &Path) -> Result<(Qrels, Origins), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut qrels = Qrels::new();
    let mut origins = Origins::new();
    for (n, line) in text.lines().enumerate() {
        let fields: Vec<&str> = line.split('\t').map(str::trim).collect();
        if line.trim().is_empty()
            || (n == 0 && fields.get(2).is_some_and(|s| s.parse::<i64>().is_err()))
        {
            continue;
        }
        let [query, doc, grade] = fields[..] else {
            return Err(format!(
                "{}:{}: expected query-id, corpus-id and score",
                path.display(),
                n + 1
            ));
        };
        let grade: i64 = grade.parse().map_err(|_| {
            format!(
                "{}:{}: score {grade:?} is not an integer",
                path.display(),
                n + 1
            )
        })?;
        qrels
            .entry(query.to_string())
            .or_default()
            .insert(doc.to_string(), grade);
        origins.insert(
            (query.to_string(), doc.to_string()),
            format!("{}:{}", path.display(), n + 1),
        );
    }
    Ok((qrels, origins))
}

/// Questions in the graded format of the dev sets, one JSON object a line: `{"id", "question",
/// "relevant": {bundle path: grade}, "lang"?, "difficulty"?, …}`; returned as BEIR queries and
/// qrels (a path `pages/<id>.md` is the document `<id>`), and each question's groups
/// (`lang=en`, `difficulty=easy`).
pub fn load_questions(path: &Path) -> Result<Judgments, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (mut queries, mut qrels, mut groups) = (Vec::new(), Qrels::new(), Groups::new());
    let mut origins = Origins::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = || format!("{}:{}", path.display(), n + 1);
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("{}: {e}", at()))?;
        let id = question_id(&value)
            .ok_or_else(|| format!("{}: a question needs an `id` (string)", at()))?;
        if qrels.contains_key(&id) {
            return Err(format!(
                "{}: the id {id} is used twice; give each question its own",
                at()
            ));
        }
        let question = value
            .get("question")
            .and_then(|v| v.as_str())
            .ok_or_else(|| format!("{}: a question needs `question` (string)", at()))?;
        let relevant = value
            .get("relevant")
            .and_then(|v| v.as_object())
            .ok_or_else(|| {
                format!(
                    "{}: a question needs `relevant`, an object of bundle path → grade",
                    at()
                )
            })?;
        let mut judged = BTreeMap::new();
        for (page, grade) in relevant {
            let grade = grade.as_i64().ok_or_else(|| {
                format!(
                    "{}: the grade of {page:?} in `relevant` must be an integer",
                    at()
                )
            })?;
            let doc = doc_id(page);
            origins.insert((id.clone(), doc.clone()), at());
            judged.insert(doc, grade);
        }
        for key in ["lang", "difficulty"] {
            if let Some(v) = value.get(key).and_then(|v| v.as_str()) {
                groups
                    .entry(format!("{key}={v}"))
                    .or_default()
                    .push(id.clone());
            }
        }
        qrels.insert(id.clone(), judged);
        queries.push((id, question.to_string()));
    }
    Ok(Judgments {
        queries,
        qrels,
        groups,
        origins,
    })
}

/// A question's `id` as text (a number is taken as its digits).
fn question_id(value: &serde_json::Value) -> Option<String> {
    value.get("id").and_then(|v| {
        v.as_str()
            .map(str::to_string)
            .or_else(|| v.as_i64().map(|i| i.to_string()))
    })
}

/// The document id of a bundle path: `pages/<id>.md` is `<id>`.
fn doc_id(page: &str) -> String {
    let doc = page.strip_prefix("pages/").unwrap_or(page);
    doc.strip_suffix(".md").unwrap_or(doc).to_string()
}

/// The bundle path of a document id.
pub(crate) fn doc_path(doc: &str) -> String {
    format!("pages/{doc}.md")
}

/// A "must find" file, for teams without graded judgments: one JSON object a line,
/// `{"question": "…", "paths": ["pages/…md", …], "id"?: "…"}`: each path must be in the top k
/// of the question's results. A question without an id is named by its line (`line-3`).
pub fn load_must_find(path: &Path) -> Result<Judgments, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut judgments = Judgments::default();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = || format!("{}:{}", path.display(), n + 1);
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("{}: {e}", at()))?;
        let id = question_id(&value).unwrap_or_else(|| format!("line-{}", n + 1));
        if judgments.qrels.contains_key(&id) {
            return Err(format!("{}: the id {id} is used twice", at()));
        }
        let question = value
            .get("question")
            .and_then(|v| v.as_str())
            .filter(|q| !q.trim().is_empty())
            .ok_or_else(|| format!("{}: a line needs `question` (a non-empty string)", at()))?;
        let paths: Vec<&str> = value
            .get("paths")
            .and_then(|v| v.as_array())
            .map(|items| items.iter().filter_map(|p| p.as_str()).collect())
            .filter(|paths: &Vec<&str>| !paths.is_empty())
            .ok_or_else(|| {
                format!(
                    "{}: a line needs `paths`, a non-empty array of bundle paths (pages/…md) that must be found",
                    at()
                )
            })?;
        let mut judged = BTreeMap::new();
        for page in paths {
            let doc = doc_id(page);
            judgments.origins.insert((id.clone(), doc.clone()), at());
            judged.insert(doc, 1);
        }
        judgments.qrels.insert(id.clone(), judged);
        judgments.queries.push((id, question.to_string()));
    }
    if judgments.queries.is_empty() {
        return Err(format!("{}: no question in the file", path.display()));
    }
    Ok(judgments)
}

/// Judgments that name what the knowledge base or the queries do not have: a page that is not
/// a source page of `kb`, a query id no query has. One message each, with where it was read.
pub fn unknown_judgments(kb: &KnowledgeBase, judged: &Judgments) -> Vec<String> {
    let ids: std::collections::HashSet<&str> =
        judged.queries.iter().map(|(id, _)| id.as_str()).collect();
    let mut problems = Vec::new();
    for (query, docs) in &judged.qrels {
        let origin = |doc: &str| {
            judged
                .origins
                .get(&(query.clone(), doc.to_string()))
                .cloned()
                .unwrap_or_default()
        };
        if !ids.contains(query.as_str()) {
            let first = docs.keys().next().map(String::as_str).unwrap_or_default();
            problems.push(format!(
                "{}: query {query:?} is judged but no query has that id",
                origin(first)
            ));
            continue;
        }
        for doc in docs.keys() {
            let path = doc_path(doc);
            let known = kb
                .catalog
                .by_exact_path(&path)
                .is_some_and(|i| kb.catalog.is_source(i));
            if !known {
                problems.push(format!(
                    "{}: query {query:?} judges {path}, which is not a page of the knowledge base",
                    origin(doc)
                ));
            }
        }
    }
    problems
}

/// Queries, their judgments and their groups (none for BEIR files).
#[derive(Debug, Default)]
pub struct Judgments {
    pub queries: Vec<(String, String)>,
    pub qrels: Qrels,
    pub groups: Groups,
    /// Where each judgment (query id, document id) was read: `file:line`.
    pub origins: Origins,
}

/// Where each judgment (query id, document id) was read: `file:line`.
pub(crate) type Origins = BTreeMap<(String, String), String>;

/// Groups of questions by a label (`lang=en`): the ids in each.
pub(crate) type Groups = BTreeMap<String, Vec<String>>;

/// Metrics of one mode.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Metrics {
    pub ndcg_at_10: f64,
    pub recall_at_10: f64,
    pub recall_at_100: f64,
    pub mrr_at_10: f64,
    /// Queries with at least one positive judgment that were evaluated.
    pub queries: usize,
    /// Queries whose search failed (counted as retrieving nothing).
    pub failed: usize,
    pub median_query_ms: f64,
}

/// Makes a benchmark query acceptable to `search_files`: control characters become spaces,
/// and it is cut to 512 grapheme clusters and 2,048 bytes.
pub fn fit_query(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut out = String::new();
    for g in cleaned.graphemes(true).take(512) {
        if out.len() + g.len() > 2048 {
            break;
        }
        out.push_str(g);
    }
    out
}

crate::wire::wire_enum! {
    /// A search mode `kbtools eval` evaluates (`--mode`, and a threshold's `MODE:`).
    pub enum EvalMode {
        File = "file",
        Graph = "graph",
        Hybrid = "hybrid",
        /// `hybrid` with the semantic lanes off.
        HybridLexical = "hybrid-lexical",
    }
}

impl EvalMode {
    /// The search mode it runs.
    pub fn search_mode(self) -> Mode {
        match self {
            EvalMode::File => Mode::File,
            EvalMode::Graph => Mode::Graph,
            EvalMode::Hybrid | EvalMode::HybridLexical => Mode::Hybrid,
        }
    }

    /// Whether it may use the semantic lanes (when the index has them).
    pub fn semantic_lanes(self) -> bool {
        self != EvalMode::HybridLexical
    }
}

/// The search a judged query runs: the query (fitted to the tool's limits) in `mode`.
pub fn search_params(query: &str, mode: Mode) -> search_files::Params {
    search_files::Params {
        query: fit_query(query),
        mode: Some(mode),
        ..search_files::Params::default()
    }
}

/// The document ids (page path without `pages/` and `.md`) a query retrieves, best first.
pub(crate) fn retrieve(
    kb: &KnowledgeBase,
    query: &str,
    mode: Mode,
    depth: usize,
) -> Result<Vec<String>, String> {
    let request = search_files::validate(&search_params(query, mode)).map_err(|e| e.to_string())?;
    let (candidates, _) = search_files::ranked(kb, &request).map_err(|e| e.to_string())?;
    Ok(candidates
        .iter()
        .take(depth)
        .map(|c| {
            let path = &kb.catalog.file(c.position).path;
            let id = path.strip_prefix("pages/").unwrap_or(path);
            id.strip_suffix(".md").unwrap_or(id).to_string()
        })
        .collect())
}

fn ndcg_at(ranked: &[String], judged: &BTreeMap<String, i64>, k: usize) -> f64 {
    let dcg: f64 = ranked
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, d)| judged.get(d).copied().unwrap_or(0).max(0) as f64 / (i as f64 + 2.0).log2())
        .sum();
    let mut ideal: Vec<i64> = judged.values().copied().filter(|g| *g > 0).collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, g)| *g as f64 / (i as f64 + 2.0).log2())
        .sum();
    if idcg > 0.0 {
        dcg / idcg
    } else {
        0.0
    }
}

fn recall_at(ranked: &[String], judged: &BTreeMap<String, i64>, k: usize) -> f64 {
    let relevant = judged.values().filter(|g| **g > 0).count();
    if relevant == 0 {
        return 0.0;
    }
    let found = ranked
        .iter()
        .take(k)
        .filter(|d| judged.get(*d).is_some_and(|g| *g > 0))
        .count();
    found as f64 / relevant as f64
}

fn mrr_at(ranked: &[String], judged: &BTreeMap<String, i64>, k: usize) -> f64 {
    ranked
        .iter()
        .take(k)
        .position(|d| judged.get(d).is_some_and(|g| *g > 0))
        .map_or(0.0, |i| 1.0 / (i as f64 + 1.0))
}

/// What one judged query retrieved, and how well.
#[derive(Debug, Clone)]
pub struct QueryResult {
    pub id: String,
    pub question: String,
    /// The document ids retrieved, best first (at most 100).
    pub ranked: Vec<String>,
    /// nDCG@10, Recall@10, Recall@100 and MRR@10; `None` when the search failed.
    pub scores: Option<[f64; 4]>,
    /// Why the search failed.
    pub error: Option<String>,
    /// How long the search took.
    pub ms: f64,
}

/// Whether a query found what it must at `k`: every page of the highest grade its judgments
/// give (for a "must find" file, every path) is in its top `k`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    pub id: String,
    pub question: String,
    pub passed: bool,
    pub ndcg_at_10: f64,
    pub recall_at_10: f64,
    /// The pages it had to find, each with its rank (1-based; `None`: not in the top 100).
    pub required: Vec<(String, Option<usize>)>,
    /// Its top `k`, as bundle paths.
    pub top: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl QueryResult {
    pub fn verdict(&self, judged: &BTreeMap<String, i64>, k: usize) -> Verdict {
        let best = judged.values().copied().max().unwrap_or(0);
        let required: Vec<(String, Option<usize>)> = judged
            .iter()
            .filter(|(_, g)| **g == best && best > 0)
            .map(|(doc, _)| {
                let rank = self.ranked.iter().position(|d| d == doc).map(|i| i + 1);
                (doc_path(doc), rank)
            })
            .collect();
        let passed =
            self.error.is_none() && required.iter().all(|(_, r)| r.is_some_and(|r| r <= k));
        let [ndcg, recall, _, _] = self.scores.unwrap_or_default();
        Verdict {
            id: self.id.clone(),
            question: self.question.clone(),
            passed,
            ndcg_at_10: round4(ndcg),
            recall_at_10: round4(recall),
            required,
            top: self.ranked.iter().take(k).map(|d| doc_path(d)).collect(),
            error: self.error.clone(),
        }
    }
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// Runs every judged query (one with at least one positive judgment) in one mode, in parallel,
/// in the queries' order.
pub fn run(
    kb: &KnowledgeBase,
    queries: &[(String, String)],
    qrels: &Qrels,
    mode: Mode,
) -> Vec<QueryResult> {
    let judged: Vec<(&String, &String, &BTreeMap<String, i64>)> = queries
        .iter()
        .filter_map(|(id, text)| {
            qrels
                .get(id)
                .filter(|j| j.values().any(|g| *g > 0))
                .map(|j| (id, text, j))
        })
        .collect();
    judged
        .par_iter()
        .map(|(id, text, judgments)| {
            let started = std::time::Instant::now();
            let retrieved = retrieve(kb, text, mode, 100);
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            let (ranked, error) = match retrieved {
                Ok(ranked) => (ranked, None),
                Err(e) => (Vec::new(), Some(e)),
            };
            let scores = error.is_none().then(|| {
                [
                    ndcg_at(&ranked, judgments, 10),
                    recall_at(&ranked, judgments, 10),
                    recall_at(&ranked, judgments, 100),
                    mrr_at(&ranked, judgments, 10),
                ]
            });
            QueryResult {
                id: id.to_string(),
                question: text.to_string(),
                ranked,
                scores,
                error,
                ms,
            }
        })
        .collect()
}

/// The metrics of a set of query results (a failed search counts as retrieving nothing).
pub fn metrics<'a>(results: impl IntoIterator<Item = &'a QueryResult>) -> Metrics {
    let mut sums = [0.0; 4];
    let (mut n, mut failed) = (0usize, 0usize);
    let mut times = Vec::new();
    for r in results {
        n += 1;
        times.push(r.ms);
        match r.scores {
            Some(s) => (0..4).for_each(|i| sums[i] += s[i]),
            None => failed += 1,
        }
    }
    times.sort_by(f64::total_cmp);
    let n_div = n.max(1) as f64;
    Metrics {
        ndcg_at_10: round4(sums[0] / n_div),
        recall_at_10: round4(sums[1] / n_div),
        recall_at_100: round4(sums[2] / n_div),
        mrr_at_10: round4(sums[3] / n_div),
        queries: n,
        failed,
        median_query_ms: times
            .get(times.len() / 2)
            .map_or(0.0, |t| (t * 100.0).round() / 100.0),
    }
}

/// Evaluates one mode over every judged query (in parallel).
pub fn evaluate(
    kb: &KnowledgeBase,
    queries: &[(String, String)],
    qrels: &Qrels,
    mode: Mode,
) -> Metrics {
    metrics(&run(kb, queries, qrels, mode))
}

/// Which metric a threshold holds up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Ndcg,
    Recall,
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::Ndcg => "nDCG@10",
            Metric::Recall => "Recall@10",
        }
    }

    pub fn of(self, m: &Metrics) -> f64 {
        match self {
            Metric::Ndcg => m.ndcg_at_10,
            Metric::Recall => m.recall_at_10,
        }
    }
}

/// A floor for CI: `--min-ndcg [MODE:][GROUP:]VALUE`.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    pub metric: Metric,
    /// `None`: every mode evaluated.
    pub mode: Option<EvalMode>,
    /// `None`: all questions; else a group (`lang=zh`).
    pub group: Option<String>,
    pub min: f64,
}

impl Threshold {
    /// Parses `VALUE`, `MODE:VALUE`, `GROUP:VALUE` or `MODE:GROUP:VALUE` (a group has an `=`:
    /// `lang=zh`).
    pub fn parse(metric: Metric, spec: &str) -> Result<Threshold, String> {
        let flag = match metric {
            Metric::Ndcg => "--min-ndcg",
            Metric::Recall => "--min-recall",
        };
        let usage = || {
            format!(
                "{flag} {spec:?}: expected VALUE, MODE:VALUE, GROUP:VALUE or MODE:GROUP:VALUE \
                 (MODE one of {}; GROUP such as lang=zh; VALUE between 0 and 1)",
                EvalMode::NAMES.join(", ")
            )
        };
        let parts: Vec<&str> = spec.split(':').map(str::trim).collect();
        let (value, scope) = parts.split_last().ok_or_else(usage)?;
        let min: f64 = value.parse().map_err(|_| usage())?;
        if !(0.0..=1.0).contains(&min) {
            return Err(usage());
        }
        let (mut mode, mut group) = (None, None);
        for part in scope {
            if part.contains('=') && group.is_none() {
                group = Some(part.to_string());
            } else if let (Some(named), None, None) = (EvalMode::parse(part), mode, &group) {
                mode = Some(named);
            } else {
                return Err(usage());
            }
        }
        Ok(Threshold {
            metric,
            mode,
            group,
            min,
        })
    }

    /// How it reads in a report: `nDCG@10 hybrid lang=zh >= 0.7`.
    pub fn label(&self, mode: impl std::fmt::Display) -> String {
        let group = self
            .group
            .as_deref()
            .map(|g| format!(" {g}"))
            .unwrap_or_default();
        format!("{} {mode}{group} >= {}", self.metric.name(), self.min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
        pairs.iter().map(|(d, g)| (d.to_string(), *g)).collect()
    }

    #[test]
    fn metrics_follow_the_standard_definitions() {
        let ranked: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let j = judged(&[("b", 1), ("z", 1)]);
        let expected_ndcg = (1.0 / 3f64.log2()) / (1.0 + 1.0 / 3f64.log2());
        assert!((ndcg_at(&ranked, &j, 10) - expected_ndcg).abs() < 1e-12);
        assert_eq!(recall_at(&ranked, &j, 10), 0.5);
        assert_eq!(mrr_at(&ranked, &j, 10), 0.5);
        assert_eq!(mrr_at(&ranked, &judged(&[("q", 1)]), 10), 0.0);
    }

    #[test]
    fn graded_questions_read_as_queries_qrels_and_groups() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.jsonl");
        std::fs::write(
            &path,
            "{\"id\": \"q1\", \"lang\": \"en\", \"difficulty\": \"easy\", \"question\": \"How?\", \"relevant\": {\"pages/en/a.md\": 2, \"pages/zh/a.md\": 1}}\n\n{\"id\": \"q2\", \"lang\": \"zh\", \"question\": \"怎么？\", \"relevant\": {\"pages/zh/a.md\": 2}}\n",
        )
        .unwrap();
        let Judgments {
            queries,
            qrels,
            groups,
            origins,
        } = load_questions(&path).unwrap();
        assert_eq!(
            origins[&("q2".to_string(), "zh/a".to_string())],
            format!("{}:3", path.display())
        );
        assert_eq!(queries[1], ("q2".to_string(), "怎么？".to_string()));
        assert_eq!(qrels["q1"]["en/a"], 2);
        assert_eq!(qrels["q1"]["zh/a"], 1);
        assert_eq!(groups["lang=en"], ["q1"]);
        assert_eq!(groups["lang=zh"], ["q2"]);
        assert_eq!(groups["difficulty=easy"], ["q1"]);
        std::fs::write(&path, "{\"id\": \"q\", \"question\": \"x\"}\n").unwrap();
        let e = load_questions(&path).unwrap_err();
        assert!(e.contains(":1:") && e.contains("relevant"), "{e}");
    }

    #[test]
    fn thresholds_read_mode_group_and_value() {
        let t = Threshold::parse(Metric::Ndcg, "0.8").unwrap();
        assert_eq!((t.mode, t.group, t.min), (None, None, 0.8));
        let t = Threshold::parse(Metric::Ndcg, "hybrid:lang=zh:0.7").unwrap();
        assert_eq!(
            (t.mode, t.group.as_deref(), t.min),
            (Some(EvalMode::Hybrid), Some("lang=zh"), 0.7)
        );
        let t = Threshold::parse(Metric::Recall, "difficulty=hard:0.5").unwrap();
        assert_eq!(
            (t.mode, t.group.as_deref()),
            (None, Some("difficulty=hard"))
        );
        assert_eq!(
            t.label(EvalMode::File),
            "Recall@10 file difficulty=hard >= 0.5"
        );
        for bad in [
            "",
            "x",
            "1.5",
            "-0.1",
            "lang=zh:hybrid:0.5",
            "fast:0.5",
            "a=b:c=d:0.5",
        ] {
            let e = Threshold::parse(Metric::Ndcg, bad).unwrap_err();
            assert!(e.starts_with("--min-ndcg"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_verdict_needs_every_page_of_the_best_grade_in_the_top_k() {
        let result = QueryResult {
            id: "q".into(),
            question: "?".into(),
            ranked: ["zh/a", "x", "en/a"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            scores: Some([0.5, 1.0, 1.0, 1.0]),
            error: None,
            ms: 1.0,
        };
        let judged = judged(&[("en/a", 2), ("zh/a", 1)]);
        let v = result.verdict(&judged, 3);
        assert!(v.passed);
        assert_eq!(v.required, [("pages/en/a.md".to_string(), Some(3))]);
        assert_eq!(v.top, ["pages/zh/a.md", "pages/x.md", "pages/en/a.md"]);
        assert!(
            !result.verdict(&judged, 2).passed,
            "the grade-2 page is third"
        );
        let failed = QueryResult {
            error: Some("bad".into()),
            scores: None,
            ..result
        };
        assert!(!failed.verdict(&judged, 10).passed);
    }

    #[test]
    fn must_find_files_read_as_judgments_of_grade_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.jsonl");
        std::fs::write(
            &path,
            "{\"id\": \"a\", \"question\": \"Q\", \"paths\": [\"pages/x.md\", \"pages/y.md\"]}\n\n{\"question\": \"R\", \"paths\": [\"pages/z.md\"]}\n",
        )
        .unwrap();
        let j = load_must_find(&path).unwrap();
        assert_eq!(j.queries[1], ("line-3".to_string(), "R".to_string()));
        assert_eq!(j.qrels["a"], judged(&[("x", 1), ("y", 1)]));
        assert_eq!(
            j.origins[&("line-3".to_string(), "z".to_string())],
            format!("{}:3", path.display())
        );
        std::fs::write(&path, "{\"id\": \"a\", \"question\": \"Q\", \"paths\": [\"pages/x.md\"]}\n{\"id\": \"a\", \"question\": \"Q\", \"paths\": [\"pages/x.md\"]}\n").unwrap();
        assert!(load_must_find(&path)
            .unwrap_err()
            .contains(":2: the id a is used twice"));
        std::fs::write(&path, "\n").unwrap();
        assert!(load_must_find(&path).unwrap_err().contains("no question"));
    }

    #[test]
    fn long_queries_are_fitted() {
        let q = fit_query(&"好".repeat(600));
        assert_eq!(q.chars().count(), 512);
        assert_eq!(fit_query("a\nb"), "a b");
    }
}
