//! Incremental re-indexing (issue 6): a build over a live index reads and indexes only what
//! changed (by size and mtime, and checksum) — added, changed, removed and renamed pages and
//! relation records — increments the revision when the content changed, refuses the cursors of
//! the old revision, and answers every tool exactly as a full build of the same bundle would.
//!
//! Each test runs on a temporary copy of `fixtures/focowiki-docs` and on a small generated
//! bundle. Every file's mtime is pinned to a fixed past time after the copy, and each edit sets
//! a later mtime of its own, so change detection by size and mtime is exercised
//! deterministically (an edit that keeps the size is caught by its mtime alone).
//!
//! Each test checks the tool answers first and the build's `work` report last, so a build that
//! is right but not incremental fails on the work report only.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use common::{checked_call, serve_options};
use kbtools::bundle_gen::{generate, GenOptions};
use kbtools::index::{self, BuildOptions, BuildReport, BuildWork};
use kbtools::kb::KnowledgeBase;
use serde_json::{json, Value};

/// 2026-01-01T00:00:00Z: the mtime of every file of a fresh workspace.
const BASE_MTIME: u64 = 1_767_225_600;
/// Most files a one-file change may read again.
const FEW_FILES: u64 = 3;

/// A bundle in a temporary folder and its index folder.
struct Workspace {
    name: &'static str,
    _tmp: tempfile::TempDir,
    bundle: PathBuf,
    index_dir: PathBuf,
    /// Edits so far (each gets its own mtime).
    edits: u64,
}

fn set_mtime(path: &Path, mtime: SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(mtime))
        .unwrap_or_else(|e| panic!("set mtime of {}: {e}", path.display()));
}

fn base_mtime() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(BASE_MTIME)
}

/// Sets every file's mtime under `dir` to `BASE_MTIME`.
fn pin_mtimes(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            pin_mtimes(&entry.path());
        } else {
            set_mtime(&entry.path(), base_mtime());
        }
    }
}

impl Workspace {
    fn fixture() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let bundle = tmp.path().join("focowiki-docs");
        common::copy_dir(&common::fixture("focowiki-docs"), &bundle);
        Self::new("focowiki-docs", tmp, bundle)
    }

    fn generated() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let bundle = tmp.path().join("generated");
        let options = GenOptions {
            pages: 200,
            seed: 7,
            queries: 20,
            ..GenOptions::default()
        };
        generate(&bundle, &options).unwrap();
        Self::new("generated", tmp, bundle)
    }

    fn new(name: &'static str, tmp: tempfile::TempDir, bundle: PathBuf) -> Self {
        pin_mtimes(&bundle);
        let index_dir = tmp.path().join("index");
        Workspace {
            name,
            _tmp: tmp,
            bundle,
            index_dir,
            edits: 0,
        }
    }

    fn build(&self) -> BuildReport {
        index::build(
            &self.bundle,
            &self.index_dir,
            &BuildOptions::default(),
            &mut |_| {},
        )
        .unwrap()
    }

    fn open(&self) -> KnowledgeBase {
        KnowledgeBase::open(&self.index_dir, Some(&self.bundle), serve_options()).unwrap()
    }

    fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.bundle.join(path)).unwrap()
    }

    /// Writes a file with an mtime no earlier write had.
    fn write(&mut self, path: &str, content: &str) {
        self.edits += 1;
        let file = self.bundle.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, content).unwrap();
        set_mtime(&file, base_mtime() + Duration::from_secs(3600 * self.edits));
    }

    fn remove(&self, path: &str) {
        std::fs::remove_file(self.bundle.join(path)).unwrap();
    }

    /// Moves a file (its mtime and size stay).
    fn rename(&self, from: &str, to: &str) {
        std::fs::rename(self.bundle.join(from), self.bundle.join(to)).unwrap();
    }

    /// The document pages (not the navigation) whose `_graph/by-file` record lists
    /// at least two relations, in path order.
    fn related_pages(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut dirs = vec![self.bundle.join("pages")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_str().unwrap();
                if path.is_dir() {
                    dirs.push(path);
                } else if name.ends_with(".md") && !is_navigation(name) {
                    let relative = path.strip_prefix(&self.bundle).unwrap().to_str().unwrap();
                    if self.relationships(relative).len() >= 2 {
                        out.push(relative.to_string());
                    }
                }
            }
        }
        out.sort();
        assert!(
            out.len() >= 3,
            "{}: pages with relations: {out:?}",
            self.name
        );
        out
    }

    /// The relationships of a page's `_graph/by-file` record (none when it has no record).
    fn relationships(&self, page: &str) -> Vec<Value> {
        match std::fs::read(self.bundle.join(graph_record(page))) {
            Ok(bytes) => serde_json::from_slice::<Value>(&bytes).unwrap()["relationships"]
                .as_array()
                .unwrap()
                .clone(),
            Err(_) => Vec::new(),
        }
    }
}

/// The directory navigation of a bundle (`index.md` and its leaves), not a document page.
fn is_navigation(name: &str) -> bool {
    name == "index.md"
        || name.starts_with("index-directory-leaf-")
        || name.starts_with("index-extension-leaf-")
}

fn workspaces() -> [Workspace; 2] {
    [Workspace::fixture(), Workspace::generated()]
}

/// `pages/a/b.md` → `_graph/by-file/a/b.json`.
fn graph_record(page: &str) -> String {
    let stem = &page["pages/".len()..page.len() - ".md".len()];
    format!("_graph/by-file/{stem}.json")
}

fn parent_of(path: &str) -> &str {
    &path[..path.rfind('/').unwrap()]
}

fn call(kb: &KnowledgeBase, tool: &str, input: Value) -> Value {
    checked_call(kb, tool, input.clone()).unwrap_or_else(|e| panic!("{tool} {input}: {e:?}"))
}

fn error_code(kb: &KnowledgeBase, tool: &str, input: Value) -> String {
    match checked_call(kb, tool, input.clone()) {
        Ok(out) => panic!("{tool} {input} should fail:\n{out:#}"),
        Err(e) => e.code.as_str().to_string(),
    }
}

fn paths_of(out: &Value, key: &str) -> Vec<String> {
    out[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap().to_string())
        .collect()
}

/// The paths `search_files` finds for `query` (file mode, the top 50).
fn search(kb: &KnowledgeBase, query: &str) -> Vec<String> {
    let out = call(
        kb,
        "search_files",
        json!({ "query": query, "mode": "file", "limit": 50 }),
    );
    paths_of(&out, "items")
}

/// The whole listing of a directory: path → `resourceRevision`.
fn tree(kb: &KnowledgeBase, parent: &str) -> Vec<(String, Value)> {
    let out = call(
        kb,
        "list_tree",
        json!({ "parentPath": parent, "limit": 500 }),
    );
    assert!(out["nextCursor"].is_null());
    out["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["path"].as_str().unwrap().to_string(),
                i["resourceRevision"].clone(),
            )
        })
        .collect()
}

/// (target path, reason) of each item `read_related` lists for a page.
/// The items of `read_related` for `page`, in path order (the tool orders them by target id).
fn related(kb: &KnowledgeBase, page: &str) -> Vec<(String, String)> {
    let out = call(kb, "read_related", json!({ "fileId": page, "limit": 200 }));
    let mut items: Vec<(String, String)> = out["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["path"].as_str().unwrap().to_string(),
                i["reason"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    items.sort();
    items
}

fn revision(report: &BuildReport) -> u64 {
    report.manifest.active_content_revision
}

/// The work report of an incremental build that read at most `FEW_FILES` files.
fn assert_incremental(name: &str, work: &BuildWork, indexed: u64, removed: u64) {
    assert!(
        work.incremental && !work.unchanged,
        "{name}: not an incremental build: {work:?}"
    );
    assert!(
        work.files_read <= FEW_FILES,
        "{name}: read {} files: {work:?}",
        work.files_read
    );
    assert_eq!(
        (work.pages_indexed, work.pages_removed),
        (indexed, removed),
        "{name}: pages (indexed, removed): {work:?}"
    );
}

#[test]
fn an_unchanged_bundle_keeps_its_generation_revision_and_cursors() {
    for ws in workspaces() {
        let name = ws.name;
        let first = ws.build();
        assert!(!first.work.incremental && !first.work.unchanged, "{name}");
        let kb = ws.open();
        let page = call(
            &kb,
            "list_tree",
            json!({ "parentPath": "pages", "limit": 1 }),
        );
        let cursor = page["nextCursor"].as_str().unwrap().to_string();
        let input = json!({ "parentPath": "pages", "limit": 1, "cursor": cursor });
        let second_page = call(&kb, "list_tree", input.clone());
        let generation = index::current_generation(&ws.index_dir).unwrap();
        drop(kb);

        let again = ws.build();
        assert_eq!(revision(&again), revision(&first), "{name}");
        assert!(!again.revision_changed, "{name}");
        assert_eq!(again.manifest, first.manifest, "{name}");
        let kb = ws.open();
        // The cursor of the unchanged revision still pages on, to the same page.
        assert_eq!(call(&kb, "list_tree", input), second_page, "{name}");
        drop(kb);

        assert!(
            again.work.unchanged && !again.work.incremental,
            "{name}: {:?}",
            again.work
        );
        assert_eq!(
            (
                again.work.files_read,
                again.work.pages_indexed,
                again.work.pages_removed
            ),
            (0, 0, 0),
            "{name}: {:?}",
            again.work
        );
        assert_eq!(
            index::current_generation(&ws.index_dir).unwrap(),
            generation,
            "{name}: the live generation is kept as it is"
        );
    }
}

#[test]
fn a_touched_page_with_the_same_bytes_keeps_the_revision_and_cursors() {
    for mut ws in workspaces() {
        let name = ws.name;
        let page = ws.related_pages()[0].clone();
        let first = ws.build();
        let kb = ws.open();
        let input = json!({ "query": "the", "mode": "file", "limit": 2 });
        let out = call(&kb, "search_files", input.clone());
        let mut next = input.clone();
        next["cursor"] = out["nextCursor"].clone();
        let second_page = call(&kb, "search_files", next.clone());
        drop(kb);

        // New mtime, same bytes: read again, but nothing changed.
        let content = ws.read(&page);
        ws.write(&page, &content);
        let second = ws.build();
        assert_eq!(revision(&second), revision(&first), "{name}");
        assert!(!second.revision_changed, "{name}");
        assert_eq!(second.manifest.counts, first.manifest.counts);
        let kb = ws.open();
        assert_eq!(call(&kb, "search_files", next), second_page, "{name}");
        assert!(tree(&kb, parent_of(&page))
            .iter()
            .filter(|(_, r)| !r.is_null())
            .all(|(_, r)| *r == revision(&first)));
        drop(kb);

        assert_incremental(name, &second.work, 0, 0);
    }
}

#[test]
fn a_changed_page_is_reindexed_alone_and_takes_the_new_revision() {
    for mut ws in workspaces() {
        let name = ws.name;
        let page = ws.related_pages()[0].clone();
        let original = ws.read(&page);
        ws.write(&page, &format!("{original}\nMarker: kbtestalpha.\n"));
        let first = ws.build();
        let kb = ws.open();
        assert_eq!(search(&kb, "kbtestalpha"), [page.as_str()], "{name}");
        let tree_before = tree(&kb, parent_of(&page));
        assert!(tree_before
            .iter()
            .filter(|(_, r)| !r.is_null())
            .all(|(_, r)| *r == revision(&first)));
        drop(kb);

        // The same size: only the mtime tells.
        let changed = format!("{original}\nMarker: kbtestbravo.\n");
        ws.write(&page, &changed);
        let second = ws.build();
        assert_eq!(revision(&second), revision(&first) + 1, "{name}");
        assert!(second.revision_changed);
        assert_eq!(second.manifest.counts, first.manifest.counts, "{name}");
        let kb = ws.open();
        assert_eq!(search(&kb, "kbtestbravo"), [page.as_str()], "{name}");
        assert!(search(&kb, "kbtestalpha").is_empty(), "{name}");
        let read = call(&kb, "read_file", json!({ "path": page }));
        assert_eq!(read["content"], changed.as_str());
        let detail = call(&kb, "get_file", json!({ "fileId": page }));
        assert_eq!(detail["file"]["activeContentRevision"], revision(&second));
        assert_eq!(detail["file"]["sizeBytes"], changed.len());
        // Only the changed page takes the new resource revision.
        let tree_after = tree(&kb, parent_of(&page));
        assert_eq!(tree_after.len(), tree_before.len());
        for ((path, before), (same_path, after)) in tree_before.iter().zip(&tree_after) {
            assert_eq!(path, same_path);
            if *path == page {
                assert_eq!(*after, json!(revision(&second)), "{name}: {path}");
            } else {
                assert_eq!(after, before, "{name}: {path}");
            }
        }
        drop(kb);

        assert_incremental(name, &second.work, 1, 1);
    }
}

#[test]
fn an_added_page_is_indexed_alone() {
    for mut ws in workspaces() {
        let name = ws.name;
        let neighbour = ws.related_pages()[0].clone();
        let first = ws.build();
        let added = format!("{}/kbtest-added-page.md", parent_of(&neighbour));
        let content = "---\ntitle: \"Kbtest Added Page\"\n---\n# Kbtest Added Page\n\nThe word kbtestaddedword lives here.\n";
        ws.write(&added, content);
        let second = ws.build();
        assert_eq!(revision(&second), revision(&first) + 1, "{name}");
        let counts = &second.manifest.counts;
        assert_eq!(counts.source_pages, first.manifest.counts.source_pages + 1);
        assert_eq!(counts.files, first.manifest.counts.files + 1);
        assert_eq!(counts.relations, first.manifest.counts.relations);
        let kb = ws.open();
        assert_eq!(search(&kb, "kbtestaddedword"), [added.as_str()], "{name}");
        let read = call(&kb, "read_file", json!({ "path": added }));
        assert_eq!(read["content"], content);
        let detail = call(&kb, "get_file", json!({ "fileId": added }));
        assert_eq!(detail["file"]["title"], "Kbtest Added Page");
        let listed = tree(&kb, parent_of(&added));
        let entry = listed.iter().find(|(p, _)| *p == added).expect("listed");
        assert_eq!(entry.1, json!(revision(&second)), "{name}");
        assert!(listed
            .iter()
            .filter(|(p, r)| *p != added && !r.is_null())
            .all(|(_, r)| *r == revision(&first)));
        drop(kb);

        assert_incremental(name, &second.work, 1, 0);
    }
}

#[test]
fn a_removed_page_is_gone_from_every_tool() {
    for ws in workspaces() {
        let name = ws.name;
        let pages = ws.related_pages();
        let first = ws.build();
        let kb = ws.open();
        // A page with relations, and a neighbour that lists it.
        let (removed, neighbour) = pages
            .iter()
            .find_map(|page| {
                ws.relationships(page).iter().find_map(|r| {
                    let target = r["targetPath"].as_str().unwrap().to_string();
                    related(&kb, &target)
                        .iter()
                        .any(|(p, _)| p == page)
                        .then(|| (page.clone(), target))
                })
            })
            .expect("a page its neighbour relates back to");
        let removed_id = call(&kb, "get_file", json!({ "fileId": removed }))["file"]["fileId"]
            .as_str()
            .unwrap()
            .to_string();
        let title = call(&kb, "get_file", json!({ "fileId": removed }))["file"]["title"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(search(&kb, &title).contains(&removed), "{name}: {title}");
        let expand = call(
            &kb,
            "expand_graph",
            json!({ "fileId": neighbour, "depth": 2, "limit": 200 }),
        );
        assert!(paths_of(&expand, "relationships").contains(&removed));
        drop(kb);

        ws.remove(&removed);
        let second = ws.build();
        assert_eq!(revision(&second), revision(&first) + 1, "{name}");
        assert_eq!(
            second.manifest.counts.source_pages,
            first.manifest.counts.source_pages - 1
        );
        assert!(second.manifest.counts.relations < first.manifest.counts.relations);
        let kb = ws.open();
        for input in [json!({ "path": removed }), json!({ "fileId": removed_id })] {
            assert_eq!(error_code(&kb, "read_file", input), "NOT_FOUND", "{name}");
        }
        assert_eq!(
            error_code(&kb, "get_file", json!({ "fileId": removed_id })),
            "NOT_FOUND"
        );
        assert_eq!(
            error_code(&kb, "read_related", json!({ "fileId": removed })),
            "NOT_FOUND"
        );
        assert!(!search(&kb, &title).contains(&removed), "{name}: {title}");
        assert!(!search(&kb, &removed).contains(&removed), "{name}");
        assert!(
            !related(&kb, &neighbour).iter().any(|(p, _)| *p == removed),
            "{name}: {neighbour} still relates to {removed}"
        );
        let expand = call(
            &kb,
            "expand_graph",
            json!({ "fileId": neighbour, "depth": 2, "limit": 200 }),
        );
        assert!(!paths_of(&expand, "relationships").contains(&removed));
        assert!(!tree(&kb, parent_of(&removed))
            .iter()
            .any(|(p, _)| *p == removed));
        drop(kb);

        assert_incremental(name, &second.work, 0, 1);
    }
}

#[test]
fn a_renamed_page_is_served_and_found_under_its_new_path_only() {
    for ws in workspaces() {
        let name = ws.name;
        let page = ws.related_pages()[1].clone();
        let content = ws.read(&page);
        let first = ws.build();
        let kb = ws.open();
        let title = call(&kb, "get_file", json!({ "fileId": page }))["file"]["title"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(search(&kb, &title).contains(&page), "{name}: {title}");
        drop(kb);

        let renamed = format!("{}/kbtest-renamed-page.md", parent_of(&page));
        ws.rename(&page, &renamed);
        let second = ws.build();
        assert_eq!(revision(&second), revision(&first) + 1, "{name}");
        assert_eq!(
            second.manifest.counts.source_pages,
            first.manifest.counts.source_pages
        );
        let kb = ws.open();
        assert_eq!(
            error_code(&kb, "read_file", json!({ "path": page })),
            "NOT_FOUND"
        );
        let read = call(&kb, "read_file", json!({ "path": renamed }));
        assert_eq!(read["content"], content.as_str());
        let by_path = call(
            &kb,
            "search_files",
            json!({ "query": renamed, "mode": "file", "limit": 10 }),
        );
        assert_eq!(paths_of(&by_path, "items")[0], renamed, "{name}");
        let by_title = search(&kb, &title);
        assert!(by_title.contains(&renamed), "{name}: {title}");
        assert!(!by_title.contains(&page), "{name}: {title}");
        let listed = tree(&kb, parent_of(&page));
        assert!(listed
            .iter()
            .any(|(p, r)| *p == renamed && *r == json!(revision(&second))));
        assert!(!listed.iter().any(|(p, _)| *p == page));
        drop(kb);

        assert_incremental(name, &second.work, 1, 1);
    }
}

#[test]
fn a_changed_relation_record_changes_read_related() {
    for mut ws in workspaces() {
        let name = ws.name;
        let page = ws.related_pages()[0].clone();
        let record_path = graph_record(&page);
        let first = ws.build();
        let kb = ws.open();
        let before = related(&kb, &page);
        let want: Vec<(String, String)> = ws
            .relationships(&page)
            .iter()
            .map(|r| {
                (
                    r["targetPath"].as_str().unwrap().to_string(),
                    r["reason"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        assert_eq!(before, want, "{name}");
        drop(kb);

        // A new reason for the first relationship; the last one dropped.
        let mut record: Value = serde_json::from_str(&ws.read(&record_path)).unwrap();
        let relationships = record["relationships"].as_array_mut().unwrap();
        relationships.pop();
        relationships[0]["reason"] = json!("Kbtest changed this reason.");
        let text = serde_json::to_string(&record).unwrap();
        ws.write(&record_path, &text);
        let second = ws.build();
        assert_eq!(revision(&second), revision(&first) + 1, "{name}");
        assert_eq!(
            second.manifest.counts.relations,
            first.manifest.counts.relations - 1
        );
        let kb = ws.open();
        let mut expected = want.clone();
        expected.pop();
        expected[0].1 = "Kbtest changed this reason.".into();
        assert_eq!(related(&kb, &page), expected, "{name}");
        let read = call(&kb, "read_file", json!({ "path": record_path }));
        assert_eq!(read["content"], text.as_str());
        drop(kb);

        assert_incremental(name, &second.work, 0, 0);
    }
}

#[test]
fn cursors_of_the_old_revision_are_refused_after_a_reindex() {
    for mut ws in workspaces() {
        let name = ws.name;
        let page = ws.related_pages()[0].clone();
        let other = ws.related_pages()[2].clone();
        ws.build();
        let kb = ws.open();
        let inputs = [
            ("list_tree", json!({ "parentPath": "pages", "limit": 1 })),
            (
                "search_files",
                json!({ "query": "the", "mode": "file", "limit": 1 }),
            ),
            ("read_related", json!({ "fileId": page, "limit": 1 })),
            (
                "expand_graph",
                json!({ "fileId": page, "depth": 2, "limit": 1 }),
            ),
        ];
        let with_cursors: Vec<(&str, Value)> = inputs
            .iter()
            .map(|(tool, input)| {
                let out = call(&kb, tool, input.clone());
                let cursor = out["nextCursor"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{name}: {tool} {input} has no next page"));
                let mut next = input.clone();
                next["cursor"] = json!(cursor);
                // Valid before the change.
                call(&kb, tool, next.clone());
                (*tool, next)
            })
            .collect();
        drop(kb);

        let content = ws.read(&other);
        ws.write(&other, &format!("{content}\nOne more line.\n"));
        let report = ws.build();
        assert!(report.revision_changed, "{name}");
        let kb = ws.open();
        for (tool, input) in &with_cursors {
            let error = checked_call(&kb, tool, input.clone()).unwrap_err();
            assert_eq!(error.code.as_str(), "VALIDATION_ERROR", "{name}: {tool}");
            assert_eq!(error.http_status(), 422);
            assert_eq!(error.message, "Pagination cursor is invalid.");
            assert_eq!(
                error.details.as_ref().unwrap()["field"],
                "cursor",
                "{name}: {tool}"
            );
        }
        // Fresh cursors of the new revision page on.
        for (tool, input) in &inputs {
            let out = call(&kb, tool, input.clone());
            let mut next = input.clone();
            next["cursor"] = out["nextCursor"].clone();
            call(&kb, tool, next);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// An incremental index answers as a full build of the same bundle does

/// Drops what legitimately differs between an index updated in place and one built from
/// scratch: the revision numbers (`activeContentRevision` counts the builds that changed
/// content; `resourceRevision` is the revision a file last changed at) and the cursors that
/// carry them (`nextCursor` becomes whether there is one; the pages behind it are compared).
fn normalized(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| *k != "activeContentRevision" && *k != "resourceRevision")
                .map(|(k, v)| {
                    let v = if k == "nextCursor" {
                        json!(!v.is_null())
                    } else {
                        normalized(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(normalized).collect()),
        other => other.clone(),
    }
}

/// The pages of a paged call (following `nextCursor`; a search's first three), normalized; an
/// error as its code and message. (No schema check here: the other tests and
/// `tests/it/contract_schema.rs` do that.)
fn answer(kb: &KnowledgeBase, tool: &str, input: &Value) -> Vec<Value> {
    let most = if tool == "search_files" { 3 } else { 100 };
    let mut pages = Vec::new();
    let mut input = input.clone();
    loop {
        match common::call(kb, tool, input.clone()) {
            Err(e) => {
                pages.push(json!({ "error": e.code.as_str(), "message": e.message }));
                break;
            }
            Ok(out) => {
                pages.push(normalized(&out));
                match out["nextCursor"].as_str() {
                    Some(next) if pages.len() < most => input["cursor"] = json!(next),
                    _ => break,
                }
            }
        }
    }
    pages
}

/// The paths (and scores) a paged answer lists, for a failure message.
fn summary(pages: &[Value]) -> String {
    let listed: Vec<String> = pages
        .iter()
        .flat_map(|page| {
            ["items", "relationships"]
                .iter()
                .filter_map(|key| page[*key].as_array())
                .flatten()
                .map(|item| match item["score"].as_f64() {
                    Some(score) => format!("{} {score:.6}", item["path"]),
                    None => item["path"].to_string(),
                })
        })
        .take(30)
        .collect();
    listed.join(", ")
}

/// The first place two JSON values differ.
fn first_difference(a: &Value, b: &Value, at: String) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| {
                first_difference(
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                    format!("{at}/{k}"),
                )
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_difference(p, q, format!("{at}/{i}"))),
        _ => (a != b).then(|| format!("{at}: {a} ≠ {b}")),
    }
}

/// The calls compared: the whole tree in pages of 7, and for every file of the tree and the
/// paths that no longer exist, its detail, content, relations and depth-2 walk; searches in
/// every mode.
fn calls(kb: &KnowledgeBase, gone: &[String], queries: &[String]) -> Vec<(&'static str, Value)> {
    let mut out = Vec::new();
    let mut files = gone.to_vec();
    let mut dirs = vec![String::new()];
    while let Some(dir) = dirs.pop() {
        let input = json!({ "parentPath": dir, "limit": 7 });
        for page in answer(kb, "list_tree", &input) {
            for item in page["items"].as_array().unwrap() {
                let path = item["path"].as_str().unwrap().to_string();
                if item["entryType"] == "directory" {
                    dirs.push(path);
                } else {
                    files.push(path);
                }
            }
        }
        out.push(("list_tree", input));
    }
    for path in files {
        out.push(("get_file", json!({ "fileId": path })));
        out.push(("read_file", json!({ "path": path })));
        if path.starts_with("pages/") {
            out.push(("read_related", json!({ "fileId": path, "limit": 5 })));
            out.push((
                "expand_graph",
                json!({ "fileId": path, "depth": 2, "limit": 25 }),
            ));
        }
    }
    for query in queries {
        for mode in ["file", "graph", "hybrid"] {
            out.push((
                "search_files",
                json!({ "query": query, "mode": mode, "limit": 10 }),
            ));
        }
    }
    out
}

#[test]
fn an_incremental_index_answers_every_tool_as_a_full_build_does() {
    // Both bundles run before the verdict, so a failure names every difference.
    let mut problems: Vec<String> = Vec::new();
    for mut ws in workspaces() {
        let name = ws.name;
        let pages = ws.related_pages();
        let first = ws.build();
        let mut works = Vec::new();

        // Changed, added, removed and renamed pages and a changed relation record, each
        // followed by a build over the live index.
        let changed = pages[0].clone();
        let content = ws.read(&changed);
        ws.write(&changed, &format!("{content}\nMarker: kbtestcharlie.\n"));
        works.push(("changed page", ws.build().work));
        let added = format!("{}/kbtest-added-page.md", parent_of(&pages[1]));
        ws.write(
            &added,
            "---\ntitle: \"Kbtest Added Page\"\n---\n# Kbtest Added Page\n\nkbtestaddedword\n",
        );
        works.push(("added page", ws.build().work));
        let removed = pages[2].clone();
        ws.remove(&removed);
        works.push(("removed page", ws.build().work));
        let renamed_from = pages[3].clone();
        let renamed = format!("{}/kbtest-renamed-page.md", parent_of(&renamed_from));
        ws.rename(&renamed_from, &renamed);
        works.push(("renamed page", ws.build().work));
        let record_path = graph_record(&pages[4]);
        let mut record: Value = serde_json::from_str(&ws.read(&record_path)).unwrap();
        record["relationships"].as_array_mut().unwrap().pop();
        ws.write(&record_path, &serde_json::to_string(&record).unwrap());
        let last = ws.build();
        works.push(("changed relation record", last.work.clone()));
        assert_eq!(revision(&last), revision(&first) + 5, "{name}");

        let fresh_dir = tempfile::tempdir().unwrap();
        let fresh = index::build(
            &ws.bundle,
            fresh_dir.path(),
            &BuildOptions::default(),
            &mut |_| {},
        )
        .unwrap();
        assert!(!fresh.work.incremental);
        assert_eq!(fresh.manifest.counts, last.manifest.counts, "{name}");
        assert_eq!(
            fresh.manifest.content_fingerprint,
            last.manifest.content_fingerprint
        );
        let incremental = ws.open();
        let full =
            KnowledgeBase::open(fresh_dir.path(), Some(&ws.bundle), serve_options()).unwrap();
        // On the generated bundle the updated index still holds deleted documents of the
        // changed, removed and renamed pages (a segment is not rewritten for a few deletes), so
        // the comparison below proves that ranking counts only live documents. (The fixture's
        // segments are small enough that three deletes pass the merge threshold.)
        let deleted: u32 = incremental
            .search
            .searcher()
            .segment_readers()
            .iter()
            .map(|s| s.num_deleted_docs())
            .sum();
        if name != "focowiki-docs" {
            assert!(deleted >= 3, "{name}: {deleted} deleted documents kept");
        }

        let mut queries: Vec<String> = [
            "kbtestcharlie",
            "kbtestaddedword",
            "Kbtest Added Page",
            renamed.as_str(),
            removed.as_str(),
            "knowledge base relationships",
            "知识库 关系",
        ]
        .map(String::from)
        .to_vec();
        for page in &pages[..6] {
            if let Ok(out) = checked_call(&full, "get_file", json!({ "fileId": page })) {
                queries.push(out["file"]["title"].as_str().unwrap().to_string());
            }
        }
        let gone = [removed.clone(), renamed_from.clone()];
        let calls = calls(&full, &gone, &queries);
        assert!(calls.len() > 200, "{name}: {} calls", calls.len());
        let mut differences: Vec<String> = Vec::new();
        let mut differing_tools = std::collections::BTreeMap::new();
        for (tool, input) in &calls {
            let want = answer(&full, tool, input);
            let got = answer(&incremental, tool, input);
            if got != want {
                *differing_tools.entry(*tool).or_insert(0) += 1;
                let diff = first_difference(&json!(got), &json!(want), String::new());
                differences.push(format!(
                    "{tool} {input} differs (incremental vs full): {}\n  incremental: {}\n  full:        {}",
                    diff.unwrap_or_default(),
                    summary(&got),
                    summary(&want)
                ));
            }
        }
        if !differences.is_empty() {
            problems.push(format!(
                "{name}: {} of {} calls answer differently {differing_tools:?}; the first ones:\n{}",
                differences.len(),
                calls.len(),
                differences[..differences.len().min(3)].join("\n")
            ));
        }
        for (what, work) in &works {
            if !work.incremental || work.files_read > FEW_FILES {
                problems.push(format!(
                    "{name}: {what}: not a small incremental build: {work:?}"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The pages of `dir` (not the navigation), in path order.
fn document_pages(bundle: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![bundle.join("pages")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap();
            if path.is_dir() {
                dirs.push(path);
            } else if name.ends_with(".md") && !is_navigation(name) {
                let relative = path.strip_prefix(bundle).unwrap().to_str().unwrap();
                out.push(relative.to_string());
            }
        }
    }
    out.sort();
    out
}

/// Edits that leave the bundle's structure as it is — a page's text, a title its document record
/// overrides, a frontmatter turned invalid (a diagnostic), the same bytes written again, the
/// text and then the title of `log.md` (a title of its own), the root title (the knowledge
/// base's name) — each followed by a build over the live index: every tool answers as a full
/// build of the same bundle, with the same counts and diagnostics.
#[test]
fn page_only_edits_answer_as_a_full_build_does() {
    let mut problems: Vec<String> = Vec::new();
    for mut ws in workspaces() {
        let name = ws.name;
        let related = ws.related_pages();
        let pages = document_pages(&ws.bundle);
        ws.build();
        let mut works = Vec::new();

        let text_only = related[0].clone();
        let content = ws.read(&text_only);
        ws.write(&text_only, &format!("{content}\nkbtestpatchword here.\n"));
        works.push(("page text", ws.build().work));

        // A new H1 and frontmatter title (the page's own title, unless its record gives one).
        let retitled = related[1].clone();
        let content = ws.read(&retitled);
        let body = match content
            .strip_prefix("---\n")
            .and_then(|r| r.find("\n---\n").map(|i| &r[i + 5..]))
        {
            Some(body) => body.to_string(),
            None => content.clone(),
        };
        ws.write(
            &retitled,
            &format!("---\ntitle: \"Kbtest Retitled\"\n---\n# Kbtest Retitled\n\n{body}"),
        );
        works.push(("page title", ws.build().work));

        let broken = pages[pages.len() / 2].clone();
        let content = ws.read(&broken);
        ws.write(&broken, &format!("---\ntitle: [unclosed\n---\n{content}"));
        works.push(("invalid frontmatter", ws.build().work));

        let same = pages[pages.len() / 3].clone();
        let content = ws.read(&same);
        ws.write(&same, &content);
        works.push(("same bytes", ws.build().work));

        // `log.md` has the title of its H1: more text, then a new title.
        let content = ws.read("log.md");
        ws.write("log.md", &format!("{content}\nkbtestlogword\n"));
        works.push(("log text", ws.build().work));
        ws.write("log.md", &format!("# Kbtest Log\n\n{content}"));
        works.push(("log title", ws.build().work));

        let content = ws.read("index.md");
        ws.write(
            "index.md",
            &format!("---\ntitle: \"Kbtest Base\"\n---\n{content}"),
        );
        works.push(("root title", ws.build().work));

        let fresh_dir = tempfile::tempdir().unwrap();
        let fresh = index::build(
            &ws.bundle,
            fresh_dir.path(),
            &BuildOptions::default(),
            &mut |_| {},
        )
        .unwrap();
        let last = ws.build();
        assert!(last.work.unchanged, "{name}");
        if fresh.manifest.counts != last.manifest.counts
            || fresh.manifest.content_fingerprint != last.manifest.content_fingerprint
            || fresh.manifest.knowledge_base_name != last.manifest.knowledge_base_name
        {
            problems.push(format!(
                "{name}: manifests differ:\n{:?}\n{:?}",
                last.manifest, fresh.manifest
            ));
        }
        let diagnostics = |dir: &Path| {
            KnowledgeBase::diagnostics(dir)
                .unwrap()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
        };
        let (got, want) = (diagnostics(&ws.index_dir), diagnostics(fresh_dir.path()));
        if got != want {
            problems.push(format!("{name}: diagnostics differ:\n{got:?}\n{want:?}"));
        }
        if !want.iter().any(|d| d.contains("invalid frontmatter")) {
            problems.push(format!(
                "{name}: no invalid frontmatter diagnostic: {want:?}"
            ));
        }

        let incremental = ws.open();
        let full =
            KnowledgeBase::open(fresh_dir.path(), Some(&ws.bundle), serve_options()).unwrap();
        let queries: Vec<String> = [
            "kbtestpatchword",
            "Kbtest Retitled",
            "Kbtest Base",
            "kbtestlogword",
        ]
        .map(String::from)
        .to_vec();
        let calls = calls(&full, &[], &queries);
        let mut differences = Vec::new();
        for (tool, input) in &calls {
            let (want, got) = (
                answer(&full, tool, input),
                answer(&incremental, tool, input),
            );
            if got != want {
                let diff = first_difference(&json!(got), &json!(want), String::new());
                differences.push(format!("{tool} {input}: {}", diff.unwrap_or_default()));
            }
        }
        if !differences.is_empty() {
            problems.push(format!(
                "{name}: {} of {} calls answer differently; the first ones:\n{}",
                differences.len(),
                calls.len(),
                differences[..differences.len().min(3)].join("\n")
            ));
        }
        for (what, work) in &works {
            if !work.incremental || work.files_read > FEW_FILES {
                problems.push(format!(
                    "{name}: {what}: not a small incremental build: {work:?}"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
