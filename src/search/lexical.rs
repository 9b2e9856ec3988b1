//! The direct lanes: exact path, exact title, the BM25F page lane (`lexical`), the passage lane
//! (BM25 over each page's heading sections, reported as `lexical` evidence) and the CJK word
//! lane (`jieba`). Quoted phrases must appear as written in a content-lane hit.

use rayon::prelude::*;
use tantivy::Searcher;

use super::{Lane, Mode, Query, Scope};
use crate::error::IndexError;
use crate::index::search_index::QueryTerms;
use crate::index::KnowledgeBase;

/// Candidates each lane contributes; fixed, so that paging never repeats or skips a result.
const LANE_DEPTH: usize = 1000;
/// Sections the passage lane scores into its list (several per page).
const PASSAGE_DEPTH: usize = LANE_DEPTH;

/// A hit of a direct lane, best first within its lane.
#[derive(Debug, Clone, Copy)]
pub struct Hit {
    pub position: u32,
    /// Its rank in the lane (0 = best).
    pub rank: u32,
    /// The page's best section (passage lane only).
    pub section: Option<crate::index::search_index::Section>,
}

/// One direct lane's hits, and whether the lane is reported (in `graph` mode the page and
/// passage lanes run only to pick the graph lanes' seeds).
pub struct LaneHits {
    pub lane: Lane,
    pub reported: bool,
    pub hits: Vec<Hit>,
}

pub fn run(
    kb: &KnowledgeBase,
    searcher: &Searcher,
    query: &Query<'_>,
    terms: &QueryTerms,
    lanes: &[Lane],
) -> Result<Vec<LaneHits>, IndexError> {
    let text = query.text;
    let exact_key = crate::text::exact_key(text);
    let page_hits = |hits: Vec<crate::index::search_index::LaneHit>| {
        hits.into_iter()
            .enumerate()
            .map(|(rank, h)| Hit {
                position: h.position,
                rank: rank as u32,
                section: None,
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
        wanted.push((Lane::Lexical, false));
        wanted.push((Lane::Passage, false));
    }
    // The lanes are independent reads of the index: they run at once (the page and passage
    // lanes each cost about as much as the rest of a query together), results in lane order.
    // The page lane also says which of its hits are pages of one section.
    let ran: Vec<(LaneHits, Vec<Hit>)> = wanted
        .into_par_iter()
        .map(|(lane, reported)| {
            let mut single: Vec<Hit> = Vec::new();
            let hits = match lane {
                Lane::ExactPath => page_hits(kb.search.exact_path(searcher, &exact_key)?),
                Lane::ExactTitle => page_hits(kb.search.exact_title(searcher, &exact_key)?),
                Lane::Lexical if query.scope == Scope::Metadata => {
                    page_hits(kb.search.metadata(searcher, terms, LANE_DEPTH)?)
                }
                Lane::Lexical => {
                    let hits = kb.search.lexical(searcher, terms, LANE_DEPTH)?;
                    let singles = kb.search.single_section(searcher, &hits)?;
                    let hits = page_hits(hits);
                    single = hits
                        .iter()
                        .zip(singles)
                        .filter(|(_, one)| *one)
                        .map(|(h, _)| *h)
                        .collect();
                    hits
                }
                Lane::Passage => kb
                    .search
                    .passages(terms, PASSAGE_DEPTH)?
                    .into_iter()
                    .take(LANE_DEPTH)
                    .enumerate()
                    .map(|(rank, h)| Hit {
                        position: h.position,
                        rank: rank as u32,
                        section: Some(h.section),
                    })
                    .collect(),
                Lane::Jieba => page_hits(kb.search.words(searcher, text, terms, LANE_DEPTH)?),
                // Not direct lanes (left out of `wanted`).
                Lane::FileGraph | Lane::FileRelationship => Vec::new(),
            };
            let hits = LaneHits {
                lane,
                reported,
                hits,
            };
            Ok((hits, single))
        })
        .collect::<Result<_, IndexError>>()?;
    let mut out = Vec::with_capacity(ran.len());
    // The page lane's hits whose page is one section, in its order.
    let mut single: Vec<Hit> = Vec::new();
    for (hits, singles) in ran {
        if hits.lane == Lane::Lexical {
            single = singles;
        }
        out.push(hits);
    }
    // A page of one section is its own passage: in the passage lane it has its page-lane rank
    // (after the sections the passage lane scored).
    if let Some(passages) = out.iter_mut().find(|l| l.lane == Lane::Passage) {
        passages.hits.extend(single);
    }
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
