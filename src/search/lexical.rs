//! The direct lanes: exact path, exact title, the pages the query names ([`super::identifier`],
//! reported as `lexical` evidence of the path), the BM25F page lane (`lexical`), the pages whose
//! title the question covers ([`super::title`], `lexical` evidence of the title), the passage lane
//! (BM25 over the heading sections of the page lane's hits, reported as `lexical` evidence) and
//! the CJK word lane (`jieba`). Quoted phrases must appear as written in a content-lane hit.

use rayon::prelude::*;
use tantivy::Searcher;

use super::{Lane, Mode, Query, Scope};
use crate::error::IndexError;
use crate::kb::KnowledgeBase;
use crate::search::page_lanes::QueryTerms;

/// Candidates each lane contributes; fixed, so that paging never repeats or skips a result.
const LANE_DEPTH: usize = 1000;

/// A hit of a direct lane, best first within its lane.
#[derive(Debug, Clone, Copy)]
pub struct Hit {
    pub position: u32,
    /// Its rank in the lane (0 = best).
    pub rank: u32,
    /// The page's best section (passage lane only).
    pub section: Option<crate::search::passages::Section>,
    /// The window's cosine in the vector lanes (their fusion reads how far below the best it
    /// falls); 0 in the others.
    pub cosine: f32,
}

/// One direct lane's hits, and whether the lane is reported (in `graph` mode the page and
/// passage lanes run only to pick the graph lanes' seeds).
pub struct LaneHits {
    pub lane: Lane,
    pub reported: bool,
    pub hits: Vec<Hit>,
}

/// The passage lane's hits: the scored pages in their order, then the page lane's hits whose
/// page is one section, each its own passage at its page-lane rank.
fn passage_hits(passages: crate::search::passages::Passages) -> Vec<Hit> {
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
    hits
}

/// The semantic lane's hits: pages by their best passage window, each with that window's
/// section (its excerpt comes from it).
fn vector_hits(vectors: &crate::index::vectors::Vectors, query: &[f32], opening: f32) -> Vec<Hit> {
    vectors
        .search(
            query,
            LANE_DEPTH,
            super::weights::WEIGHTS.min_cosine,
            opening,
        )
        .into_iter()
        .enumerate()
        .map(|(rank, h)| Hit {
            position: h.position,
            rank: rank as u32,
            section: Some(crate::search::passages::Section(h.section)),
            cosine: h.score,
        })
        .collect()
}

/// Pages in lane order as hits (no section).
fn ranked(pages: Vec<u32>) -> Vec<Hit> {
    pages
        .into_iter()
        .enumerate()
        .map(|(rank, position)| Hit {
            position,
            rank: rank as u32,
            section: None,
            cosine: 0.0,
        })
        .collect()
}

pub fn run(
    kb: &KnowledgeBase,
    searcher: &Searcher,
    query: &Query<'_>,
    terms: &QueryTerms,
    lanes: &[Lane],
    query_vector: Option<&[f32]>,
    cross_vector: Option<&[f32]>,
) -> Result<Vec<LaneHits>, IndexError> {
    let text = query.text;
    let exact_key = crate::text::exact_key(text);
    let page_hits = |hits: Vec<crate::search::page_lanes::LaneHit>| {
        hits.into_iter()
            .enumerate()
            .map(|(rank, h)| Hit {
                position: h.position,
                rank: rank as u32,
                section: None,
                cosine: 0.0,
            })
            .collect::<Vec<_>>()
    };
    let mut wanted: Vec<(Lane, bool)> = lanes
        .iter()
        .filter(|l| !l.is_graph())
        .map(|&l| (l, true))
        .collect();
    // Graph mode seeds its lanes from the content lanes without reporting them.
    if query.mode == Mode::Graph && query.scope == Scope::All {
        wanted.push((Lane::Identifier, false));
        wanted.push((Lane::Lexical, false));
        wanted.push((Lane::Title, false));
        if !super::literal::literals(text).is_empty() {
            wanted.push((Lane::Literal, false));
        }
        wanted.push((Lane::Passage, false));
    }
    // The passage lane scores the page lane's hits: one task runs both.
    let passages = wanted.iter().find(|(l, _)| *l == Lane::Passage).copied();
    wanted.retain(|(l, _)| *l != Lane::Passage);
    // The lanes are independent reads of the index: they run at once (the page lane and the
    // passage lane after it cost about as much as the rest of a query together), results in
    // lane order.
    let ran: Vec<Vec<LaneHits>> = wanted
        .into_par_iter()
        .map(|(lane, reported)| {
            let hits = match lane {
                Lane::ExactPath => page_hits(kb.search.exact_path(searcher, &exact_key)?),
                Lane::Identifier => ranked(super::identifier::named_pages(kb, searcher, text)?),
                Lane::ExactTitle => page_hits(kb.search.exact_title(searcher, &exact_key)?),
                Lane::Lexical if query.scope == Scope::Metadata => {
                    page_hits(kb.search.metadata(searcher, terms, LANE_DEPTH)?)
                }
                Lane::Lexical => {
                    let hits = kb.search.lexical(searcher, terms, LANE_DEPTH)?;
                    let passages = match passages {
                        Some((_, reported)) => Some(LaneHits {
                            lane: Lane::Passage,
                            reported,
                            hits: passage_hits(kb.search.passages(searcher, terms, &hits)?),
                        }),
                        None => None,
                    };
                    let page = LaneHits {
                        lane,
                        reported,
                        hits: page_hits(hits),
                    };
                    return Ok(std::iter::once(page).chain(passages).collect());
                }
                Lane::Title => ranked(super::title::covered_pages(kb, searcher, terms)?),
                Lane::Literal => ranked(super::literal::pages(kb, searcher, text)?),
                Lane::Jieba => page_hits(kb.search.words(searcher, text, terms, LANE_DEPTH)?),
                Lane::ContentVector => match (query_vector, kb.vectors()) {
                    (Some(query), Some(vectors)) => {
                        vector_hits(vectors, query, super::weights::WEIGHTS.opening)
                    }
                    _ => Vec::new(),
                },
                Lane::CrossVector => match (cross_vector, kb.cross_vectors()) {
                    (Some(query), Some(vectors)) => vector_hits(vectors, query, 0.0),
                    _ => Vec::new(),
                },
                // Not direct lanes (left out of `wanted`; the passage lane runs with the page
                // lane).
                Lane::Passage | Lane::FileGraph | Lane::FileRelationship | Lane::Nearest => {
                    Vec::new()
                }
            };
            Ok(vec![LaneHits {
                lane,
                reported,
                hits,
            }])
        })
        .collect::<Result<_, IndexError>>()?;
    let mut out: Vec<LaneHits> = ran.into_iter().flatten().collect();
    // Quoted phrases must appear as written (in order, adjacent) in a content-lane hit.
    let phrases = crate::text::quoted_phrases(text);
    if !phrases.is_empty() {
        let pages = kb.search.phrase_matches(searcher, &phrases)?;
        for lane in out.iter_mut().filter(|l| l.lane.is_content()) {
            lane.hits.retain(|h| pages.contains(&h.position));
        }
    }
    Ok(out)
}
