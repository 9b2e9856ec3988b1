//! The passage lane (`passage`, reported as `lexical` evidence): BM25 over the heading sections
//! ([`crate::ingest::markdown::sections`]) of the page lane's hits, read from the pages' index
//! itself; a page counts at its best section, which its excerpt comes from. The `kb_body` analysis ends
//! each section of a page of two or more with `SECTION_MARK` at a position of its own, so the
//! mark's positions in a page are its sections' bounds, and a query term's positions in the
//! body say which sections hold it. A section is scored with its page's title, as a passage is
//! read (the title's frequencies and length from the `title` field).
//!
//! The statistics are the sections' own: the count and average length of the sections of every
//! page of two or more (read once from the marks' postings, [`SectionStats`]), and a term's
//! section frequency counted over the candidates' sections; when the candidates are not every
//! page that holds the term (a knowledge base larger than the lane's depth), that count is
//! scaled by the term's page frequency over the candidates that hold it.

use tantivy::postings::Postings;
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet, Searcher, Term, TERMINATED};

use crate::error::IndexError;
use crate::index::search_index::stats::{section_lengths, SectionStats};
use crate::index::search_index::PageHit;
use crate::ingest::analysis::SECTION_MARK;
use crate::search::bm25::{self, BM25};
use crate::search::lanes::io::{Hit, LaneInput, Section, LANE_DEPTH};

/// Most a section's score gains from its query terms standing close together (`proximity`).
pub(crate) const PROXIMITY_WEIGHT: f32 = 10.0;

/// Two occurrences of query terms count as close within this many positions.
pub(crate) const PROXIMITY_WINDOW: u32 = 8;

/// A hit of the passage lane: the page, its best section's score and which section it is.
#[derive(Debug, Clone, Copy)]
pub struct PassageHit {
    pub position: u32,
    pub score: f32,
    pub section: Section,
}

/// The lane's pages over the page lane's hits (`candidates`): the scored pages in their
/// order, then the candidates whose page is one section, each its own passage at its
/// page-lane rank.
pub fn run(input: &LaneInput<'_>, candidates: &[PageHit]) -> Result<Vec<Hit>, IndexError> {
    let index = input.index;
    let stats = index.section_stats()?;
    let fields = index.fields();
    let scoring = Index {
        searcher: index.searcher(),
        title: fields.title,
        body: fields.body,
        stats,
        deleted: &index.deleted(),
    };
    let query = input.query;
    let passages = score(&scoring, &query.terms, &query.weights, BM25, candidates)?;
    let mut hits: Vec<Hit> = passages
        .hits
        .into_iter()
        .take(LANE_DEPTH)
        .enumerate()
        .map(|(rank, h)| Hit {
            position: h.position,
            rank: rank as u32,
            section: Some(h.section),
            cosine: 0.0,
        })
        .collect();
    hits.extend(passages.single.into_iter().map(|(rank, position)| Hit {
        position,
        rank: rank as u32,
        section: None,
        cosine: 0.0,
    }));
    Ok(hits)
}

/// What the passage lane makes of the page lane's candidates.
#[derive(Debug, Default)]
pub struct Passages {
    /// The pages of two or more sections that hold a query term, each at its best section
    /// (the first of equal ones), best first, equal scores by catalog position.
    pub hits: Vec<PassageHit>,
    /// The candidates whose page is one section (each its own passage), as (index among the
    /// candidates, catalog position), ascending.
    pub single: Vec<(usize, u32)>,
}

/// What the scoring reads of the index.
pub struct Index<'a> {
    pub searcher: &'a Searcher,
    pub title: Field,
    pub body: Field,
    pub stats: SectionStats,
    /// The deleted documents of each segment (`crate::index::search_index::stats::deleted_docs`).
    pub deleted: &'a [Vec<DocId>],
}

/// One multi-section candidate while it is scored.
struct Page {
    /// Its index among the candidates.
    candidate: usize,
    /// Where its sections' rows start in the frequency table.
    first_row: usize,
    /// Where its sections end: the positions of their marks.
    ends: Vec<u32>,
    /// The title's length.
    title_length: u32,
}

/// What one segment's candidates give: the pages of two or more sections and the frequency
/// of each term in each of their sections (with the title: a row per section, a column per
/// term), then per term the sections that hold it and the candidates whose body does, and
/// the pages of one section.
#[derive(Default)]
struct SegmentRead {
    pages: Vec<Page>,
    tf: Vec<u32>,
    sections_holding: Vec<u64>,
    pages_holding: Vec<u64>,
    single: Vec<(usize, u32)>,
    /// Per page (as `pages`), where its body holds the query's non-CJK terms: (position,
    /// term), for [`proximity`].
    occurrences: Vec<Vec<(u32, u16)>>,
}

/// Reads the candidates of segment `ord` (their rows in `tf` counted from the segment's own
/// first).
fn read_segment(
    index: &Index<'_>,
    ord: usize,
    terms: &[String],
    candidates: &[PageHit],
) -> Result<SegmentRead, IndexError> {
    let n_terms = terms.len();
    let mut read = SegmentRead {
        sections_holding: vec![0; n_terms],
        pages_holding: vec![0; n_terms],
        ..SegmentRead::default()
    };
    // This segment's candidates, by document (and the page each is, when it is scored).
    let mut docs: Vec<(DocId, usize, Option<usize>)> = candidates
        .iter()
        .enumerate()
        .filter(|(_, c)| c.address.segment_ord as usize == ord)
        .map(|(i, c)| (c.address.doc_id, i, None))
        .collect();
    let Some(segment) = index.searcher.segment_readers().get(ord) else {
        return Ok(read);
    };
    if docs.is_empty() {
        return Ok(read);
    }
    docs.sort_unstable();
    let body = segment.inverted_index(index.body)?;
    let title = segment.inverted_index(index.title)?;
    let title_norms = segment.get_fieldnorms_reader(index.title)?;
    // The pages of two or more sections: where their sections end.
    let mark = Term::from_field_text(index.body, SECTION_MARK);
    let mut marks = body
        .read_postings(&mark, IndexRecordOption::WithFreqsAndPositions)
        .map_err(tantivy::TantivyError::from)?;
    let (pages, tf) = (&mut read.pages, &mut read.tf);
    for (doc, candidate, page) in &mut docs {
        let Some(marks) = marks.as_mut().filter(|m| m.doc() != TERMINATED) else {
            read.single
                .push((*candidate, candidates[*candidate].position));
            continue;
        };
        if !seek(marks, *doc) {
            read.single
                .push((*candidate, candidates[*candidate].position));
            continue;
        }
        let mut ends = Vec::new();
        marks.positions(&mut ends);
        *page = Some(pages.len());
        read.occurrences.push(Vec::new());
        let first_row = pages
            .last()
            .map_or(0, |p: &Page| p.first_row + p.ends.len());
        tf.resize((first_row + ends.len()) * n_terms, 0);
        pages.push(Page {
            candidate: *candidate,
            first_row,
            title_length: title_norms.fieldnorm(*doc),
            ends,
        });
    }
    let mut positions: Vec<u32> = Vec::new();
    // The terms whose positions are words: CJK terms are characters and character pairs.
    let spaced: Vec<bool> = terms
        .iter()
        .map(|t| !crate::ingest::analysis::has_cjk(t))
        .collect();
    for (ti, t) in terms.iter().enumerate() {
        let term = Term::from_field_text(index.body, t);
        if let Some(mut postings) = body
            .read_postings(&term, IndexRecordOption::WithFreqsAndPositions)
            .map_err(tantivy::TantivyError::from)?
        {
            // Every candidate that holds it (for the frequency's scale), and in which of a
            // scored page's sections.
            for &(doc, _, page) in &docs {
                if !seek(&mut postings, doc) {
                    continue;
                }
                read.pages_holding[ti] += 1;
                let Some(at) = page else {
                    continue;
                };
                let page = &pages[at];
                postings.positions(&mut positions);
                if spaced[ti] {
                    read.occurrences[at].extend(positions.iter().map(|&p| (p, ti as u16)));
                }
                let mut section = 0;
                for &p in &positions {
                    while section < page.ends.len() && page.ends[section] < p {
                        section += 1;
                    }
                    if section < page.ends.len() {
                        tf[(page.first_row + section) * n_terms + ti] += 1;
                    }
                }
            }
        }
        let term = Term::from_field_text(index.title, t);
        let column = TermColumn {
            term: ti,
            terms: n_terms,
        };
        add_title_frequency(&title, &term, pages, candidates, tf, column)?;
        read.sections_holding[ti] = tf
            .iter()
            .skip(ti)
            .step_by(n_terms)
            .filter(|&&f| f > 0)
            .count() as u64;
    }
    Ok(read)
}

/// Column `term` of the `terms` columns of a term-frequency table (a row per section).
#[derive(Clone, Copy)]
struct TermColumn {
    term: usize,
    terms: usize,
}

/// `term`'s frequency in each scored page's title, added to every section of the page (a
/// title's terms are in every section of its page), in `column` of `tf`.
fn add_title_frequency(
    title: &tantivy::InvertedIndexReader,
    term: &Term,
    pages: &[Page],
    candidates: &[PageHit],
    tf: &mut [u32],
    column: TermColumn,
) -> Result<(), IndexError> {
    let Some(mut postings) = title
        .read_postings(term, IndexRecordOption::WithFreqs)
        .map_err(tantivy::TantivyError::from)?
    else {
        return Ok(());
    };
    for page in pages {
        let doc = candidates[page.candidate].address.doc_id;
        if seek(&mut postings, doc) {
            let in_title = postings.term_freq();
            for row in page.first_row..page.first_row + page.ends.len() {
                tf[row * column.terms + column.term] += in_title;
            }
        }
    }
    Ok(())
}

/// Scores the sections of `candidates` (the page lane's hits) for the `terms` (with their query
/// weights), BM25 with `params`. The segments are read at once (rayon).
pub fn score(
    index: &Index<'_>,
    terms: &[String],
    weights: &[f32],
    params: bm25::FieldParams,
    candidates: &[PageHit],
) -> Result<Passages, IndexError> {
    use rayon::prelude::*;
    let n_terms = terms.len();
    if n_terms == 0 || candidates.is_empty() {
        return Ok(Passages::default());
    }
    let mut reads: Vec<SegmentRead> = (0..index.searcher.segment_readers().len())
        .into_par_iter()
        .map(|ord| read_segment(index, ord, terms, candidates))
        .collect::<Result<_, IndexError>>()?;
    let mut out = Passages::default();
    // Per term: the candidates' sections that hold it, and the candidates whose body does.
    let mut sections_holding = vec![0u64; n_terms];
    let mut pages_holding = vec![0u64; n_terms];
    for read in &reads {
        for ti in 0..n_terms {
            sections_holding[ti] += read.sections_holding[ti];
            pages_holding[ti] += read.pages_holding[ti];
        }
        out.single.extend_from_slice(&read.single);
    }
    // The section frequency counted over the candidates' sections, scaled to the pages that
    // hold the term beyond the candidates.
    let total = index.stats.sections.max(1) as f32;
    let mut idf = Vec::with_capacity(n_terms);
    for (ti, t) in terms.iter().enumerate() {
        let pages_with = crate::index::search_index::stats::alive_doc_freq(
            index.searcher,
            index.deleted,
            &Term::from_field_text(index.body, t),
        )?;
        let scale = if pages_holding[ti] > 0 {
            (pages_with as f32 / pages_holding[ti] as f32).max(1.0)
        } else {
            1.0
        };
        let df = (sections_holding[ti] as f32 * scale).min(total);
        idf.push((1.0 + (total - df + 0.5) / (df + 0.5)).ln() * bm25::term_weight(weights, ti));
    }
    let average = index.stats.average_length();
    let bm25::FieldParams { k1, b, .. } = params;
    for read in &mut reads {
        for (at, page) in read.pages.iter().enumerate() {
            let near = proximity(&mut read.occurrences[at], &page.ends, &idf);
            let mut best: Option<(f32, u32)> = None;
            for (section, length) in section_lengths(&page.ends, page.title_length).enumerate() {
                let row = &read.tf[(page.first_row + section) * n_terms..][..n_terms];
                let norm = k1 * (1.0 - b + b * length as f32 / average);
                let mut score = PROXIMITY_WEIGHT * near[section] / (near[section] + 1.0);
                for (&f, idf) in row.iter().zip(&idf) {
                    if f > 0 {
                        let f = f as f32;
                        score += idf * f * (k1 + 1.0) / (f + norm);
                    }
                }
                if score > 0.0 && best.is_none_or(|(s, _)| score > s) {
                    best = Some((score, section as u32));
                }
            }
            if let Some((score, section)) = best {
                out.hits.push(PassageHit {
                    position: candidates[page.candidate].position,
                    score,
                    section: Section(section),
                });
            }
        }
    }
    out.hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.position.cmp(&b.position))
    });
    out.single.sort_unstable();
    Ok(out)
}

/// How close the query's terms stand in each section of a page whose marks stand at `ends`,
/// from the terms' `occurrences` in its body ((position, term), any order): over each two
/// neighbouring occurrences of different terms in one section at most [`PROXIMITY_WINDOW`]
/// positions apart, the smaller IDF over the squared distance. A section scores `BM25 +
/// PROXIMITY_WEIGHT · p / (p + 1)`: a passage that says the question's words together beats one
/// that holds them in unrelated sentences (a changelog's version: one bullet per change).
/// Measured (nDCG@10 of the default mode; docs/ranking.md): focowiki-docs 0.8321 → 0.8334,
/// vue-docs 0.7533 → 0.7651, stylelint-docs 0.7128 → 0.7198; weights 7 and 14 gave 0.8311 /
/// 0.7697 / 0.7206 and 0.8328 / 0.7654 / 0.7155. CJK terms are left out: their positions are
/// characters, and with them the window paired unrelated words (focowiki 0.8238).
fn proximity(occurrences: &mut [(u32, u16)], ends: &[u32], idf: &[f32]) -> Vec<f32> {
    let mut near = vec![0.0f32; ends.len()];
    occurrences.sort_unstable();
    let mut section = 0;
    for pair in occurrences.windows(2) {
        let ((a, ta), (b, tb)) = (pair[0], pair[1]);
        while section < ends.len() && ends[section] < a {
            section += 1;
        }
        if section >= ends.len() || ends[section] < b || ta == tb {
            continue;
        }
        let distance = b - a;
        if (1..=PROXIMITY_WINDOW).contains(&distance) {
            let weight = idf[usize::from(ta)].min(idf[usize::from(tb)]);
            near[section] += weight / (distance * distance) as f32;
        }
    }
    near
}

/// Moves `postings` to `doc` if it holds it (documents are visited in ascending order).
fn seek(postings: &mut tantivy::postings::SegmentPostings, doc: DocId) -> bool {
    let at = if postings.doc() < doc {
        postings.seek(doc)
    } else {
        postings.doc()
    };
    at == doc
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::search_index::stats::deleted_docs;
    use crate::index::search_index::{page_key, IndexedPage, Writer};
    use crate::ingest::bundle::PageText;
    use crate::ingest::markdown::SECTION_BREAK;

    /// A query's `kb_text` terms and their weights, as the page lane reads them.
    struct QueryTerms {
        terms: Vec<String>,
        weights: Vec<f32>,
    }

    impl QueryTerms {
        fn of(query: &str) -> Self {
            let terms = crate::ingest::analysis::query_terms(query);
            let weights = crate::ingest::analysis::query_term_weights(&terms);
            QueryTerms { terms, weights }
        }
    }

    /// Random pages: English and Chinese words, headings (section breaks) at random, some
    /// sections too short to stand alone, some pages of one section.
    fn pages(count: usize, seed: u64) -> Vec<(String, String, PageText)> {
        let mut next = crate::test_rng::xorshift(seed);
        let words = [
            "renewal",
            "notice",
            "the",
            "index",
            "知识库",
            "续费",
            "通知",
            "data",
            "续",
            "pages",
            "模型",
            "graph",
        ];
        (0..count)
            .map(|i| {
                let mut body = String::new();
                for _ in 0..(next() % 400) {
                    if next().is_multiple_of(30) {
                        body.push(SECTION_BREAK);
                    }
                    body.push_str(words[next() as usize % words.len()]);
                    body.push(' ');
                }
                let title = format!("page {i} {}", words[next() as usize % words.len()]);
                let text = PageText {
                    metadata: String::new(),
                    body,
                };
                (format!("pages/p{i}.md"), title, text)
            })
            .collect()
    }

    /// The BM25 of each page's best section, computed from the sections' texts as the lane
    /// defines it: each section with its page's title, its length quantized to a field norm,
    /// the statistics over every section of the pages of two or more.
    fn expected(
        pages: &[(String, String, PageText)],
        query: &QueryTerms,
    ) -> Vec<(usize, f32, u32)> {
        use tantivy::fieldnorm::FieldNormReader;
        let quantize = |n: usize| {
            FieldNormReader::id_to_fieldnorm(FieldNormReader::fieldnorm_to_id(n as u32)) as f32
        };
        let mut analyzer = crate::ingest::analysis::text_analyzer();
        let mut tokens = |text: &str| {
            let mut out = Vec::new();
            let mut stream = analyzer.token_stream(text);
            while stream.advance() {
                out.push(stream.token().text.clone());
            }
            out
        };
        // A section's length, the frequency of each term in it and where its non-CJK query
        // terms stand (token number, term).
        type Row = (f32, Vec<f32>, Vec<(u32, u16)>);
        // Per page of two or more sections, its sections' rows.
        let mut scored: Vec<(usize, Vec<Row>)> = Vec::new();
        for (i, (_, title, text)) in pages.iter().enumerate() {
            let sections = crate::ingest::markdown::sections(&text.body);
            if sections.len() < 2 {
                continue;
            }
            let title = tokens(title);
            let rows = sections
                .into_iter()
                .map(|range| {
                    let mut all = tokens(&text.body[range.clone()]);
                    let length = quantize(quantize(title.len()) as usize + all.len());
                    // Positions as the body's analysis gives them (a CJK run takes as many
                    // positions there as it has characters and pairs).
                    let mut at: Vec<(u32, u16)> = Vec::new();
                    let section_text = &text.body[range.clone()];
                    let mut body = crate::ingest::analysis::body_analyzer();
                    let mut stream = body.token_stream(section_text);
                    while stream.advance() {
                        let token = stream.token();
                        if let Some(term) = query.terms.iter().position(|t| *t == token.text) {
                            if !crate::ingest::analysis::has_cjk(&token.text) {
                                at.push((token.position as u32, term as u16));
                            }
                        }
                    }
                    at.sort_unstable();
                    all.extend(title.iter().cloned());
                    let tf = query
                        .terms
                        .iter()
                        .map(|t| all.iter().filter(|x| *x == t).count() as f32)
                        .collect();
                    (length, tf, at)
                })
                .collect();
            scored.push((i, rows));
        }
        let all_rows = || scored.iter().flat_map(|(_, rows)| rows.iter());
        let total = all_rows().count() as f32;
        let average = all_rows().map(|(l, _, _)| l).sum::<f32>() / total;
        let idf: Vec<f32> = (0..query.terms.len())
            .map(|t| {
                let df = all_rows().filter(|(_, tf, _)| tf[t] > 0.0).count() as f32;
                (1.0 + (total - df + 0.5) / (df + 0.5)).ln() * query.weights[t]
            })
            .collect();
        let (k1, b) = (BM25.k1, BM25.b);
        let mut out = Vec::new();
        for (page, rows) in &scored {
            let mut best: Option<(f32, u32)> = None;
            for (section, (length, tf, at)) in rows.iter().enumerate() {
                let norm = k1 * (1.0 - b + b * length / average);
                // Neighbouring occurrences of two terms, near enough.
                let near: f32 = at
                    .windows(2)
                    .filter(|w| w[0].1 != w[1].1 && w[1].0 - w[0].0 <= PROXIMITY_WINDOW)
                    .map(|w| {
                        let d = (w[1].0 - w[0].0) as f32;
                        idf[usize::from(w[0].1)].min(idf[usize::from(w[1].1)]) / (d * d)
                    })
                    .sum();
                let score: f32 = PROXIMITY_WEIGHT * near / (near + 1.0)
                    + tf.iter()
                        .zip(&idf)
                        .filter(|(f, _)| **f > 0.0)
                        .map(|(f, idf)| idf * f * (k1 + 1.0) / (f + norm))
                        .sum::<f32>();
                if score > 0.0 && best.is_none_or(|(s, _)| score > s) {
                    best = Some((score, section as u32));
                }
            }
            if let Some((score, section)) = best {
                out.push((*page, score, section));
            }
        }
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out
    }

    /// The lane's scores, read from positions in the index, are the sections' BM25 computed
    /// from their texts; after an update that deletes pages too (the statistics count live
    /// pages only).
    #[test]
    fn passages_from_positions_score_as_the_sections_texts() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let all = pages(120, 0x2545_f491_4f6c_dd1d);
        let writer = Writer::create(dir, 2).unwrap();
        for (path, title, text) in &all {
            let page = IndexedPage {
                key: page_key(path),
                path,
                title,
                text,
            };
            writer.add_one(&page).unwrap();
        }
        writer.finish().unwrap();
        let query = QueryTerms::of("renewal notice 知识库续费 graph");
        let check = |live: &[(String, String, PageText)]| {
            let index = tantivy::Index::open_in_dir(dir).unwrap();
            crate::ingest::analysis::register(&index);
            let searcher = index.reader().unwrap().searcher();
            let schema = index.schema();
            let (title, body) = (
                schema.get_field("title").unwrap(),
                schema.get_field("body").unwrap(),
            );
            // Every live page is a candidate, its catalog position its number in `live`.
            let mut candidates = Vec::new();
            for (ord, segment) in searcher.segment_readers().iter().enumerate() {
                let keys = segment.fast_fields().u64("key").unwrap();
                for doc in segment.doc_ids_alive() {
                    let key = keys.first(doc).unwrap();
                    let position = live.iter().position(|(p, _, _)| page_key(p) == key);
                    candidates.push(PageHit {
                        position: position.unwrap() as u32,
                        score: 0.0,
                        address: tantivy::DocAddress::new(ord as u32, doc),
                    });
                }
            }
            assert_eq!(candidates.len(), live.len());
            let deleted = deleted_docs(&searcher);
            let index = Index {
                searcher: &searcher,
                title,
                body,
                stats: SectionStats::read(&searcher, title, body).unwrap(),
                deleted: &deleted,
            };
            // No term: nothing to score (and no panic).
            let none = score(&index, &[], &[], BM25, &candidates).unwrap();
            assert!(none.hits.is_empty() && none.single.is_empty());
            let found = score(&index, &query.terms, &query.weights, BM25, &candidates).unwrap();
            let want = expected(live, &query);
            assert!(want.len() > 20, "{}", want.len());
            assert_eq!(found.hits.len(), want.len());
            for (hit, (page, score, section)) in found.hits.iter().zip(&want) {
                assert_eq!(hit.position as usize, *page);
                assert_eq!(hit.section, Section(*section), "page {page}");
                assert!(
                    (hit.score - score).abs() <= 1e-4 * score,
                    "{} {score}",
                    hit.score
                );
            }
            // The other candidates are pages of one section.
            let single: Vec<usize> = (0..live.len())
                .filter(|i| crate::ingest::markdown::sections(&live[*i].2.body).len() < 2)
                .collect();
            assert!(!single.is_empty());
            let mut found_single: Vec<usize> =
                found.single.iter().map(|(_, p)| *p as usize).collect();
            found_single.sort_unstable();
            assert_eq!(found_single, single);
        };
        check(&all);
        // An update deletes a third of the pages (their documents stay in the segments).
        let gone: Vec<u64> = all.iter().step_by(3).map(|(p, _, _)| page_key(p)).collect();
        Writer::update(dir, &gone, 1).unwrap().finish().unwrap();
        let live: Vec<_> = all
            .iter()
            .filter(|(p, _, _)| !gone.contains(&page_key(p)))
            .cloned()
            .collect();
        check(&live);
    }

    /// A section's text is found again from its number; a number past the page's sections
    /// (the page changed) is none.
    #[test]
    fn sections_are_found_again_by_number() {
        let brk = SECTION_BREAK;
        let long = |c: &str| c.repeat(crate::ingest::markdown::MIN_SECTION_BYTES);
        let body = format!("{}{brk}{}", long("a"), long("b"));
        assert_eq!(Section(0).text(&body), Some(long("a").as_str()));
        assert_eq!(Section(1).text(&body), Some(long("b").as_str()));
        assert_eq!(Section(2).text(&body), None);
    }
}
