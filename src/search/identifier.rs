//! The pages a query names: a rule reference, an API reference or a vault names its pages by
//! identifiers (`md013.md`, `rules/at-rule-no-unknown.md`, `guide/components/v-model.md`, a
//! title `MD013 - Line length`), and a question that says `MD013` or `at-rule-whitelist` asks
//! about that page, whatever else repeats the identifier (a changelog, a list of every rule, a
//! README). The lane [`super::Lane::Identifier`] (reported as `lexical` evidence of the path)
//! returns them with the weight of an exact path, so that they rank first after the exact
//! hits.
//!
//! A name counts when the whole query is a page's file stem (`configure`, `md013.md`), or when
//! a word of the query is an identifier (`crate::index::catalog::is_identifier`: a digit, a
//! hyphen or an underscore among letters) that is a page's stem or the identifier its title
//! starts with, and the name names at most `MOST_PAGES_A_NAME` pages (a page and its
//! translations; not `index`, which every folder has).

use crate::error::IndexError;
use crate::kb::KnowledgeBase;

/// Most pages one name may name and still be taken as naming them.
pub(crate) const MOST_PAGES_A_NAME: usize = 4;

/// The source pages the query names, in the order the query names them (the names are looked
/// up in the index, where a build put each page's names).
pub fn named_pages(
    kb: &KnowledgeBase,
    searcher: &tantivy::Searcher,
    query: &str,
) -> Result<Vec<u32>, IndexError> {
    let mut names: Vec<String> = Vec::new();
    let whole = strip_extension(query.trim().rsplit('/').next().unwrap_or_default()).to_lowercase();
    if !whole.is_empty() && !whole.contains(char::is_whitespace) {
        names.push(whole);
    }
    for word in query.split(|c: char| !(c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))) {
        let word = strip_extension(word.trim_matches('.'));
        if crate::index::catalog::is_identifier(word) {
            let name = word.to_lowercase();
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    let mut pages = Vec::new();
    for name in &names {
        let named = kb.search.pages_named(searcher, name, MOST_PAGES_A_NAME)?;
        if named.len() > MOST_PAGES_A_NAME {
            continue;
        }
        for hit in named {
            if kb.catalog.is_source(hit.position) && !pages.contains(&hit.position) {
                pages.push(hit.position);
            }
        }
    }
    Ok(pages)
}

/// `name` without a Markdown extension.
pub(super) fn strip_extension(name: &str) -> &str {
    [".md", ".markdown", ".MD"]
        .iter()
        .find_map(|ext| name.strip_suffix(ext))
        .unwrap_or(name)
}
