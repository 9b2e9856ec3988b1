//! `kbtools eval`: the report of search quality against relevance judgments.

use anyhow::Result;
use serde_json::{json, Map, Value};

use super::open::open;
use super::{print_json, Source};

pub(super) fn evaluate(
    source: &Source,
    judged: kbtools::eval::Judgments,
    modes: Vec<String>,
    as_json: bool,
    min_ndcg: Option<f64>,
) -> Result<i32> {
    let modes = if modes.is_empty() {
        vec![
            "file".to_string(),
            "graph".to_string(),
            "hybrid".to_string(),
        ]
    } else {
        modes
    };
    let kbtools::eval::Judgments {
        queries,
        qrels,
        groups,
    } = judged;
    let mut kb = open(source)?;
    // With the semantic lane ready, hybrid is measured without it too (`hybrid-lexical`).
    let mut modes = modes;
    if modes.iter().any(|m| m == "hybrid")
        && kbtools::search::semantic(&kb).0 != kbtools::search::SemanticState::Unavailable
    {
        modes.push("hybrid-lexical".to_string());
    }
    let mut report = Map::new();
    let mut by_group = Map::new();
    for name in &modes {
        let mode = match name.as_str() {
            "hybrid-lexical" => {
                kb.options.semantic = false;
                "hybrid"
            }
            other => other,
        };
        let mode = &mode.to_string();
        let metrics = kbtools::eval::evaluate(&kb, &queries, &qrels, mode);
        report.insert(name.clone(), serde_json::to_value(metrics)?);
        let mut lines = Map::new();
        for (group, ids) in &groups {
            let subset: Vec<(String, String)> = queries
                .iter()
                .filter(|(id, _)| ids.contains(id))
                .cloned()
                .collect();
            let metrics = kbtools::eval::evaluate(&kb, &subset, &qrels, mode);
            lines.insert(group.clone(), serde_json::to_value(metrics)?);
        }
        if !lines.is_empty() {
            by_group.insert(name.clone(), Value::Object(lines));
        }
    }
    if as_json {
        let mut value = json!({
            "knowledgeBaseName": kb.manifest.knowledge_base_name,
            "activeContentRevision": kb.manifest.active_content_revision,
            "modes": report,
        });
        if !by_group.is_empty() {
            value["groups"] = Value::Object(by_group.clone());
        }
        print_json(&value, source.pretty)?;
    } else {
        println!(
            "{} (revision {})",
            kb.manifest.knowledge_base_name, kb.manifest.active_content_revision
        );
        println!(
            "{:<8} {:<20} {:>8} {:>10} {:>11} {:>8} {:>8} {:>7} {:>10}",
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
        let line = |mode: &str, group: &str, m: &Value| {
            let f = |k: &str| m[k].as_f64().unwrap_or(0.0);
            println!(
                "{:<8} {:<20} {:>8.4} {:>10.4} {:>11.4} {:>8.4} {:>8} {:>7} {:>10.2}",
                mode,
                group,
                f("ndcgAt10"),
                f("recallAt10"),
                f("recallAt100"),
                f("mrrAt10"),
                m["queries"].as_u64().unwrap_or(0),
                m["failed"].as_u64().unwrap_or(0),
                f("medianQueryMs")
            );
        };
        for (mode, m) in &report {
            line(mode, "all", m);
            if let Some(Value::Object(lines)) = by_group.get(mode) {
                for (group, m) in lines {
                    line(mode, group, m);
                }
            }
        }
    }
    if let Some(min) = min_ndcg {
        let below: Vec<String> = report
            .iter()
            .filter_map(|(mode, m)| {
                let ndcg = m["ndcgAt10"].as_f64().unwrap_or(0.0);
                (ndcg < min).then(|| format!("{mode} {ndcg:.4}"))
            })
            .collect();
        if !below.is_empty() {
            eprintln!(
                "kbtools: nDCG@10 below --min-ndcg {min}: {}",
                below.join(", ")
            );
            return Ok(1);
        }
    }
    Ok(0)
}
