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

use crate::text::{collapse_whitespace, encode_uri_component};

mod records;
mod text;

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

// ---------------------------------------------------------------------------------------------
// Pages

#[derive(Debug)]
struct Query {
    page: usize,
    text: String,
    lang: &'static str,
    kind: &'static str,
}

/// What the bundle-wide files need of a rendered page.
struct Rendered {
    /// Its `_index/pages` document record, as JSON.
    record: String,
    byte_count: u64,
    /// Its navigation terms with their fields (a bit per `TERM_FIELDS` entry).
    terms: Vec<(String, u8)>,
    query: Option<Query>,
}

const TERM_FIELDS: [&str; 8] = [
    "title",
    "alias",
    "path",
    "heading",
    "metadata",
    "entity",
    "model_keyword",
    "body",
];
const FIELD_TITLE: u8 = 1;
const FIELD_PATH: u8 = 1 << 2;
const FIELD_HEADING: u8 = 1 << 3;
const FIELD_METADATA: u8 = 1 << 4;
const FIELD_BODY: u8 = 1 << 7;

fn field_score(mask: u8) -> u32 {
    let weights = [800, 720, 760, 640, 560, 520, 480, 100];
    (0..8)
        .filter(|i| mask & (1 << i) != 0)
        .map(|i| weights[i])
        .sum()
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DocumentRecordOut<'a> {
    path: &'a str,
    title: &'a str,
    summary: &'a str,
    #[serde(rename = "type")]
    doc_type: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    subjects: [&'a str; 0],
    tags: &'a [String],
    metadata: OrderedMap<'a>,
    headings: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    language: Option<&'a str>,
    keywords: [&'a str; 0],
    entities: [&'a str; 0],
    content_type: &'a str,
    checksum_sha256: &'a str,
    byte_count: u64,
    relationship_count: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    graph_path: Option<String>,
}

/// `pages/a/b.md` → `_graph/by-file/a/b.json`.
fn by_file_path(page: &str) -> String {
    let rest = page.strip_prefix("pages/").unwrap_or(page);
    format!("_graph/by-file/{}.json", &rest[..rest.len() - 3])
}

/// `pages/a` → `<prefix>/a`; `pages` → `<prefix>`.
fn mirror(prefix: &str, pages_dir: &str) -> String {
    format!(
        "{prefix}{}",
        pages_dir.strip_prefix("pages").unwrap_or(pages_dir)
    )
}

/// The frontmatter an uploader wrote: title, description, tags, and on some pages a type, a
/// language and OKF fields. A few pages have none (an empty block).
fn page_frontmatter(
    p: &PagePlan,
    rng: &mut Rng,
    v: &Vocab,
) -> (Vec<(&'static str, Value)>, Vec<String>) {
    let mut fields: Vec<(&'static str, Value)> = Vec::new();
    let mut metadata_terms = Vec::new();
    if rng.percent(3) {
        return (fields, metadata_terms);
    }
    fields.push(("title", Value::from(p.title.clone())));
    if rng.percent(80) {
        let toks = clip(sentence(rng, v, p.zh, &p.topic, false), 12);
        let mut text = String::new();
        render_sentence(&mut text, &toks, v, p.zh);
        metadata_terms.extend(token_terms(&toks, v));
        fields.push(("description", Value::from(text)));
    }
    let tags: BTreeSet<&str> = (0..rng.range(0, 4))
        .map(|_| rng.pick(&p.topic).word(v))
        .collect();
    metadata_terms.extend(tags.iter().map(|t| t.to_string()));
    let tags: Vec<Value> = tags.into_iter().map(Value::from).collect();
    if !tags.is_empty() || rng.percent(30) {
        fields.push(("tags", Value::Array(tags)));
    }
    if rng.percent(25) {
        let t = *rng.pick(&["guide", "reference", "runbook", "policy", "faq", "note"]);
        metadata_terms.push(t.to_string());
        fields.push(("type", Value::from(t)));
    }
    if rng.percent(40) {
        let lang = if p.zh { "zh-CN" } else { "en" };
        metadata_terms.push(lang.to_lowercase());
        fields.push(("language", Value::from(lang)));
    }
    if rng.percent(30) {
        let status = match rng.below(10) {
            0..=5 => "stable",
            6..=8 => "draft",
            _ => "deprecated",
        };
        metadata_terms.push(status.to_string());
        fields.push(("status", Value::from(status)));
    }
    if rng.percent(15) {
        let d = date(rng);
        metadata_terms.push(d.clone());
        fields.push(("stale_after", Value::from(d)));
    }
    if rng.percent(10) {
        let at = format!("{}T{:02}:00:00Z", date(rng), rng.range(0, 23));
        fields.push((
            "verified",
            json!([{ "by": format!("human:reviewer-{}", rng.range(1, 40)), "at": at }]),
        ));
    }
    if rng.percent(10) {
        let at = format!("{}T00:00:00Z", date(rng));
        fields.push(("generated", json!({ "by": "publisher:bench", "at": at })));
    }
    if rng.percent(8) {
        let id = format!("source-{}", rng.range(1, 500));
        fields.push((
            "sources",
            json!([{ "id": id, "resource": format!("references/{id}.md") }]),
        ));
    }
    (fields, metadata_terms)
}

/// The first `n` tokens of a sentence, without a comma at the end.
fn clip(mut toks: Vec<Tok>, n: usize) -> Vec<Tok> {
    toks.truncate(n);
    while toks.last() == Some(&Tok::Comma) {
        toks.pop();
    }
    toks
}

/// The navigation terms of some tokens (words, not particles or punctuation).
fn token_terms(toks: &[Tok], v: &Vocab) -> Vec<String> {
    toks.iter()
        .filter(|t| matches!(t, Tok::En(_) | Tok::Zh(_)))
        .map(|t| t.word(v).to_string())
        .collect()
}

/// A heading: 2–4 English words or 1–2 Chinese words.
fn heading(rng: &mut Rng, v: &Vocab, p: &PagePlan) -> (String, Vec<String>) {
    if p.zh {
        let words: Vec<&str> = (0..rng.range(1, 2))
            .map(|_| {
                if rng.percent(40) {
                    rng.pick(&p.topic).word(v)
                } else {
                    v.zh.words[v.zh.content(rng, ZH_SKIP) as usize]
                }
            })
            .collect();
        (
            words.concat(),
            words.iter().map(|w| w.to_string()).collect(),
        )
    } else {
        let words: Vec<&str> = (0..rng.range(2, 4))
            .map(|_| {
                if rng.percent(40) {
                    rng.pick(&p.topic).word(v)
                } else {
                    v.en.words[v.en.content(rng, EN_SKIP) as usize]
                }
            })
            .collect();
        (
            title_case(&words),
            words.iter().map(|w| w.to_string()).collect(),
        )
    }
}

fn link_sentence(rng: &mut Rng, zh: bool, title: &str, href: &str) -> String {
    let link = format!("[{}]({href})", label(title));
    if zh {
        match rng.below(3) {
            0 => format!("参见{link}。"),
            1 => format!("详见{link}。"),
            _ => format!("相关内容请阅读{link}。"),
        }
    } else {
        match rng.below(3) {
            0 => format!("See {link}."),
            1 => format!("For background, read {link}."),
            _ => format!("This builds on {link}."),
        }
    }
}

/// Renders page `i`: its bytes, and what the bundle-wide files need of it.
fn render_page(plan: &Plan, v: &Vocab, i: usize) -> (Vec<u8>, Rendered) {
    let p = &plan.pages[i];
    let dir = parent_of(&p.path);
    let mut rng = Rng::derive(plan.options.seed, STREAM_PAGE, i as u64);
    let (fields, metadata_terms) = page_frontmatter(p, &mut rng, v);
    let frontmatter = frontmatter_yaml(&fields);

    let mut appendix = String::new();
    if !plan.page_relations[i].is_empty() {
        appendix.push_str("\n\n\n## Related\n");
        for &r in &plan.page_relations[i] {
            let rel = &plan.relations[r];
            let other = &plan.pages[rel.other(i)];
            appendix.push_str(&format!(
                "\n- [{}]({}) - {}",
                label(&other.title),
                href(dir, &other.path),
                rel.reason(plan)
            ));
        }
    }

    // The source body: H1, lead paragraph, sections until the page is about `page_bytes`.
    let target = plan
        .options
        .page_bytes
        .saturating_sub(frontmatter.len() + appendix.len())
        .max(300);
    let mut body = format!("# {}\n\n", p.title);
    let mut headings = vec![p.title.clone()];
    let mut heading_terms: Vec<String> = Vec::new();
    let mut sentences: Vec<Vec<Tok>> = Vec::new();
    let sep = if p.zh { "" } else { " " };
    body.push_str(&p.lead);
    for _ in 0..rng.range(1, 2) {
        let toks = sentence(&mut rng, v, p.zh, &p.topic, true);
        body.push_str(sep);
        render_sentence(&mut body, &toks, v, p.zh);
        sentences.push(toks);
    }
    body.push_str("\n\n");
    let mut links = p.links.iter().peekable();
    // A section adds about 500 bytes: stop when the next one would overshoot by more than half.
    while body.len() + 250 < target {
        let (h, terms) = heading(&mut rng, v, p);
        body.push_str(&format!("## {h}\n\n"));
        headings.push(h);
        heading_terms.extend(terms);
        for _ in 0..rng.range(1, 3) {
            for s in 0..rng.range(2, 4) {
                if s > 0 {
                    body.push_str(sep);
                }
                let toks = sentence(&mut rng, v, p.zh, &p.topic, true);
                render_sentence(&mut body, &toks, v, p.zh);
                sentences.push(toks);
            }
            if links.peek().is_some() && rng.percent(45) {
                if let Some(&t) = links.next() {
                    let t = &plan.pages[t];
                    body.push_str(sep);
                    body.push_str(&link_sentence(
                        &mut rng,
                        p.zh,
                        &t.title,
                        &href(dir, &t.path),
                    ));
                }
            }
            body.push_str("\n\n");
        }
        match rng.below(100) {
            0..=19 => {
                for _ in 0..rng.range(3, 5) {
                    let toks = clip(sentence(&mut rng, v, p.zh, &p.topic, true), 8);
                    body.push_str("- ");
                    render_sentence(&mut body, &toks, v, p.zh);
                    body.push('\n');
                    sentences.push(toks);
                }
                body.push('\n');
            }
            20..=25 => {
                body.push_str("```yaml\n");
                for _ in 0..rng.range(2, 4) {
                    let key = v.en.words[v.en.content(&mut rng, EN_SKIP) as usize];
                    body.push_str(&format!("{key}: {}\n", rng.range(1, 9999)));
                }
                body.push_str("```\n\n");
            }
            26..=31 => {
                body.push_str(if p.zh {
                    "| 名称 | 说明 |\n| --- | --- |\n"
                } else {
                    "| Name | Meaning |\n| --- | --- |\n"
                });
                for _ in 0..rng.range(2, 4) {
                    let name = rng.pick(&p.topic).word(v);
                    let toks = clip(sentence(&mut rng, v, p.zh, &p.topic, false), 6);
                    let mut cell = String::new();
                    render_sentence(&mut cell, &toks, v, p.zh);
                    body.push_str(&format!("| {name} | {cell} |\n"));
                }
                body.push('\n');
            }
            _ => {}
        }
    }
    let rest: Vec<usize> = links.copied().collect();
    if !rest.is_empty() {
        let items: Vec<String> = rest
            .iter()
            .map(|&t| {
                let t = &plan.pages[t];
                format!("[{}]({})", label(&t.title), href(dir, &t.path))
            })
            .collect();
        if p.zh {
            body.push_str(&format!("另见{}。", items.join("、")));
        } else {
            body.push_str(&format!("See also {}.", items.join(", ")));
        }
    }
    let source_body = body.trim_end();
    let page = format!("{frontmatter}{source_body}{appendix}");
    let bytes = page.into_bytes();

    // The document record.
    let checksum = hex::encode(Sha256::digest(&bytes));
    let collapsed = collapse_whitespace(source_body);
    let summary = utf16_prefix(&collapsed, SUMMARY_UNITS);
    let field = |key: &str| fields.iter().find(|(k, _)| *k == key).map(|(_, v)| v);
    let doc_type = field("type").and_then(Value::as_str).unwrap_or("document");
    let description = field("description").and_then(Value::as_str);
    let language = field("language").and_then(Value::as_str);
    let tags: Vec<String> = field("tags")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    // The resolved metadata: every frontmatter key plus the resolved type and title, in the
    // order PostgreSQL `jsonb` gives keys back (shorter first, then bytewise).
    let mut metadata: Vec<(String, Value)> = fields
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    for (key, value) in [("type", doc_type), ("title", p.title.as_str())] {
        if !metadata.iter().any(|(k, _)| k == key) {
            metadata.push((key.to_string(), Value::from(value)));
        }
    }
    metadata.sort_by(|a, b| (a.0.len(), &a.0).cmp(&(b.0.len(), &b.0)));
    let has_relations = !plan.page_relations[i].is_empty();
    let record = DocumentRecordOut {
        path: &p.path,
        title: &p.title,
        summary,
        doc_type,
        description,
        subjects: [],
        tags: &tags,
        metadata: OrderedMap(&metadata),
        headings: &headings,
        language,
        keywords: [],
        entities: [],
        content_type: "text/markdown; charset=utf-8",
        checksum_sha256: &checksum,
        byte_count: bytes.len() as u64,
        relationship_count: u8::from(has_relations),
        graph_path: has_relations.then(|| by_file_path(&p.path)),
    };
    let record = serde_json::to_string(&record).unwrap_or_default();

    // Navigation terms: scored by field as the production generator does, the best kept.
    let terms = if plan.options.terms_per_page == 0 {
        Vec::new()
    } else {
        let mut masks: HashMap<String, u8> = HashMap::new();
        let mut add = |term: &str, field: u8| {
            let term = term.to_lowercase();
            let keep = term.chars().count() > 1 && term.chars().any(char::is_alphanumeric);
            if keep {
                *masks.entry(term).or_default() |= field;
            }
        };
        for t in &p.title_terms {
            add(t, FIELD_TITLE);
        }
        for d in std::iter::successors(Some(p.dir), |&d| plan.dirs[d].parent) {
            for t in &plan.dirs[d].name_terms {
                add(t, FIELD_PATH);
            }
        }
        for t in &p.stem_terms {
            add(t, FIELD_PATH);
        }
        for t in &heading_terms {
            add(t, FIELD_HEADING);
        }
        for t in &metadata_terms {
            add(t, FIELD_METADATA);
        }
        for toks in &sentences {
            for t in token_terms(toks, v) {
                add(&t, FIELD_BODY);
            }
        }
        let mut scored: Vec<(String, u8)> = masks.into_iter().collect();
        scored.sort_by(|a, b| {
            field_score(b.1)
                .cmp(&field_score(a.1))
                .then_with(|| a.0.cmp(&b.0))
        });
        scored.truncate(plan.options.terms_per_page);
        scored
    };

    let query =
        plan.query_of[i].and_then(|kind| make_query(plan, v, i, kind, &sentences, &mut rng));
    let rendered = Rendered {
        record,
        byte_count: bytes.len() as u64,
        terms,
        query,
    };
    (bytes, rendered)
}

/// A query drawn from page `i`'s own text.
fn make_query(
    plan: &Plan,
    v: &Vocab,
    i: usize,
    kind: QueryKind,
    sentences: &[Vec<Tok>],
    rng: &mut Rng,
) -> Option<Query> {
    let p = &plan.pages[i];
    let lang = if p.zh { "zh" } else { "en" };
    let text = match kind {
        QueryKind::Title => p.title.clone(),
        QueryKind::Question => {
            if p.zh {
                format!("{}是什么？", p.title)
            } else {
                format!("What is {}?", p.title.to_lowercase())
            }
        }
        QueryKind::Keywords => {
            let mut words: Vec<&str> = Vec::new();
            for _ in 0..8 {
                let w = rng.pick(&p.topic).word(v);
                if !words.contains(&w) {
                    words.push(w);
                }
                if words.len() == if p.zh { 2 } else { 3 } {
                    break;
                }
            }
            words.join(" ")
        }
        QueryKind::Phrase => phrase(sentences, v, p.zh, rng)?,
    };
    Some(Query {
        page: i,
        text,
        lang,
        kind: kind.name(),
    })
}

/// A run of words as written in one of the sentences: 4–6 English words, or 2–3 Chinese words
/// (with the particles between them); of eight candidate runs, the most distinctive (the most
/// words past the 300 most frequent, then the rarest in sum), as a phrase a reader would
/// remember and search for.
fn phrase(sentences: &[Vec<Tok>], v: &Vocab, zh: bool, rng: &mut Rng) -> Option<String> {
    let mut runs: Vec<&[Tok]> = Vec::new();
    for s in sentences {
        let mut start = 0;
        for end in 0..=s.len() {
            let inside = end < s.len()
                && match s[end] {
                    Tok::En(_) => !zh,
                    Tok::Zh(_) | Tok::Particle(_) => zh,
                    Tok::Comma => false,
                };
            if !inside {
                if end > start {
                    runs.push(&s[start..end]);
                }
                start = end + 1;
            }
        }
    }
    let words = |run: &[Tok]| {
        run.iter()
            .filter(|t| !matches!(t, Tok::Particle(_)))
            .count()
    };
    let (min, max) = if zh { (2, 3) } else { (4, 6) };
    runs.retain(|r| words(r) >= min);
    if runs.is_empty() {
        return None;
    }
    let mut best: Option<((usize, usize), &[Tok])> = None;
    for _ in 0..8 {
        let run = *rng.pick(&runs);
        let want = rng.range(min, max.min(words(run)));
        // Start at a word and take `want` words (and the particles between them).
        let starts: Vec<usize> = (0..run.len())
            .filter(|&i| !matches!(run[i], Tok::Particle(_)) && words(&run[i..]) >= want)
            .collect();
        let start = *rng.pick(&starts);
        let mut end = start;
        let mut taken = 0;
        while taken < want {
            if !matches!(run[end], Tok::Particle(_)) {
                taken += 1;
            }
            end += 1;
        }
        let window = &run[start..end];
        let ranks: Vec<usize> = window
            .iter()
            .filter_map(|t| match t {
                Tok::En(r) | Tok::Zh(r) => Some(usize::from(*r)),
                _ => None,
            })
            .collect();
        let score = (
            ranks.iter().filter(|&&r| r >= 300).count(),
            ranks.iter().sum::<usize>(),
        );
        if best.is_none_or(|(s, _)| score > s) {
            best = Some((score, window));
        }
    }
    let (_, window) = best?;
    let parts: Vec<&str> = window.iter().map(|t| t.word(v)).collect();
    Some(if zh { parts.concat() } else { parts.join(" ") })
}

#[cfg(test)]
mod tests;
