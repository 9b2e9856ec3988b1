//! The plan of a generated bundle: directories, pages, links and relations, before any text.

use super::*;

#[derive(Debug)]
pub(super) struct DirPlan {
    /// `pages` or `pages/a/b`.
    pub(super) path: String,
    pub(super) name: String,
    pub(super) parent: Option<usize>,
    pub(super) children: Vec<usize>,
    /// Pages directly inside, in path order.
    pub(super) pages: Vec<usize>,
    /// Navigation terms of the name.
    pub(super) name_terms: Vec<String>,
    pub(super) topic: Vec<Tok>,
}

#[derive(Debug)]
pub(super) struct PagePlan {
    pub(super) path: String,
    pub(super) dir: usize,
    pub(super) zh: bool,
    pub(super) title: String,
    pub(super) title_terms: Vec<String>,
    pub(super) stem_terms: Vec<String>,
    pub(super) topic: Vec<Tok>,
    /// The first sentence (the excerpt of a `related` relation this page holds).
    pub(super) lead: String,
    /// Pages this page links to, in link order.
    pub(super) links: Vec<usize>,
}

/// One relationship per related pair of pages.
#[derive(Debug)]
pub(super) struct RelationPlan {
    pub(super) a: usize,
    pub(super) b: usize,
    /// `related` (semantic evidence) rather than `references` (a Markdown link).
    pub(super) related: bool,
    pub(super) a_holds: bool,
    pub(super) b_holds: bool,
}

impl RelationPlan {
    pub(super) fn other(&self, page: usize) -> usize {
        if self.a == page {
            self.b
        } else {
            self.a
        }
    }

    pub(super) fn holds(&self, page: usize) -> bool {
        if self.a == page {
            self.a_holds
        } else {
            self.b_holds
        }
    }

    pub(super) fn direction(&self, page: usize) -> &'static str {
        match (self.holds(page), self.holds(self.other(page))) {
            (true, true) => "bidirectional",
            (true, false) => "outgoing",
            _ => "incoming",
        }
    }

    pub(super) fn relation_type(&self) -> &'static str {
        if self.related {
            "related"
        } else {
            "references"
        }
    }

    /// The pages holding the evidence, the one the reason names first.
    pub(super) fn holders(&self, plan: &Plan) -> Vec<usize> {
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

    pub(super) fn reason(&self, plan: &Plan) -> String {
        let holder = self.holders(plan)[0];
        let from = &plan.pages[holder].title;
        let to = &plan.pages[self.other(holder)].title;
        if self.related {
            format!("{from} contains source-grounded evidence relating it to {to}.")
        } else {
            format!("{from} contains an explicit Markdown reference to {to}.")
        }
    }

    pub(super) fn evidence<'p>(&self, plan: &'p Plan, holder: usize) -> Evidence<'p> {
        Evidence {
            path: &plan.pages[holder].path,
            excerpt: self.related.then(|| plan.pages[holder].lead.as_str()),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum QueryKind {
    Phrase,
    Keywords,
    Title,
    Question,
}

impl QueryKind {
    pub(super) fn name(self) -> &'static str {
        match self {
            QueryKind::Phrase => "phrase",
            QueryKind::Keywords => "keywords",
            QueryKind::Title => "title",
            QueryKind::Question => "question",
        }
    }
}

pub(super) struct Plan {
    pub(super) options: GenOptions,
    pub(super) kb_name: String,
    pub(super) dirs: Vec<DirPlan>,
    pub(super) pages: Vec<PagePlan>,
    /// Sorted by (a, b).
    pub(super) relations: Vec<RelationPlan>,
    /// Per page, its relations in path order of the other page.
    pub(super) page_relations: Vec<Vec<usize>>,
    /// Pages in path order.
    pub(super) path_order: Vec<usize>,
    /// Pages that give a query, in query order.
    pub(super) query_pages: Vec<(usize, QueryKind)>,
    /// Per page, the kind of query it gives, if any.
    pub(super) query_of: Vec<Option<QueryKind>>,
}

/// A unique name among `taken` (compared case-insensitively), never a reserved one.
pub(super) fn unique_name(base: String, ext: &str, taken: &mut BTreeSet<String>) -> String {
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
    pub(super) fn new(options: &GenOptions, v: &Vocab) -> Plan {
        let mut rng = Rng::derive(options.seed, STREAM_PLAN, 0);
        let zh_per_mille = (options.zh_share.clamp(0.0, 1.0) * 1000.0).round() as usize;
        let n = options.pages;
        // About PAGES_PER_DIRECTORY pages a directory; a few at the root.
        let root_pages = n.min((n / 200).clamp(1, 20));
        let n_dirs = (n - root_pages).div_ceil(PAGES_PER_DIRECTORY);
        let mut dirs = plan_dirs(&mut rng, v, n_dirs, zh_per_mille);
        let counts = page_counts(&mut rng, dirs.len(), n - root_pages, root_pages);
        let mut pages = plan_pages(options, v, &mut dirs, &counts, zh_per_mille);
        let mut path_order: Vec<usize> = (0..n).collect();
        path_order.sort_by(|&a, &b| pages[a].path.cmp(&pages[b].path));
        plan_links(options, &dirs, &mut pages);
        let relations = plan_relations(options, &dirs, &pages);
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

/// Directories: `pages` and `n_dirs` below it, a tree made breadth-first with a branching
/// factor that keeps it 2–3 levels deep.
fn plan_dirs(rng: &mut Rng, v: &Vocab, n_dirs: usize, zh_per_mille: usize) -> Vec<DirPlan> {
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
                let (base, name_terms) = dir_name(rng, v, zh);
                let name = unique_name(base, "", &mut sibling_names[parent]);
                let path = format!("{}/{name}", dirs[parent].path);
                let index = dirs.len();
                let topic = topic(rng, v, zh, 4);
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
    dirs
}

/// A directory's name (one or two words of its language) and the terms a search finds it by.
fn dir_name(rng: &mut Rng, v: &Vocab, zh: bool) -> (String, Vec<String>) {
    if zh {
        let words: Vec<&str> = (0..rng.range(1, 2))
            .map(|_| v.zh.words[v.zh.content(rng, ZH_SKIP) as usize])
            .collect();
        (
            words.concat(),
            words.iter().map(|w| w.to_string()).collect(),
        )
    } else {
        let words: Vec<&str> = (0..rng.range(1, 2))
            .map(|_| v.en.words[v.en.content(rng, EN_SKIP) as usize])
            .collect();
        let mut terms: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        if words.len() > 1 {
            terms.push(words.join("-"));
        }
        (words.join("-"), terms)
    }
}

/// How many pages each directory holds: `root_pages` at the root, `rest` spread over the
/// others by random weights.
fn page_counts(rng: &mut Rng, n_all: usize, rest: usize, root_pages: usize) -> Vec<usize> {
    let n_dirs = n_all - 1;
    let mut counts = vec![0usize; n_all];
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
    counts
}

/// Pages: language, title, file name (unique in its directory, case-insensitively), topic,
/// lead sentence; each directory's pages in path order.
fn plan_pages(
    options: &GenOptions,
    v: &Vocab,
    dirs: &mut [DirPlan],
    counts: &[usize],
    zh_per_mille: usize,
) -> Vec<PagePlan> {
    let mut pages = Vec::with_capacity(options.pages);
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
            let (title, title_terms, stem, stem_terms) = page_title(&mut prng, v, zh);
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
    for dir in dirs {
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
    pages
}

/// A page's title and its terms, and its file name stem and the stem's terms: Chinese words
/// (an English word before them now and then; the stem in English at times), or English
/// words in title case.
fn page_title(prng: &mut Rng, v: &Vocab, zh: bool) -> (String, Vec<String>, String, Vec<String>) {
    if zh {
        let words: Vec<&str> = (0..prng.range(2, 3))
            .map(|_| v.zh.words[v.zh.content(prng, ZH_SKIP) as usize])
            .collect();
        let mut title = String::new();
        let mut terms: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        if prng.percent(20) {
            let en = v.en.words[v.en.content(prng, EN_SKIP) as usize];
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
                .map(|_| v.en.words[v.en.content(prng, EN_SKIP) as usize])
                .collect();
            let mut stem_terms: Vec<String> = en.iter().map(|w| w.to_string()).collect();
            if en.len() > 1 {
                stem_terms.push(en.join("-"));
            }
            (title, terms, en.join("-"), stem_terms)
        }
    } else {
        let mut words: Vec<&str> = (0..prng.range(2, 5))
            .map(|_| v.en.words[v.en.content(prng, EN_SKIP) as usize])
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
    }
}

/// Links: mostly within the directory, some to a neighbouring directory, a few anywhere.
fn plan_links(options: &GenOptions, dirs: &[DirPlan], pages: &mut [PagePlan]) {
    let n = pages.len();
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
}

/// Relations: one per linked pair (`references`), plus a few `related` pairs within a
/// directory that no link joins; in pair order.
fn plan_relations(options: &GenOptions, dirs: &[DirPlan], pages: &[PagePlan]) -> Vec<RelationPlan> {
    let n = pages.len();
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
    pairs.into_values().collect()
}
