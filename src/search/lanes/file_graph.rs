//! The `file_graph` lane: a page that a well-matching page links to is worth reading even when
//! the question does not match it well. Each seed (the best pages by file score,
//! `crate::search::fusion::seeds`) offers the pages its walk reaches a share of its own file score,
//! divided by the depth factor per step and by `relations ^ hub` of both ends of the step, so
//! that a hub is not lifted by every question (a README linked from and to everything) and does
//! not lift everything it touches (a list of every rule that matched the question's words
//! offered its score to each rule page and to the changelog that links to it); a page keeps the
//! best offer (`crate::search::fusion`). A seed is a graph node in its own right: it gets the
//! lane, not a score.
//!
//! Outside `graph` mode only a page no direct lane found takes the offer as score: the graph
//! adds pages, it does not reorder those the question's words or meaning found (they get the
//! lane, as evidence).
//! Offers to found pages moved a linked neighbour past a page the lanes had just above it;
//! over the dev sets that came to nothing either way (nDCG@10 within ±0.006) but put a rule
//! reference's default mode below its `file` mode (docs/ranking.md).

use crate::error::IndexError;
use crate::kb::KnowledgeBase;
use crate::search::lanes::io::{GraphInput, Offers};
use crate::search::weights::WEIGHTS;

/// The hub damping of `page`: its relation count to the power `hub` (at least 1).
pub(crate) fn hub_damping(kb: &KnowledgeBase, page: u32, hub: f64) -> f64 {
    let relations = kb
        .catalog
        .relation_range(page)
        .map_or(0, |r| r.len())
        .max(1);
    (relations as f64).powf(hub)
}

/// The lane's offers: each seed marked, and a share of its score to each page its walk
/// reaches.
pub fn run(input: &GraphInput<'_>) -> Result<Offers, IndexError> {
    let (kb, w) = (input.kb, &WEIGHTS);
    let mut out = Offers::default();
    for ((seed, steps), &seed_score) in input.walks.iter().zip(input.seed_scores) {
        out.marked.push(*seed);
        for step in steps {
            if !kb.catalog.is_source(step.to) {
                continue;
            }
            let share = input.weight * seed_score
                / w.graph_depth.powi(i32::from(step.depth) - 1)
                / hub_damping(kb, step.to, w.hub)
                / hub_damping(kb, step.from, w.hub);
            out.offers.push((step.to, share));
        }
    }
    Ok(out)
}
