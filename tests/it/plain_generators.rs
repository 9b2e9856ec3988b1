//! Plain Markdown folders as their site generators mean them (fixtures/generators/, written for
//! these tests): every link of each folder that points at a page of it becomes a relation, as
//! VitePress, Hugo, MkDocs, Docusaurus and Obsidian resolve it (site-root, extensionless,
//! `.html`, folder index, `#anchor`, wiki links with aliases and headings, Hugo ref/relref);
//! nothing inside code is taken for a link; titles carry no `{#id}` anchors, no shortcodes and no
//! byte-order mark; excerpts carry no `:::` markers or shortcodes. When `../shared/bundles/vue-docs`
//! is there, the same holds of Vue's docs.

use crate::common;

use std::collections::BTreeSet;

use common::{call, fixture, open_bundle, Opened};
use serde_json::json;

/// The pages every page of `opened` links to (outgoing or both ways), as (from, to) pairs
/// without the `pages/` prefix.
fn linked_pairs(opened: &Opened) -> BTreeSet<(String, String)> {
    let kb = &opened.kb;
    let mut pairs = BTreeSet::new();
    for file in kb.catalog.iter_files().filter(|f| f.source_backed) {
        let related = call(
            kb,
            "read_related",
            json!({"fileId": file.path, "limit": 200}),
        )
        .unwrap();
        for item in related["items"].as_array().unwrap() {
            if item["direction"] != "incoming" {
                pairs.insert((
                    file.path.trim_start_matches("pages/").to_string(),
                    item["path"]
                        .as_str()
                        .unwrap()
                        .trim_start_matches("pages/")
                        .to_string(),
                ));
            }
        }
    }
    pairs
}

fn expected(pairs: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// Diagnostics of links that did not resolve.
fn unresolved(opened: &Opened) -> Vec<String> {
    opened
        .report
        .diagnostics
        .iter()
        .map(|d| format!("{}: {}", d.path, d.message))
        .filter(|d| d.contains("does not resolve"))
        .collect()
}

fn titles(opened: &Opened) -> Vec<String> {
    opened
        .kb
        .catalog
        .iter_files()
        .filter(|f| f.source_backed)
        .map(|f| f.title.clone().unwrap_or_default())
        .collect()
}

fn check_titles(opened: &Opened) {
    for title in titles(opened) {
        assert!(
            !title.contains("{#") && !title.contains("{{") && !title.starts_with('\u{feff}'),
            "{title:?}"
        );
    }
}

#[test]
fn vitepress_site_root_extensionless_and_html_links_resolve() {
    let opened = open_bundle(&fixture("generators/vitepress"));
    assert_eq!(
        linked_pairs(&opened),
        expected(&[
            ("en/api/flame.md", "en/api/wick.md"),
            ("en/api/index.md", "en/api/flame.md"),
            ("en/api/index.md", "en/api/wick.md"),
            ("en/api/wick.md", "en/guide/install.md"),
            ("en/guide/config.md", "en/guide/index.md"),
            ("en/guide/config.md", "en/guide/install.md"),
            ("en/guide/index.md", "en/api/index.md"),
            ("en/guide/index.md", "en/guide/config.md"),
            ("en/guide/index.md", "en/guide/install.md"),
            ("en/guide/index.md", "en/guide/oil.md"),
            ("en/guide/install.md", "en/api/wick.md"),
            ("en/guide/install.md", "en/guide/config.md"),
            ("en/guide/oil.md", "en/api/wick.md"),
            ("zh/guide/index.md", "zh/guide/install.md"),
            ("zh/guide/index.md", "zh/guide/oil.md"),
            ("zh/guide/install.md", "zh/guide/index.md"),
            // Translations: the same path under the sibling language folder, both ways.
            ("en/guide/index.md", "zh/guide/index.md"),
            ("zh/guide/index.md", "en/guide/index.md"),
            ("en/guide/install.md", "zh/guide/install.md"),
            ("zh/guide/install.md", "en/guide/install.md"),
            ("en/guide/oil.md", "zh/guide/oil.md"),
            ("zh/guide/oil.md", "en/guide/oil.md"),
        ]),
    );
    // No `[[toc]]`, nothing from the code sample.
    assert_eq!(unresolved(&opened), Vec::<String>::new());
    check_titles(&opened);
    let mut got = titles(&opened);
    got.sort();
    assert!(got.contains(&"Lantern Guide".to_string()), "{got:?}");
    assert!(got.contains(&"Installing a Lantern".to_string()), "{got:?}");
    assert!(got.contains(&"灯笼指南".to_string()), "{got:?}");
    // Excerpts carry no container markers.
    let found = call(
        &opened.kb,
        "search_files",
        json!({"query": "overfill", "mode": "file"}),
    )
    .unwrap();
    let excerpt = found["items"][0]["sourceExcerpt"]
        .as_str()
        .unwrap_or_default();
    assert!(
        excerpt.contains("overfill") && !excerpt.contains(":::"),
        "{excerpt:?}"
    );
}

#[test]
fn hugo_refs_sections_and_code_toggles_resolve() {
    let opened = open_bundle(&fixture("generators/hugo"));
    assert_eq!(
        linked_pairs(&opened),
        expected(&[
            ("content/_index.md", "content/blog/_index.md"),
            ("content/_index.md", "content/docs/_index.md"),
            ("content/blog/_index.md", "content/blog/hello.md"),
            ("content/blog/hello.md", "content/docs/_index.md"),
            ("content/docs/_index.md", "content/docs/config.md"),
            ("content/docs/_index.md", "content/docs/install/index.md"),
            ("content/docs/config.md", "content/_index.md"),
            ("content/docs/config.md", "content/docs/install/index.md"),
            ("content/docs/install/index.md", "content/docs/config.md"),
        ]),
    );
    // TOML's `[[params.lantern]]` inside the code toggle is no wiki link.
    assert_eq!(unresolved(&opened), Vec::<String>::new());
    check_titles(&opened);
    assert!(titles(&opened).contains(&"Configuration".to_string()));
    let found = call(
        &opened.kb,
        "search_files",
        json!({"query": "installation", "mode": "file"}),
    )
    .unwrap();
    for item in found["items"].as_array().unwrap() {
        let excerpt = item["sourceExcerpt"].as_str().unwrap_or_default();
        assert!(!excerpt.contains("{{"), "{excerpt:?}");
    }
}

#[test]
fn mkdocs_relative_links_and_directory_urls_resolve() {
    let opened = open_bundle(&fixture("generators/mkdocs"));
    assert_eq!(
        linked_pairs(&opened),
        expected(&[
            ("docs/about.md", "docs/index.md"),
            ("docs/about.md", "docs/user-guide/index.md"),
            ("docs/index.md", "docs/about.md"),
            ("docs/index.md", "docs/user-guide/getting-started.md"),
            ("docs/user-guide/getting-started.md", "docs/about.md"),
            (
                "docs/user-guide/getting-started.md",
                "docs/user-guide/writing.md"
            ),
            (
                "docs/user-guide/index.md",
                "docs/user-guide/getting-started.md"
            ),
            ("docs/user-guide/index.md", "docs/user-guide/writing.md"),
            (
                "docs/user-guide/writing.md",
                "docs/user-guide/getting-started.md"
            ),
        ]),
    );
    assert_eq!(unresolved(&opened), Vec::<String>::new());
    check_titles(&opened);
}

#[test]
fn docusaurus_route_links_resolve() {
    let opened = open_bundle(&fixture("generators/docusaurus"));
    assert_eq!(
        linked_pairs(&opened),
        expected(&[
            ("docs/intro.md", "docs/tutorial/basics.md"),
            ("docs/intro.md", "docs/tutorial/create-a-page.md"),
            ("docs/tutorial/basics.md", "docs/tutorial/create-a-page.md"),
            ("docs/tutorial/create-a-page.md", "docs/intro.md"),
            ("docs/tutorial/create-a-page.md", "docs/tutorial/basics.md"),
        ]),
    );
    assert_eq!(unresolved(&opened), Vec::<String>::new());
    check_titles(&opened);
}

#[test]
fn obsidian_wiki_links_with_aliases_and_headings_resolve() {
    let opened = open_bundle(&fixture("generators/obsidian"));
    assert_eq!(
        linked_pairs(&opened),
        expected(&[
            ("Daily/2024-01-02.md", "Topics/Lantern Care.md"),
            ("Home.md", "Daily/2024-01-02.md"),
            ("Home.md", "Topics/Lantern Care.md"),
            ("Home.md", "Topics/Oil Grades.md"),
            ("Topics/Lantern Care.md", "Home.md"),
            ("Topics/Lantern Care.md", "Topics/Oil Grades.md"),
            ("Topics/Oil Grades.md", "Topics/Lantern Care.md"),
            ("Topics/bom-note.md", "Home.md"),
        ]),
    );
    // Neither `[[Not a link]]` in code nor `[[inside a fence]]` is looked for.
    assert_eq!(unresolved(&opened), Vec::<String>::new());
    check_titles(&opened);
    assert!(
        titles(&opened).contains(&"Bom Note".to_string()),
        "{:?}",
        titles(&opened)
    );
}

/// Every Markdown link of Vue's docs that points at a page of the folder (resolved here the way
/// VitePress does: `/`-rooted from the language root, extensionless, folder index) is a
/// relation.
#[test]
fn vue_docs_links_become_relations() {
    let Some(bundle) = common::shared_bundle("vue-docs") else {
        eprintln!("SKIPPED vue_docs_links_become_relations: ../shared/bundles/vue-docs is absent");
        return;
    };
    let opened = open_bundle(&bundle);
    let pages: BTreeSet<String> = opened
        .kb
        .catalog
        .iter_files()
        .filter(|f| f.source_backed)
        .map(|f| f.path.trim_start_matches("pages/").to_string())
        .collect();
    let link = regex_lite_links();
    let mut wanted = BTreeSet::new();
    for page in &pages {
        let text = std::fs::read_to_string(bundle.join(page)).unwrap();
        for destination in link(&strip_fences(&text)) {
            if let Some(to) = vitepress_target(&pages, page, &destination) {
                if &to != page {
                    wanted.insert((page.clone(), to));
                }
            }
        }
    }
    check_titles(&opened);
    let got = linked_pairs(&opened);
    let missing: Vec<_> = wanted.difference(&got).collect();
    eprintln!(
        "vue-docs: {} linked page pairs, {} relations, missing {:?}",
        wanted.len(),
        wanted.len() - missing.len(),
        missing
    );
    assert!(wanted.len() > 500, "{}", wanted.len());
    assert!(
        missing.len() * 100 <= wanted.len() * 5,
        "more than 5% missing: {missing:?}"
    );
}

/// `text` without fenced code blocks.
fn strip_fences(text: &str) -> String {
    let mut out = String::new();
    let mut fence: Option<&str> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        match fence {
            Some(f) if trimmed.starts_with(f) => fence = None,
            Some(_) => {}
            None if trimmed.starts_with("```") => fence = Some("```"),
            None if trimmed.starts_with("~~~") => fence = Some("~~~"),
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// The destinations of `[text](destination)` links of `text` (inline code left out).
fn regex_lite_links() -> impl Fn(&str) -> Vec<String> {
    |text: &str| {
        let mut out = Vec::new();
        for line in text.lines() {
            let mut line = line.to_string();
            // Inline code spans.
            while let Some(start) = line.find('`') {
                match line[start + 1..].find('`') {
                    Some(end) => line.replace_range(start..start + end + 2, ""),
                    None => break,
                }
            }
            let mut rest = line.as_str();
            while let Some(at) = rest.find("](") {
                let after = &rest[at + 2..];
                let end = after.find(')').unwrap_or(after.len());
                let destination = after[..end].split_whitespace().next().unwrap_or("");
                out.push(destination.trim_matches(['<', '>']).to_string());
                rest = &after[end.min(after.len())..];
            }
        }
        out
    }
}

fn vitepress_target(pages: &BTreeSet<String>, from: &str, destination: &str) -> Option<String> {
    let path = destination.split(['#', '?']).next()?;
    if path.is_empty() || path.contains("://") || path.starts_with("mailto:") {
        return None;
    }
    let joined = match path.strip_prefix('/') {
        Some(rooted) => format!("{}/{rooted}", from.split('/').next()?),
        None => format!("{}/{path}", from.rsplit_once('/')?.0),
    };
    let mut stack: Vec<&str> = Vec::new();
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                stack.pop()?;
            }
            p => stack.push(p),
        }
    }
    let base = stack.join("/");
    let base = base.strip_suffix(".html").unwrap_or(&base).to_string();
    [
        base.clone(),
        format!("{base}.md"),
        format!("{base}/index.md"),
        format!("{base}/README.md"),
    ]
    .into_iter()
    .find(|c| pages.contains(c))
}

/// Translations named in frontmatter (rules#translations): two pages under different names that
/// share Hugo's `translationKey` are a `translation` relation both ways, and in `hybrid` mode the
/// translation follows the page that answers as graph evidence (file mode, by the question's
/// words alone, does not find it).
#[test]
fn frontmatter_translation_keys_relate_and_rank_translations() {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "en/setup.md",
        "---\ntitle: Setup\ntranslationKey: setup-guide\n---\n\nInstall the frobnicator with \
         its installer, then restart the daemon.\n",
    );
    write(
        "fr/mise-en-place.md",
        "---\ntitle: Mise en place\ntranslationKey: setup-guide\n---\n\nInstallez le logiciel \
         puis redémarrez le service.\n",
    );
    write(
        "en/other.md",
        "---\ntitle: Other\n---\n\nNothing about installing here, only gardening.\n",
    );
    let opened = open_bundle(dir.path());
    assert_eq!(
        linked_pairs(&opened),
        expected(&[
            ("en/setup.md", "fr/mise-en-place.md"),
            ("fr/mise-en-place.md", "en/setup.md"),
        ]),
    );
    let related = call(
        &opened.kb,
        "read_related",
        json!({"fileId": "pages/en/setup.md"}),
    )
    .unwrap();
    let item = &related["items"][0];
    assert_eq!(item["relationType"], "translation");
    assert_eq!(item["direction"], "bidirectional");
    assert!(
        item["reason"].as_str().unwrap().contains("translationKey"),
        "{item}"
    );
    let paths = |mode: &str| -> Vec<String> {
        let found = call(
            &opened.kb,
            "search_files",
            json!({"query": "frobnicator daemon", "mode": mode}),
        )
        .unwrap();
        found["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["path"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        paths("hybrid"),
        ["pages/en/setup.md", "pages/fr/mise-en-place.md"]
    );
    assert_eq!(paths("file"), ["pages/en/setup.md"]);
}
