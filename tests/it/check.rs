//! `kbtools check`: the repo's fixture bundle broken in documented ways, each breakage found
//! with its code, file and line, and nothing else; the report formats; the exit statuses.

use std::path::{Path, PathBuf};

use kbtools::check::report::{self, Context, Format};
use kbtools::ingest::bundle::{Code, Diagnostic, Severity};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::common::{copy_dir, fixture, kbtools};

/// What the fixture bundle reports as exported: the source's own broken links (the docs link
/// to API pages generated at their build time, and to a site route) and two pairs of pages
/// titled alike. Every case below expects these besides its own.
const AS_EXPORTED: [(Code, &str, Option<usize>); 6] = [
    (
        Code::DuplicateTitle,
        "pages/en/agent-integration/third-party-agent-client/skill-design.md",
        None,
    ),
    (Code::BrokenLink, "pages/en/openapi/README.md", Some(30)),
    (Code::BrokenLink, "pages/en/openapi/README.md", Some(211)),
    (
        Code::DuplicateTitle,
        "pages/zh-CN/agent-integration/third-party-agent-client/skill-design.md",
        None,
    ),
    (Code::BrokenLink, "pages/zh-CN/openapi/README.md", Some(30)),
    (Code::BrokenLink, "pages/zh-CN/openapi/README.md", Some(211)),
];

/// A copy of the fixture bundle to break.
struct Broken {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

impl Broken {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("bundle");
        copy_dir(&fixture("focowiki-docs"), &root);
        Broken { _dir: dir, root }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }

    fn text(&self, relative: &str) -> String {
        std::fs::read_to_string(self.path(relative)).unwrap()
    }

    fn write(&self, relative: &str, text: &str) {
        std::fs::write(self.path(relative), text).unwrap();
    }

    /// Rewrites a JSON file as the generator writes it (one line and a newline).
    fn edit_json(&self, relative: &str, edit: impl FnOnce(&mut Value)) {
        let mut value: Value = serde_json::from_str(&self.text(relative)).unwrap();
        edit(&mut value);
        self.write(
            relative,
            &format!("{}\n", serde_json::to_string(&value).unwrap()),
        );
    }

    /// Edits the record of `page` in its directory's document packet.
    fn edit_record(&self, page: &str, edit: impl FnOnce(&mut Value)) {
        let dir = Path::new(page).parent().unwrap();
        let name = dir.file_name().unwrap().to_str().unwrap();
        let packet = format!("_index/{}/{name}-documents.json", dir.to_str().unwrap());
        self.edit_json(&packet, |value| {
            let record = value["documents"]
                .as_array_mut()
                .unwrap()
                .iter_mut()
                .find(|d| d["path"] == page)
                .unwrap_or_else(|| panic!("no record of {page} in {packet}"));
            edit(record);
        });
    }

    /// Rewrites a page and its record's checksum and size, as an export of the edited page
    /// would: only what the edit itself breaks is then wrong.
    fn edit_page(&self, page: &str, edit: impl FnOnce(String) -> String) {
        let text = edit(self.text(page));
        self.write(page, &text);
        self.edit_record(page, |record| {
            record["checksumSha256"] = sha256_hex(text.as_bytes()).into();
            record["byteCount"] = text.len().into();
        });
    }

    fn check(&self) -> kbtools::check::Report {
        kbtools::check::check(&self.root, &[]).unwrap()
    }
}

/// (code, file, line) of each finding.
fn found(report: &kbtools::check::Report) -> Vec<(Code, String, Option<usize>)> {
    report
        .findings
        .iter()
        .map(|d| (d.code, d.path.clone(), d.line))
        .collect()
}

/// `expected` besides the findings of the bundle as exported, in the report's order.
fn with_exported(expected: &[(Code, &str, Option<usize>)]) -> Vec<(Code, String, Option<usize>)> {
    let mut all: Vec<(Code, String, Option<usize>)> = AS_EXPORTED
        .iter()
        .chain(expected)
        .map(|(code, path, line)| (*code, path.to_string(), *line))
        .collect();
    all.sort_by(|a, b| (&a.1, a.2, a.0).cmp(&(&b.1, b.2, b.0)));
    all
}

#[test]
fn the_fixture_as_exported_has_no_error() {
    let report = kbtools::check::check(&fixture("focowiki-docs"), &[]).unwrap();
    assert_eq!(found(&report), with_exported(&[]));
    assert!(!report.fails(Severity::Error));
    assert!(
        report.fails(Severity::Warning),
        "its warnings fail --strict"
    );
    assert_eq!((report.files, report.pages), (271, 36));
}

#[test]
fn every_breakage_is_found_with_its_code_file_and_line_and_nothing_else() {
    let b = Broken::new();
    // 1. A page deleted but still in its record: the record (KB010), and the navigation that
    //    links to it: its directory's leaf and the log (KB031).
    std::fs::remove_file(b.path("pages/en/guide/resource-management.md")).unwrap();
    // 2. A page changed after the export, its size kept: the checksum no longer matches.
    let page = "pages/en/guide/file-first-graph.md";
    let text = b.text(page).replacen("graph", "GRAPH", 1);
    b.write(page, &text);
    // 3. A record whose byteCount lies about its page.
    b.edit_record("pages/en/guide/open-knowledge-format.md", |r| {
        r["byteCount"] = (r["byteCount"].as_u64().unwrap() + 1).into();
    });
    // 4. A relationship to a page that does not exist.
    b.edit_json(
        "_graph/by-file/en/guide/file-cleaning-ingestion.json",
        |v| {
            v["relationships"][0]["targetPath"] = "pages/en/guide/missing.md".into();
        },
    );
    // 5. A page linking to a page that does not exist (a line added at its end).
    let linking = "pages/en/deployment/environment.md";
    let link_line = b.text(linking).lines().count() + 2;
    b.edit_page(linking, |text| {
        format!("{text}\n\nSee [the upgrade notes](./upgrade-notes.md).")
    });
    // 6. Frontmatter that does not parse (found on its third line, where the list is still
    //    open).
    b.edit_page("pages/zh-CN/guide/file-first-graph.md", |text| {
        format!("---\ntitle: [unclosed\n---\n{text}")
    });
    // 7. A JSON file of another formatVersion.
    b.edit_json("_graph/catalog.json", |v| v["formatVersion"] = 3.into());
    // 8. A per-file graph cut short: not JSON.
    let graph = "_graph/by-file/zh-CN/guide/open-knowledge-format.json";
    let text = b.text(graph);
    b.write(graph, &text[..text.len() / 2]);
    // 9. Generated navigation linking to a file that does not exist (its last line).
    let nav = "pages/zh-CN/deployment/index.md";
    let text = b.text(nav);
    let lines = text.lines().count();
    b.write(nav, &format!("{text}- [Gone](gone.md)\n"));
    // 10. Two pages titled alike by their records.
    let title = b.text("_index/pages/en/deployment/deployment-documents.json");
    let title: Value = serde_json::from_str(&title).unwrap();
    let first = title["documents"][0]["title"].clone();
    let second = title["documents"][1]["path"].as_str().unwrap().to_string();
    b.edit_record(&second, |r| r["title"] = first.clone());
    // 11. A page no navigation links to: its entry taken out of its directory's leaf.
    let leaf = "pages/zh-CN/guide/index-directory-leaf-065aff17-c29e-3b7f-d2fc-9acf286524ad.md";
    let text = b.text(leaf);
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains("resource-management.md"))
        .collect();
    assert_eq!(kept.len() + 1, text.lines().count(), "one entry taken out");
    b.write(leaf, &format!("{}\n", kept.join("\n")));
    // 12. A required navigation file deleted: reported once (KB001), not at each of the
    //     navigation pages that link to it.
    std::fs::remove_file(b.path("_graph/index.md")).unwrap();
    // 13. A page without a record (KB013), which no navigation lists either (KB042).
    b.write("pages/en/guide/notes.md", "# Notes\n\nScratch notes.\n");

    let report = b.check();
    let expected = with_exported(&[
        (Code::MissingNavigation, "_graph/index.md", None),
        (Code::FormatVersion, "_graph/catalog.json", Some(1)),
        (
            Code::DanglingRelation,
            "_graph/by-file/en/guide/file-cleaning-ingestion.json",
            Some(1),
        ),
        (
            Code::InvalidJson,
            "_graph/by-file/zh-CN/guide/open-knowledge-format.json",
            None,
        ),
        (
            Code::MissingPage,
            "_index/pages/en/guide/guide-documents.json",
            Some(1),
        ),
        (
            Code::ChecksumMismatch,
            "_index/pages/en/guide/guide-documents.json",
            Some(1),
        ),
        (
            Code::ByteCountMismatch,
            "_index/pages/en/guide/guide-documents.json",
            Some(1),
        ),
        (Code::BrokenNavigationLink, "log.md", Some(0)),
        (Code::BrokenLink, linking, Some(link_line)),
        (Code::DuplicateTitle, &second, None),
        (
            Code::BrokenNavigationLink,
            "pages/en/guide/index-directory-leaf-fd299939-e35c-8a13-7edd-09f598f69b1a.md",
            Some(0),
        ),
        (Code::UnrecordedPage, "pages/en/guide/notes.md", None),
        (Code::Unreachable, "pages/en/guide/notes.md", None),
        (Code::BrokenNavigationLink, nav, Some(lines + 1)),
        (
            Code::InvalidFrontmatter,
            "pages/zh-CN/guide/file-first-graph.md",
            Some(3),
        ),
        (
            Code::Unreachable,
            "pages/zh-CN/guide/resource-management.md",
            None,
        ),
    ]);
    // Lines the test cannot know beforehand (where the generator put a link) are compared as
    // present: `Some(0)` above.
    let mut actual = found(&report);
    for (code, path, line) in &expected {
        if *line == Some(0) {
            let a = actual
                .iter_mut()
                .find(|a| a.0 == *code && &a.1 == path)
                .unwrap_or_else(|| panic!("{code:?} not found at {path}"));
            assert!(a.2.is_some(), "{code:?} {path}: no line");
            a.2 = Some(0);
        }
    }
    actual.sort_by(|a, b| (&a.1, a.2, a.0).cmp(&(&b.1, b.2, b.0)));
    assert_eq!(
        actual,
        expected,
        "\n{}",
        report::write(
            &report,
            Format::Text,
            &Context {
                root: Path::new(""),
                threshold: Severity::Error
            }
        )
    );
    // Every finding says what is wrong with what: the record's page, the link, the values.
    let message =
        |code: Code| -> &Diagnostic { report.findings.iter().find(|d| d.code == code).unwrap() };
    assert!(message(Code::MissingPage)
        .message
        .contains("pages/en/guide/resource-management.md"));
    assert!(message(Code::ChecksumMismatch)
        .message
        .contains("pages/en/guide/file-first-graph.md"));
    assert!(message(Code::DanglingRelation)
        .message
        .contains("pages/en/guide/missing.md"));
    assert!(report
        .findings
        .iter()
        .any(|d| d.code == Code::BrokenLink && d.message.contains("./upgrade-notes.md")));
    assert!(message(Code::BrokenNavigationLink).column.is_some());
    assert!(report.fails(Severity::Error));

    // The JSON report of the binary says the same, and the exit status is 1.
    let out = kbtools()
        .arg("check")
        .arg(&b.root)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        json["findings"].as_array().unwrap().len(),
        report.findings.len()
    );
    assert_eq!(json["passed"], false);

    // The reports CI validates against their schemas (.ci/run: JUnit XSD, SARIF 2.1.0).
    let reports = crate::common::manifest_dir()
        .join("target")
        .join("check-reports");
    std::fs::create_dir_all(&reports).unwrap();
    for (format, name) in [
        (Format::Junit, "broken.junit.xml"),
        (Format::Sarif, "broken.sarif"),
        (Format::Github, "broken.github.txt"),
    ] {
        let cx = Context {
            root: Path::new("export"),
            threshold: Severity::Error,
        };
        std::fs::write(reports.join(name), report::write(&report, format, &cx)).unwrap();
    }
}

#[test]
fn allowed_codes_and_strict_decide_the_exit_status() {
    let fixture = fixture("focowiki-docs");
    let status = |args: &[&str]| {
        kbtools()
            .arg("check")
            .arg(&fixture)
            .args(args)
            .output()
            .unwrap()
    };
    // Warnings only: passes, fails with --strict, passes again with their codes allowed.
    assert_eq!(status(&[]).status.code(), Some(0));
    assert_eq!(status(&["--strict"]).status.code(), Some(1));
    let allowed = status(&["--strict", "--allow", "KB030,kb041"]);
    assert_eq!(allowed.status.code(), Some(0));
    let text = String::from_utf8(allowed.stdout).unwrap();
    assert!(
        text.contains("0 errors, 0 warnings, 0 notes in 271 files (36 pages); 6 allowed; passed"),
        "{text}"
    );
    // Could not run: exit 2 with a message naming the problem.
    let unknown = status(&["--allow", "KB777"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("KB777"));
    let missing = kbtools()
        .args(["check", "/nonexistent/bundle"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("not a directory"));
}

#[test]
fn github_annotations_follow_the_workflow_command_syntax() {
    let report = kbtools::check::check(&fixture("focowiki-docs"), &[]).unwrap();
    let cx = Context {
        root: Path::new("exports/docs"),
        threshold: Severity::Warning,
    };
    let text = report::write(&report, Format::Github, &cx);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), report.findings.len() + 1);
    assert_eq!(
        lines[1],
        "::warning file=exports/docs/pages/en/openapi/README.md,line=30,col=40,\
         title=KB030 page links to a file that does not exist::\
         link to /openapi/focowiki-openapi.json: openapi/focowiki-openapi.json does not exist \
         (hint: fix the link's path (relative to the page, percent-encoded per segment) or \
         restore the page; the generator keeps a source's broken links as written)"
    );
    assert!(lines
        .last()
        .unwrap()
        .contains("failed (fails at warning and above)"));
}

#[test]
fn a_plain_folder_is_checked_by_its_generator_conventions() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("a.md"),
        "---\ntitle: A\n---\n# A\n\n[B](b.md) and\n[C](c.md)\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("b.md"), "---\ntitle: [x\n---\n# B\n").unwrap();
    let report = kbtools::check::check(dir.path(), &[]).unwrap();
    // The broken link's line counts the frontmatter, as an editor does.
    assert_eq!(report.findings[0].line, Some(7), "{:?}", report.findings);
    // The JUnit report lists the codes a folder can get, not the bundle's records and graph.
    let cx = Context {
        root: dir.path(),
        threshold: Severity::Error,
    };
    let junit = report::write(&report, Format::Junit, &cx);
    assert!(junit.contains("KB032 "), "{junit}");
    assert!(
        !junit.contains("KB001 ") && !junit.contains("KB020 "),
        "{junit}"
    );
    let listed = Code::ALL
        .iter()
        .filter(|c| c.applies_to(kbtools::ingest::bundle::BundleKind::PlainFolder))
        .count();
    assert_eq!(junit.matches("<testcase ").count(), listed, "{junit}");
    let codes: Vec<(Code, &str)> = report
        .findings
        .iter()
        .map(|d| (d.code, d.path.as_str()))
        .collect();
    assert_eq!(
        codes,
        [
            (Code::UnresolvedLink, "a.md"),
            (Code::InvalidFrontmatter, "b.md")
        ],
        "{:?}",
        report.findings
    );
}

#[test]
fn the_ci_guide_lists_every_code_with_its_severity() {
    let guide = std::fs::read_to_string(crate::common::manifest_dir().join("docs/ci.md")).unwrap();
    for code in Code::ALL {
        let row = format!(
            "| `{}` | {} | {} | {} |",
            code.as_str(),
            code.severity().as_str(),
            code.title(),
            code.hint()
        );
        assert!(
            guide.contains(&row),
            "docs/ci.md's table of codes lacks {row}"
        );
    }
}
