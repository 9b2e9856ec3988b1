//! Aggregate pages that collect other pages' subjects, told from the folder alone: a
//! **history** (a changelog, release notes) has headings that are versions or dates
//! (`13.13.1`, `25.7.0 (2022-01-15)`, `Version 3`, `2024年5月1日`), read from each page's
//! headings ([`is_history`]).
//!
//! A history shares a word with nearly every question (it names every rule, every option), and
//! scored by its best of a hundred sections it wins on sheer number; search ranks it for what it
//! answers, a version, a release or a rename (`crate::search::aggregates`).
//!
//! Collections (a page that links to most of the folder's pages: a rule list, a README's table
//! of every rule) are not told apart: damped like histories they lost the questions they answer
//! (install, configuration; docs/ranking.md#aggregate-pages).

/// Version or date headings a history has at least.
pub const HISTORY_MIN_HEADINGS: usize = 3;

/// Whether a page with these `headings` is a history: at least [`HISTORY_MIN_HEADINGS`] of them
/// name a release, and they are at least a quarter of its headings (a changelog's versions
/// have "Features" and "Bug Fixes" under them).
pub fn is_history(headings: &[String]) -> bool {
    let releases = headings.iter().filter(|h| names_release(h)).count();
    releases >= HISTORY_MIN_HEADINGS && releases * 4 >= headings.len()
}

/// Words a release heading may hold besides its version and date.
const RELEASE_WORDS: &[&str] = &[
    "version",
    "release",
    "released",
    "unreleased",
    "latest",
    "yanked",
    "alpha",
    "beta",
    "rc",
    "v",
    "版本",
    "发布",
    "更新",
];

/// What splits a heading into words, besides white space.
const SEPARATORS: &[char] = &[
    '(', ')', '[', ']', ',', ':', ';', '/', '—', '–', '-', '年', '月', '日', '（', '）', '，',
    '：', '#', '*', '`', '@',
];

/// Words before a number that make a numbered section, not a release, and runtimes whose
/// versions head a compatibility note ("Node 18.0").
const NUMBERED: &[&str] = &[
    "step", "chapter", "section", "part", "lesson", "phase", "appendix", "figure", "table",
    "example", "exercise", "level", "stage", "rule", "item", "article", "node", "python", "java",
];

const MONTHS: &[&str] = &[
    "jan",
    "feb",
    "mar",
    "apr",
    "may",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
    "january",
    "february",
    "march",
    "april",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// Whether `heading` names a release and nothing else: a version or a date, with at most a
/// date, a link's text or words such as "unreleased" besides. "1.2 Installing" is a numbered
/// section, not a release.
pub fn names_release(heading: &str) -> bool {
    let lower = heading.to_lowercase();
    let tokens: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || SEPARATORS.contains(&c))
        .filter(|t| !t.is_empty())
        .collect();
    if tokens.is_empty() || tokens.len() > 10 {
        return false;
    }
    // A product's name before its version: "Vue 3.5", "ESLint v9.0.0" (not "Step 1.2").
    let named = tokens.len() >= 2
        && tokens[0].chars().all(char::is_alphabetic)
        && !NUMBERED.contains(&tokens[0])
        && is_version(tokens[1]);
    let tokens = &tokens[usize::from(named)..];
    let (mut version, mut year) = (false, false);
    for t in tokens {
        if is_version(t) {
            version = true;
        } else if is_year(t) {
            year = true;
        } else if !(t.len() <= 2 && t.bytes().all(|b| b.is_ascii_digit())
            || MONTHS.contains(&t.trim_end_matches('.'))
            || RELEASE_WORDS.contains(t)
            || is_prerelease(t)
            || t.chars().all(|c| !c.is_alphanumeric()))
        {
            return false;
        }
    }
    version || year
}

/// `1.2`, `13.13.1`, `v2`, `v1.0.0-beta.1`, `2.0.0+build`.
fn is_version(token: &str) -> bool {
    let (prefixed, rest) = match token.strip_prefix('v') {
        Some(rest) => (true, rest),
        None => (false, token),
    };
    let core = rest.split(['+']).next().unwrap_or("");
    let mut parts = core.splitn(2, |c: char| !(c.is_ascii_digit() || c == '.'));
    let numbers = parts.next().unwrap_or("");
    let numbers = numbers.trim_end_matches('.');
    let dotted: Vec<&str> = numbers.split('.').collect();
    let all_digits = dotted
        .iter()
        .all(|p| !p.is_empty() && p.len() <= 4 && p.bytes().all(|b| b.is_ascii_digit()));
    all_digits && (dotted.len() >= 2 || prefixed && !numbers.is_empty())
}

/// `beta`, `rc.1`, `alpha2`: the pre-release part of a version split at its dash.
fn is_prerelease(token: &str) -> bool {
    let word = token.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    ["alpha", "beta", "rc", "pre", "next", "canary", "preview"].contains(&word)
}

/// A year between 1990 and 2099.
pub fn is_year(token: &str) -> bool {
    token.len() == 4
        && token.bytes().all(|b| b.is_ascii_digit())
        && ("1990".."2100").contains(&token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_headings_are_versions_and_dates_with_nothing_else() {
        for h in [
            "13.13.1",
            "25.7.0 (2022-01-15)",
            "[25.7.0] - 2022-01-15",
            "v2.0",
            "v3",
            "Version 3.4.0",
            "1.0.0-beta.2 (Unreleased)",
            "2024-05-01",
            "January 15, 2022",
            "2024年5月1日",
            "v1.2.0 — 2020-03-04",
            "Vue 3.5",
            "ESLint v9.0.0 released",
        ] {
            assert!(names_release(h), "{h}");
        }
        for h in [
            "1.2 Installing the plugin",
            "Bug Fixes",
            "Features",
            "2",
            "Options",
            "Version",
            "Node 18 support",
            "The v-model directive",
            "What's new in 3.5",
            "Step 1.2",
            "Chapter 2.1 Basics",
        ] {
            assert!(!names_release(h), "{h}");
        }
    }

    #[test]
    fn a_history_has_three_release_headings_a_quarter_of_its_own() {
        let owned = |hs: &[&str]| hs.iter().map(|h| h.to_string()).collect::<Vec<_>>();
        assert!(is_history(&owned(&[
            "Changelog",
            "2.0.0",
            "Features",
            "Bug Fixes",
            "1.1.0",
            "Features",
            "1.0.0",
            "Features",
        ])));
        // Two releases are not enough.
        assert!(!is_history(&owned(&["Changelog", "2.0.0", "1.0.0"])));
        // A guide with a few versioned sections among many is no history.
        let mut guide = owned(&["v2", "v3", "v4"]);
        guide.extend((0..20).map(|i| format!("Step {i}")));
        assert!(!is_history(&guide));
    }
}
