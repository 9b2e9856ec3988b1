//! Unit tests of how a plain folder's links resolve to pages.

use super::*;

fn link(destination: &str) -> Link {
    Link {
        destination: destination.into(),
        wiki: false,
        shortcode: false,
        line: 0,
    }
}

/// The pages `from` links to (outgoing or both ways) and the diagnostics, when `from` has
/// `links` among `paths`.
fn targets(paths: &[&str], from: &str, links: Vec<Link>) -> (Vec<String>, usize) {
    let empty: Vec<Link> = Vec::new();
    let pages: Vec<PlainPage<'_>> = paths
        .iter()
        .map(|p| PlainPage {
            path: p,
            title: paths::name_of(p),
            frontmatter: serde_json::Map::new(),
            links: if *p == from { &links } else { &empty },
        })
        .collect();
    let mut diagnostics = Vec::new();
    let relations = derive_relations(&pages, &mut diagnostics);
    let mut out: Vec<String> = relations
        .iter()
        .filter(|r| r.from == from && r.direction != Direction::Incoming)
        .map(|r| r.to.clone())
        .collect();
    out.sort();
    (out, diagnostics.len())
}

#[test]
fn site_root_extensionless_folder_and_html_links_resolve() {
    let paths = [
        "pages/en/guide/essentials/computed.md",
        "pages/en/guide/essentials/watchers.md",
        "pages/en/api/index.md",
        "pages/en/api/reactivity-core.md",
        "pages/zh/guide/essentials/computed.md",
        "pages/docs/intro.md",
        "pages/docs/setup/README.md",
        "pages/content/blog/_index.md",
    ];
    let from = "pages/en/guide/essentials/watchers.md";
    let (got, problems) = targets(
        &paths,
        from,
        vec![
            link("/guide/essentials/computed#caching"),
            link("../../api/"),
            link("/api/reactivity-core.html"),
            link("./computed"),
            link("diagram.png"),
        ],
    );
    assert_eq!(
        got,
        [
            "pages/en/api/index.md",
            "pages/en/api/reactivity-core.md",
            "pages/en/guide/essentials/computed.md"
        ]
    );
    assert_eq!(problems, 0);
    let (got, _) = targets(
        &paths,
        "pages/docs/intro.md",
        vec![link("/docs/setup/"), link("setup")],
    );
    assert_eq!(got, ["pages/docs/setup/README.md"]);
}

#[test]
fn links_of_a_folder_copied_from_another_layout_resolve_by_their_path_end() {
    // A rule reference copied out of its repository: the list links to
    // `lib/rules/<rule>/README.md`, the rules to `docs/…` three folders up.
    let paths = [
        "pages/docs/user-guide/rules/list.md",
        "pages/docs/user-guide/usage/options.md",
        "pages/rules/color-no-invalid-hex.md",
        "pages/rules/unit-allowed-list.md",
        "pages/rules/unit-whitelist.md",
        "pages/README.md",
        "pages/guide/README.md",
        "pages/other/options.md",
    ];
    let (got, problems) = targets(
        &paths,
        "pages/docs/user-guide/rules/list.md",
        vec![
            link("../../../lib/rules/color-no-invalid-hex/README.md"),
            link("../../../lib/rules/unit-allowed-list/README.md#options"),
        ],
    );
    assert_eq!(
        got,
        [
            "pages/rules/color-no-invalid-hex.md",
            "pages/rules/unit-allowed-list.md"
        ]
    );
    assert_eq!(problems, 0);
    let (got, problems) = targets(
        &paths,
        "pages/rules/unit-whitelist.md",
        vec![
            link("../../../docs/user-guide/usage/options.md#fix"),
            link("../unit-allowed-list/README.md"),
        ],
    );
    assert_eq!(
        got,
        [
            "pages/docs/user-guide/usage/options.md",
            "pages/rules/unit-allowed-list.md"
        ]
    );
    assert_eq!(problems, 0);
    // Two pages end as the link does (`options.md`), a folder page name alone names no
    // page, and a missing page stays unresolved: three diagnostics, no relation.
    let (got, problems) = targets(
        &paths,
        "pages/rules/color-no-invalid-hex.md",
        vec![
            link("../../somewhere/options.md"),
            link("../../../elsewhere/README.md"),
            link("../../../lib/rules/no-such-rule/README.md"),
        ],
    );
    assert!(got.is_empty(), "{got:?}");
    assert_eq!(problems, 3);
}

#[test]
fn hugo_refs_and_wiki_links_with_aliases_resolve() {
    let paths = [
        "pages/content/docs/a.md",
        "pages/content/docs/b.md",
        "pages/content/blog/_index.md",
        "pages/notes/Note Name.md",
    ];
    let shortcode = |d: &str| Link {
        destination: d.into(),
        wiki: false,
        shortcode: true,
        line: 0,
    };
    let wiki = |d: &str| Link {
        destination: d.into(),
        wiki: true,
        shortcode: false,
        line: 0,
    };
    let (got, problems) = targets(
        &paths,
        "pages/content/docs/a.md",
        vec![
            shortcode("b.md"),
            shortcode("/blog/"),
            wiki("Note Name|see this"),
            wiki("Note Name#Heading"),
        ],
    );
    assert_eq!(
        got,
        [
            "pages/content/blog/_index.md",
            "pages/content/docs/b.md",
            "pages/notes/Note Name.md"
        ]
    );
    assert_eq!(problems, 0);
}
