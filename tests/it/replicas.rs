//! Publishing for read replicas (`index::replica`, docs/scaling.md): a published folder answers
//! every tool with the bundle gone, a live knowledge base following it switches to each new
//! publish and says so in its health, a bundle changed after the build is refused, and old
//! generations go beyond `keep`. The load-balancer test is tests/replicas/ (run by .ci/run).

use crate::common;

use std::path::Path;

use kbtools::index::{self, replica, BuildOptions};
use kbtools::kb::KnowledgeBase;
use kbtools::serve::live::{self, HealthState, LiveKnowledgeBase};
use serde_json::json;

fn build(bundle: &Path, index_dir: &Path) -> index::BuildReport {
    index::build(bundle, index_dir, &BuildOptions::default(), &mut |_| {}).unwrap()
}

fn append(bundle: &Path, line: &str) {
    let page = bundle.join("pages/en/README.md");
    let text = std::fs::read_to_string(&page).unwrap();
    std::fs::write(&page, format!("{text}\n{line}\n")).unwrap();
}

fn generations(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("gen-"))
        .collect();
    names.sort();
    names
}

#[test]
fn a_published_folder_answers_every_tool_with_the_bundle_gone() {
    let work = tempfile::tempdir().unwrap();
    let bundle = work.path().join("bundle");
    common::copy_dir(&common::fixture("focowiki-docs"), &bundle);
    let (index_dir, published) = (work.path().join("index"), work.path().join("pub"));
    let report = build(&bundle, &index_dir);
    let first = replica::publish(&index_dir, &bundle, &published, 3).unwrap();
    assert!(!first.unchanged && first.files > 0, "{first:?}");
    // The same generation again: nothing to write.
    let again = replica::publish(&index_dir, &bundle, &published, 3).unwrap();
    assert!(again.unchanged && again.files == 0, "{again:?}");

    let original = std::fs::read_to_string(bundle.join("pages/en/README.md")).unwrap();
    std::fs::rename(&bundle, work.path().join("elsewhere")).unwrap();
    let kb = KnowledgeBase::open(&published, None, common::serve_options()).unwrap();
    assert_eq!(
        kb.manifest.active_content_revision,
        report.manifest.active_content_revision
    );
    let read = common::call(&kb, "read_file", json!({ "path": "pages/en/README.md" })).unwrap();
    assert_eq!(read["content"], original.as_str());
    let found = common::call(&kb, "search_files", json!({ "query": "graph relations" })).unwrap();
    let items = found["items"].as_array().unwrap();
    assert!(!items.is_empty());
    assert!(
        items.iter().all(|i| i["sourceExcerpt"].is_string()),
        "every excerpt is cut from the published copy: {found}"
    );
    for (tool, input) in [
        ("list_tree", json!({ "parentPath": "pages" })),
        ("get_file", json!({ "fileId": "index.md" })),
    ] {
        common::checked_call(&kb, tool, input).unwrap();
    }
}

#[test]
fn a_replica_switches_to_each_publish_and_its_health_says_so() {
    let work = tempfile::tempdir().unwrap();
    let bundle = work.path().join("bundle");
    common::copy_dir(&common::fixture("focowiki-docs"), &bundle);
    let (index_dir, published) = (work.path().join("index"), work.path().join("pub"));
    build(&bundle, &index_dir);
    replica::publish(&index_dir, &bundle, &published, 2).unwrap();
    let live =
        LiveKnowledgeBase::open(&published, None, common::serve_options(), live::silent()).unwrap();
    let before = live.health();
    assert_eq!(before.state, HealthState::Ready);
    let cursor = common::call(
        &live.get(),
        "search_files",
        json!({ "query": "knowledge base", "limit": 1 }),
    )
    .unwrap()["nextCursor"]
        .as_str()
        .unwrap()
        .to_string();

    let mut seen = vec![before.generation.clone().unwrap()];
    for word in ["quokkaflux", "zephyrquill"] {
        append(&bundle, &format!("A replica learns the word {word}."));
        build(&bundle, &index_dir);
        let published_now = replica::publish(&index_dir, &bundle, &published, 2).unwrap();
        let health = live.health();
        assert_eq!(health.state, HealthState::Ready, "{health:?}");
        assert_eq!(
            health.generation.as_deref(),
            Some(published_now.generation.as_str())
        );
        let found = common::call(&live.get(), "search_files", json!({ "query": word })).unwrap();
        assert_eq!(found["items"][0]["path"], "pages/en/README.md", "{found}");
        seen.push(published_now.generation);
    }
    let after = live.health();
    assert_eq!(
        after.active_content_revision,
        before.active_content_revision + 2
    );
    // A cursor of the first revision is refused on the new one with the contract's error.
    let refused = common::call(
        &live.get(),
        "search_files",
        json!({ "query": "knowledge base", "limit": 1, "cursor": cursor }),
    )
    .unwrap_err();
    assert_eq!(refused.code.as_str(), "VALIDATION_ERROR");
    assert_eq!(refused.details.unwrap()["field"], "cursor");
    // keep = 2: the oldest of the three generations is gone.
    assert_eq!(generations(&published), seen[1..].to_vec());
}

#[test]
fn a_publish_that_does_not_open_leaves_the_replica_answering_and_says_stale() {
    let work = tempfile::tempdir().unwrap();
    let bundle = work.path().join("bundle");
    common::copy_dir(&common::fixture("focowiki-docs"), &bundle);
    let (index_dir, published) = (work.path().join("index"), work.path().join("pub"));
    build(&bundle, &index_dir);
    let first = replica::publish(&index_dir, &bundle, &published, 3).unwrap();
    let live =
        LiveKnowledgeBase::open(&published, None, common::serve_options(), live::silent()).unwrap();
    // A copy cut short: the generation is there, its catalog is not whole.
    let broken = published.join("gen-99-0badc0de");
    common::copy_dir(&published.join(&first.generation), &broken);
    let catalog = broken.join("catalog.bin");
    let bytes = std::fs::read(&catalog).unwrap();
    std::fs::write(&catalog, &bytes[..bytes.len() / 2]).unwrap();
    std::fs::write(published.join("CURRENT"), "gen-99-0badc0de").unwrap();
    let health = live.health();
    assert_eq!(health.state, HealthState::Stale, "{health:?}");
    assert_eq!(
        health.generation.as_deref(),
        Some(first.generation.as_str())
    );
    common::call(&live.get(), "read_file", json!({ "path": "index.md" })).unwrap();
    // Named again, the good generation is live at once.
    std::fs::write(published.join("CURRENT"), &first.generation).unwrap();
    assert_eq!(live.health().state, HealthState::Ready);
}

#[test]
fn a_bundle_changed_after_the_build_is_not_published() {
    let work = tempfile::tempdir().unwrap();
    let bundle = work.path().join("bundle");
    common::copy_dir(&common::fixture("focowiki-docs"), &bundle);
    let (index_dir, published) = (work.path().join("index"), work.path().join("pub"));
    build(&bundle, &index_dir);
    append(&bundle, "Written after the build.");
    let error = replica::publish(&index_dir, &bundle, &published, 3).unwrap_err();
    assert!(
        error.to_string().contains("README.md") && error.to_string().contains("kbtools index"),
        "{error}"
    );
    assert!(
        index::current_generation(&published).is_none(),
        "nothing is named"
    );
    assert!(generations(&published).is_empty(), "no generation is left");
}

/// A published folder carries the bundle's `.kbignore`: a replica, like the bundle's own
/// server, reads the generated files without what they say of the pages it leaves out.
#[test]
fn a_replica_serves_no_word_of_the_pages_kbignore_leaves_out() {
    let work = tempfile::tempdir().unwrap();
    let bundle = work.path().join("bundle");
    common::copy_dir(&common::fixture("focowiki-docs"), &bundle);
    std::fs::write(bundle.join(".kbignore"), "pages/en/deployment/\n").unwrap();
    let (index_dir, published) = (work.path().join("index"), work.path().join("pub"));
    build(&bundle, &index_dir);
    replica::publish(&index_dir, &bundle, &published, 3).unwrap();
    std::fs::rename(&bundle, work.path().join("elsewhere")).unwrap();
    let kb = KnowledgeBase::open(&published, None, common::serve_options()).unwrap();
    for path in [
        "log.md",
        "_index/pages/en/index.json",
        "_graph/by-file/en/README.json",
    ] {
        let read = common::call(&kb, "read_file", json!({ "path": path })).unwrap();
        let content = read["content"].as_str().unwrap();
        assert!(!content.contains("en/deployment"), "{path}:\n{content}");
        assert!(content.contains("pages/en/"), "{path}:\n{content}");
    }
}
