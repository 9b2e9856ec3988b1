//! What a search is asked, and the question analysed once. [`Query`] is the validated request
//! as the engine reads it (text, scope, mode, graph bounds, filters); [`AnalyzedQuery`] is
//! everything the lanes read of its text, made in one place ([`AnalyzedQuery::of`]) before any
//! lane runs: the `kb_text` terms with their weights (and the English words the glossary lends
//! a Chinese question), every `kb_text` term (the excerpts weigh them), the dictionary words
//! of its CJK text, its exact key, the literals and identifiers it quotes, its double-quoted
//! phrases, and whether it is CJK. No lane analyses the text again.
//!
//! The quote scanner (`quote_runs`) is shared with `read_file`'s line search, which splits
//! its own query with it.

use crate::ingest::analysis;

crate::wire::wire_enum! {
    /// Where a search matches (`scope`).
    pub enum Scope {
        /// Content and metadata.
        All = "all",
        /// Paths and titles, exactly.
        Path = "path",
        /// Metadata only.
        Metadata = "metadata",
    }
}

crate::wire::wire_enum! {
    /// The lanes that rank (`mode`).
    pub enum Mode {
        /// The lexical and exact lanes.
        File = "file",
        /// Relations of the best lexical hits.
        Graph = "graph",
        /// All of them.
        Hybrid = "hybrid",
    }
}

crate::wire::wire_enum! {
    /// Which files a search returns (`fileKind`).
    pub enum FileKind {
        /// The knowledge base's pages.
        Page = "page",
        /// Navigation pages and records too.
        All = "all",
    }
}

/// Results a cursor can page through.
pub(crate) const MAX_RESULTS: usize = 1000;

/// What the engine needs of a validated request.
pub struct Query<'a> {
    pub text: &'a str,
    pub scope: Scope,
    pub mode: Mode,
    pub graph_depth: u8,
    pub graph_fanout: usize,
    /// Whether a page passes the request's filters (OKF signals).
    pub keep: &'a (dyn Fn(u32) -> bool + Sync),
    /// Keep each candidate's score by lane (`Candidate::explained`), for `--explain`.
    pub explain: bool,
}

/// A run of the query matched as written (a quoted phrase, a literal): its text, and its
/// `kb_text` tokens, one per position (the longest there: CJK bigrams over unigrams), with
/// their positions.
#[derive(Debug, Clone, PartialEq)]
pub struct Verbatim {
    pub text: String,
    pub tokens: Vec<(usize, String)>,
}

impl Verbatim {
    pub(crate) fn of(text: String) -> Verbatim {
        let mut tokens: Vec<(usize, usize, String)> = Vec::new();
        let mut analyzer = analysis::text_analyzer();
        {
            let mut stream = analyzer.token_stream(&text);
            while stream.advance() {
                let t = stream.token();
                let span = t.offset_to - t.offset_from;
                match tokens.last_mut() {
                    Some(last) if last.0 == t.position => {
                        if span > last.1 {
                            *last = (t.position, span, t.text.clone());
                        }
                    }
                    _ => tokens.push((t.position, span, t.text.clone())),
                }
            }
        }
        let tokens = tokens
            .into_iter()
            .map(|(position, _, text)| (position, text))
            .collect();
        Verbatim { text, tokens }
    }
}

/// The question as every lane reads it ([`AnalyzedQuery::of`]).
#[derive(Debug, Clone, Default)]
pub struct AnalyzedQuery {
    /// The `kb_text` terms without question and stop words ([`analysis::query_terms`]), then
    /// the English words the glossary lends its Chinese words (`Self::borrow`).
    pub terms: Vec<String>,
    /// Each term's query weight ([`analysis::query_term_weights`]; a borrowed word's share).
    pub weights: Vec<f32>,
    /// Every `kb_text` term of the text, stop words included, as the excerpts weigh them.
    pub all_terms: Vec<String>,
    /// The `kb_words` (dictionary) terms of its CJK text ([`analysis::query_words`]); none
    /// without CJK.
    pub words: Vec<String>,
    /// The key of the exact lanes (`crate::text::exact_key`).
    pub exact_key: String,
    /// The code it quotes without quote marks (`literals`).
    pub literals: Vec<Verbatim>,
    /// The page names it says (`identifiers`).
    pub identifiers: Vec<String>,
    /// Its double-quoted phrases (`quoted_phrases`): a content-lane hit must hold each, unless
    /// no page holds them and the words outside the quotes make a question (`run_direct`).
    pub phrases: Vec<Verbatim>,
    /// How many of [`Self::terms`]' kind its text holds outside its quotes (all of them when it
    /// quotes nothing).
    pub unquoted_terms: usize,
    /// Whether it has CJK text (`analysis::has_cjk`).
    pub cjk: bool,
    /// Whether it ends with a question mark (`?` or `？`).
    pub question_mark: bool,
    /// Whether it asks what a changelog answers: a version, a release, a rename
    /// ([`crate::search::aggregates::asks_about_releases`]).
    pub asks_releases: bool,
}

#[cfg(feature = "testing")]
thread_local! {
    static ANALYSES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many questions [`AnalyzedQuery::of`] has analysed on this thread (a test hook: a search
/// analyses its question once).
#[cfg(feature = "testing")]
pub fn analyses_on_this_thread() -> usize {
    ANALYSES.with(std::cell::Cell::get)
}

impl AnalyzedQuery {
    /// `text` analysed: the one place a search reads its question's words.
    pub fn of(text: &str) -> AnalyzedQuery {
        #[cfg(feature = "testing")]
        ANALYSES.with(|n| n.set(n.get() + 1));
        let cjk = analysis::has_cjk(text);
        let (terms, all_terms) = analysis::query_terms_and_all(text);
        let weights = analysis::query_term_weights(&terms);
        let mut query = AnalyzedQuery {
            terms,
            weights,
            all_terms,
            words: match cjk {
                true => analysis::query_words(text),
                false => Vec::new(),
            },
            exact_key: crate::text::exact_key(text),
            literals: literals(text).into_iter().map(Verbatim::of).collect(),
            identifiers: identifiers(text),
            phrases: quoted_phrases(text).into_iter().map(Verbatim::of).collect(),
            unquoted_terms: 0,
            cjk,
            asks_releases: crate::search::aggregates::asks_about_releases(text),
            question_mark: text.trim_end().ends_with(['?', '？']),
        };
        query.unquoted_terms = match query.phrases.is_empty() {
            true => query.terms.len(),
            false => {
                let outside: String = quote_runs(text)
                    .into_iter()
                    .filter(|(_, q)| *q != Quoting::Closed)
                    .map(|(run, _)| format!(" {run} "))
                    .collect();
                analysis::query_terms_and_all(&outside).0.len()
            }
        };
        query.borrow(text);
        query
    }

    /// Adds the English words the glossary lends the question's Chinese words
    /// ([`analysis::glossary`]), each Chinese word's at [`BORROWED_WEIGHT`] split among its
    /// alternatives; a term the question has already keeps its own weight.
    fn borrow(&mut self, text: &str) {
        for alternatives in analysis::glossary::borrowed(text) {
            let share = BORROWED_WEIGHT / alternatives.len() as f32;
            for english in alternatives {
                for term in analysis::query_terms(english) {
                    if !self.terms.contains(&term) {
                        // A question-framing word ("need") weighs as little borrowed as asked.
                        let weight = analysis::query_term_weights(std::slice::from_ref(&term));
                        self.weights.push(share * weight[0]);
                        self.terms.push(term);
                    }
                }
            }
        }
    }
}

/// What a Chinese word's English words weigh in a question, together.
pub(crate) const BORROWED_WEIGHT: f32 = 1.0;

/// Where a run of text stands to the double quotes (`"`, `“`, `”`) around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Quoting {
    /// Outside quotes.
    Outside,
    /// Between an opening and a closing quote.
    Closed,
    /// After a quote that nothing closes.
    Unclosed,
}

/// Whether `c` is a double quote mark (`"`, `“`, `”`).
pub(crate) fn is_quote(c: char) -> bool {
    matches!(c, '"' | '“' | '”')
}

/// `text` cut at its double quotes, in order, each run with where it stands (a run may be
/// empty). Any of the quote marks opens and closes a quote.
pub(crate) fn quote_runs(text: &str) -> Vec<(&str, Quoting)> {
    let mut runs = Vec::new();
    let (mut start, mut inside) = (0, false);
    for (at, c) in text.char_indices() {
        if is_quote(c) {
            let quoting = if inside {
                Quoting::Closed
            } else {
                Quoting::Outside
            };
            runs.push((&text[start..at], quoting));
            inside = !inside;
            start = at + c.len_utf8();
        }
    }
    let quoting = if inside {
        Quoting::Unclosed
    } else {
        Quoting::Outside
    };
    runs.push((&text[start..], quoting));
    runs
}

/// The double-quoted phrases of a query (`"…"` or `“…”`), without the quotes, trimmed; an
/// unclosed quote quotes nothing.
pub(crate) fn quoted_phrases(query: &str) -> Vec<String> {
    quote_runs(query)
        .into_iter()
        .filter(|(_, quoting)| *quoting == Quoting::Closed)
        .map(|(run, _)| run.trim())
        .filter(|phrase| !phrase.is_empty())
        .map(str::to_string)
        .collect()
}

/// The page names a query says ([`crate::search::lanes::identifier`]): the whole query when it
/// is one word (a file stem: `configure`, `md013.md`), and each of its words that is an
/// identifier ([`crate::index::catalog::is_identifier`]), lower case, without a Markdown
/// extension, in order, without duplicates.
pub(crate) fn identifiers(query: &str) -> Vec<String> {
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
    names
}

/// `name` without a Markdown extension.
pub(crate) fn strip_extension(name: &str) -> &str {
    [".md", ".markdown", ".MD"]
        .iter()
        .find_map(|ext| name.strip_suffix(ext))
        .unwrap_or(name)
}

/// Characters that end a literal where the text has no space (CJK punctuation, brackets and
/// quotes that hold it).
fn is_boundary(c: char) -> bool {
    c.is_whitespace()
        || crate::text::is_cjk(c)
        || "，。？！、；：（）【】「」『』“”‘’《》".contains(c)
}

/// Characters trimmed from a literal's ends: sentence punctuation and what quotes or wraps it.
fn is_wrapping(c: char) -> bool {
    matches!(
        c,
        ',' | ';' | '!' | '?' | '"' | '\'' | '`' | '(' | ')' | '[' | ']' | '{' | '}'
    )
}

/// The literals of `query` ([`crate::search::lanes::literal`]), in order, without duplicates: the
/// runs between spaces (and CJK text) with at least two words joined by something else than a
/// hyphen or an apostrophe, that are not runs of single letters (`e.g.`).
pub(crate) fn literals(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for run in query.split(is_boundary) {
        let mut run = run.trim_matches(is_wrapping);
        // A sentence's end, or a colon after a name ("max-nesting-depth: how do I …").
        while let Some(rest) = run.strip_suffix(['.', ':']) {
            run = rest.trim_end_matches(is_wrapping);
        }
        if is_literal(run) && !out.iter().any(|l| l == run) {
            out.push(run.to_string());
        }
    }
    out
}

/// Whether `run` holds two words or more joined by something else than hyphens and
/// apostrophes, and is not a run of single letters.
fn is_literal(run: &str) -> bool {
    let words: Vec<&str> = run
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    if words.len() < 2 || words.iter().all(|w| w.chars().count() == 1) {
        return false;
    }
    let inner = run
        .trim_matches(|c: char| !c.is_alphanumeric())
        .chars()
        .filter(|c| !c.is_alphanumeric());
    inner.into_iter().any(|c| !matches!(c, '-' | '\'' | '’'))
}

#[cfg(test)]
mod tests {
    use super::{literals, quote_runs, quoted_phrases, Quoting};

    #[test]
    fn literals_are_code_the_question_quotes() {
        assert_eq!(
            literals("How do I require a::before instead of a:before?"),
            ["a::before", "a:before"]
        );
        assert_eq!(
            literals("What does `compose:clean` remove, and is _graph/by-file kept?"),
            ["compose:clean", "_graph/by-file"]
        );
        assert_eq!(
            literals("怎么用 app.config.globalProperties 挂一个 $http？"),
            ["app.config.globalProperties"]
        );
        assert_eq!(literals("Where is log.md written."), ["log.md"]);
    }

    #[test]
    fn names_prose_and_single_words_are_no_literals() {
        assert!(
            literals("at-rule-no-unknown doesn't allow my team's @include, e.g. U.S.").is_empty()
        );
        assert!(literals("max-nesting-depth: how do I stop counting?").is_empty());
        assert!(literals("write .5em and #y3 with 50ms").is_empty());
    }

    #[test]
    fn quoted_phrases_are_found() {
        assert_eq!(
            quoted_phrases(r#"a "renewal notice" b “续费通知”"#),
            vec!["renewal notice", "续费通知"]
        );
        assert!(quoted_phrases(r#"unclosed "quote"#).is_empty());
    }

    #[test]
    fn quote_runs_say_where_each_run_stands() {
        assert_eq!(
            quote_runs(r#"a "b c" d "e"#),
            [
                ("a ", Quoting::Outside),
                ("b c", Quoting::Closed),
                (" d ", Quoting::Outside),
                ("e", Quoting::Unclosed)
            ]
        );
        assert_eq!(quote_runs("plain"), [("plain", Quoting::Outside)]);
    }
}
