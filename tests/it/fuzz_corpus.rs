//! Replays every seed and regression file of every fuzz target (`fuzz/corpus/<target>/`) through
//! the same entry functions the cargo-fuzz targets call (`kbtools::fuzz_entry`), on stable Rust:
//! a parser change that crashes on a stored input, or breaks one of the checked invariants, fails
//! here without nightly or a fuzzer. Each file is also replayed cut short (half, all but the last
//! byte), the commonest shape of a damaged file.

use std::path::PathBuf;

use kbtools::fuzz_entry::TARGETS;
use serde_json::json;

fn fuzz_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = fuzz_dir().join("corpus").join(target);
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect();
    files.sort();
    files
}

#[test]
fn every_corpus_file_of_every_target_replays_cleanly() {
    let mut replayed = 0;
    for (target, entry) in TARGETS {
        let files = corpus(target);
        assert!(
            files.len() >= 10,
            "{target}: only {} seed files",
            files.len()
        );
        entry(&[]);
        for (name, data) in &files {
            // A panic here names the target and file (the test harness prints this context).
            let run = |bytes: &[u8]| {
                std::panic::catch_unwind(|| entry(bytes))
                    .unwrap_or_else(|_| panic!("fuzz target {target} fails on corpus file {name}"));
            };
            run(data);
            run(&data[..data.len() / 2]);
            run(&data[..data.len().saturating_sub(1)]);
            replayed += 1;
        }
    }
    assert!(replayed >= 50, "{replayed} files replayed");
}

#[test]
fn every_corpus_folder_is_a_target_and_every_target_is_built_by_the_fuzz_crate() {
    let names: Vec<&str> = TARGETS.iter().map(|(name, _)| *name).collect();
    for entry in std::fs::read_dir(fuzz_dir().join("corpus")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            names.contains(&name.as_str()),
            "corpus/{name} has no target"
        );
    }
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).unwrap();
    // The fuzz crate stays out of the main workspace, so CI's stable build never compiles it.
    assert!(
        manifest.contains("[workspace]"),
        "fuzz/Cargo.toml lacks [workspace]"
    );
    for name in &names {
        assert!(
            manifest.contains(&format!("name = \"{name}\"")),
            "fuzz/Cargo.toml has no [[bin]] {name}"
        );
        let source = fuzz_dir().join("fuzz_targets").join(format!("{name}.rs"));
        let text = std::fs::read_to_string(&source).unwrap();
        assert!(
            text.contains(&format!("fuzz_entry::{name}(")),
            "{} does not call fuzz_entry::{name}",
            source.display()
        );
    }
}

#[test]
fn the_cursor_corpus_holds_valid_cursors_so_the_decoder_is_reached() {
    // Without a cursor that passes the integrity check, the fuzzer would only ever exercise the
    // rejection paths of the decoder.
    let valid = corpus("cursor")
        .into_iter()
        .filter(|(name, _)| name.starts_with("valid-"))
        .map(|(_, data)| String::from_utf8(data).unwrap())
        .collect::<Vec<_>>();
    assert!(valid.len() >= 2);
    let scope = json!({"parentPath": "pages", "limit": 2});
    let list_tree = valid
        .iter()
        .find(|c| kbtools::cursor::decode(c, "list_tree", &scope, 1).ok() == Some(2));
    assert!(
        list_tree.is_some(),
        "no valid list_tree cursor in {valid:?}"
    );
}
