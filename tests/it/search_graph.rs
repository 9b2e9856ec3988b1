//! The graph side of `search_files` (`graphContext`, the lanes, fusion and `matchType`: docs/rules.md#fusion):
//! which lanes run per mode and scope, what the `file_relationship` and `file_graph` lanes add,
//! and the invariants of every result's `graphContext`. Every call is schema-checked.

use crate::common;

use std::collections::{BTreeSet, HashMap};

use common::{checked_call, open_fixture};
use kbtools::kb::KnowledgeBase;
use serde_json::{json, Value};

const FIXTURES: [&str; 2] = ["focowiki-docs", "plain-notes"];
const GRAPH_FIELDS: [&str; 2] = ["graph_node", "file_relationship"];

fn search(kb: &KnowledgeBase, input: Value) -> Value {
    checked_call(kb, "search_files", input).unwrap()
}

fn items(out: &Value) -> &Vec<Value> {
    out["items"].as_array().unwrap()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

fn families(out: &Value) -> Vec<String> {
    strings(&out["evidenceStatus"]["completedFamilies"])
}

fn item<'a>(out: &'a Value, path: &str) -> Option<&'a Value> {
    items(out).iter().find(|i| i["path"] == path)
}

fn has_graph_evidence(item: &Value) -> bool {
    strings(&item["matchedFields"])
        .iter()
        .chain(strings(&item["evidenceTypes"]).iter())
        .any(|f| GRAPH_FIELDS.contains(&f.as_str()))
}

/// `pages/a/b.md` → `_graph/by-file/a/b.json`, computed independently of the crate.
fn graph_path_of(page: &str) -> String {
    let rest = page.strip_prefix("pages/").unwrap_or(page);
    let stem = rest.strip_suffix(".md").unwrap_or(rest);
    format!("_graph/by-file/{stem}.json")
}

/// Opens a per-file graph record with `read_file` and returns the page it describes.
fn record_page(kb: &KnowledgeBase, graph_path: &str) -> String {
    let out = checked_call(kb, "read_file", json!({ "path": graph_path }))
        .unwrap_or_else(|e| panic!("{graph_path} does not open: {e:?}"));
    assert_eq!(out["file"]["path"], graph_path);
    let record: Value = serde_json::from_str(out["content"].as_str().unwrap())
        .unwrap_or_else(|e| panic!("{graph_path} is not JSON: {e}"));
    record["path"].as_str().unwrap().to_string()
}

/// Queries with hits (and some graph around them) in each fixture.
fn queries(fixture: &str) -> &'static [&'static str] {
    match fixture {
        "focowiki-docs" => &[
            "How do agents read related files through the graph?",
            "Webhook Delivery",
            "Docker Compose deployment environment",
            "知识库 图谱 关系",
            "Open Knowledge Format",
        ],
        _ => &[
            "quartzlantern installation guide",
            "handbook",
            "账单提醒",
            "Other Note background",
        ],
    }
}

#[test]
fn completed_families_follow_mode_and_scope() {
    for fixture in FIXTURES {
        let opened = open_fixture(fixture);
        let kb = &opened.kb;
        let mut relationship_counts = BTreeSet::new();
        for (query, cjk) in [("handbook agent guide", false), ("知识库 账单", true)] {
            for mode in ["file", "graph", "hybrid"] {
                for scope in ["all", "path", "metadata"] {
                    let input = json!({ "query": query, "mode": mode, "scope": scope });
                    let out = search(kb, input.clone());
                    let expected: Vec<&str> = match (scope, mode) {
                        ("path", _) => vec!["exact_path", "exact_title"],
                        ("metadata", _) => vec!["lexical"],
                        (_, "file") if cjk => {
                            vec!["exact_path", "exact_title", "jieba", "lexical"]
                        }
                        (_, "file") => vec!["exact_path", "exact_title", "lexical"],
                        (_, "graph") => {
                            vec![
                                "exact_path",
                                "exact_title",
                                "file_graph",
                                "file_relationship",
                            ]
                        }
                        _ if cjk => vec![
                            "exact_path",
                            "exact_title",
                            "file_graph",
                            "file_relationship",
                            "jieba",
                            "lexical",
                        ],
                        _ => vec![
                            "exact_path",
                            "exact_title",
                            "file_graph",
                            "file_relationship",
                            "lexical",
                        ],
                    };
                    assert_eq!(families(&out), expected, "{fixture} {input}");
                    assert!(
                        out["evidenceStatus"]["degradedFamilies"]
                            .as_array()
                            .unwrap()
                            .is_empty(),
                        "{fixture} {input}"
                    );
                    let summary = &out["graphSummary"];
                    assert_eq!(summary["depth"], 1);
                    assert_eq!(summary["fanout"], 10);
                    if mode == "file" {
                        assert_eq!(out["graphStatus"], "disabled_for_file_mode");
                        assert_eq!(summary["available"], false);
                        assert_eq!(summary["indexedDocumentCount"], 0);
                        assert_eq!(summary["indexedRelationshipCount"], 0);
                    } else {
                        assert_eq!(out["graphStatus"], "available");
                        assert_eq!(summary["available"], true);
                        let pages = if fixture == "focowiki-docs" { 36 } else { 6 };
                        assert_eq!(summary["indexedDocumentCount"], pages);
                        relationship_counts
                            .insert(summary["indexedRelationshipCount"].as_u64().unwrap());
                    }
                    // The graph lanes do not run outside scope=all, so nothing carries their
                    // evidence there.
                    if scope != "all" || mode == "file" {
                        for it in items(&out) {
                            assert!(!has_graph_evidence(it), "{fixture} {input}: {it}");
                            assert_eq!(it["matchType"], "file_direct", "{fixture} {input}");
                        }
                    }
                    if scope == "metadata" {
                        for it in items(&out) {
                            assert_eq!(it["matchedFields"], json!(["metadata"]));
                            assert_eq!(it["evidenceTypes"], json!(["metadata"]));
                        }
                    }
                }
            }
        }
        // One knowledge-base total in every graph-enabled response.
        assert_eq!(relationship_counts.len(), 1, "{fixture}");
        let count = relationship_counts.into_iter().next().unwrap();
        if fixture == "focowiki-docs" {
            assert_eq!(count, 36);
        } else {
            assert!(count > 0);
        }
    }
}

#[test]
fn relationship_lane_surfaces_pages_linked_by_matching_relations() {
    // focowiki-docs: "Developer OpenAPI contains an explicit Markdown reference to Webhook
    // Delivery" links the OpenAPI overview to the webhook page.
    let opened = open_fixture("focowiki-docs");
    let kb = &opened.kb;
    let overview = "pages/en/openapi/README.md";
    let webhook = "pages/en/openapi/webhook-delivery.md";
    let explorer = "pages/en/openapi/explorer.md";
    let related = checked_call(kb, "read_related", json!({ "fileId": overview })).unwrap();
    let link = items_of(&related)
        .iter()
        .find(|r| r["path"] == webhook)
        .cloned()
        .expect("the overview links the webhook page");
    assert!(link["reason"]
        .as_str()
        .unwrap()
        .contains("Webhook Delivery"));

    let graph = search(kb, json!({ "query": "Webhook Delivery", "mode": "graph" }));
    let hit = item(&graph, overview).expect("the linked overview is found");
    assert_eq!(hit["matchType"], "graph_edge");
    assert!(strings(&hit["matchedFields"]).contains(&"file_relationship".to_string()));
    assert!(strings(&hit["evidenceTypes"]).contains(&"file_relationship".to_string()));
    assert!(
        hit["sourceExcerpt"].is_null(),
        "graph-only hits have no excerpt"
    );
    // The exact-title seed is an endpoint of the matching relation too.
    let seed = item(&graph, webhook).unwrap();
    assert_eq!(seed["matchType"], "hybrid");
    assert_eq!(
        strings(&seed["matchedFields"]),
        ["file_relationship", "graph_node", "title"]
    );
    // The explorer is a neighbour of the overview, but its only relation does not mention the
    // query: the relationship lane does not return it.
    let neighbour = item(&graph, explorer).expect("the explorer is a neighbour");
    assert_eq!(neighbour["matchType"], "graph_neighbor");
    assert_eq!(strings(&neighbour["matchedFields"]), ["graph_node"]);
    // The relationship hit outranks the plain neighbour.
    let rank = |path: &str| items(&graph).iter().position(|i| i["path"] == path);
    assert!(rank(overview) < rank(explorer));

    let hybrid = search(kb, json!({ "query": "Webhook Delivery", "mode": "hybrid" }));
    let hit = item(&hybrid, overview).unwrap();
    assert_eq!(hit["matchType"], "hybrid");
    assert!(strings(&hit["matchedFields"]).contains(&"file_relationship".to_string()));
    assert!(strings(&hit["matchedFields"]).contains(&"content".to_string()));

    // plain-notes: "Installation Guide contains an explicit Markdown reference to Other Note".
    // Other Note's own text has none of the query's words, so only the relation finds it.
    let opened = open_fixture("plain-notes");
    let kb = &opened.kb;
    let other = "pages/notes/Other Note.md";
    let install = "pages/guides/install.md";
    let related = checked_call(kb, "read_related", json!({ "fileId": other })).unwrap();
    let link = items_of(&related)
        .iter()
        .find(|r| r["path"] == install)
        .cloned()
        .expect("install links Other Note");
    assert!(link["reason"]
        .as_str()
        .unwrap()
        .contains("Installation Guide"));
    let query = "quartzlantern installation guide";
    let file = search(kb, json!({ "query": query, "mode": "file" }));
    assert!(item(&file, other).is_none(), "no file evidence for {other}");
    for mode in ["hybrid", "graph"] {
        let out = search(kb, json!({ "query": query, "mode": mode }));
        let hit = item(&out, other).unwrap_or_else(|| panic!("{mode}: {other} not found"));
        assert_eq!(hit["matchType"], "graph_edge", "{mode}");
        assert!(strings(&hit["matchedFields"]).contains(&"file_relationship".to_string()));
        assert!(hit["sourceExcerpt"].is_null());
    }

    // A word that is in a page but in no relation's titles or reason: no relationship hits.
    for mode in ["hybrid", "graph"] {
        let out = search(kb, json!({ "query": "quartzlantern", "mode": mode }));
        assert!(!items(&out).is_empty());
        for it in items(&out) {
            assert!(
                !strings(&it["matchedFields"]).contains(&"file_relationship".to_string()),
                "{mode}: {it}"
            );
            assert_ne!(it["matchType"], "graph_edge");
        }
    }
}

fn items_of(v: &Value) -> Vec<Value> {
    v["items"].as_array().cloned().unwrap_or_default()
}

#[test]
fn match_type_follows_the_lanes() {
    for fixture in FIXTURES {
        let opened = open_fixture(fixture);
        let kb = &opened.kb;
        for query in queries(fixture) {
            for mode in ["file", "graph", "hybrid"] {
                let out = search(kb, json!({ "query": query, "mode": mode, "limit": 50 }));
                for it in items(&out) {
                    let fields = strings(&it["matchedFields"]);
                    assert_eq!(fields, strings(&it["evidenceTypes"]));
                    let mut sorted = fields.clone();
                    sorted.sort();
                    sorted.dedup();
                    assert_eq!(fields, sorted, "distinct and sorted");
                    let has = |f: &str| fields.iter().any(|x| x == f);
                    let file = has("path") || has("title") || has("content");
                    let graph = has("graph_node") || has("file_relationship");
                    let expected = if file && graph {
                        "hybrid"
                    } else if has("file_relationship") {
                        "graph_edge"
                    } else if has("graph_node") {
                        "graph_neighbor"
                    } else {
                        "file_direct"
                    };
                    assert_eq!(it["matchType"], expected, "{fixture} {query} {mode}: {it}");
                    if mode == "graph" {
                        assert!(!has("content"), "no content lanes in graph mode");
                    }
                    // Graph lanes only ever yield source pages.
                    assert_eq!(it["fileKind"], "page");
                    assert_eq!(it["sourceFileId"], it["fileId"]);
                    assert!(it["fileId"].as_str().unwrap().starts_with("source-file-"));
                    assert!(it["path"].as_str().unwrap().starts_with("pages/"));
                }
            }
        }
    }
}

#[test]
fn file_mode_has_no_graph_context_and_no_graph_lanes() {
    for fixture in FIXTURES {
        let opened = open_fixture(fixture);
        let kb = &opened.kb;
        for query in queries(fixture) {
            let out = search(kb, json!({ "query": query, "mode": "file", "limit": 50 }));
            assert!(!items(&out).is_empty(), "{fixture} {query}");
            let fams = families(&out);
            assert!(!fams.iter().any(|f| f.starts_with("file_")), "{fams:?}");
            for it in items(&out) {
                assert!(it.get("graphContext").is_none(), "{fixture} {query}: {it}");
                assert!(!has_graph_evidence(it));
                assert_eq!(it["matchType"], "file_direct");
            }
            // Every other mode has a graphContext on every result.
            for mode in ["graph", "hybrid"] {
                let out = search(kb, json!({ "query": query, "mode": mode, "limit": 50 }));
                for it in items(&out) {
                    assert!(it["graphContext"].is_object(), "{fixture} {query} {mode}");
                }
            }
        }
    }
}

/// `read_file` and `expand_graph` answers already checked, so that each is checked once.
#[derive(Default)]
struct Seen {
    records: HashMap<String, String>,
    walks: HashMap<(String, u64, u64), Vec<Value>>,
}

impl Seen {
    fn record_page(&mut self, kb: &KnowledgeBase, graph_path: &str) -> String {
        self.records
            .entry(graph_path.to_string())
            .or_insert_with(|| record_page(kb, graph_path))
            .clone()
    }

    /// The `expand_graph` relationships of a page, in one page (the limit, 200, is above
    /// fanout + fanout² for the fanouts used here).
    fn walk(&mut self, kb: &KnowledgeBase, file_id: &str, depth: u64, fanout: u64) -> &[Value] {
        self.walks
            .entry((file_id.to_string(), depth, fanout))
            .or_insert_with(|| {
                let input =
                    json!({ "fileId": file_id, "depth": depth, "fanout": fanout, "limit": 200 });
                let out = checked_call(kb, "expand_graph", input).unwrap();
                out["relationships"].as_array().unwrap().clone()
            })
    }
}

/// Checks one result's `graphContext` against `expand_graph` and the graph records.
fn check_graph_context(
    kb: &KnowledgeBase,
    seen: &mut Seen,
    it: &Value,
    depth: u64,
    fanout: u64,
    label: &str,
) {
    let path = it["path"].as_str().unwrap();
    let ctx = &it["graphContext"];
    assert!(ctx.is_object(), "{label}: {path} has no graphContext");
    assert_eq!(ctx["depth"], depth, "{label}");
    assert_eq!(ctx["seedSourceFileId"], it["fileId"], "{label}");
    let graph_ref = ctx["graphRef"].as_str().unwrap();
    assert_eq!(graph_ref, graph_path_of(path), "{label}");
    assert_eq!(
        seen.record_page(kb, graph_ref),
        path,
        "{label}: graphRef is the page's record"
    );

    let rels = ctx["relationships"].as_array().unwrap();
    assert!(
        rels.len() as u64 <= fanout,
        "{label}: {} > {fanout}",
        rels.len()
    );
    let depths: Vec<u64> = rels
        .iter()
        .map(|r| r["relationshipDepth"].as_u64().unwrap())
        .collect();
    assert!(
        depths.windows(2).all(|w| w[0] <= w[1]),
        "{label}: {depths:?}"
    );
    assert!(depths.iter().all(|&d| (1..=depth).contains(&d)), "{label}");
    let first_level = depths.iter().filter(|&&d| d == 1).count() as u64;
    if depths.contains(&2) {
        assert!(
            first_level < fanout,
            "{label}: depth 2 after a full depth 1"
        );
    }
    let level_one: BTreeSet<&str> = rels
        .iter()
        .filter(|r| r["relationshipDepth"] == 1)
        .map(|r| r["fileId"].as_str().unwrap())
        .collect();
    for r in rels {
        assert_ne!(
            r["fileId"], it["fileId"],
            "{label}: the seed is not its own relation"
        );
        assert_eq!(r["sourceFileId"], r["fileId"]);
        if r["relationshipDepth"] == 1 {
            assert_eq!(r["fromFileId"], it["fileId"], "{label}");
        } else {
            assert!(
                level_one.contains(r["fromFileId"].as_str().unwrap()),
                "{label}"
            );
        }
    }
    // The same walk as expand_graph, cut to graphFanout in all.
    let walk = seen.walk(kb, it["fileId"].as_str().unwrap(), depth, fanout);
    let expected: Vec<&Value> = walk.iter().take(fanout as usize).collect();
    assert_eq!(rels.iter().collect::<Vec<_>>(), expected, "{label}: {path}");

    // graphPaths: distinct [own record, related pages' records], each one that opens.
    let graph_paths = strings(&ctx["graphPaths"]);
    let distinct: BTreeSet<&String> = graph_paths.iter().collect();
    assert_eq!(distinct.len(), graph_paths.len(), "{label}: duplicates");
    assert_eq!(graph_paths.first().map(String::as_str), Some(graph_ref));
    let mut expected_paths = vec![graph_ref.to_string()];
    for r in rels {
        let p = graph_path_of(r["path"].as_str().unwrap());
        if !expected_paths.contains(&p) {
            expected_paths.push(p);
        }
    }
    assert_eq!(graph_paths, expected_paths, "{label}");
    let pages: BTreeSet<String> = std::iter::once(path.to_string())
        .chain(rels.iter().map(|r| r["path"].as_str().unwrap().to_string()))
        .collect();
    for p in &graph_paths {
        assert!(pages.contains(&seen.record_page(kb, p)), "{label}: {p}");
    }
}

#[test]
fn graph_context_invariants_hold_for_every_result() {
    for fixture in FIXTURES {
        let opened = open_fixture(fixture);
        let kb = &opened.kb;
        let mut seen = Seen::default();
        for query in queries(fixture) {
            for mode in ["graph", "hybrid"] {
                for (depth, fanout) in [(1, 10), (2, 1), (2, 2), (2, 3), (1, 25), (2, 25)] {
                    let input = json!({
                        "query": query, "mode": mode, "graphDepth": depth,
                        "graphFanout": fanout, "limit": 50,
                    });
                    let out = search(kb, input.clone());
                    assert_eq!(out["graphSummary"]["depth"], depth);
                    assert_eq!(out["graphSummary"]["fanout"], fanout);
                    for it in items(&out) {
                        let label = format!("{fixture} {input}");
                        check_graph_context(kb, &mut seen, it, depth, fanout, &label);
                    }
                }
            }
        }
    }
}

#[test]
fn zero_depth_or_fanout_turns_the_graph_off() {
    // Without expansion the graph lanes only match the seed pages themselves as graph nodes:
    // no relationships, no relationship evidence, and no page that file mode does not find.
    for fixture in FIXTURES {
        let opened = open_fixture(fixture);
        let kb = &opened.kb;
        for query in queries(fixture) {
            let file = search(kb, json!({ "query": query, "mode": "file", "limit": 50 }));
            let file_paths: Vec<Value> = items(&file).iter().map(|i| i["path"].clone()).collect();
            for (depth, fanout) in [(0, 10), (1, 0), (2, 0), (0, 0)] {
                for mode in ["graph", "hybrid"] {
                    let input = json!({
                        "query": query, "mode": mode, "graphDepth": depth,
                        "graphFanout": fanout, "limit": 50,
                    });
                    let out = search(kb, input.clone());
                    for it in items(&out) {
                        let ctx = &it["graphContext"];
                        assert_eq!(ctx["relationships"], json!([]), "{fixture} {input}");
                        assert_eq!(ctx["graphPaths"], json!([ctx["graphRef"]]));
                        assert_eq!(ctx["depth"], depth);
                        let fields = strings(&it["matchedFields"]);
                        assert!(
                            !fields.contains(&"file_relationship".to_string()),
                            "{fixture} {input}: {it}"
                        );
                        assert!(
                            file_paths.contains(&it["path"]),
                            "{fixture} {input}: {} is not a file-mode result",
                            it["path"]
                        );
                        if mode == "hybrid" && fields.contains(&"graph_node".to_string()) {
                            assert!(fields.contains(&"content".to_string()), "{it}");
                            assert_eq!(it["matchType"], "hybrid");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn scores_never_increase_and_output_is_deterministic() {
    for fixture in FIXTURES {
        let opened = open_fixture(fixture);
        let kb = &opened.kb;
        for query in queries(fixture) {
            for mode in ["file", "graph", "hybrid"] {
                for (depth, fanout) in [(1, 10), (2, 25)] {
                    // Page through the whole result list, 5 at a time.
                    let mut scores: Vec<f64> = Vec::new();
                    let mut seen: Vec<String> = Vec::new();
                    let mut cursor: Option<String> = None;
                    loop {
                        let input = json!({
                            "query": query, "mode": mode, "graphDepth": depth,
                            "graphFanout": fanout, "limit": 5, "cursor": cursor,
                        });
                        let first = search(kb, input.clone());
                        let second = search(kb, input.clone());
                        assert_eq!(
                            serde_json::to_string(&first).unwrap(),
                            serde_json::to_string(&second).unwrap(),
                            "{fixture} {input}"
                        );
                        for it in items(&first) {
                            scores.push(it["score"].as_f64().unwrap());
                            seen.push(it["path"].as_str().unwrap().to_string());
                        }
                        match first["nextCursor"].as_str() {
                            Some(next) => cursor = Some(next.to_string()),
                            None => break,
                        }
                    }
                    let label = format!("{fixture} {query} {mode} {depth}/{fanout}");
                    assert!(scores.iter().all(|s| *s >= 0.0), "{label}");
                    assert!(
                        scores.windows(2).all(|w| w[0] >= w[1]),
                        "{label}: {scores:?}"
                    );
                    let distinct: BTreeSet<&String> = seen.iter().collect();
                    assert_eq!(distinct.len(), seen.len(), "{label}: a page repeats");
                    // One page of 50 lists the same results as the pages of 5.
                    let all = search(
                        kb,
                        json!({ "query": query, "mode": mode, "graphDepth": depth,
                                "graphFanout": fanout, "limit": 50 }),
                    );
                    let paths: Vec<String> = items(&all)
                        .iter()
                        .map(|i| i["path"].as_str().unwrap().to_string())
                        .collect();
                    assert_eq!(paths, seen, "{label}");
                }
            }
        }
    }
}

#[test]
fn a_fresh_index_gives_the_same_bytes() {
    // Same bundle, two independent index builds: identical search output.
    for fixture in FIXTURES {
        let a = open_fixture(fixture);
        let b = open_fixture(fixture);
        for query in queries(fixture) {
            let input = json!({ "query": query, "mode": "hybrid", "graphDepth": 2, "limit": 50 });
            let out_a = search(&a.kb, input.clone());
            let out_b = search(&b.kb, input.clone());
            assert_eq!(
                serde_json::to_string(&out_a).unwrap(),
                serde_json::to_string(&out_b).unwrap(),
                "{fixture} {input}"
            );
        }
    }
}

#[test]
fn deeper_walks_only_add_graph_candidates() {
    // A deeper or wider walk can only add relations: every page a graph lane finds at depth 1
    // is still found (with graph evidence) at depth 2.
    for fixture in FIXTURES {
        let opened = open_fixture(fixture);
        let kb = &opened.kb;
        for query in queries(fixture) {
            let graph_pages = |depth: u64| -> HashMap<String, Vec<String>> {
                let out = search(
                    kb,
                    json!({ "query": query, "mode": "graph", "graphDepth": depth, "limit": 50 }),
                );
                items(&out)
                    .iter()
                    .filter(|i| has_graph_evidence(i))
                    .map(|i| {
                        (
                            i["path"].as_str().unwrap().to_string(),
                            strings(&i["matchedFields"]),
                        )
                    })
                    .collect()
            };
            let shallow = graph_pages(1);
            let deep = graph_pages(2);
            for (path, fields) in &shallow {
                let Some(deep_fields) = deep.get(path) else {
                    // Only the first 50 are listed; a page can fall below the cut.
                    continue;
                };
                for f in fields.iter().filter(|f| GRAPH_FIELDS.contains(&f.as_str())) {
                    assert!(
                        deep_fields.contains(f),
                        "{fixture} {query}: {path} lost {f}"
                    );
                }
            }
        }
    }
}

/// Translations (rules#translations): in `hybrid` mode the same page under the other language root
/// follows the page that answers, below it, as graph evidence; the hub pages that link to the
/// answer (the OpenAPI overview, the README) do not outrank it.
#[test]
fn translations_follow_the_answer_and_hubs_do_not_outrank_it() {
    let opened = open_fixture("focowiki-docs");
    let kb = &opened.kb;
    let en = "pages/en/openapi/webhook-delivery.md";
    let zh = "pages/zh-CN/openapi/webhook-delivery.md";
    let query = "Which HTTP status must the endpoint that receives webhooks answer with?";
    let paths = |out: &Value| -> Vec<String> {
        items(out)
            .iter()
            .map(|i| i["path"].as_str().unwrap().to_string())
            .collect()
    };
    let hybrid = search(kb, json!({ "query": query, "mode": "hybrid" }));
    let ranked = paths(&hybrid);
    let rank = |list: &[String], path: &str| list.iter().position(|p| p == path);
    assert_eq!(rank(&ranked, en), Some(0), "{ranked:?}");
    let translated = rank(&ranked, zh).unwrap_or_else(|| panic!("no translation: {ranked:?}"));
    assert!(translated > 0, "{ranked:?}");
    let hit = item(&hybrid, zh).unwrap();
    assert!(strings(&hit["matchedFields"]).contains(&"graph_node".to_string()));
    // File mode ranks by the question alone: the Chinese page is lower or absent.
    let file = paths(&search(kb, json!({ "query": query, "mode": "file" })));
    assert!(
        rank(&file, zh).is_none_or(|r| r > translated),
        "file {file:?}, hybrid {ranked:?}"
    );
}
