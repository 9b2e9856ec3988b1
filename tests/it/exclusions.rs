//! What a folder asks to leave out: `.kbignore` (gitignore syntax) at its root, and a plain
//! folder's `.gitignore`, keep files out of the index: search, the tree and the relations.

use serde_json::{json, Value};

use crate::common::{call, item_paths, open_bundle};

fn write(root: &std::path::Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn kbignore_and_gitignore_keep_files_out_of_search_tree_and_relations() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "guide.md",
        "# Guide\n\nRead [the draft](drafts/plan.md) and the [changes](CHANGELOG.md).\n",
    );
    write(
        root,
        "drafts/plan.md",
        "# Plan\n\nThe zebrafish migration plan.\n",
    );
    write(
        root,
        "CHANGELOG.md",
        "# Changelog\n\nThe zebrafish release.\n",
    );
    write(
        root,
        "node_modules/pkg/README.md",
        "# Pkg\n\nzebrafish inside a dependency.\n",
    );
    write(root, "notes/kept.md", "# Kept\n\nThe zebrafish notes.\n");
    write(
        root,
        ".kbignore",
        "# drafts and the changelog\ndrafts/\n/CHANGELOG.md\n",
    );
    write(root, ".gitignore", "node_modules/\n");
    let opened = open_bundle(root);

    let found = call(&opened.kb, "search_files", json!({ "query": "zebrafish" })).unwrap();
    let paths = item_paths(&found);
    assert_eq!(paths, ["pages/notes/kept.md"], "{found}");

    let tree = call(&opened.kb, "list_tree", json!({ "parentPath": "pages" })).unwrap();
    let names: Vec<&str> = tree["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["guide.md", "notes"], "{tree}");

    let related = call(&opened.kb, "read_related", json!({ "fileId": "guide.md" })).unwrap();
    assert_eq!(related["items"], json!([]), "{related}");
    // A link to an excluded file is not reported as one that does not resolve (DECISIONS 26).
    let reported: Vec<String> = opened
        .report
        .diagnostics
        .iter()
        .map(|d| format!("{}: {}", d.path, d.message))
        .collect();
    assert!(reported.is_empty(), "{reported:#?}");
    for gone in [
        "drafts/plan.md",
        "CHANGELOG.md",
        "node_modules/pkg/README.md",
    ] {
        assert!(
            call(&opened.kb, "read_file", json!({ "path": gone })).is_err(),
            "{gone}"
        );
    }
}

/// The files a walk of `root` finds, relative to it.
fn walked(root: &std::path::Path) -> Vec<String> {
    let walk = kbtools::ingest::bundle::walk::walk(root);
    walk.files.into_iter().map(|f| f.relative).collect()
}

#[test]
fn a_bundle_ignores_gitignore_but_not_kbignore() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // A plain folder's .gitignore applies; the same file in a bundle (with _index/) does not.
    write(root, "a.md", "# A\n\nalpha\n");
    write(root, "b.md", "# B\n\nalpha\n");
    write(root, ".gitignore", "b.md\n");
    assert_eq!(walked(root), ["a.md"]);
    std::fs::create_dir(root.join("_index")).unwrap();
    assert_eq!(walked(root), ["a.md", "b.md"]);
    write(root, ".kbignore", "b.md\n");
    assert_eq!(walked(root), ["a.md"]);
}

/// `--exclude` on the command line: the index keeps the patterns, so a later command that does
/// not name them neither brings the files back nor rebuilds; `--exclude ''` clears them.
#[cfg(feature = "server")]
#[test]
fn exclude_patterns_stay_with_the_index_until_cleared() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("docs");
    write(&root, "kept.md", "# Kept\n\nThe okapi guide.\n");
    write(&root, "drafts/wip.md", "# Wip\n\nThe okapi draft.\n");
    let index = dir.path().join("index");
    let run = |args: &[&str]| {
        let out = crate::common::kbtools()
            .args(args)
            .args(["--bundle", root.to_str().unwrap()])
            .args(["--index", index.to_str().unwrap()])
            .env("KBTOOLS_MODEL_DIR", dir.path().join("no-models"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let found = |value: &Value| -> Vec<String> {
        value["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["path"].as_str().unwrap().to_string())
            .collect()
    };
    run(&["index", "--exclude", "drafts/"]);
    let hits = run(&["search", "okapi", "--format", "json"]);
    assert_eq!(found(&hits), ["pages/kept.md"], "{hits}");
    run(&["index", "--exclude", ""]);
    let hits = run(&["search", "okapi", "--format", "json"]);
    let mut paths = found(&hits);
    paths.sort();
    assert_eq!(paths, ["pages/drafts/wip.md", "pages/kept.md"], "{hits}");
}

/// A knowledge base built from `root` with the `--exclude` patterns `exclude`.
fn open_excluding(root: &std::path::Path, exclude: &[&str]) -> crate::common::Opened {
    let index_dir = tempfile::tempdir().unwrap();
    let options = kbtools::index::BuildOptions {
        exclude: Some(exclude.iter().map(|s| s.to_string()).collect()),
        ..kbtools::index::BuildOptions::default()
    };
    let report = kbtools::index::build(root, index_dir.path(), &options, &mut |_| {}).unwrap();
    let kb = kbtools::kb::KnowledgeBase::open(
        index_dir.path(),
        Some(root),
        crate::common::serve_options(),
    )
    .unwrap();
    crate::common::Opened {
        kb,
        index_dir,
        report,
    }
}

/// Every file the tree lists, from the root down (paths and `fileKind`).
fn every_listed_file(kb: &kbtools::kb::KnowledgeBase) -> Vec<(String, String)> {
    let mut files = Vec::new();
    let mut folders = vec![String::new()];
    while let Some(folder) = folders.pop() {
        let mut cursor: Option<String> = None;
        loop {
            let mut input = json!({ "parentPath": folder, "limit": 200 });
            if let Some(cursor) = &cursor {
                input["cursor"] = json!(cursor);
            }
            let page = call(kb, "list_tree", input).unwrap();
            for item in page["items"].as_array().unwrap() {
                let path = item["path"].as_str().unwrap().to_string();
                match item["entryType"].as_str().unwrap() {
                    "directory" => folders.push(path),
                    _ => files.push((path, item["fileKind"].as_str().unwrap().to_string())),
                }
            }
            cursor = page["nextCursor"].as_str().map(str::to_string);
            if cursor.is_none() {
                break;
            }
        }
    }
    files.sort();
    files
}

/// Issue 61, point 5: a Focowiki bundle's own files (records, term postings, navigation, the
/// log) said what the excluded pages are: their paths, titles, summaries, headings, relations
/// and words. Now no tool serves a word of them: the files that exist only for them are gone,
/// and the others are read without what names them.
#[test]
fn a_bundles_generated_files_say_nothing_of_excluded_pages() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bundle");
    crate::common::copy_dir(&crate::common::fixture("focowiki-docs"), &root);
    // A folder by `--exclude`, a page by `.kbignore`.
    write(
        &root,
        ".kbignore",
        "pages/en/guide/open-knowledge-format.md\n",
    );
    let opened = open_excluding(&root, &["pages/en/deployment/"]);
    let kb = &opened.kb;
    // What would name them: their paths (from the root, or relative to a file beside them),
    // their titles, and the words of a heading of the excluded folder's pages only.
    let secrets = [
        "en/deployment",
        "en/guide/open-knowledge-format",
        "Docker Compose Deployment",
        "Agent-assisted Deployment",
        "Environment Configuration",
    ];
    let files = every_listed_file(kb);
    assert!(files.len() > 100, "{files:?}");
    let mut postings = 0;
    for (path, kind) in &files {
        assert!(
            !secrets[..2].iter().any(|s| path.contains(s)),
            "{path} is listed"
        );
        if kind == "page" {
            continue;
        }
        let read = call(kb, "read_file", json!({ "path": path })).unwrap();
        let content = read["content"].as_str().unwrap();
        for secret in secrets {
            assert!(
                !content.contains(secret),
                "{path} names {secret}:\n{content}"
            );
        }
        if path.starts_with("pages/en/guide/") {
            assert!(
                !content.contains("open-knowledge-format"),
                "{path}:\n{content}"
            );
        }
        if path.starts_with("pages/en/") && !path.starts_with("pages/en/deployment") {
            assert!(!content.contains("(deployment/"), "{path}:\n{content}");
        }
        // A term is gone with its last posting: the excluded pages' own words are not served.
        if path.contains("-terms-part-") {
            let record: Value = serde_json::from_str(content).unwrap();
            for term in record["terms"].as_array().unwrap() {
                let items = term["postings"].as_array().unwrap();
                assert!(!items.is_empty(), "{path}: {term}");
                postings += items.len();
            }
        }
        // The size told is that of what is served.
        let detail = call(kb, "get_file", json!({ "fileId": path })).unwrap();
        assert_eq!(
            detail["file"]["sizeBytes"].as_u64(),
            Some(content.len() as u64),
            "{path}"
        );
    }
    assert!(postings > 100, "the term postings of the other pages stay");
    // What the records still say of the pages that stay.
    let log = call(kb, "read_file", json!({ "path": "log.md" })).unwrap();
    assert!(log["content"]
        .as_str()
        .unwrap()
        .contains("pages/en/guide/file-first-graph.md"));
    let guide = call(
        kb,
        "read_file",
        json!({ "path": "_index/pages/en/guide/guide-documents.json" }),
    )
    .unwrap();
    assert!(
        guide["content"].as_str().unwrap().contains("File Cleaning"),
        "{guide}"
    );
    // Relations and search.
    for tool in ["read_related", "expand_graph"] {
        let out = call(kb, tool, json!({ "fileId": "pages/en/README.md" })).unwrap();
        let text = out.to_string();
        assert!(!text.contains("en/deployment"), "{tool}: {text}");
    }
    let found = call(
        kb,
        "search_files",
        json!({ "query": "docker compose deployment" }),
    )
    .unwrap();
    assert!(!found.to_string().contains("en/deployment"), "{found}");
    // Nor is a record of theirs reported as broken (KB010, KB020, KB021).
    let named: Vec<String> = opened
        .report
        .diagnostics
        .iter()
        .filter(|d| d.message.contains("en/deployment") || d.path.contains("en/deployment"))
        .map(|d| format!("{}: {}", d.path, d.message))
        .collect();
    assert!(named.is_empty(), "{named:#?}");
}

/// Issue 61, point 6: a link in a folder that stays, to a file of a folder left out, served the
/// excluded text under the link's name. A file left out (or hidden) stays out under any name.
#[test]
fn a_link_to_an_excluded_file_is_left_out_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "drafts/secret.md", "# Secret\n\nThe narwhal plan.\n");
    write(root, "notes/kept.md", "# Kept\n\nNotes.\n");
    std::os::unix::fs::symlink(root.join("drafts/secret.md"), root.join("notes/alias.md")).unwrap();
    // A hidden file is skipped by every walk: so is a link to it.
    write(root, ".private/key.md", "# Key\n\nThe narwhal key.\n");
    std::os::unix::fs::symlink(root.join(".private/key.md"), root.join("notes/key.md")).unwrap();
    write(root, ".kbignore", "drafts/\n");
    let opened = open_bundle(root);
    let found = call(&opened.kb, "search_files", json!({ "query": "narwhal" })).unwrap();
    assert_eq!(found["items"], json!([]), "{found}");
    assert!(call(&opened.kb, "read_file", json!({ "path": "notes/alias.md" })).is_err());
    let tree = call(
        &opened.kb,
        "list_tree",
        json!({ "parentPath": "pages/notes" }),
    )
    .unwrap();
    let names: Vec<&str> = tree["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["kept.md"], "{tree}");
}

/// Issue 61, point 7: `pages/drafts/` (a plain folder's files as kbtools prints them) and a
/// pattern typed in NFC over a name a Mac wrote in NFD left everything served, without a word.
/// Both now leave the files out, and a pattern that leaves out nothing is reported, naming the
/// pattern and what it was matched against.
#[test]
fn exclude_patterns_as_printed_and_in_nfc_apply_and_unused_ones_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("docs");
    write(&root, "kept.md", "# Kept\n\nThe axolotl guide.\n");
    write(&root, "drafts/wip.md", "# Wip\n\nThe axolotl draft.\n");
    // `café` as macOS writes it: `e` and a combining acute accent.
    write(
        &root,
        "cafe\u{301}/menu.md",
        "# Menu\n\nThe axolotl menu.\n",
    );
    let opened = open_excluding(&root, &["pages/drafts/", "caf\u{e9}/", "/no-such-folder/"]);
    let found = call(&opened.kb, "search_files", json!({ "query": "axolotl" })).unwrap();
    let paths = item_paths(&found);
    assert_eq!(paths, ["pages/kept.md"], "{found}");
    let unused: Vec<&str> = opened
        .report
        .diagnostics
        .iter()
        .map(|d| d.message.as_str())
        .filter(|m| m.contains("leaves out no file"))
        .collect();
    assert_eq!(unused.len(), 1, "{:#?}", opened.report.diagnostics);
    assert!(
        unused[0].contains("--exclude \"/no-such-folder/\""),
        "{}",
        unused[0]
    );
    assert!(
        unused[0].contains(&root.canonicalize().unwrap().display().to_string()),
        "{}",
        unused[0]
    );
    assert!(unused[0].contains("\"kept.md\""), "{}", unused[0]);
}

/// DECISIONS 26 for `kbtools check`: a bundle whose `.kbignore` leaves out a folder of pages has
/// records, navigation and log lines that name them; none of those is a broken link or a record
/// of a missing page.
#[test]
fn check_reports_nothing_that_names_an_excluded_page() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bundle");
    crate::common::copy_dir(&crate::common::fixture("focowiki-docs"), &root);
    let before = kbtools::check::check(&root, &[]).unwrap();
    write(&root, ".kbignore", "pages/en/deployment/\n");
    let report = kbtools::check::check(&root, &[]).unwrap();
    let named: Vec<String> = report
        .findings
        .iter()
        .filter(|d| d.message.contains("en/deployment") || d.path.contains("en/deployment"))
        .map(|d| format!("{}: {}", d.path, d.message))
        .collect();
    assert!(named.is_empty(), "{named:#?}");
    assert_eq!(report.counts(), before.counts(), "{:#?}", report.findings);
}
