//! Unit tests of the plain folder's pages and relations.

use super::*;

/// Pages sharing a translation key in their frontmatter are translations of one another,
/// both ways and once per pair (also beside a pair under sibling language folders); pages
/// of one language sharing a `ref` are not; a key shared by too many pages is reported.
#[test]
fn frontmatter_translation_keys_make_translation_relations() {
    let fm = |pairs: &[(&str, &str)]| -> serde_json::Map<String, Value> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
            .collect()
    };
    let page = |path: &'static str, frontmatter| PlainPage {
        path,
        title: path,
        frontmatter,
        links: &[],
    };
    let mut pages = vec![
        page("pages/about.md", fm(&[("translationKey", "about")])),
        page("pages/a-propos.md", fm(&[("TranslationKey", "about")])),
        page("pages/en/x.md", fm(&[("translation_key", "x")])),
        page("pages/zh/x.md", fm(&[("translation_key", "x")])),
        page("pages/team.md", fm(&[("lang", "en"), ("ref", "team")])),
        page("pages/equipe.md", fm(&[("lang", "fr"), ("ref", "team")])),
        page("pages/staff.md", fm(&[("lang", "en"), ("ref", "team")])),
        page("pages/no-lang.md", fm(&[("ref", "about")])),
    ];
    let shared: Vec<&'static str> = (0..=MAX_TRANSLATIONS)
        .map(|i| &*Box::leak(format!("pages/many/{i}.md").into_boxed_str()))
        .collect();
    for path in &shared {
        pages.push(page(path, fm(&[("translationKey", "same")])));
    }
    let mut diagnostics = Vec::new();
    let relations = derive_relations(&pages, &mut diagnostics);
    let mut pairs: Vec<(&str, &str)> = relations
        .iter()
        .filter(|r| r.relation_type == "translation")
        .map(|r| (r.from.as_str(), r.to.as_str()))
        .collect();
    pairs.sort_unstable();
    assert_eq!(
        pairs,
        [
            ("pages/a-propos.md", "pages/about.md"),
            ("pages/about.md", "pages/a-propos.md"),
            ("pages/en/x.md", "pages/zh/x.md"),
            ("pages/equipe.md", "pages/staff.md"),
            ("pages/equipe.md", "pages/team.md"),
            ("pages/staff.md", "pages/equipe.md"),
            ("pages/team.md", "pages/equipe.md"),
            ("pages/zh/x.md", "pages/en/x.md"),
        ]
    );
    let reasons: Vec<&str> = relations
        .iter()
        .filter(|r| r.from == "pages/about.md")
        .filter_map(|r| r.reason.as_deref())
        .collect();
    assert_eq!(
        reasons,
        ["pages/about.md and pages/a-propos.md are translations of one page (the same `translationKey` in their frontmatter)."]
    );
    // The sibling-folder pair keeps its own reason, once.
    let x: Vec<&Relation> = relations
        .iter()
        .filter(|r| r.from == "pages/en/x.md")
        .collect();
    assert_eq!(x.len(), 1);
    assert!(x[0]
        .reason
        .as_deref()
        .unwrap()
        .contains("sibling language folders"));
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    assert!(diagnostics[0]
        .message
        .contains(&format!("shared by {} pages", MAX_TRANSLATIONS + 1)));
}

#[test]
fn link_paths_skip_urls_and_anchors() {
    let path = link_path;
    assert_eq!(path("https://x.org/a.md"), None);
    assert_eq!(path("mailto:a@b.org"), None);
    assert_eq!(path("#top"), None);
    assert_eq!(path("image.png"), Some(("image.png".into(), false)));
    assert_eq!(path("../a%20b.md#h"), Some(("../a b.md".into(), true)));
    assert_eq!(path("<other.md>"), Some(("other.md".into(), true)));
    assert_eq!(
        path("/guide/essentials/computed#x"),
        Some(("/guide/essentials/computed".into(), true))
    );
    assert_eq!(path("../api/"), Some(("../api/".into(), true)));
    assert_eq!(path("./foo.html"), Some(("./foo.html".into(), true)));
}
