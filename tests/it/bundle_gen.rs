//! The benchmark bundle generator (`kbtools::bundle_gen`): the same seed gives the same bytes,
//! and what it writes is a bundle kbtools reads without a diagnostic, whose `_index` and
//! `_graph` records agree with its pages, and whose pages the tools list, relate and find.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::{checked_call, open_bundle};
use kbtools::bundle_gen::{generate, GenOptions, GenReport, QRELS_FILE, QUERIES_FILE};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const PAGES: usize = 300;

fn options(seed: u64) -> GenOptions {
    GenOptions {
        pages: PAGES,
        seed,
        ..GenOptions::default()
    }
}

fn generated(seed: u64) -> (tempfile::TempDir, PathBuf, GenReport) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bundle");
    let report = generate(&dir, &options(seed)).unwrap();
    (tmp, dir, report)
}

/// Every file under `root` (dotfiles included): relative path → bytes.
fn files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let relative = path.strip_prefix(root).unwrap().to_str().unwrap();
                out.insert(relative.replace('\\', "/"), std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn tree_hash(root: &Path) -> String {
    let mut hasher = Sha256::new();
    for (path, bytes) in files(root) {
        hasher.update(path.as_bytes());
        hasher.update([0]);
        hasher.update(Sha256::digest(&bytes));
    }
    format!("{:x}", hasher.finalize())
}

fn is_document_page(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap();
    path.starts_with("pages/") && path.ends_with(".md") && !name.starts_with("index")
}

fn json_of(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

#[test]
fn the_same_seed_gives_the_same_bytes_and_another_seed_others() {
    let (_a, first, report) = generated(7);
    let (_b, second, again) = generated(7);
    let (_c, third, _) = generated(8);
    assert_eq!(tree_hash(&first), tree_hash(&second));
    assert_eq!(report.bytes, again.bytes);
    assert_ne!(tree_hash(&first), tree_hash(&third));
    assert_eq!(report.pages, PAGES);
    let all = files(&first);
    let bundle_files = all.keys().filter(|p| !p.starts_with('.')).count();
    assert_eq!(report.files, bundle_files);
    let bundle_bytes: u64 = all
        .iter()
        .filter(|(p, _)| !p.starts_with('.'))
        .map(|(_, b)| b.len() as u64)
        .sum();
    assert_eq!(report.bytes, bundle_bytes);
}

#[test]
fn a_folder_with_other_content_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("keep.md"), "mine").unwrap();
    let mut opts = options(1);
    opts.replace = true;
    assert!(generate(tmp.path(), &opts).is_err());
    assert!(tmp.path().join("keep.md").is_file());
    // An earlier generated bundle is replaced on request.
    let dir = tmp.path().join("bundle");
    generate(&dir, &options(1)).unwrap();
    assert!(generate(&dir, &options(2)).is_err());
    opts.seed = 2;
    generate(&dir, &opts).unwrap();
    let (_t, fresh, _) = generated(2);
    assert_eq!(tree_hash(&dir), tree_hash(&fresh));
    assert!(generate(&tmp.path().join("none"), &GenOptions { pages: 0, ..opts }).is_err());
}

#[test]
fn the_bundle_ingests_without_diagnostics_and_its_records_agree_with_its_pages() {
    let (_tmp, dir, report) = generated(3);
    let opened = open_bundle(&dir);
    assert!(
        opened.report.diagnostics.is_empty(),
        "{:?}",
        &opened.report.diagnostics[..opened.report.diagnostics.len().min(5)]
    );
    assert_eq!(opened.report.manifest.counts.source_pages, PAGES as u64);

    let all = files(&dir);
    let pages: BTreeSet<&String> = all.keys().filter(|p| is_document_page(p)).collect();
    assert_eq!(pages.len(), PAGES);
    let page_dirs: BTreeSet<&str> = pages.iter().map(|p| &p[..p.rfind('/').unwrap()]).collect();
    assert!(page_dirs.len() >= 3, "nested directories: {page_dirs:?}");
    assert!(pages.iter().any(|p| p.matches('/').count() >= 3));

    // Document records: reached from the root router, one per page, with the page's
    // checksum and size; every part descriptor gives its packet's exact size.
    let mut records = BTreeMap::new();
    let mut routers = vec!["_index/pages/index.json".to_string()];
    while let Some(router) = routers.pop() {
        let value = json_of(&all[&router]);
        for child in value["childDirectories"].as_array().unwrap() {
            routers.push(child["path"].as_str().unwrap().to_string());
        }
        let mut direct = 0;
        for part in value["resources"].as_array().unwrap() {
            let path = part["path"].as_str().unwrap();
            assert_eq!(part["byteCount"], all[path].len(), "{path}");
            let packet = json_of(&all[path]);
            let docs = packet["documents"].as_array().unwrap();
            assert_eq!(part["recordCount"], docs.len());
            assert_eq!(part["firstKey"], docs[0]["path"]);
            direct += docs.len();
            for doc in docs {
                records.insert(doc["path"].as_str().unwrap().to_string(), doc.clone());
            }
        }
        assert_eq!(value["documentCount"], direct, "{router}");
    }
    assert_eq!(records.len(), PAGES);
    for (path, doc) in &records {
        let bytes = &all[path];
        assert_eq!(doc["byteCount"], bytes.len(), "{path}");
        assert_eq!(
            doc["checksumSha256"],
            format!("{:x}", Sha256::digest(bytes)),
            "{path}"
        );
        let graph = doc.get("graphPath").and_then(Value::as_str);
        assert_eq!(doc["relationshipCount"], u8::from(graph.is_some()));
        if let Some(graph) = graph {
            assert_eq!(json_of(&all[graph])["path"], path.as_str());
        }
    }

    // Relations: each per-file record mirrors the other side's, the `## Related` appendix
    // lists its targets, and the catalog counts the pairs.
    let mut sides = BTreeMap::new();
    for (path, bytes) in all
        .iter()
        .filter(|(p, _)| p.starts_with("_graph/by-file/") && p.ends_with(".json"))
    {
        let record = json_of(bytes);
        let page = record["path"].as_str().unwrap().to_string();
        assert_eq!(records[&page]["graphPath"], path.as_str());
        let text = String::from_utf8(all[&page].clone()).unwrap();
        let appendix = &text[text.find("\n## Related\n").expect("appendix")..];
        for rel in record["relationships"].as_array().unwrap() {
            let target = rel["targetPath"].as_str().unwrap().to_string();
            let title = records[&target]["title"].as_str().unwrap();
            assert!(
                appendix.contains(&format!("- [{title}]")),
                "{page} → {target}"
            );
            sides.insert(
                (page.clone(), target),
                rel["direction"].as_str().unwrap().to_string(),
            );
        }
    }
    for ((from, to), direction) in &sides {
        let flipped = match direction.as_str() {
            "outgoing" => "incoming",
            "incoming" => "outgoing",
            other => other,
        };
        assert_eq!(sides[&(to.clone(), from.clone())], flipped, "{from} ↔ {to}");
    }
    let catalog = json_of(&all["_graph/catalog.json"]);
    assert_eq!(catalog["relationshipCount"], sides.len() / 2);
    assert_eq!(report.relations, sides.len() / 2);

    // Every Markdown link of every Markdown file opens a file of the bundle.
    for (path, bytes) in all.iter().filter(|(p, _)| p.ends_with(".md")) {
        let text = std::str::from_utf8(bytes).unwrap();
        let base = path.rfind('/').map_or("", |i| &path[..i]);
        for piece in text.split("](").skip(1) {
            let href = &piece[..piece.find(')').unwrap()];
            let decoded = kbtools::text::percent_decode_once(href).unwrap();
            let mut segments: Vec<&str> = base.split('/').filter(|s| !s.is_empty()).collect();
            for segment in decoded.split('/') {
                if segment == ".." {
                    assert!(segments.pop().is_some(), "{path}: {href} leaves the bundle");
                } else {
                    segments.push(segment);
                }
            }
            let target = segments.join("/");
            assert!(all.contains_key(&target), "{path}: {href} → {target}");
        }
    }
}

#[test]
fn list_tree_lists_every_page() {
    let (_tmp, dir, _) = generated(4);
    let opened = open_bundle(&dir);
    let expected: BTreeSet<String> = files(&dir)
        .into_keys()
        .filter(|p| is_document_page(p))
        .collect();
    let mut listed = BTreeSet::new();
    let mut directories = vec!["pages".to_string()];
    while let Some(parent) = directories.pop() {
        let mut cursor: Option<String> = None;
        loop {
            let mut input = json!({ "parentPath": parent, "limit": 50 });
            if let Some(c) = &cursor {
                input["cursor"] = json!(c);
            }
            let out = checked_call(&opened.kb, "list_tree", input).unwrap();
            for item in out["items"].as_array().unwrap() {
                let path = item["path"].as_str().unwrap().to_string();
                match (item["entryType"].as_str(), item["fileKind"].as_str()) {
                    (Some("directory"), _) => directories.push(path),
                    (Some("file"), Some("page")) => {
                        assert!(listed.insert(path));
                    }
                    _ => {}
                }
            }
            cursor = out["nextCursor"].as_str().map(str::to_string);
            if cursor.is_none() {
                break;
            }
        }
    }
    assert_eq!(listed, expected);
}

#[test]
fn read_related_answers_each_page_s_graph_record() {
    let (_tmp, dir, _) = generated(5);
    let opened = open_bundle(&dir);
    let all = files(&dir);
    let mut related_pages = 0;
    for page in all.keys().filter(|p| is_document_page(p)) {
        let out = checked_call(
            &opened.kb,
            "read_related",
            json!({ "fileId": page, "limit": 200 }),
        )
        .unwrap();
        let got: Vec<(String, String, String, String)> = out["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                (
                    i["path"].as_str().unwrap().into(),
                    i["relationType"].as_str().unwrap().into(),
                    i["direction"].as_str().unwrap().into(),
                    i["reason"].as_str().unwrap().into(),
                )
            })
            .collect();
        let graph = format!(
            "_graph/by-file/{}.json",
            &page["pages/".len()..page.len() - 3]
        );
        let want: Vec<(String, String, String, String)> = match all.get(&graph) {
            None => Vec::new(),
            Some(bytes) => json_of(bytes)["relationships"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    (
                        r["targetPath"].as_str().unwrap().into(),
                        r["relationType"].as_str().unwrap().into(),
                        r["direction"].as_str().unwrap().into(),
                        r["reason"].as_str().unwrap().into(),
                    )
                })
                .collect(),
        };
        related_pages += usize::from(!want.is_empty());
        // The record lists targets by path, read_related by their sourceFileId.
        let (mut got, mut want) = (got, want);
        got.sort();
        want.sort();
        assert_eq!(got, want, "{page}");
    }
    assert!(related_pages > PAGES / 2, "{related_pages}");
}

#[test]
fn search_finds_a_page_by_a_phrase_from_it_in_english_and_chinese() {
    let (_tmp, dir, report) = generated(6);
    assert!(report.queries_path.ends_with(QUERIES_FILE));
    assert!(report.qrels_path.ends_with(QRELS_FILE));
    let opened = open_bundle(&dir);
    let text = std::fs::read_to_string(&report.queries_path).unwrap();
    let queries: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(queries.len(), report.queries);
    let qrels = std::fs::read_to_string(&report.qrels_path).unwrap();
    assert_eq!(qrels.lines().count(), queries.len() + 1);
    let mut checked = BTreeMap::new();
    for q in &queries {
        let (lang, kind) = (q["lang"].as_str().unwrap(), q["kind"].as_str().unwrap());
        let path = q["path"].as_str().unwrap();
        let query = q["text"].as_str().unwrap();
        // The query is the page's own text.
        let page = std::fs::read_to_string(dir.join(path)).unwrap();
        if kind == "phrase" || kind == "title" {
            assert!(
                page.to_lowercase().contains(&query.to_lowercase()),
                "{query:?} not in {path}"
            );
        }
        if kind != "phrase" {
            continue;
        }
        let count = checked.entry(lang.to_string()).or_insert(0);
        if *count == 10 {
            continue;
        }
        *count += 1;
        // As a quoted phrase in the default mode, and as plain words in `file` mode (the
        // graph lanes of the default mode may rank the page's neighbours above it).
        let quoted = if lang == "zh" {
            format!("“{query}”")
        } else {
            format!("\"{query}\"")
        };
        for input in [
            json!({ "query": quoted, "limit": 10 }),
            json!({ "query": query, "mode": "file", "limit": 10 }),
        ] {
            let out = checked_call(&opened.kb, "search_files", input.clone()).unwrap();
            let found: Vec<&str> = out["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["path"].as_str().unwrap())
                .collect();
            assert!(found.contains(&path), "{input} → {found:?}, not {path}");
        }
    }
    assert_eq!(checked.get("en"), Some(&10));
    assert_eq!(checked.get("zh"), Some(&10));
}
