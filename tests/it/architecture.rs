//! ARCHITECTURE.md against the tree: every path it names under `src/` exists, and every folder
//! of `src/` (and every file directly in it) is named, so the map cannot drift from the code.

use std::collections::BTreeSet;
use std::path::Path;

use crate::common::manifest_dir;

/// The `src/…` paths ARCHITECTURE.md names in backticks, `{a,b}` alternatives expanded.
fn named_paths(doc: &str) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    for (i, part) in doc.split('`').enumerate() {
        if i % 2 == 0 || !part.starts_with("src/") {
            continue;
        }
        match (part.find('{'), part.find('}')) {
            (Some(open), Some(close)) if open < close => {
                for alternative in part[open + 1..close].split(',') {
                    named.insert(format!(
                        "{}{alternative}{}",
                        &part[..open],
                        &part[close + 1..]
                    ));
                }
            }
            _ => {
                named.insert(part.to_string());
            }
        }
    }
    named
}

/// Whether `path` (relative to the repository) exists; a pattern (`*.rs`, `<tool>.rs`) names
/// its folder.
fn exists(root: &Path, path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or_default();
    if name.contains('*') || name.contains('<') {
        let folder = &path[..path.len() - name.len()];
        return root.join(folder).is_dir();
    }
    root.join(path.trim_end_matches('/')).exists()
}

/// Every folder under `dir` that holds a Rust file other than a module's unit tests
/// (`tests.rs`, `*_tests.rs`), relative to `root`, with a slash at the end.
fn rust_folders(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    let mut has_rust = false;
    for entry in entries {
        let path = entry.path();
        if path.is_dir() {
            rust_folders(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs")
            && !entry.file_name().to_string_lossy().ends_with("tests.rs")
        {
            has_rust = true;
        }
    }
    if has_rust {
        let relative = dir
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        out.push(format!("{relative}/"));
    }
}

#[test]
fn the_architecture_names_every_folder_and_only_what_exists() {
    let root = manifest_dir();
    let doc = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let named = named_paths(&doc);
    let missing: Vec<&String> = named.iter().filter(|p| !exists(&root, p)).collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that do not exist: {missing:?}"
    );
    let mut folders = Vec::new();
    rust_folders(&root, &root.join("src"), &mut folders);
    let unnamed: Vec<&String> = folders
        .iter()
        .filter(|folder| folder.as_str() != "src/")
        .filter(|folder| !named.iter().any(|p| p.starts_with(folder.as_str())))
        .collect();
    assert!(
        unnamed.is_empty(),
        "folders of src/ that ARCHITECTURE.md does not name: {unnamed:?}"
    );
    let mut top_files: Vec<String> = std::fs::read_dir(root.join("src"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "rs"))
        .map(|e| format!("src/{}", e.file_name().to_string_lossy()))
        .collect();
    top_files.sort();
    let unnamed: Vec<&String> = top_files.iter().filter(|f| !named.contains(*f)).collect();
    assert!(
        unnamed.is_empty(),
        "files of src/ that ARCHITECTURE.md does not name: {unnamed:?}"
    );
}
