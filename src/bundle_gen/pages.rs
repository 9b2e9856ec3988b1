//! The pages of a generated bundle: each page's Markdown, frontmatter, document record, terms
//! and benchmark queries, from its plan.

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::text::*;
use super::{
    date, frontmatter_yaml, href, label, parent_of, utf16_prefix, OrderedMap, PagePlan, Plan,
    QueryKind, SUMMARY_UNITS,
};
use crate::text::collapse_whitespace;

#[derive(Debug)]
pub(super) struct Query {
    pub(super) page: usize,
    pub(super) text: String,
    pub(super) lang: &'static str,
    pub(super) kind: &'static str,
}

/// What the bundle-wide files need of a rendered page.
pub(super) struct Rendered {
    /// Its `_index/pages` document record, as JSON.
    pub(super) record: String,
    pub(super) byte_count: u64,
    /// Its navigation terms with their fields (a bit per `TERM_FIELDS` entry).
    pub(super) terms: Vec<(String, u8)>,
    pub(super) query: Option<Query>,
}

pub(super) const TERM_FIELDS: [&str; 8] = [
    "title",
    "alias",
    "path",
    "heading",
    "metadata",
    "entity",
    "model_keyword",
    "body",
];
pub(super) const FIELD_TITLE: u8 = 1;
pub(super) const FIELD_PATH: u8 = 1 << 2;
pub(super) const FIELD_HEADING: u8 = 1 << 3;
pub(super) const FIELD_METADATA: u8 = 1 << 4;
pub(super) const FIELD_BODY: u8 = 1 << 7;

pub(super) fn field_score(mask: u8) -> u32 {
    let weights = [800, 720, 760, 640, 560, 520, 480, 100];
    (0..8)
        .filter(|i| mask & (1 << i) != 0)
        .map(|i| weights[i])
        .sum()
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct DocumentRecordOut<'a> {
    pub(super) path: &'a str,
    pub(super) title: &'a str,
    pub(super) summary: &'a str,
    #[serde(rename = "type")]
    pub(super) doc_type: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) description: Option<&'a str>,
    pub(super) subjects: [&'a str; 0],
    pub(super) tags: &'a [String],
    pub(super) metadata: OrderedMap<'a>,
    pub(super) headings: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) language: Option<&'a str>,
    pub(super) keywords: [&'a str; 0],
    pub(super) entities: [&'a str; 0],
    pub(super) content_type: &'a str,
    pub(super) checksum_sha256: &'a str,
    pub(super) byte_count: u64,
    pub(super) relationship_count: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) graph_path: Option<String>,
}

/// `pages/a/b.md` → `_graph/by-file/a/b.json`.
pub(super) fn by_file_path(page: &str) -> String {
    let rest = page.strip_prefix("pages/").unwrap_or(page);
    format!("_graph/by-file/{}.json", &rest[..rest.len() - 3])
}

/// `pages/a` → `<prefix>/a`; `pages` → `<prefix>`.
pub(super) fn mirror(prefix: &str, pages_dir: &str) -> String {
    format!(
        "{prefix}{}",
        pages_dir.strip_prefix("pages").unwrap_or(pages_dir)
    )
}

/// The frontmatter an uploader wrote: title, description, tags, and on some pages a type, a
/// language and OKF fields. A few pages have none (an empty block).
pub(super) fn page_frontmatter(
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
pub(super) fn clip(mut toks: Vec<Tok>, n: usize) -> Vec<Tok> {
    toks.truncate(n);
    while toks.last() == Some(&Tok::Comma) {
        toks.pop();
    }
    toks
}

/// The navigation terms of some tokens (words, not particles or punctuation).
pub(super) fn token_terms(toks: &[Tok], v: &Vocab) -> Vec<String> {
    toks.iter()
        .filter(|t| matches!(t, Tok::En(_) | Tok::Zh(_)))
        .map(|t| t.word(v).to_string())
        .collect()
}

/// A heading: 2–4 English words or 1–2 Chinese words.
pub(super) fn heading(rng: &mut Rng, v: &Vocab, p: &PagePlan) -> (String, Vec<String>) {
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

pub(super) fn link_sentence(rng: &mut Rng, zh: bool, title: &str, href: &str) -> String {
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
pub(super) fn render_page(plan: &Plan, v: &Vocab, i: usize) -> (Vec<u8>, Rendered) {
    let p = &plan.pages[i];
    let dir = parent_of(&p.path);
    let mut rng = Rng::derive(plan.options.seed, STREAM_PAGE, i as u64);
    let (fields, metadata_terms) = page_frontmatter(p, &mut rng, v);
    let frontmatter = frontmatter_yaml(&fields);
    let appendix = related_appendix(plan, i, dir);
    let target = plan
        .options
        .page_bytes
        .saturating_sub(frontmatter.len() + appendix.len())
        .max(300);
    let body = page_body(plan, v, i, &mut rng, target);
    let source_body = body.text.trim_end();
    let page = format!("{frontmatter}{source_body}{appendix}");
    let bytes = page.into_bytes();
    let record = document_record(plan, i, &fields, source_body, &bytes, &body.headings);
    let terms = navigation_terms(plan, v, i, &body, &metadata_terms);
    let query =
        plan.query_of[i].and_then(|kind| make_query(plan, v, i, kind, &body.sentences, &mut rng));
    let rendered = Rendered {
        record,
        byte_count: bytes.len() as u64,
        terms,
        query,
    };
    (bytes, rendered)
}

/// The `## Related` list a page with relations ends with: each related page and the reason.
fn related_appendix(plan: &Plan, i: usize, dir: &str) -> String {
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
    appendix
}

/// A page's source body, and what its record and terms are made from.
struct Body {
    text: String,
    headings: Vec<String>,
    heading_terms: Vec<String>,
    sentences: Vec<Vec<Tok>>,
}

/// The source body of page `i`: H1, lead paragraph, sections until the page is about
/// `target` bytes, its links in the paragraphs and the rest in a closing line.
fn page_body(plan: &Plan, v: &Vocab, i: usize, rng: &mut Rng, target: usize) -> Body {
    let p = &plan.pages[i];
    let dir = parent_of(&p.path);
    let mut body = Body {
        text: format!("# {}\n\n", p.title),
        headings: vec![p.title.clone()],
        heading_terms: Vec::new(),
        sentences: Vec::new(),
    };
    let sep = if p.zh { "" } else { " " };
    body.text.push_str(&p.lead);
    for _ in 0..rng.range(1, 2) {
        let toks = sentence(rng, v, p.zh, &p.topic, true);
        body.text.push_str(sep);
        render_sentence(&mut body.text, &toks, v, p.zh);
        body.sentences.push(toks);
    }
    body.text.push_str("\n\n");
    let mut links = p.links.iter().peekable();
    // A section adds about 500 bytes: stop when the next one would overshoot by more than half.
    while body.text.len() + 250 < target {
        let (h, terms) = heading(rng, v, p);
        body.text.push_str(&format!("## {h}\n\n"));
        body.headings.push(h);
        body.heading_terms.extend(terms);
        for _ in 0..rng.range(1, 3) {
            for s in 0..rng.range(2, 4) {
                if s > 0 {
                    body.text.push_str(sep);
                }
                let toks = sentence(rng, v, p.zh, &p.topic, true);
                render_sentence(&mut body.text, &toks, v, p.zh);
                body.sentences.push(toks);
            }
            if links.peek().is_some() && rng.percent(45) {
                if let Some(&t) = links.next() {
                    let t = &plan.pages[t];
                    body.text.push_str(sep);
                    let link = link_sentence(rng, p.zh, &t.title, &href(dir, &t.path));
                    body.text.push_str(&link);
                }
            }
            body.text.push_str("\n\n");
        }
        section_block(&mut body, p, v, rng);
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
            body.text.push_str(&format!("另见{}。", items.join("、")));
        } else {
            body.text
                .push_str(&format!("See also {}.", items.join(", ")));
        }
    }
    body
}

/// What may close a section: a list (a fifth of them), a YAML block or a table, or nothing.
fn section_block(body: &mut Body, p: &PagePlan, v: &Vocab, rng: &mut Rng) {
    match rng.below(100) {
        0..=19 => {
            for _ in 0..rng.range(3, 5) {
                let toks = clip(sentence(rng, v, p.zh, &p.topic, true), 8);
                body.text.push_str("- ");
                render_sentence(&mut body.text, &toks, v, p.zh);
                body.text.push('\n');
                body.sentences.push(toks);
            }
            body.text.push('\n');
        }
        20..=25 => {
            body.text.push_str("```yaml\n");
            for _ in 0..rng.range(2, 4) {
                let key = v.en.words[v.en.content(rng, EN_SKIP) as usize];
                body.text
                    .push_str(&format!("{key}: {}\n", rng.range(1, 9999)));
            }
            body.text.push_str("```\n\n");
        }
        26..=31 => {
            body.text.push_str(if p.zh {
                "| 名称 | 说明 |\n| --- | --- |\n"
            } else {
                "| Name | Meaning |\n| --- | --- |\n"
            });
            for _ in 0..rng.range(2, 4) {
                let name = rng.pick(&p.topic).word(v);
                let toks = clip(sentence(rng, v, p.zh, &p.topic, false), 6);
                let mut cell = String::new();
                render_sentence(&mut cell, &toks, v, p.zh);
                body.text.push_str(&format!("| {name} | {cell} |\n"));
            }
            body.text.push('\n');
        }
        _ => {}
    }
}

/// Page `i`'s document record (one JSON line of its packet).
fn document_record(
    plan: &Plan,
    i: usize,
    fields: &[(&str, Value)],
    source_body: &str,
    bytes: &[u8],
    headings: &[String],
) -> String {
    let p = &plan.pages[i];
    let checksum = hex::encode(Sha256::digest(bytes));
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
        headings,
        language,
        keywords: [],
        entities: [],
        content_type: "text/markdown; charset=utf-8",
        checksum_sha256: &checksum,
        byte_count: bytes.len() as u64,
        relationship_count: u8::from(has_relations),
        graph_path: has_relations.then(|| by_file_path(&p.path)),
    };
    serde_json::to_string(&record).unwrap_or_default()
}

/// Navigation terms of page `i`: scored by field as the production generator does, the best
/// kept.
fn navigation_terms(
    plan: &Plan,
    v: &Vocab,
    i: usize,
    body: &Body,
    metadata_terms: &[String],
) -> Vec<(String, u8)> {
    if plan.options.terms_per_page == 0 {
        return Vec::new();
    }
    let p = &plan.pages[i];
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
    for t in &body.heading_terms {
        add(t, FIELD_HEADING);
    }
    for t in metadata_terms {
        add(t, FIELD_METADATA);
    }
    for toks in &body.sentences {
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
}

/// A query drawn from page `i`'s own text.
pub(super) fn make_query(
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
pub(super) fn phrase(sentences: &[Vec<Tok>], v: &Vocab, zh: bool, rng: &mut Rng) -> Option<String> {
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
