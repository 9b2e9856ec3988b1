//! A deterministic generator of synthetic Focowiki bundles for benchmarks (`kbtools gen-bundle`,
//! hidden): N pages of English and Chinese text in nested directories, linked to each other,
//! written in the real bundle format (the shapes of `fixtures/focowiki-docs`): `index.md`, `log.md`, pages with frontmatter and the generated
//! `## Related` appendix, directory navigation, `_index/pages/**` routers and document packets,
//! `_index/terms/**` term routes, `_graph/by-directory/**` and `_graph/by-file/**` relationship
//! records consistent with the links in the pages. Benchmark queries drawn from the page text
//! go beside them in dotfiles the bundle walk skips (`.bench-queries.jsonl`, BEIR style, and
//! `.bench-qrels.tsv`, so `kbtools eval` runs on them as is).
//!
//! The same options give byte-identical output on every platform: one integer PRNG
//! (splitmix64, a stream per page so pages render in parallel), no floating point in the text,
//! and no hash-map order in any output.
//!
//! Vocabularies (`src/bundle_gen/words_*.txt`, one word a line, most frequent first; words are
//! drawn with Zipf frequencies, so a few words are everywhere and most are rare, as in real
//! text): English from the word counts of the SciFact abstracts and the English pages of the
//! docs fixture; Chinese from the frequencies of jieba's dictionary (2–4 Han characters, proper
//! nouns and particles left out).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rayon::prelude::*;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::text::encode_uri_component;

mod pages;
mod plan;
mod records;
mod text;

use pages::{by_file_path, mirror, render_page, Query, Rendered, TERM_FIELDS};
use plan::*;
use records::{
    graph_files, index_pages, index_terms, log_md, page_navigation, root_index, Evidence,
};
use text::*;

/// The benchmark queries, one JSON object a line (`_id`, `text`, `lang`, `kind`, `path`).
pub const QUERIES_FILE: &str = ".bench-queries.jsonl";
/// Relevance judgments of the queries (`query-id`, `corpus-id` = page path without `pages/`
/// and `.md`, `score`).
pub const QRELS_FILE: &str = ".bench-qrels.tsv";

const WORDS_EN: &str = include_str!("bundle_gen/words_en.txt");
const WORDS_ZH: &str = include_str!("bundle_gen/words_zh.txt");
/// Chinese particles put between words (single characters, so never navigation terms).
const ZH_PARTICLES: [&str; 6] = ["的", "和", "在", "是", "了", "与"];
/// English words a title keeps in lower case.
const SMALL_WORDS: [&str; 16] = [
    "a", "an", "and", "as", "at", "by", "for", "from", "in", "of", "on", "or", "the", "to", "via",
    "with",
];
/// The date of every log entry.
const LOG_DATE: &str = "2026-08-22";
/// Packet shard limits of the production generator.
const SHARD_RECORDS: usize = 5_000;
const SHARD_BYTES: usize = 1_048_576;
/// A navigation leaf holds at most this many entries; longer lists split into leaves of about
/// `LEAF_TARGET` (what the production leaves of the SciFact bundle hold).
const LEAF_MAX: usize = 200;
const LEAF_TARGET: usize = 100;
/// Pages per directory, on average.
const PAGES_PER_DIRECTORY: usize = 100;
/// The document packet `summary`: this many UTF-16 units of the collapsed source body.
const SUMMARY_UNITS: usize = 240;
const INDEX_CATALOG: &str = r#"{"formatVersion":2,"title":"Knowledge index","resources":[{"kind":"page_directories","title":"Documents","path":"_index/pages/index.json","description":"Directory routes to original Markdown documents."},{"kind":"term_routes","title":"Terms","path":"_index/terms/index.json","description":"Multilingual term routes to original Markdown documents."},{"kind":"relationship_graph","title":"Relationships","path":"_graph/catalog.json","description":"Relationships among original Markdown documents."}]}"#;

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct GenOptions {
    /// Number of document pages (at least 1).
    pub pages: usize,
    /// The seed: the same options and seed give the same bytes.
    pub seed: u64,
    /// About how large a page is, in bytes (frontmatter, body and appendix).
    pub page_bytes: usize,
    /// Share of pages written in Chinese (0–1); the rest are English.
    pub zh_share: f32,
    /// Markdown links a page holds to other pages, on average.
    pub links_per_page: usize,
    /// Navigation terms per page in `_index/terms/**` (production keeps up to 128; fewer keep
    /// large bundles small). 0 leaves `_index/terms` out.
    pub terms_per_page: usize,
    /// Benchmark queries to write (at most one per page).
    pub queries: usize,
    /// Replace `dir` when it holds an earlier generated bundle (a folder with `QUERIES_FILE`);
    /// any other non-empty folder is refused either way.
    pub replace: bool,
}

impl Default for GenOptions {
    fn default() -> Self {
        GenOptions {
            pages: 1_000,
            seed: 1,
            page_bytes: 3_000,
            zh_share: 0.3,
            links_per_page: 3,
            terms_per_page: 16,
            queries: 500,
            replace: false,
        }
    }
}

/// What `generate` wrote.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GenReport {
    pub dir: PathBuf,
    pub pages: usize,
    /// Directories under `pages/` holding pages (`pages` itself included).
    pub directories: usize,
    /// Files of the bundle (the query files not counted).
    pub files: usize,
    /// Bytes of the bundle's files.
    pub bytes: u64,
    /// Distinct accepted relationships (one per related pair of pages).
    pub relations: usize,
    pub queries: usize,
    pub queries_path: PathBuf,
    pub qrels_path: PathBuf,
}

/// Generates a bundle into `dir` (created; it must be absent or empty, see
/// [`GenOptions::replace`]).
pub fn generate(dir: &Path, options: &GenOptions) -> io::Result<GenReport> {
    if options.pages == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a bundle needs at least one page",
        ));
    }
    prepare_dir(dir, options.replace)?;
    let vocab = vocab();
    let plan = Plan::new(options, vocab);

    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let dirs: BTreeSet<PathBuf> = plan
        .pages
        .iter()
        .map(|p| dir.join(parent_of(&p.path)))
        .collect();
    for d in &dirs {
        std::fs::create_dir_all(d)?;
    }
    let rendered: Vec<Rendered> = (0..plan.pages.len())
        .into_par_iter()
        .map(|i| {
            let (bytes, rendered) = render_page(&plan, vocab, i);
            std::fs::write(dir.join(&plan.pages[i].path), &bytes)?;
            Ok(rendered)
        })
        .collect::<io::Result<_>>()?;
    let page_bytes: u64 = rendered.iter().map(|r| r.byte_count).sum();

    files.push(("index.md".into(), root_index(&plan).into_bytes()));
    files.push(("log.md".into(), log_md(&plan).into_bytes()));
    files.extend(page_navigation(&plan));
    files.extend(index_pages(&plan, &rendered));
    files.extend(index_terms(&plan, &rendered));
    files.extend(graph_files(&plan));

    let dirs: BTreeSet<PathBuf> = files
        .iter()
        .filter_map(|(p, _)| Path::new(p).parent().map(|d| dir.join(d)))
        .collect();
    for d in &dirs {
        std::fs::create_dir_all(d)?;
    }
    files
        .par_iter()
        .map(|(path, bytes)| std::fs::write(dir.join(path), bytes))
        .collect::<io::Result<()>>()?;
    let bytes = page_bytes + files.iter().map(|(_, b)| b.len() as u64).sum::<u64>();

    let queries: Vec<&Query> = plan
        .query_pages
        .iter()
        .filter_map(|&(page, _)| rendered[page].query.as_ref())
        .collect();
    let mut jsonl = String::new();
    let mut qrels = String::from("query-id\tcorpus-id\tscore\n");
    for (n, q) in queries.iter().enumerate() {
        let id = format!("q{:05}", n + 1);
        let path = &plan.pages[q.page].path;
        let line = json!({"_id": id, "text": q.text, "lang": q.lang, "kind": q.kind, "path": path});
        jsonl.push_str(&line.to_string());
        jsonl.push('\n');
        let corpus_id = path
            .strip_prefix("pages/")
            .and_then(|p| p.strip_suffix(".md"))
            .unwrap_or(path);
        qrels.push_str(&format!("{id}\t{corpus_id}\t1\n"));
    }
    let queries_path = dir.join(QUERIES_FILE);
    let qrels_path = dir.join(QRELS_FILE);
    std::fs::write(&queries_path, jsonl)?;
    std::fs::write(&qrels_path, qrels)?;

    Ok(GenReport {
        dir: dir.to_path_buf(),
        pages: plan.pages.len(),
        directories: plan.dirs.len(),
        files: plan.pages.len() + files.len(),
        bytes,
        relations: plan.relations.len(),
        queries: queries.len(),
        queries_path,
        qrels_path,
    })
}

fn prepare_dir(dir: &Path, replace: bool) -> io::Result<()> {
    if dir.exists() {
        let mut entries = std::fs::read_dir(dir)?;
        if entries.next().is_some() {
            if replace && dir.join(QUERIES_FILE).is_file() {
                std::fs::remove_dir_all(dir)?;
            } else {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!(
                        "{} is not empty{}",
                        dir.display(),
                        if replace {
                            " and holds no generated bundle; not replaced"
                        } else {
                            ""
                        }
                    ),
                ));
            }
        }
    }
    std::fs::create_dir_all(dir)
}

// ---------------------------------------------------------------------------------------------
// Paths, links and Markdown

fn parent_of(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

fn name_of(path: &str) -> &str {
    path.rfind('/').map_or(path, |i| &path[i + 1..])
}

/// One path segment as a portable href segment: `encodeURIComponent` plus `! ' ( ) *`.
fn encode_segment(segment: &str) -> String {
    encode_uri_component(segment)
        .replace('!', "%21")
        .replace('\'', "%27")
        .replace('(', "%28")
        .replace(')', "%29")
        .replace('*', "%2A")
}

/// The portable relative href from a file in directory `from_dir` to the file `to`.
fn href(from_dir: &str, to: &str) -> String {
    let from: Vec<&str> = from_dir.split('/').filter(|s| !s.is_empty()).collect();
    let to: Vec<&str> = to.split('/').collect();
    let common = from
        .iter()
        .zip(&to[..to.len() - 1])
        .take_while(|(a, b)| a == b)
        .count();
    let mut out = "../".repeat(from.len() - common);
    let rest: Vec<String> = to[common..].iter().map(|s| encode_segment(s)).collect();
    out.push_str(&rest.join("/"));
    out
}

/// A link label with Markdown's special characters escaped.
fn label(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '\\' | '[' | ']' | '`' | '*' | '_') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// `key: <JSON>` lines, arrays as `  - <JSON>` items (the generator's `serializeYamlRecord`).
fn frontmatter_yaml(fields: &[(&'static str, Value)]) -> String {
    let mut out = String::from("---\n");
    for (key, value) in fields {
        match value {
            Value::Array(items) if items.is_empty() => out.push_str(&format!("{key}: []\n")),
            Value::Array(items) => {
                out.push_str(key);
                out.push_str(":\n");
                for item in items {
                    out.push_str(&format!("  - {item}\n"));
                }
            }
            other => out.push_str(&format!("{key}: {other}\n")),
        }
    }
    out.push_str("---\n");
    out
}

/// A JSON object whose keys keep the given order.
struct OrderedMap<'a>(&'a [(String, Value)]);

impl Serialize for OrderedMap<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

fn to_json_line<T: Serialize>(value: &T) -> String {
    let mut s = serde_json::to_string(value).unwrap_or_default();
    s.push('\n');
    s
}

/// The first `units` UTF-16 units of `s` (never half a surrogate pair).
fn utf16_prefix(s: &str, units: usize) -> &str {
    let mut used = 0;
    for (i, c) in s.char_indices() {
        used += c.len_utf16();
        if used > units {
            return &s[..i];
        }
    }
    s
}

/// A date `YYYY-MM-DD` between 2025 and 2027.
fn date(rng: &mut Rng) -> String {
    format!(
        "{}-{:02}-{:02}",
        rng.range(2025, 2027),
        rng.range(1, 12),
        rng.range(1, 28)
    )
}

#[cfg(test)]
mod tests;
