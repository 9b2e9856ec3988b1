//! The four real bundles in `../shared/bundles` (focowiki-docs, scifact, cmrc2018-zh, xquad-zh),
//! each checked against its own files on disk:
//!
//! * every document listed in the `_index/pages/**` document packets is readable by path and by
//!   the fileId the tree reports, with exactly the bytes on disk, and carries the record's title;
//! * `list_tree`, paged from the root with a small limit, lists every file on disk exactly once
//!   (a file it leaves out must be explained by a build diagnostic);
//! * `read_related` of every source page equals that page's `_graph/by-file/**` record, and a
//!   page without one has no related pages;
//! * every tool answers with schema-valid output (on a sample of files), and a search for a page
//!   title finds that page in the top 10;
//! * the same request twice, and through a second opening of the index, gives the same bytes.
//!
//! A bundle that is not there (a clone without `../shared`) is skipped with a message on stderr.

use crate::common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

use common::{call, checked_call, open_bundle};
use kbtools::kb::KnowledgeBase;
use serde_json::{json, Value};

/// Page size of the tree walk: small and odd, so directories span several pages.
const TREE_LIMIT: u64 = 97;
/// Every n-th file gets its outputs validated against the contract schema.
const SAMPLE_EVERY: usize = 50;
/// Page titles searched for per bundle.
const TITLE_SEARCHES: usize = 5;

/// The bundle's directory, or `None` (with the skip message) when it is absent.
fn bundle_or_skip(name: &str) -> Option<PathBuf> {
    let found = common::shared_bundle(name);
    if found.is_none() {
        eprintln!("skipped: ../shared/bundles/{name} not found");
    }
    found
}

/// Every regular file under `root`, as `/`-separated relative paths (nothing excluded).
fn disk_files(root: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().into_string().expect("UTF-8 file name");
            let relative = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                stack.push((entry.path(), relative));
            } else {
                out.insert(relative);
            }
        }
    }
    out
}

/// One file entry of the tree walk.
#[derive(Debug, Clone)]
struct TreeFile {
    file_id: String,
    source_file_id: Option<String>,
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("`{key}` is not a string in {v}"))
}

fn items(v: &Value, key: &str) -> Vec<Value> {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("`{key}` is not an array in {v}"))
        .clone()
}

/// Walks the whole tree from the root, `TREE_LIMIT` entries a page, validating every page
/// against the schema. Checks that each directory's children come in byte order with the right
/// `parentPath`, that a directory lists as many entries as its parent said, and that no path or
/// id appears twice.
fn walk_tree(kb: &KnowledgeBase) -> BTreeMap<String, TreeFile> {
    let mut files: BTreeMap<String, TreeFile> = BTreeMap::new();
    let mut ids = BTreeSet::new();
    // (directory, the entry count its parent announced)
    let mut dirs: Vec<(String, Option<u64>)> = vec![(String::new(), None)];
    let mut seen_dirs = BTreeSet::new();
    while let Some((dir, announced)) = dirs.pop() {
        assert!(
            seen_dirs.insert(dir.clone()),
            "directory {dir:?} listed twice"
        );
        let mut cursor: Option<String> = None;
        let mut listed: Vec<String> = Vec::new();
        loop {
            let input = json!({ "parentPath": dir, "limit": TREE_LIMIT, "cursor": cursor });
            let page = checked_call(kb, "list_tree", input).unwrap();
            let entries = items(&page, "items");
            assert!(entries.len() as u64 <= TREE_LIMIT);
            for entry in entries {
                let path = str_of(&entry, "path").to_string();
                assert_eq!(str_of(&entry, "parentPath"), dir, "parentPath of {path}");
                listed.push(path.clone());
                match str_of(&entry, "entryType") {
                    "directory" => {
                        let count = entry["directEntryCount"].as_u64().unwrap();
                        dirs.push((path, Some(count)));
                    }
                    "file" => {
                        let file_id = str_of(&entry, "fileId").to_string();
                        assert_eq!(str_of(&entry, "id"), file_id);
                        assert!(ids.insert(file_id.clone()), "fileId {file_id} listed twice");
                        let source_file_id = entry["sourceFileId"].as_str().map(str::to_string);
                        let previous = files.insert(
                            path.clone(),
                            TreeFile {
                                file_id,
                                source_file_id,
                            },
                        );
                        assert!(previous.is_none(), "file {path} listed twice");
                    }
                    other => panic!("entryType {other} for {path}"),
                }
            }
            match page["nextCursor"].as_str() {
                Some(next) => cursor = Some(next.to_string()),
                None => break,
            }
        }
        assert!(
            listed.windows(2).all(|w| w[0] < w[1]),
            "children of {dir:?} are not in strict byte order of path"
        );
        if let Some(count) = announced {
            assert_eq!(
                listed.len() as u64,
                count,
                "{dir}: directEntryCount {count}, listed {}",
                listed.len()
            );
        }
    }
    files
}

/// A document record of the `_index/pages/**` packets (the fields these tests use).
#[derive(Debug, Clone)]
struct DocRecord {
    title: String,
    graph_path: Option<String>,
    byte_count: u64,
}

fn is_document_packet(name: &str) -> bool {
    if name.ends_with("-documents.json") {
        return true;
    }
    // `<subject>-documents-part-NNNN.json`
    let Some(stem) = name.strip_suffix(".json") else {
        return false;
    };
    let Some((head, digits)) = stem.rsplit_once("-part-") else {
        return false;
    };
    head.ends_with("-documents") && digits.len() == 4 && digits.bytes().all(|b| b.is_ascii_digit())
}

/// The document records of every packet found by walking `_index/pages` on disk.
fn document_records(root: &Path, disk: &BTreeSet<String>) -> BTreeMap<String, DocRecord> {
    let mut records = BTreeMap::new();
    let packets: Vec<&String> = disk
        .iter()
        .filter(|p| p.starts_with("_index/pages/"))
        .filter(|p| is_document_packet(p.rsplit('/').next().unwrap()))
        .collect();
    assert!(!packets.is_empty(), "no document packet under _index/pages");
    for packet in packets {
        let text = std::fs::read_to_string(root.join(packet)).unwrap();
        let value: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{packet} is not valid JSON: {e}"));
        for doc in items(&value, "documents") {
            let path = str_of(&doc, "path").to_string();
            let record = DocRecord {
                title: str_of(&doc, "title").to_string(),
                graph_path: doc["graphPath"].as_str().map(str::to_string),
                byte_count: doc["byteCount"].as_u64().unwrap(),
            };
            assert!(
                records.insert(path.clone(), record).is_none(),
                "{path} is in two document packets"
            );
        }
    }
    records
}

/// `pages/a/b.md` → `_graph/by-file/a/b.json`.
fn per_file_graph_path(page: &str) -> String {
    let rest = page.strip_prefix("pages/").unwrap();
    assert!(rest.to_ascii_lowercase().ends_with(".md"), "{page}");
    format!("_graph/by-file/{}.json", &rest[..rest.len() - 3])
}

/// (targetPath, relationType, direction, reason)
type RelationKey = (String, String, String, Option<String>);

fn relation_key(v: &Value, target_key: &str) -> RelationKey {
    (
        str_of(v, target_key).to_string(),
        str_of(v, "relationType").to_string(),
        str_of(v, "direction").to_string(),
        v["reason"].as_str().map(str::to_string),
    )
}

/// Every related item of a page, following cursors.
fn all_related(kb: &KnowledgeBase, file_id: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let input = json!({ "fileId": file_id, "limit": 200, "cursor": cursor });
        let page = call(kb, "read_related", input).unwrap();
        out.extend(items(&page, "items"));
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => return out,
        }
    }
}

fn serialized(kb: &KnowledgeBase, tool: &str, input: &Value) -> String {
    let output = match call(kb, tool, input.clone()) {
        Ok(output) => output,
        Err(error) => error.envelope("req-fixed"),
    };
    serde_json::to_string(&output).unwrap()
}

fn check_bundle(name: &str) {
    let Some(root) = bundle_or_skip(name) else {
        return;
    };
    let started = Instant::now();
    let opened = open_bundle(&root);
    let kb = &opened.kb;
    let built = started.elapsed();

    let disk = disk_files(&root);
    let records = document_records(&root, &disk);
    let tree = walk_tree(kb);
    let walked = started.elapsed();

    // (b) The tree lists exactly the files on disk; a file it leaves out is in the diagnostics.
    let diagnosed: BTreeSet<&str> = opened
        .report
        .diagnostics
        .iter()
        .map(|d| d.path.as_str())
        .collect();
    for path in disk.iter().filter(|p| !tree.contains_key(*p)) {
        assert!(
            diagnosed.contains(path.as_str()),
            "{name}: {path} is on disk but neither listed nor diagnosed"
        );
    }
    let extra: Vec<&String> = tree.keys().filter(|p| !disk.contains(*p)).collect();
    assert!(
        extra.is_empty(),
        "{name}: the tree lists files that are not on disk: {extra:?}"
    );
    assert_eq!(
        opened.report.manifest.counts.source_pages,
        records.len() as u64,
        "{name}: source pages vs document records"
    );

    // (a) The source pages are exactly the documents of the packets.
    let source_pages: BTreeSet<&String> = tree
        .iter()
        .filter(|(_, f)| f.source_file_id.is_some())
        .map(|(p, _)| p)
        .collect();
    let documents: BTreeSet<&String> = records.keys().collect();
    assert_eq!(
        source_pages, documents,
        "{name}: source-backed tree files vs the documents of _index/pages"
    );

    // (a) Every listed file reads back with its bytes on disk, by path and by fileId; documents
    // also carry the record's title and byte count.
    for (i, (path, file)) in tree.iter().enumerate() {
        let bytes = std::fs::read(root.join(path)).unwrap();
        let sample = i % SAMPLE_EVERY == 0;
        let read = |input: Value| {
            if sample {
                checked_call(kb, "read_file", input)
            } else {
                call(kb, "read_file", input)
            }
            .unwrap_or_else(|e| panic!("{name}: read_file {path}: {e}"))
        };
        let by_path = read(json!({ "path": path }));
        assert!(
            by_path["content"].as_str().unwrap().as_bytes() == bytes.as_slice(),
            "{name}: read_file {{path: {path}}} differs from the bytes on disk"
        );
        assert_eq!(str_of(&by_path["file"], "fileId"), file.file_id);
        assert_eq!(str_of(&by_path["file"], "path"), path);
        assert_eq!(
            by_path["file"]["sizeBytes"].as_u64(),
            Some(bytes.len() as u64)
        );
        let by_id = read(json!({ "fileId": file.file_id }));
        assert!(
            by_id["content"].as_str().unwrap().as_bytes() == bytes.as_slice(),
            "{name}: read_file {{fileId}} of {path} differs from the bytes on disk"
        );
        assert_eq!(str_of(&by_id["file"], "path"), path);
        if sample {
            checked_call(kb, "get_file", json!({ "fileId": file.file_id })).unwrap();
        }
        if let Some(record) = records.get(path) {
            assert_eq!(file.source_file_id.as_deref(), Some(file.file_id.as_str()));
            assert_eq!(record.byte_count, bytes.len() as u64, "{name}: {path}");
            let detail = call(kb, "get_file", json!({ "fileId": file.file_id })).unwrap();
            assert_eq!(
                detail["file"]["title"].as_str(),
                Some(record.title.as_str()),
                "{name}: title of {path} (rules#titles: the record's title)"
            );
            assert_eq!(
                detail["file"]["sourceFileId"].as_str(),
                Some(file.file_id.as_str())
            );
        }
    }
    let read_all = started.elapsed();

    // (c) read_related of every source page equals its per-file graph record.
    let mut with_graph = 0;
    for (i, (path, record)) in records.iter().enumerate() {
        let file = &tree[path];
        let graph_path = per_file_graph_path(path);
        let on_disk = disk.contains(&graph_path);
        match &record.graph_path {
            Some(declared) => {
                assert_eq!(declared, &graph_path, "{name}: graphPath of {path}");
                assert!(on_disk, "{name}: {graph_path} is declared but missing");
            }
            None => assert!(!on_disk, "{name}: {graph_path} exists but is not declared"),
        }
        let related = all_related(kb, &file.file_id);
        if i % SAMPLE_EVERY == 0 {
            checked_call(kb, "read_related", json!({ "fileId": file.file_id })).unwrap();
            checked_call(
                kb,
                "expand_graph",
                json!({ "fileId": file.file_id, "depth": 2 }),
            )
            .unwrap();
        }
        if !on_disk {
            assert!(
                related.is_empty(),
                "{name}: {path} has no per-file graph but read_related lists {} items",
                related.len()
            );
            continue;
        }
        with_graph += 1;
        let text = std::fs::read_to_string(root.join(&graph_path)).unwrap();
        let graph: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(str_of(&graph, "path"), path);
        let expected_items = items(&graph, "relationships");
        let expected: BTreeSet<RelationKey> = expected_items
            .iter()
            .map(|r| relation_key(r, "targetPath"))
            .collect();
        let got: BTreeSet<RelationKey> = related.iter().map(|r| relation_key(r, "path")).collect();
        assert_eq!(got, expected, "{name}: read_related of {path}");
        assert_eq!(related.len(), expected_items.len(), "{name}: {path}");
        let titles: HashMap<&str, &str> = expected_items
            .iter()
            .map(|r| (str_of(r, "targetPath"), str_of(r, "targetTitle")))
            .collect();
        for item in &related {
            let target = str_of(item, "path");
            assert_eq!(str_of(item, "fromFileId"), file.file_id);
            assert_eq!(str_of(item, "fileId"), tree[target].file_id);
            assert_eq!(str_of(item, "title"), titles[target], "{name}: {target}");
        }
        // The first ring of expand_graph is the same set of targets when the fanout allows.
        if expected.len() <= 25 {
            let expanded = call(
                kb,
                "expand_graph",
                json!({ "fileId": file.file_id, "depth": 1, "fanout": 25, "limit": 200 }),
            )
            .unwrap();
            let targets: BTreeSet<String> = items(&expanded, "relationships")
                .iter()
                .map(|r| str_of(r, "path").to_string())
                .collect();
            let expected_targets: BTreeSet<String> = expected.iter().map(|k| k.0.clone()).collect();
            assert_eq!(targets, expected_targets, "{name}: expand_graph of {path}");
        }
    }
    let related_all = started.elapsed();

    // (d) Every tool answers at least once with schema-valid output.
    let (first_doc, first_record) = records.iter().next().unwrap();
    let seed = records
        .iter()
        .find(|(_, r)| r.graph_path.is_some())
        .map_or(first_doc, |(p, _)| p);
    let seed_id = tree[seed].file_id.clone();
    checked_call(kb, "list_tree", json!({})).unwrap();
    checked_call(kb, "get_file", json!({ "fileId": seed_id })).unwrap();
    checked_call(kb, "read_file", json!({ "path": seed })).unwrap();
    checked_call(kb, "read_file", json!({ "fileId": seed_id })).unwrap();
    checked_call(kb, "read_related", json!({ "fileId": seed_id })).unwrap();
    checked_call(kb, "expand_graph", json!({ "fileId": seed_id, "depth": 2 })).unwrap();
    assert!(!first_record.title.is_empty());

    // A title search finds its page in the top 10 (titles shared by several pages are skipped).
    let mut title_count: HashMap<&str, usize> = HashMap::new();
    for record in records.values() {
        *title_count.entry(record.title.as_str()).or_default() += 1;
    }
    let mut searched = Vec::new();
    for (path, record) in records
        .iter()
        .step_by((records.len() / TITLE_SEARCHES).clamp(1, SAMPLE_EVERY))
    {
        if searched.len() == TITLE_SEARCHES {
            break;
        }
        if title_count[record.title.as_str()] != 1 || record.title.chars().count() < 2 {
            continue;
        }
        let out = checked_call(
            kb,
            "search_files",
            json!({ "query": record.title, "limit": 10 }),
        )
        .unwrap();
        let found: Vec<&str> = out["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| str_of(item, "path"))
            .collect();
        assert!(
            found.contains(&path.as_str()),
            "{name}: searching the title {:?} of {path} gave {found:?}",
            record.title
        );
        searched.push(record.title.clone());
    }
    assert!(!searched.is_empty(), "{name}: no unique title to search");

    // (e) Same request, same bytes — twice on one opening, and on a second opening of the index.
    let second = KnowledgeBase::open(
        opened.index_dir.path(),
        Some(&root),
        common::serve_options(),
    )
    .unwrap();
    let first_page = call(
        kb,
        "list_tree",
        json!({ "parentPath": "pages", "limit": 3 }),
    )
    .unwrap();
    let mut requests = vec![
        ("list_tree", json!({})),
        ("list_tree", json!({ "parentPath": "pages", "limit": 3 })),
        ("get_file", json!({ "fileId": seed_id })),
        ("get_file", json!({ "fileId": seed })),
        ("read_file", json!({ "path": seed })),
        ("read_file", json!({ "path": "index.md" })),
        ("read_related", json!({ "fileId": seed_id, "limit": 2 })),
        ("expand_graph", json!({ "fileId": seed_id, "depth": 2 })),
        ("search_files", json!({ "query": searched[0] })),
        (
            "search_files",
            json!({ "query": searched[0], "mode": "hybrid", "limit": 3 }),
        ),
        ("read_file", json!({ "path": "pages/does-not-exist.md" })),
    ];
    if let Some(next) = first_page["nextCursor"].as_str() {
        requests.push((
            "list_tree",
            json!({ "parentPath": "pages", "limit": 3, "cursor": next }),
        ));
    }
    for (tool, input) in &requests {
        let a = serialized(kb, tool, input);
        let b = serialized(kb, tool, input);
        let c = serialized(&second, tool, input);
        assert_eq!(a, b, "{name}: {tool} {input} is not deterministic");
        assert_eq!(
            a, c,
            "{name}: {tool} {input} differs after reopening the index"
        );
    }

    eprintln!(
        "{name}: {} files on disk, {} listed, {} documents ({with_graph} with a per-file graph), \
         {} diagnostics; build {:.1}s, tree {:.1}s, reads {:.1}s, related {:.1}s, total {:.1}s",
        disk.len(),
        tree.len(),
        records.len(),
        opened.report.diagnostics.len(),
        built.as_secs_f64(),
        (walked - built).as_secs_f64(),
        (read_all - walked).as_secs_f64(),
        (related_all - read_all).as_secs_f64(),
        started.elapsed().as_secs_f64(),
    );
}

#[test]
fn focowiki_docs_bundle() {
    check_bundle("focowiki-docs");
}

#[test]
fn scifact_bundle() {
    check_bundle("scifact");
}

#[test]
fn cmrc2018_zh_bundle() {
    check_bundle("cmrc2018-zh");
}

#[test]
fn xquad_zh_bundle() {
    check_bundle("xquad-zh");
}

#[test]
fn an_absent_bundle_is_skipped() {
    assert!(bundle_or_skip("no-such-bundle").is_none());
}

#[test]
fn document_packet_names() {
    assert!(is_document_packet("all-documents.json"));
    assert!(is_document_packet("指南-documents.json"));
    assert!(is_document_packet("all-documents-part-0001.json"));
    assert!(!is_document_packet("all-documents-part-1.json"));
    assert!(!is_document_packet("index.json"));
    assert!(!is_document_packet("all-relationships.json"));
}
