//! Aggregate pages in their place ([`crate::ingest::aggregate`]): a history (a changelog,
//! release notes) counts in the content lanes at a share of its weight ([`damping`]), unless
//! the question asks what a history answers — a version, a release, a rename, a removal
//! ([`asks_about_releases`]). The page the question names (`identifier`, the exact lanes) is
//! never damped.

use crate::index::catalog::Catalog;
use crate::ingest::aggregate;
use crate::search::weights::WEIGHTS;

/// Words that ask about releases. A word joined to others by `-`, `_`, `/` or `.` is part of an
/// identifier (`no-deprecated-functions`) and asks nothing.
const RELEASE_WORDS: &[&str] = &[
    "changelog",
    "changelogs",
    "release",
    "releases",
    "released",
    "version",
    "versions",
    "upgrade",
    "upgrades",
    "upgraded",
    "upgrading",
    "migrate",
    "migrated",
    "migrating",
    "migration",
    "breaking",
    "rename",
    "renamed",
    "renaming",
    "deprecate",
    "deprecated",
    "deprecation",
    "removed",
    "introduced",
    "history",
    "semver",
];

/// Chinese words that ask about releases.
const RELEASE_WORDS_ZH: &[&str] = &[
    "版本",
    "升级",
    "发布",
    "更名",
    "重命名",
    "改名",
    "名字改",
    "移除",
    "废弃",
    "弃用",
    "更新日志",
    "变更日志",
    "迁移",
];

/// Whether `text` asks what a history answers: it says a release word, a version (`25.0`,
/// `v27`, `25 版`) or a year.
pub fn asks_about_releases(text: &str) -> bool {
    if RELEASE_WORDS_ZH.iter().any(|w| text.contains(w)) {
        return true;
    }
    let lower = text.to_lowercase();
    let words = lower.split(|c: char| !(c.is_alphanumeric() || matches!(c, '-' | '_' | '/' | '.')));
    for word in words {
        let word = word.trim_matches(|c: char| matches!(c, '-' | '_' | '/' | '.'));
        if RELEASE_WORDS.contains(&word) {
            return true;
        }
        // A version or a year; CJK text around it is its own word here.
        let bare = word.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '.');
        if aggregate::names_release(bare) && bare.bytes().any(|b| b == b'.' || b == b'v')
            || aggregate::is_year(bare)
        {
            return true;
        }
    }
    // "升级到 25 版", "3.5 里": a number just before 版, or a dotted version inside CJK text.
    let chars: Vec<char> = text.chars().collect();
    chars
        .windows(2)
        .any(|w| w[0].is_ascii_digit() && w[1] == '版')
        || chars
            .windows(3)
            .any(|w| w[0].is_ascii_digit() && w[1] == '.' && w[2].is_ascii_digit())
}

/// The share of its weight a content lane gives the page at `position`: [`WEIGHTS`]'s
/// `history` for a history when the question does not ask about releases (`asks`), else the
/// whole.
pub fn damping(catalog: &Catalog, position: u32, asks: bool) -> f64 {
    match !asks && catalog.is_history(position) {
        true => WEIGHTS.history,
        false => 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::asks_about_releases;

    #[test]
    fn release_questions_say_a_release_word_a_version_or_a_year() {
        for q in [
            "In which version were prefer-to-be-null and prefer-to-be-undefined removed?",
            "升级 eslint-plugin-jest 到 25 版以后，jest/lowercase-name 改成什么名字了？",
            "What changed in v27?",
            "Is 3.5.0 out?",
            "3.5 里能不能暂停侦听器？",
            "What broke in 2021?",
            "Where is the changelog?",
            "这个规则被弃用了吗",
        ] {
            assert!(asks_about_releases(q), "{q}");
        }
        for q in [
            "What does jest/no-deprecated-functions tell me to use instead?",
            "How do I allow 12 lines for .snap snapshots?",
            "A flaky case was switched off by putting // in front of every line.",
            "jest/require-top-level-describe 规则怎么限制顶层 describe？",
            "How do I repeat an element 10 times?",
            "Why is v-model not updating?",
        ] {
            assert!(!asks_about_releases(q), "{q}");
        }
    }
}
