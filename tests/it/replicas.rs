//! Publishing for read replicas (`index::replica`, docs/scaling.md): a published folder answers
//! every tool with the bundle gone, a live knowledge base following it switches to each new
//! publish and says so in its health, a bundle changed after the build is refused, and old
//! generations go beyond `keep`. The load-balancer test is tests/replicas/ (run by .ci/run).

use crate::common;

use std::path::{Path, PathBuf};

use kbtools::index::{self, replica, BuildOptions};
use kbtools::kb::KnowledgeBase;
use kbtools::serve::live::{self, HealthState, LiveKnowledgeBase};
use serde_json::json;

fn build(bundle: &Path, index_dir: &Path) -> index::BuildReport {
    index::build(bundle, index_dir, &BuildOptions::default(), &mut |_| {}).unwrap()
}

/// A copy of the fixture bundle built into an index, in a temporary folder: the folder, the
/// bundle, the index folder and the (not yet made) publish folder.
fn built_fixture() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let work = tempfile::tempdir().unwrap();
    let bundle = work.path().join("bundle");
    common::copy_dir(&common::fixture("focowiki-docs"), &bundle);
    let (index_dir, published) = (work.path().join("index"), work.path().join("pub"));
    build(&bundle, &index_dir);
    (work, bundle, index_dir, published)
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
    let (_work, bundle, index_dir, published) = built_fixture();
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
    let (_work, bundle, index_dir, published) = built_fixture();
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
    let (_work, bundle, index_dir, published) = built_fixture();
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

// ---------------------------------------------------------------------------------------------
// A replica answers exactly what was published (issue 61)

/// `kbtools ARGS` (in the repository, with a clean environment): its exit status, stdout and
/// stderr.
fn kbtools(args: &[&str]) -> (bool, String, String) {
    let out = common::kbtools()
        .args(args)
        .current_dir(common::manifest_dir())
        .output()
        .unwrap();
    let text = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap();
    (out.status.success(), text(out.stdout), text(out.stderr))
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A page the tests delete from the builder's bundle after publishing.
const OTHER_PAGE: &str = "pages/en/agent-integration/demo-agent-result.md";

/// The builder's bundle still where it was built, changed after the publish (a page edited,
/// another deleted): a replica of the published folder answers what was published, whether it
/// is opened as `kbtools --index DIR --no-refresh` opens it, with the bundle named, or follows
/// later publishes.
#[test]
fn a_replica_reads_the_published_copy_even_where_the_builders_bundle_exists() {
    let work = tempfile::tempdir().unwrap();
    let bundle = work.path().join("bundle");
    common::copy_dir(&common::fixture("focowiki-docs"), &bundle);
    let (index_dir, published) = (work.path().join("index"), work.path().join("pub"));
    let (ok, _, stderr) = kbtools(&[
        "-q",
        "index",
        s(&bundle),
        "--index",
        s(&index_dir),
        "--no-semantic",
        "--publish",
        s(&published),
    ]);
    assert!(ok, "{stderr}");
    let page = bundle.join("pages/en/README.md");
    let original = std::fs::read_to_string(&page).unwrap();
    let other = std::fs::read_to_string(bundle.join(OTHER_PAGE)).unwrap();
    append(&bundle, "An edit that was never published.");
    std::fs::remove_file(bundle.join(OTHER_PAGE)).unwrap();

    // The command line a replica runs, on the builder's machine.
    for (path, expected) in [("pages/en/README.md", &original), (OTHER_PAGE, &other)] {
        let input = json!({ "path": path }).to_string();
        let (ok, stdout, stderr) = kbtools(&[
            "call",
            "read_file",
            &input,
            "--index",
            s(&published),
            "--no-refresh",
        ]);
        assert!(ok, "{path}: {stderr}");
        let read: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(read["content"], expected.as_str(), "{path}");
    }

    // Opened with the builder's bundle named, and following the next publish: each generation
    // reads its own copy.
    let kb = KnowledgeBase::open(&published, Some(&bundle), common::serve_options()).unwrap();
    let read = common::call(&kb, "read_file", json!({ "path": "pages/en/README.md" })).unwrap();
    assert_eq!(read["content"], original.as_str());
    let live = LiveKnowledgeBase::from_opened(kb, &published, Some(&bundle), live::silent());
    std::fs::write(bundle.join(OTHER_PAGE), &other).unwrap();
    append(&bundle, "A second edit, published.");
    build(&bundle, &index_dir);
    let second = replica::publish(&index_dir, &bundle, &published, 3).unwrap();
    let published_text = std::fs::read_to_string(&page).unwrap();
    append(&bundle, "A third edit, never published.");
    assert_eq!(
        live.health().generation.as_deref(),
        Some(second.generation.as_str())
    );
    let read = common::call(
        &live.get(),
        "read_file",
        json!({ "path": "pages/en/README.md" }),
    )
    .unwrap();
    assert_eq!(read["content"], published_text.as_str());
}

/// `CURRENT` pointed at `name` by a rename, as a publish does.
fn point_current(published: &Path, name: &str) {
    let tmp = published.join("CURRENT.test.tmp");
    std::fs::write(&tmp, name).unwrap();
    std::fs::rename(&tmp, published.join("CURRENT")).unwrap();
}

/// The manifest of `generation` with another `bundleRoot`, its checksum made again (what a
/// writer of the published folder can do in a second).
fn rewrite_bundle_root(generation: &Path, bundle_root: &Path) {
    let path = generation.join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let body = &text[..text.rfind(",\"checksum\":\"").unwrap()];
    let mut value: serde_json::Value = serde_json::from_str(&format!("{body}}}")).unwrap();
    value["bundleRoot"] = json!(s(bundle_root));
    let mut bytes = serde_json::to_vec(&value).unwrap();
    bytes.pop();
    bytes.extend_from_slice(b",\"checksum\":\"");
    let crc = crc32fast::hash(&bytes);
    bytes.extend_from_slice(format!("{crc:08x}\"}}\n").as_bytes());
    std::fs::write(&path, bytes).unwrap();
}

/// A writer of the published folder points a replica outside it: a generation whose `bundle/`
/// is a link, a generation folder that is a link, a generation without `bundle/` whose manifest
/// names a folder outside, and the live generation's `bundle/` swapped for a link. None is read:
/// each new generation is `stale`, and the last good one keeps answering its own copy.
#[cfg(unix)]
#[test]
fn a_replica_reads_nothing_outside_the_published_folder() {
    use std::os::unix::fs::symlink;
    let (work, bundle, index_dir, published) = built_fixture();
    let first = replica::publish(&index_dir, &bundle, &published, 3).unwrap();
    let good = published.join(&first.generation);
    let original = std::fs::read_to_string(bundle.join("pages/en/README.md")).unwrap();
    // Outside the published folder: the same paths, other content.
    let secret = work.path().join("secret");
    common::copy_dir(&bundle, &secret);
    std::fs::write(secret.join("pages/en/README.md"), "SECRET").unwrap();
    let outside_generation = work.path().join("outside-generation");
    common::copy_dir(&good, &outside_generation);
    std::fs::remove_dir_all(outside_generation.join("bundle")).unwrap();
    symlink(&secret, outside_generation.join("bundle")).unwrap();

    let live =
        LiveKnowledgeBase::open(&published, None, common::serve_options(), live::silent()).unwrap();
    let read_page = || {
        common::call(
            &live.get(),
            "read_file",
            json!({ "path": "pages/en/README.md" }),
        )
        .map(|read| read["content"].as_str().unwrap().to_string())
    };
    assert_eq!(read_page().unwrap(), original);

    let bundle_link = "gen-90-aaaaaaaa";
    common::copy_dir(&good, &published.join(bundle_link));
    std::fs::remove_dir_all(published.join(bundle_link).join("bundle")).unwrap();
    symlink(&secret, published.join(bundle_link).join("bundle")).unwrap();
    let generation_link = "gen-91-bbbbbbbb";
    symlink(&outside_generation, published.join(generation_link)).unwrap();
    let no_copy = "gen-92-cccccccc";
    common::copy_dir(&good, &published.join(no_copy));
    std::fs::remove_dir_all(published.join(no_copy).join("bundle")).unwrap();
    rewrite_bundle_root(&published.join(no_copy), &secret);
    for name in [bundle_link, generation_link, no_copy] {
        point_current(&published, name);
        let health = live.health();
        assert_eq!(health.state, HealthState::Stale, "{name}: {health:?}");
        assert_eq!(
            health.generation.as_deref(),
            Some(first.generation.as_str()),
            "{name}"
        );
        assert_eq!(read_page().unwrap(), original, "{name}");
    }

    // The live generation's copy swapped for a link: its folder is held open, never named again.
    point_current(&published, &first.generation);
    assert_eq!(live.health().state, HealthState::Ready);
    std::fs::rename(good.join("bundle"), good.join("bundle.moved")).unwrap();
    symlink(&secret, good.join("bundle")).unwrap();
    assert_eq!(read_page().unwrap(), original);
}

/// `CURRENT` is a link (to a file naming a generation), a FIFO, a file far longer than a name, or
/// names no generation: none is followed, blocks or is read whole, health says `stale`, and the
/// last good generation keeps answering until `CURRENT` names a good one again.
#[cfg(unix)]
#[test]
fn a_current_that_is_no_plain_name_is_stale_and_the_last_good_generation_answers() {
    use std::os::unix::fs::symlink;
    let (work, bundle, index_dir, published) = built_fixture();
    let first = replica::publish(&index_dir, &bundle, &published, 3).unwrap();
    let live =
        LiveKnowledgeBase::open(&published, None, common::serve_options(), live::silent()).unwrap();
    // A second good generation, which CURRENT does not name yet.
    append(&bundle, "A replica learns the word quillvortex.");
    build(&bundle, &index_dir);
    let second = replica::publish(&index_dir, &bundle, &published, 3).unwrap();
    point_current(&published, &first.generation);
    assert_eq!(live.health().state, HealthState::Ready);
    let current = published.join("CURRENT");
    let still_first = |what: &str| {
        let health = live.health();
        assert_eq!(health.state, HealthState::Stale, "{what}: {health:?}");
        assert_eq!(
            health.generation.as_deref(),
            Some(first.generation.as_str()),
            "{what}"
        );
        common::call(&live.get(), "read_file", json!({ "path": "index.md" })).unwrap();
    };

    // A link to a file outside that names the second generation.
    let outside = work.path().join("outside-current");
    std::fs::write(&outside, &second.generation).unwrap();
    std::fs::remove_file(&current).unwrap();
    symlink(&outside, &current).unwrap();
    still_first("a link");

    // A FIFO: a writer waits to hand it the second generation's name.
    let fifo = work.path().join("fifo");
    let c = std::ffi::CString::new(s(&fifo)).unwrap();
    // SAFETY: mkfifo reads the NUL-terminated path, alive for the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    std::fs::remove_file(&current).unwrap();
    std::fs::hard_link(&fifo, &current).unwrap();
    let writer = {
        let (fifo, name) = (fifo.clone(), second.generation.clone());
        std::thread::spawn(move || {
            use std::io::Write;
            // Opening for writing waits for a reader; what it writes may find none left.
            let mut pipe = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
            let _ = pipe.write_all(name.as_bytes());
        })
    };
    still_first("a FIFO");
    // A reader for the writer, should none have opened the FIFO.
    let _reader = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap()
    };
    writer.join().unwrap();

    // A regular file that starts with a name and goes on for a MiB.
    std::fs::remove_file(&current).unwrap();
    let mut long = second.generation.clone().into_bytes();
    long.extend(std::iter::repeat_n(b'\n', 1 << 20));
    std::fs::write(&current, long).unwrap();
    still_first("a long file");

    point_current(&published, "not-a-generation");
    still_first("no generation name");

    // Named again, a good generation is switched to.
    point_current(&published, &second.generation);
    let health = live.health();
    assert_eq!(health.state, HealthState::Ready, "{health:?}");
    assert_eq!(
        health.generation.as_deref(),
        Some(second.generation.as_str())
    );
}

/// The mode of `path` (permission bits).
#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// A page only its owner and group may read, in a folder others may not enter, is published
/// the same: the copy keeps each file's and folder's mode (`rsync -a` carries them to every
/// reader), and the generation folder keeps the index's.
#[cfg(unix)]
#[test]
fn a_publish_keeps_the_modes_of_the_bundles_files_and_folders() {
    use std::os::unix::fs::PermissionsExt;
    let work = tempfile::tempdir().unwrap();
    let bundle = work.path().join("bundle");
    common::copy_dir(&common::fixture("focowiki-docs"), &bundle);
    let set = |path: &Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    set(&bundle.join("pages/en/README.md"), 0o440);
    set(&bundle.join("pages/en/agent-integration"), 0o750);
    set(&bundle.join("pages"), 0o710);
    let (index_dir, published) = (work.path().join("index"), work.path().join("pub"));
    build(&bundle, &index_dir);
    let done = replica::publish(&index_dir, &bundle, &published, 3).unwrap();
    let generation = published.join(&done.generation);
    let copy = generation.join("bundle");
    for relative in [
        "pages/en/README.md",
        "pages/en/agent-integration",
        "pages",
        "pages/en",
        "index.md",
        "",
    ] {
        assert_eq!(
            mode(&copy.join(relative)),
            mode(&bundle.join(relative)),
            "bundle/{relative}"
        );
    }
    let source = index::current_generation(&index_dir).unwrap();
    assert_eq!(mode(&generation), mode(&source));
    assert_eq!(
        mode(&generation.join("search")),
        mode(&source.join("search"))
    );
}

/// Publishing into the bundle (or a folder inside it, or one that holds it) is refused before
/// anything is written: each later build would index the earlier copies.
#[test]
fn publishing_into_the_bundle_or_around_it_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let bundle = work.path().join("bundle");
    common::copy_dir(&common::fixture("focowiki-docs"), &bundle);
    let index_dir = work.path().join("index");
    let report = build(&bundle, &index_dir);
    for (target, says) in [
        (bundle.join("published"), "inside the bundle"),
        (bundle.join("pages/new/deeper"), "inside the bundle"),
        (bundle.clone(), "the bundle itself"),
        (work.path().to_path_buf(), "holds the bundle"),
        (index_dir.clone(), "the index folder itself"),
    ] {
        let error = replica::publish(&index_dir, &bundle, &target, 3).unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains(says) && text.contains("outside the bundle"),
            "{}: {text}",
            target.display()
        );
    }
    assert!(!bundle.join("published").exists() && !bundle.join("pages/new").exists());
    assert!(index::current_generation(&bundle).is_none());

    // The command refuses before it builds: the index does not take in a copy of itself.
    let before = report.manifest.counts.files;
    let inside = bundle.join("published");
    let (ok, _, stderr) = kbtools(&[
        "-q",
        "index",
        s(&bundle),
        "--index",
        s(&index_dir),
        "--no-semantic",
        "--publish",
        s(&inside),
    ]);
    assert!(!ok && stderr.contains("inside the bundle"), "{stderr}");
    assert!(!inside.exists());
    let manifest = index::read_manifest(&index_dir).unwrap().unwrap();
    assert_eq!(manifest.counts.files, before);
}
