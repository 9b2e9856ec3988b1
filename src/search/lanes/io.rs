//! What a lane is given and what it gives back: the direct lanes' input ([`LaneInput`]: the
//! analysed question, the index's view, the question's embeddings) and hits ([`Hit`]), the
//! graph lanes' input ([`GraphInput`]: the seeds' walks) and [`Offers`]. The lane files read
//! these and nothing above them, so that the table of lanes (`super`) can name each lane's
//! function.

use crate::graph::Step;
use crate::index::search_index::{PageHit, SearchView};
use crate::kb::KnowledgeBase;
use crate::search::query::{AnalyzedQuery, Scope};
use crate::search::semantic::QueryVector;

/// Candidates each lane contributes; fixed, so that paging never repeats or skips a result.
pub(crate) const LANE_DEPTH: usize = 1000;

/// A section of a page: its number among the page's [`crate::ingest::markdown::sections`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Section(pub u32);

impl Section {
    /// The section's text in `body` (the page's indexed body text); `None` when the page has
    /// no such section (it changed since it was indexed).
    pub fn text(self, body: &str) -> Option<&str> {
        let range = crate::ingest::markdown::sections(body)
            .into_iter()
            .nth(self.0 as usize)?;
        body.get(range)
    }
}

/// A hit of a direct lane, best first within its lane.
#[derive(Debug, Clone, Copy)]
pub struct Hit {
    pub position: u32,
    /// Its rank in the lane (0 = best).
    pub rank: u32,
    /// The page's best section (the passage and vector lanes).
    pub section: Option<Section>,
    /// The window's cosine in the vector lanes (their fusion reads how far below the best it
    /// falls); 0 in the others.
    pub cosine: f32,
}

/// Pages in lane order as hits (no section).
pub(crate) fn ranked(pages: impl IntoIterator<Item = u32>) -> Vec<Hit> {
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

/// Scored pages of the index in lane order as hits.
pub(crate) fn page_hits(hits: &[PageHit]) -> Vec<Hit> {
    ranked(hits.iter().map(|h| h.position))
}

/// What a direct lane reads.
#[derive(Clone, Copy)]
pub struct LaneInput<'a> {
    pub kb: &'a KnowledgeBase,
    pub index: SearchView<'a>,
    pub query: &'a AnalyzedQuery,
    pub scope: Scope,
    /// The question's embedding for the semantic lane, made by the lane when it runs.
    pub query_vector: &'a Embedding<'a>,
    /// The cross-language model's embedding of the question, likewise.
    pub cross_vector: &'a Embedding<'a>,
    /// Set by a lane that did part of its work only (its budget ran out).
    pub cut_short: &'a CutShort,
}

/// Whether a lane of a search did part of its work only: the literal lane past its budget of
/// page text or its number of literals (`crate::search::lanes::literal`). The search then
/// reports the lexical family degraded.
#[derive(Debug, Default)]
pub struct CutShort(std::sync::atomic::AtomicBool);

impl CutShort {
    /// A lane cut its work short.
    pub fn mark(&self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether a lane cut its work short.
    pub fn get(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// A question's embedding, made the first time a lane asks for it: inside its lane's task, so
/// that the model runs beside the lexical lanes instead of before them (a question's few
/// tokens keep one thread busy for a few milliseconds; the lexical lanes take as long).
pub struct Embedding<'a> {
    cell: std::sync::OnceLock<Option<QueryVector>>,
    make: &'a (dyn Fn() -> Option<QueryVector> + Sync),
}

impl<'a> Embedding<'a> {
    pub fn new(make: &'a (dyn Fn() -> Option<QueryVector> + Sync)) -> Self {
        Embedding {
            cell: std::sync::OnceLock::new(),
            make,
        }
    }

    /// The embedding, made now when no lane has asked before; `None` when there is no model.
    pub fn get(&self) -> Option<&[f32]> {
        self.cell
            .get_or_init(|| (self.make)())
            .as_deref()
            .map(|v| &v[..])
    }
}

/// What a graph lane reads: the seeds' walks (each seed with its steps, unbounded in total)
/// and each seed's file score.
#[derive(Clone, Copy)]
pub struct GraphInput<'a> {
    pub kb: &'a KnowledgeBase,
    pub index: SearchView<'a>,
    pub query: &'a AnalyzedQuery,
    pub walks: &'a [(u32, Vec<Step>)],
    /// The file score of each walk's seed, in the order of `walks`.
    pub seed_scores: &'a [f64],
    /// The lane's weight: the share of a seed's score it offers at best.
    pub weight: f64,
}

/// What a graph lane gives: the pages that get the lane as evidence without a share (the seeds
/// it walked from), and the shares it offers pages (a page keeps the best).
#[derive(Debug, Default)]
pub struct Offers {
    pub marked: Vec<u32>,
    pub offers: Vec<(u32, f64)>,
}

/// Which share of a page's score a graph lane's offers are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Share {
    /// A linked neighbour's (`file_graph`).
    Graph,
    /// A matching relation's (`file_relationship`).
    Relationship,
}
