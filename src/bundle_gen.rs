//! A deterministic generator of synthetic Focowiki bundles for benchmarks (`kbtools gen-bundle`,
//! hidden): N pages of English and Chinese text in nested directories, linked to each other,
//! written in the real bundle format (`../shared/contract/bundle-format.md`, shapes copied from
//! `fixtures/focowiki-docs`): `index.md`, `log.md`, pages with frontmatter and the generated
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
mod records;
mod text;

use pages::{by_file_path, mirror, render_page, Query, Rendered, TERM_FIELDS};
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
/// Packet shard limits of the production generator (bundle-format.md §7.1).
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
// The plan: directories, pages, links and relations, before any text

#[derive(Debug)]
struct DirPlan {
    /// `pages` or `pages/a/b`.
    path: String,
    name: String,
    parent: Option<usize>,
    children: Vec<usize>,
    /// Pages directly inside, in path order.
    pages: Vec<usize>,
    /// Navigation terms of the name.
    name_terms: Vec<String>,
    topic: Vec<Tok>,
}

#[derive(Debug)]
struct PagePlan {
    path: String,
    dir: usize,
    zh: bool,
    title: String,
    title_terms: Vec<String>,
    stem_terms: Vec<String>,
    topic: Vec<Tok>,
    /// The first sentence (the excerpt of a `related` relation this page holds).
    lead: String,
    /// Pages this page links to, in link order.
    links: Vec<usize>,
}

/// One relationship per related pair of pages.
#[derive(Debug)]
struct RelationPlan {
    a: usize,
    b: usize,
    /// `related` (semantic evidence) rather than `references` (a Markdown link).
    related: bool,
    a_holds: bool,
    b_holds: bool,
}

impl RelationPlan {
    fn other(&self, page: usize) -> usize {
        if self.a == page {
            self.b
        } else {
            self.a
        }
    }

    fn holds(&self, page: usize) -> bool {
        if self.a == page {
            self.a_holds
        } else {
            self.b_holds
        }
    }

    fn direction(&self, page: usize) -> &'static str {
        match (self.holds(page), self.holds(self.other(page))) {
            (true, true) => "bidirectional",
            (true, false) => "outgoing",
            _ => "incoming",
        }
    }

    fn relation_type(&self) -> &'static str {
        if self.related {
            "related"
        } else {
            "references"
        }
    }

    /// The pages holding the evidence, the one the reason names first.
    fn holders(&self, plan: &Plan) -> Vec<usize> {
        match (self.a_holds, self.b_holds) {
            (true, true) => {
                if plan.pages[self.a].path < plan.pages[self.b].path {
                    vec![self.a, self.b]
                } else {
                    vec![self.b, self.a]
                }
            }
            (true, false) => vec![self.a],
            _ => vec![self.b],
        }
    }

    fn reason(&self, plan: &Plan) -> String {
        let holder = self.holders(plan)[0];
        let from = &plan.pages[holder].title;
        let to = &plan.pages[self.other(holder)].title;
        if self.related {
            format!("{from} contains source-grounded evidence relating it to {to}.")
        } else {
            format!("{from} contains an explicit Markdown reference to {to}.")
        }
    }

    fn evidence<'p>(&self, plan: &'p Plan, holder: usize) -> Evidence<'p> {
        Evidence {
            path: &plan.pages[holder].path,
            excerpt: self.related.then(|| plan.pages[holder].lead.as_str()),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QueryKind {
    Phrase,
    Keywords,
    Title,
    Question,
}

impl QueryKind {
    fn name(self) -> &'static str {
        match self {
            QueryKind::Phrase => "phrase",
            QueryKind::Keywords => "keywords",
            QueryKind::Title => "title",
            QueryKind::Question => "question",
        }
    }
}

struct Plan {
    options: GenOptions,
    kb_name: String,
    dirs: Vec<DirPlan>,
    pages: Vec<PagePlan>,
    /// Sorted by (a, b).
    relations: Vec<RelationPlan>,
    /// Per page, its relations in path order of the other page.
    page_relations: Vec<Vec<usize>>,
    /// Pages in path order.
    path_order: Vec<usize>,
    /// Pages that give a query, in query order.
    query_pages: Vec<(usize, QueryKind)>,
    /// Per page, the kind of query it gives, if any.
    query_of: Vec<Option<QueryKind>>,
}

/// A unique name among `taken` (compared case-insensitively), never a reserved one.
fn unique_name(base: String, ext: &str, taken: &mut BTreeSet<String>) -> String {
    let reserved = |b: &str| {
        let b = b.to_lowercase();
        b == "index" || b == "log" || b.starts_with("index-") || b.starts_with("log-")
    };
    let base = if reserved(&base) {
        format!("about-{base}")
    } else {
        base
    };
    let mut n = 1;
    loop {
        let candidate = if n == 1 {
            format!("{base}{ext}")
        } else {
            format!("{base}-{n}{ext}")
        };
        if taken.insert(candidate.to_lowercase()) {
            return candidate;
        }
        n += 1;
    }
}

impl Plan {
    fn new(options: &GenOptions, v: &Vocab) -> Plan {
        let mut rng = Rng::derive(options.seed, STREAM_PLAN, 0);
        let zh_per_mille = (options.zh_share.clamp(0.0, 1.0) * 1000.0).round() as usize;
        let n = options.pages;

        // Directories: a tree breadth-first with a branching factor that keeps it 2–3 levels
        // deep, about PAGES_PER_DIRECTORY pages in each.
        let root_pages = n.min((n / 200).clamp(1, 20));
        let rest = n - root_pages;
        let n_dirs = rest.div_ceil(PAGES_PER_DIRECTORY);
        let mut branching: usize = if n_dirs > 1 { 2 } else { 1 };
        while branching + branching * branching + branching.pow(3) < n_dirs {
            branching += 1;
        }
        let mut dirs = vec![DirPlan {
            path: "pages".into(),
            name: "pages".into(),
            parent: None,
            children: Vec::new(),
            pages: Vec::new(),
            name_terms: Vec::new(),
            topic: Vec::new(),
        }];
        let mut sibling_names: Vec<BTreeSet<String>> = vec![BTreeSet::new()];
        let mut frontier = vec![0usize];
        while dirs.len() - 1 < n_dirs {
            let mut next = Vec::new();
            'level: for &parent in &frontier {
                for _ in 0..branching.max(1) {
                    if dirs.len() - 1 == n_dirs {
                        break 'level;
                    }
                    let zh = rng.below(1000) < zh_per_mille;
                    let (base, name_terms) = if zh {
                        let words: Vec<&str> = (0..rng.range(1, 2))
                            .map(|_| v.zh.words[v.zh.content(&mut rng, ZH_SKIP) as usize])
                            .collect();
                        (
                            words.concat(),
                            words.iter().map(|w| w.to_string()).collect(),
                        )
                    } else {
                        let words: Vec<&str> = (0..rng.range(1, 2))
                            .map(|_| v.en.words[v.en.content(&mut rng, EN_SKIP) as usize])
                            .collect();
                        let mut terms: Vec<String> = words.iter().map(|w| w.to_string()).collect();
                        if words.len() > 1 {
                            terms.push(words.join("-"));
                        }
                        (words.join("-"), terms)
                    };
                    let name = unique_name(base, "", &mut sibling_names[parent]);
                    let path = format!("{}/{name}", dirs[parent].path);
                    let index = dirs.len();
                    let topic = topic(&mut rng, v, zh, 4);
                    dirs.push(DirPlan {
                        path,
                        name,
                        parent: Some(parent),
                        children: Vec::new(),
                        pages: Vec::new(),
                        name_terms,
                        topic,
                    });
                    sibling_names.push(BTreeSet::new());
                    dirs[parent].children.push(index);
                    next.push(index);
                }
            }
            frontier = next;
        }

        // How many pages each directory holds.
        let mut counts = vec![0usize; dirs.len()];
        counts[0] = root_pages;
        if n_dirs > 0 {
            let weights: Vec<usize> = (0..n_dirs).map(|_| rng.range(50, 150)).collect();
            let total: usize = weights.iter().sum();
            let mut given = 0;
            for (i, w) in weights.iter().enumerate() {
                counts[i + 1] = 1 + (rest - n_dirs) * w / total;
                given += counts[i + 1];
            }
            let mut i = 0;
            while given < rest {
                counts[1 + i % n_dirs] += 1;
                given += 1;
                i += 1;
            }
        }

        // Pages: language, title, file name, topic, lead sentence.
        let mut pages = Vec::with_capacity(n);
        for (d, &count) in counts.iter().enumerate() {
            for _ in 0..count {
                let index = pages.len();
                let mut prng = Rng::derive(options.seed, STREAM_PLAN, 1 + index as u64);
                let zh = prng.below(1000) < zh_per_mille;
                let mut topic = topic(&mut prng, v, zh, 8);
                // Two of the directory's words, when they are in the page's language.
                topic.extend(
                    dirs[d]
                        .topic
                        .iter()
                        .filter(|t| matches!(t, Tok::Zh(_)) == zh)
                        .take(2),
                );
                let (title, title_terms, stem, stem_terms) = if zh {
                    let words: Vec<&str> = (0..prng.range(2, 3))
                        .map(|_| v.zh.words[v.zh.content(&mut prng, ZH_SKIP) as usize])
                        .collect();
                    let mut title = String::new();
                    let mut terms: Vec<String> = words.iter().map(|w| w.to_string()).collect();
                    if prng.percent(20) {
                        let en = v.en.words[v.en.content(&mut prng, EN_SKIP) as usize];
                        push_capitalized(&mut title, en);
                        title.push(' ');
                        terms.push(en.to_string());
                    }
                    title.push_str(&words.concat());
                    if prng.percent(60) {
                        let stem = title.replace(' ', "-");
                        (title, terms.clone(), stem, terms)
                    } else {
                        let en: Vec<&str> = (0..prng.range(1, 3))
                            .map(|_| v.en.words[v.en.content(&mut prng, EN_SKIP) as usize])
                            .collect();
                        let mut stem_terms: Vec<String> =
                            en.iter().map(|w| w.to_string()).collect();
                        if en.len() > 1 {
                            stem_terms.push(en.join("-"));
                        }
                        (title, terms, en.join("-"), stem_terms)
                    }
                } else {
                    let mut words: Vec<&str> = (0..prng.range(2, 5))
                        .map(|_| v.en.words[v.en.content(&mut prng, EN_SKIP) as usize])
                        .collect();
                    if words.len() > 2 && prng.percent(30) {
                        words.insert(words.len() - 1, *prng.pick(&["and", "for", "in", "of"]));
                    }
                    let title = title_case(&words);
                    let terms: Vec<String> = words.iter().map(|w| w.to_string()).collect();
                    let stem = words.join("-");
                    let mut stem_terms = terms.clone();
                    stem_terms.push(stem.clone());
                    (title, terms, stem, stem_terms)
                };
                let lead_toks = sentence(&mut prng, v, zh, &topic, false);
                let mut lead = String::new();
                render_sentence(&mut lead, &lead_toks, v, zh);
                pages.push(PagePlan {
                    path: stem, // the file name for now; made unique below
                    dir: d,
                    zh,
                    title,
                    title_terms,
                    stem_terms,
                    topic,
                    lead,
                    links: Vec::new(),
                });
                dirs[d].pages.push(index);
            }
        }
        for dir in &mut dirs {
            // Page names must not clash with each other (case-insensitively).
            let mut taken = BTreeSet::new();
            for &p in &dir.pages {
                let stem = std::mem::take(&mut pages[p].path);
                let name = unique_name(stem, ".md", &mut taken);
                pages[p].path = format!("{}/{name}", dir.path);
            }
            dir.pages
                .sort_by(|&a, &b| pages[a].path.cmp(&pages[b].path));
        }
        let mut path_order: Vec<usize> = (0..n).collect();
        path_order.sort_by(|&a, &b| pages[a].path.cmp(&pages[b].path));

        // Links: mostly within the directory, some to a neighbouring directory, a few anywhere.
        for (p, page) in pages.iter_mut().enumerate() {
            let mut prng = Rng::derive(options.seed, STREAM_PLAN, (n + 1 + p) as u64);
            let want = prng.below(2 * options.links_per_page + 1);
            let d = page.dir;
            let mut links = Vec::new();
            for _ in 0..want * 2 {
                if links.len() == want {
                    break;
                }
                let roll = prng.below(100);
                let target = if roll < 55 {
                    *prng.pick(&dirs[d].pages)
                } else if roll < 80 {
                    let mut near: Vec<usize> = dirs[d].children.clone();
                    near.extend(dirs[d].parent);
                    if near.is_empty() {
                        *prng.pick(&dirs[d].pages)
                    } else {
                        let nd = *prng.pick(&near);
                        if dirs[nd].pages.is_empty() {
                            prng.below(n)
                        } else {
                            *prng.pick(&dirs[nd].pages)
                        }
                    }
                } else {
                    prng.below(n)
                };
                if target != p && !links.contains(&target) {
                    links.push(target);
                }
            }
            page.links = links;
        }

        // Relations: one per linked pair (`references`), plus a few `related` pairs within a
        // directory that no link joins.
        let mut pairs: BTreeMap<(usize, usize), RelationPlan> = BTreeMap::new();
        for (p, page) in pages.iter().enumerate() {
            for &t in &page.links {
                let key = (p.min(t), p.max(t));
                let rel = pairs.entry(key).or_insert(RelationPlan {
                    a: key.0,
                    b: key.1,
                    related: false,
                    a_holds: false,
                    b_holds: false,
                });
                if rel.a == p {
                    rel.a_holds = true;
                } else {
                    rel.b_holds = true;
                }
            }
        }
        for p in 0..n {
            let mut prng = Rng::derive(options.seed, STREAM_PLAN, (2 * n + 1 + p) as u64);
            if !prng.percent(8) {
                continue;
            }
            let t = *prng.pick(&dirs[pages[p].dir].pages);
            let key = (p.min(t), p.max(t));
            if t == p || pairs.contains_key(&key) {
                continue;
            }
            pairs.insert(
                key,
                RelationPlan {
                    a: key.0,
                    b: key.1,
                    related: true,
                    a_holds: key.0 == p,
                    b_holds: key.1 == p,
                },
            );
        }
        let relations: Vec<RelationPlan> = pairs.into_values().collect();
        let mut page_relations = vec![Vec::new(); n];
        for (r, rel) in relations.iter().enumerate() {
            page_relations[rel.a].push(r);
            page_relations[rel.b].push(r);
        }
        for (p, list) in page_relations.iter_mut().enumerate() {
            list.sort_by(|&x, &y| {
                let px = &pages[relations[x].other(p)].path;
                let py = &pages[relations[y].other(p)].path;
                px.cmp(py)
            });
        }

        // Query pages: a sample without repetition.
        let wanted = options.queries.min(n);
        let mut pool: Vec<usize> = (0..n).collect();
        let mut query_pages = Vec::with_capacity(wanted);
        for i in 0..wanted {
            let j = i + rng.below(n - i);
            pool.swap(i, j);
            let kind = match rng.below(100) {
                0..=39 => QueryKind::Phrase,
                40..=69 => QueryKind::Keywords,
                70..=84 => QueryKind::Title,
                _ => QueryKind::Question,
            };
            query_pages.push((pool[i], kind));
        }

        let mut query_of = vec![None; n];
        for &(page, kind) in &query_pages {
            query_of[page] = Some(kind);
        }
        Plan {
            options: options.clone(),
            kb_name: format!("Benchmark Bundle {}", options.seed),
            dirs,
            pages,
            relations,
            page_relations,
            path_order,
            query_pages,
            query_of,
        }
    }
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
