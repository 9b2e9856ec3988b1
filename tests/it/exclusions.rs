//! What a folder asks to leave out: `.kbignore` (gitignore syntax) at its root, and a plain
//! folder's `.gitignore`, keep files out of the index: search, the tree and the relations.

use serde_json::json;

use crate::common::{call, open_bundle};

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
    let paths: Vec<&str> = found["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap())
        .collect();
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
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let found = |value: &serde_json::Value| -> Vec<String> {
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
