//! Retrieval evaluation over BEIR-style judgments: nDCG@10, Recall@10, Recall@100 and MRR@10
//! (the standard definitions, graded gains, log2 discount), per search mode. A qrel document id
//! `<id>` is the page `pages/<id>.md`.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use rayon::prelude::*;
use serde::Serialize;
use serde_json::json;
use unicode_segmentation::UnicodeSegmentation;

use crate::kb::KnowledgeBase;
use crate::tools::search_files;

/// Relevance judgments: query id → document id → grade.
pub type Qrels = BTreeMap<String, BTreeMap<String, i64>>;

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
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut qrels = Qrels::new();
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
    }
    Ok(qrels)
}

/// Questions in the graded format of the dev sets, one JSON object a line: `{"id", "question",
/// "relevant": {bundle path: grade}, "lang"?, "difficulty"?, …}`; returned as BEIR queries and
/// qrels (a path `pages/<id>.md` is the document `<id>`), and each question's groups
/// (`lang=en`, `difficulty=easy`).
pub fn load_questions(path: &Path) -> Result<Judgments, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (mut queries, mut qrels, mut groups) = (Vec::new(), Qrels::new(), Groups::new());
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = || format!("{}:{}", path.display(), n + 1);
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("{}: {e}", at()))?;
        let id = value
            .get("id")
            .and_then(|v| {
                v.as_str()
                    .map(str::to_string)
                    .or_else(|| v.as_i64().map(|i| i.to_string()))
            })
            .ok_or_else(|| format!("{}: a question needs an `id` (string)", at()))?;
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
            let doc = page.strip_prefix("pages/").unwrap_or(page);
            judged.insert(doc.strip_suffix(".md").unwrap_or(doc).to_string(), grade);
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
    })
}

/// Queries, their judgments and their groups (none for BEIR files).
#[derive(Debug, Default)]
pub struct Judgments {
    pub queries: Vec<(String, String)>,
    pub qrels: Qrels,
    pub groups: Groups,
}

/// Groups of questions by a label (`lang=en`): the ids in each.
pub type Groups = BTreeMap<String, Vec<String>>;

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

/// The document ids (page path without `pages/` and `.md`) a query retrieves, best first.
pub fn retrieve(
    kb: &KnowledgeBase,
    query: &str,
    mode: &str,
    depth: usize,
) -> Result<Vec<String>, String> {
    let request = search_files::validate(&json!({ "query": fit_query(query), "mode": mode }))
        .map_err(|e| e.to_string())?;
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

/// Evaluates one mode over every judged query (in parallel).
pub fn evaluate(
    kb: &KnowledgeBase,
    queries: &[(String, String)],
    qrels: &Qrels,
    mode: &str,
) -> Metrics {
    let texts: HashMap<&str, &str> = queries
        .iter()
        .map(|(id, t)| (id.as_str(), t.as_str()))
        .collect();
    let judged: Vec<(&str, &BTreeMap<String, i64>)> = qrels
        .iter()
        .filter(|(id, j)| texts.contains_key(id.as_str()) && j.values().any(|g| *g > 0))
        .map(|(id, j)| (texts[id.as_str()], j))
        .collect();
    let per_query: Vec<(Option<[f64; 4]>, f64)> = judged
        .par_iter()
        .map(|(text, judgments)| {
            let started = std::time::Instant::now();
            let result = retrieve(kb, text, mode, 100).ok().map(|ranked| {
                [
                    ndcg_at(&ranked, judgments, 10),
                    recall_at(&ranked, judgments, 10),
                    recall_at(&ranked, judgments, 100),
                    mrr_at(&ranked, judgments, 10),
                ]
            });
            (result, started.elapsed().as_secs_f64() * 1000.0)
        })
        .collect();
    let n = per_query.len().max(1) as f64;
    let mut sums = [0.0; 4];
    let mut failed = 0;
    for (scores, _) in &per_query {
        match scores {
            Some(s) => (0..4).for_each(|i| sums[i] += s[i]),
            None => failed += 1,
        }
    }
    let mut times: Vec<f64> = per_query.iter().map(|(_, t)| *t).collect();
    times.sort_by(f64::total_cmp);
    let round = |x: f64| (x * 10_000.0).round() / 10_000.0;
    Metrics {
        ndcg_at_10: round(sums[0] / n),
        recall_at_10: round(sums[1] / n),
        recall_at_100: round(sums[2] / n),
        mrr_at_10: round(sums[3] / n),
        queries: per_query.len(),
        failed,
        median_query_ms: times
            .get(times.len() / 2)
            .map_or(0.0, |t| (t * 100.0).round() / 100.0),
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
        } = load_questions(&path).unwrap();
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
    fn long_queries_are_fitted() {
        let q = fit_query(&"好".repeat(600));
        assert_eq!(q.chars().count(), 512);
        assert_eq!(fit_query("a\nb"), "a b");
    }
}
