//! What a folder leaves out, and what is left of a generated file once the excluded files are
//! gone (DECISIONS 26: excluded files do not exist for any tool).
//!
//! The rules are the `--exclude` patterns, the root's `.kbignore`, and in a plain folder the
//! root's `.gitignore` (gitignore syntax, relative to the root). Patterns and paths are both
//! matched in Unicode NFC, so a pattern typed in NFC leaves out a name a Mac wrote in NFD. In a
//! plain folder without a `pages` folder of its own, a pattern may be written as kbtools prints
//! the files (`pages/drafts/`): it is read relative to the folder (`/drafts/`).
//!
//! In a Focowiki bundle the generator's own files describe the pages too. A generated file
//! that exists only for excluded pages (the per-file graph of an excluded page, the
//! `_index/pages/<dir>/**` and `_graph/by-*/<dir>/**` files of an excluded folder) is left out
//! with them; what the other generated files say of excluded pages is taken out when they are
//! read ([`Exclusions::filter`]): a JSON record loses every item that names an excluded file
//! (a document, a relation, a term's posting, and a term whose every posting went), a
//! Markdown file (`index.md`, `log.md`, navigation) every line that links to or names one.

use std::collections::HashSet;
use std::path::Path;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use serde_json::Value;

use super::{paths, BundleKind, Code, Diagnostic};

/// Where a rule was written.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    /// An `--exclude` pattern.
    Exclude,
    /// A line of the root's `.kbignore` (1-based).
    Kbignore(usize),
    /// A line of a plain folder's `.gitignore` (never reported when it leaves nothing out:
    /// such a file names what the tools that wrote it would write).
    Gitignore,
}

/// A rule as written and as given to the matcher.
#[derive(Debug, Clone)]
struct Rule {
    source: Source,
    written: String,
    /// The line the matcher holds (its `Glob::original`): NFC, `pages/` read in a plain folder.
    given: String,
}

/// The rules of a walk: which files are left out.
#[derive(Debug)]
pub struct Exclusions {
    matcher: Gitignore,
    kind: BundleKind,
    rules: Vec<Rule>,
}

/// The rules' lines that decided at least one file (by [`Rule::given`] and whether they come
/// from `--exclude`).
pub(crate) type Used = HashSet<(bool, String)>;

impl Exclusions {
    /// The rules of the folder at `root` (canonical) with the `exclude` patterns; `None` when
    /// there are none. A line that does not parse is reported and skipped.
    pub fn new(root: &Path, exclude: &[String], diagnostics: &mut Vec<Diagnostic>) -> Option<Self> {
        let kind = super::detect_kind(root);
        // `pages/x` names the folder's `x` when the folder has no `pages` of its own.
        let logical_pages = kind == BundleKind::PlainFolder && !root.join("pages").exists();
        let mut rules = Vec::new();
        for pattern in exclude {
            rules.push((Source::Exclude, pattern.clone(), None));
        }
        for (name, plain_only) in [(".kbignore", false), (".gitignore", true)] {
            if plain_only && kind != BundleKind::PlainFolder {
                continue;
            }
            let path = root.join(name);
            if !path.is_file() {
                continue;
            }
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
                    for (n, line) in text.lines().enumerate() {
                        let source = match plain_only {
                            false => Source::Kbignore(n + 1),
                            true => Source::Gitignore,
                        };
                        rules.push((
                            source,
                            line.trim_end_matches('\r').to_string(),
                            Some(path.clone()),
                        ));
                    }
                }
                Err(error) => diagnostics.push(Diagnostic::new(
                    Code::Other,
                    name.to_string(),
                    None,
                    format!("cannot read {name}: {error}; its exclusions are not applied"),
                )),
            }
        }
        if rules.is_empty() {
            return None;
        }
        let mut builder = GitignoreBuilder::new(root);
        let mut kept = Vec::new();
        for (source, written, from) in rules {
            let given = given_line(&written, logical_pages && source != Source::Gitignore);
            if let Err(error) = builder.add_line(from.clone(), &given) {
                let message = match source {
                    Source::Exclude => format!(
                        "--exclude {written:?} was skipped: {error}; write a gitignore pattern"
                    ),
                    _ => format!("a pattern was skipped: {error}; fix the line (gitignore syntax)"),
                };
                let (path, line) = match source {
                    Source::Exclude => (String::new(), None),
                    Source::Kbignore(n) => (".kbignore".to_string(), Some(n)),
                    Source::Gitignore => (".gitignore".to_string(), None),
                };
                diagnostics.push(Diagnostic::new(Code::Other, path, line, message));
                continue;
            }
            kept.push(Rule {
                source,
                written,
                given: trim_given(&given),
            });
        }
        match builder.build() {
            Ok(matcher) if matcher.num_ignores() + matcher.num_whitelists() > 0 => {
                Some(Exclusions {
                    matcher,
                    kind,
                    rules: kept,
                })
            }
            Ok(_) => None,
            Err(error) => {
                diagnostics.push(Diagnostic::new(
                    Code::Other,
                    String::new(),
                    None,
                    format!("the exclusions are not applied: {error}"),
                ));
                None
            }
        }
    }

    /// Whether the walk leaves out the file at `relative` (relative to the root, as the file
    /// system spells it); the rule that decided is added to `used`.
    pub(crate) fn leaves_out(&self, relative: &str, used: &mut Used) -> bool {
        let path = in_nfc(relative);
        if self.decides(&path, false, used) {
            return true;
        }
        match self.kind {
            BundleKind::Focowiki => self
                .described(&path)
                .is_some_and(|(subject, is_dir)| self.decides(&subject, is_dir, used)),
            BundleKind::PlainFolder => false,
        }
    }

    /// Whether the file (or folder) at the bundle path `path` (as records and tools name it:
    /// `pages/…` in a plain folder too) is left out.
    pub fn excludes(&self, path: &str) -> bool {
        // Only a relative path can be matched (the matcher panics on one with a root).
        if path.is_empty() || path.starts_with('/') || path.contains('\0') {
            return false;
        }
        let path = in_nfc(path);
        let path = match self.kind {
            BundleKind::PlainFolder => match path.strip_prefix("pages/") {
                Some(rest) => rest,
                None => return false,
            },
            BundleKind::Focowiki => &path,
        };
        let used = &mut Used::new();
        let is_dir = !paths::name_of(path).contains('.');
        self.decides(path, false, used)
            || (is_dir && self.decides(path, true, used))
            || (self.kind == BundleKind::Focowiki
                && self
                    .described(path)
                    .is_some_and(|(subject, is_dir)| self.decides(&subject, is_dir, used)))
    }

    /// Whether a rule leaves out `path` (or a folder above it); the deciding rule is added to
    /// `used`, a re-inclusion (`!keep.md`) too.
    fn decides(&self, path: &str, is_dir: bool, used: &mut Used) -> bool {
        let matched = self.matcher.matched_path_or_any_parents(path, is_dir);
        if let Some(glob) = matched.inner() {
            used.insert((glob.from().is_none(), glob.original().to_string()));
        }
        matched.is_ignore()
    }

    /// The page or page folder a generated file of a bundle exists for: `_graph/by-file/a/b.json`
    /// is `pages/a/b.md`'s, `_index/pages/a/**` and `_graph/by-*/a/**` are folder `pages/a`'s.
    /// `(path, is a folder)`; `None` for the bundle-wide files.
    fn described(&self, path: &str) -> Option<(String, bool)> {
        let folder = |rest: &str| {
            let dir = paths::parent_of(rest);
            let subject = if dir.is_empty() {
                "pages".to_string()
            } else {
                format!("pages/{dir}")
            };
            // The root `pages` folder is every page's: never the subject of an exclusion.
            (subject != "pages").then_some((subject, true))
        };
        if let Some(rest) = path.strip_prefix("_graph/by-file/") {
            let name = paths::name_of(rest);
            if name.ends_with(".json") && name != "index.json" {
                let stem = &rest[..rest.len() - ".json".len()];
                return Some((format!("pages/{stem}.md"), false));
            }
            return folder(rest);
        }
        for prefix in ["_index/pages/", "_graph/by-directory/"] {
            if let Some(rest) = path.strip_prefix(prefix) {
                return folder(rest);
            }
        }
        None
    }

    /// A diagnostic for every `--exclude` pattern and `.kbignore` line that left out no file
    /// (`used`: the rules that decided a file of the walk), naming what the rules are matched
    /// against (`example`: a path of the walk).
    pub(crate) fn unused(
        &self,
        root: &Path,
        used: &Used,
        example: Option<&str>,
    ) -> Vec<Diagnostic> {
        let against = match (self.kind, example) {
            (BundleKind::PlainFolder, Some(example)) => format!(
                "the paths of the files relative to {} (such as {example:?}; `pages/{example}` as kbtools prints it)",
                root.display()
            ),
            (_, Some(example)) => format!(
                "the paths of the files relative to {} (such as {example:?})",
                root.display()
            ),
            (_, None) => format!("the files under {}, which holds none", root.display()),
        };
        let mut out = Vec::new();
        for rule in &self.rules {
            let (path, line, what) = match rule.source {
                Source::Exclude => (String::new(), None, format!("--exclude {:?}", rule.written)),
                Source::Kbignore(n) => (
                    ".kbignore".to_string(),
                    Some(n),
                    format!(".kbignore line {n} {:?}", rule.written),
                ),
                Source::Gitignore => continue,
            };
            if rule.given.is_empty() || rule.given.starts_with('#') {
                continue;
            }
            if used.contains(&(rule.source == Source::Exclude, rule.given.clone())) {
                continue;
            }
            out.push(Diagnostic::new(
                Code::Other,
                path,
                line,
                format!(
                    "{what} leaves out no file: it was matched (gitignore syntax, Unicode NFC) against {against}; fix the pattern or remove it"
                ),
            ));
        }
        out
    }

    /// What is left of the generated file at `path` of class `class` once the excluded files
    /// are gone: the JSON record without the items that name one, or the Markdown without the
    /// lines that link to or name one. `content` comes back as it is when nothing names one.
    pub fn filter(&self, path: &str, class: paths::PathClass, content: String) -> String {
        if class == paths::PathClass::Page {
            return content;
        }
        if path.ends_with(".json") {
            if let Ok(mut value) = serde_json::from_str::<Value>(&content) {
                if !self.prune(&mut value) {
                    return content;
                }
                let mut text = serde_json::to_string(&value).unwrap_or_default();
                text.push('\n');
                return text;
            }
        }
        self.filter_lines(path, content)
    }

    /// Takes out of `value` every array item that names an excluded file (a string that is one,
    /// an object with a field that is one) and every item whose own array lost every item that
    /// way; a range bound that names one (`firstKey`, `lastKey`) is taken out of its object.
    /// Whether anything was taken out.
    fn prune(&self, value: &mut Value) -> bool {
        match value {
            Value::Array(items) => {
                let before = items.len();
                let mut changed = false;
                items.retain_mut(|item| {
                    if self.names_excluded(item) {
                        return false;
                    }
                    let emptied = self.prune_emptied(item);
                    changed |= emptied.1;
                    !emptied.0
                });
                changed || items.len() != before
            }
            Value::Object(_) => self.prune_emptied(value).1,
            _ => false,
        }
    }

    /// Prunes `item`: (whether one of its arrays lost every item, whether anything went).
    fn prune_emptied(&self, item: &mut Value) -> (bool, bool) {
        let Value::Object(map) = item else {
            return (false, self.prune(item));
        };
        let mut emptied = false;
        let mut changed = false;
        map.retain(|key, field| {
            let bound = matches!(key.as_str(), "firstKey" | "lastKey");
            let gone = bound && field.as_str().is_some_and(|s| self.names(s));
            changed |= gone;
            !gone
        });
        for field in map.values_mut() {
            let before = field.as_array().map(Vec::len);
            changed |= self.prune(field);
            if let (Some(before), Some(after)) = (before, field.as_array().map(Vec::len)) {
                emptied |= before > 0 && after == 0;
            }
        }
        (emptied, changed)
    }

    /// Whether `item` is a string naming an excluded file, or an object one of whose string
    /// fields (range bounds aside) does.
    fn names_excluded(&self, item: &Value) -> bool {
        match item {
            Value::String(s) => self.names(s),
            Value::Object(map) => map.iter().any(|(key, field)| {
                !matches!(key.as_str(), "firstKey" | "lastKey")
                    && field.as_str().is_some_and(|s| self.names(s))
            }),
            _ => false,
        }
    }

    /// Whether `text` is the bundle path of an excluded file or folder, or a composite key
    /// (`from\0to\0type`, a relationship router's bound) with one.
    fn names(&self, text: &str) -> bool {
        text.split('\0')
            .any(|part| is_bundle_path(part) && self.excludes(part))
    }

    /// `content` without the lines that link to an excluded file (relative to `path`) or name
    /// one as a bundle path.
    fn filter_lines(&self, path: &str, content: String) -> String {
        let gone = |line: &str| {
            link_targets(line).any(|target| {
                resolve(path, &target).is_some_and(|resolved| self.excludes(&resolved))
            }) || line
                .split(|c: char| c.is_whitespace() || "()[]<>\"'`*,;".contains(c))
                .map(|word| word.trim_end_matches(['.', ':']))
                .any(|word| self.names(word))
        };
        if !content.lines().any(gone) {
            return content;
        }
        let mut out = String::with_capacity(content.len());
        for line in content.split_inclusive('\n') {
            if !gone(line) {
                out.push_str(line);
            }
        }
        out
    }
}

/// `text` in NFC (borrowed when it is already: nearly every name).
fn in_nfc(text: &str) -> std::borrow::Cow<'_, str> {
    if crate::text::is_nfc(text) {
        std::borrow::Cow::Borrowed(text)
    } else {
        std::borrow::Cow::Owned(crate::text::nfc(text))
    }
}

/// The line given to the matcher for the rule `written`: NFC, and in a plain folder whose files
/// kbtools prints as `pages/…` (`logical_pages`), `pages/x` read as the folder's `/x`.
fn given_line(written: &str, logical_pages: bool) -> String {
    let line = crate::text::nfc(written);
    if !logical_pages {
        return line;
    }
    let (negation, rest) = match line.strip_prefix('!') {
        Some(rest) => ("!", rest),
        None => ("", line.as_str()),
    };
    let rest = rest.strip_prefix('/').unwrap_or(rest);
    match rest.strip_prefix("pages/") {
        Some(inner) if !inner.trim().is_empty() => format!("{negation}/{inner}"),
        _ => line,
    }
}

/// The line as the matcher keeps it (`Glob::original`): trailing spaces not escaped removed.
fn trim_given(line: &str) -> String {
    if line.ends_with("\\ ") {
        return line.to_string();
    }
    line.trim_end_matches(' ').to_string()
}

/// Whether `text` looks like a path of a bundle's file or folder.
fn is_bundle_path(text: &str) -> bool {
    text == "index.md"
        || text == "log.md"
        || ["pages/", "_index/", "_graph/"]
            .iter()
            .any(|prefix| text.starts_with(prefix))
        || text == "pages"
}

/// The destinations of the Markdown links of `line` (`[text](destination)`), percent-decoded,
/// without a fragment or query; sites and anchors left out.
fn link_targets(line: &str) -> impl Iterator<Item = String> + '_ {
    line.match_indices("](").filter_map(move |(at, _)| {
        let rest = &line[at + 2..];
        let end = rest.find(')')?;
        let destination = rest[..end].trim();
        let destination = destination
            .strip_prefix('<')
            .and_then(|d| d.strip_suffix('>'))
            .unwrap_or(destination);
        let destination = destination.split_whitespace().next().unwrap_or_default();
        let scheme = destination
            .split_once(':')
            .is_some_and(|(s, _)| !s.is_empty() && !s.contains('/'));
        if destination.is_empty() || destination.starts_with('#') || scheme {
            return None;
        }
        let path = destination.split(['#', '?']).next().unwrap_or_default();
        Some(crate::text::percent_decode_once(path).unwrap_or_else(|| path.to_string()))
    })
}

/// `target` relative to the file at `from` as a bundle path; `None` when it leaves the bundle
/// or names its root.
fn resolve(from: &str, target: &str) -> Option<String> {
    paths::resolve_link(from, target).filter(|path| !path.is_empty())
}

/// The path of `target` (a link's canonical target) relative to `root` (canonical), `/`-separated;
/// `None` when it is not below it or not UTF-8.
pub(crate) fn relative_to(root: &Path, target: &Path) -> Option<String> {
    target
        .strip_prefix(root)
        .ok()?
        .to_str()
        .map(|s| s.replace('\\', "/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(root: &Path, exclude: &[&str]) -> Exclusions {
        let exclude: Vec<String> = exclude.iter().map(|s| s.to_string()).collect();
        Exclusions::new(root, &exclude, &mut Vec::new()).unwrap()
    }

    #[test]
    fn a_bundles_records_lose_what_names_an_excluded_page() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("_index")).unwrap();
        let rules = rules(dir.path(), &["pages/secret/"]);
        assert!(rules.excludes("pages/secret/a.md"));
        assert!(rules.excludes("pages/secret"));
        assert!(rules.excludes("_graph/by-file/secret/a.json"));
        assert!(rules.excludes("_index/pages/secret/index.json"));
        assert!(!rules.excludes("_index/pages/index.json"));
        assert!(!rules.excludes("pages/open/a.md"));
        let packet = r#"{"formatVersion":2,"documents":[{"path":"pages/open/a.md","title":"A"},{"path":"pages/secret/b.md","title":"Hidden"}],"terms":[{"term":"kept","postings":[{"path":"pages/open/a.md"},{"path":"pages/secret/b.md"}]},{"term":"hiddenword","postings":[{"path":"pages/secret/b.md"}]}],"resources":[{"path":"_index/pages/x.json","firstKey":"pages/secret/b.md","lastKey":"pages/open/a.md"}]}"#;
        let filtered = rules.filter(
            "_index/pages/x.json",
            paths::PathClass::DocumentPacket,
            packet.to_string(),
        );
        assert!(!filtered.contains("secret"), "{filtered}");
        assert!(!filtered.contains("Hidden"), "{filtered}");
        assert!(!filtered.contains("hiddenword"), "{filtered}");
        assert!(filtered.contains("pages/open/a.md"), "{filtered}");
        assert!(filtered.contains("\"kept\""), "{filtered}");
        let log = "# Log\n\n* Updated pages/secret/b.md. [B](pages/secret/b.md)\n* [A](pages/open/a.md)\n";
        assert_eq!(
            rules.filter("log.md", paths::PathClass::Log, log.to_string()),
            "# Log\n\n* [A](pages/open/a.md)\n"
        );
        let leaf = "- [secret](secret/index.md)\n- [Spaced](open/a%20b.md)\n";
        assert_eq!(
            rules.filter(
                "pages/index-directory-leaf-x.md",
                paths::PathClass::PageNavigation,
                leaf.to_string()
            ),
            "- [Spaced](open/a%20b.md)\n"
        );
    }

    #[test]
    fn patterns_are_read_as_printed_and_in_nfc() {
        let dir = tempfile::tempdir().unwrap();
        let rules = rules(dir.path(), &["pages/drafts/", "caf\u{e9}/"]);
        let mut used = Used::new();
        assert!(rules.leaves_out("drafts/x.md", &mut used));
        assert!(!rules.leaves_out("notes/drafts/x.md", &mut used));
        assert!(rules.leaves_out("cafe\u{301}/x.md", &mut used));
        assert!(rules.unused(dir.path(), &used, Some("a.md")).is_empty());
        let unused = rules.unused(dir.path(), &Used::new(), Some("a.md"));
        assert_eq!(unused.len(), 2, "{unused:?}");
        assert!(unused[0].message.contains("--exclude \"pages/drafts/\""));
    }
}
