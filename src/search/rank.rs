//! `rank`: the pipeline of a search, in order. The question is analysed once
//! ([`AnalyzedQuery`]); the table of lanes says which lanes run ([`crate::search::lanes`]); the
//! question's embeddings are made for the vector lanes; the direct lanes run at once and are
//! fused by weighted reciprocal rank into a *file score* per page ([`fusion`]); the graph lanes
//! offer the pages the best of them (the seeds) link to a share of their file score, damped by
//! how many relations the pages have (a hub linked from everywhere is evidence for nothing in
//! particular); a page's translation follows it at a fraction of its score ([`translation`]);
//! and a search no lane matched falls back to the nearest pages. docs/ranking.md records the
//! weights and the figures that chose them.

use crate::error::{messages, ErrorCode, IndexError, ToolError};
use crate::graph::Step;
use crate::kb::KnowledgeBase;
use crate::search::excerpt::Excerpter;
use crate::search::fusion::{self, Candidate};
use crate::search::lanes::io::{CutShort, Embedding, LaneInput};
use crate::search::lanes::nearest::Nearest;
use crate::search::lanes::plan::{Plan, Runs};
use crate::search::lanes::{self, Lane, LaneSet, Runner};
use crate::search::query::{AnalyzedQuery, Mode, Query, Scope};
use crate::search::semantic::{self, SemanticState};
use crate::search::translation;

/// What [`rank`] finds: the fused candidates, the lanes that ran, and the graph walks of the
/// graph lanes' seeds.
pub struct Ranking {
    pub candidates: Vec<Candidate>,
    pub lanes: Vec<Lane>,
    /// Each seed with its walk (unbounded in total).
    pub walks: Vec<(u32, Vec<Step>)>,
    /// Whether the semantic lane could run.
    pub semantic: SemanticState,
    /// Set when no lane matched and the candidates are the nearest pages instead.
    pub nearest: Option<Nearest>,
    /// The question, analysed.
    pub query: AnalyzedQuery,
    /// Whether a lane did part of its work only (a budget ran out: [`CutShort`]).
    pub cut_short: bool,
}

impl Ranking {
    /// The walk of `page` with at most `total` steps, when `page` was a seed: the first `total`
    /// steps of its unbounded walk (a walk stops at its total, so it is always a prefix).
    pub fn walk(&self, page: u32, total: usize) -> Option<&[Step]> {
        self.walks
            .iter()
            .find(|(seed, _)| *seed == page)
            .map(|(_, steps)| &steps[..steps.len().min(total)])
    }

    /// The excerpter of the question's terms in `kb`'s pages.
    pub(crate) fn excerpter(&self, kb: &KnowledgeBase) -> Option<Excerpter> {
        let searcher = kb.search.searcher();
        Excerpter::for_query(kb.search.view(&searcher), &self.query)
    }
}

pub(crate) fn unavailable(e: IndexError) -> ToolError {
    ToolError::new(ErrorCode::SearchUnavailable, messages::SEARCH_UNAVAILABLE)
        .with_detail("reason", e.to_string())
}

/// Ranks the source pages for `query`: at most `MAX_RESULTS`, best first.
pub fn rank(kb: &KnowledgeBase, query: &Query<'_>) -> Result<Ranking, ToolError> {
    // The models load (once a process) before the clock starts: the deadline bounds the
    // search, not a first use. Only where the vector lanes can run: a `file`-mode call loaded
    // both models (0.55 s and 270 MB of a cold SciFact call) for nothing.
    let vector_lanes = query.mode == Mode::Hybrid && query.scope == Scope::All;
    let (semantic_state, model) = match vector_lanes {
        true => semantic::semantic(kb),
        false => (SemanticState::Unavailable, None),
    };
    let cross_model = match vector_lanes {
        true => semantic::cross_language(kb),
        false => None,
    };
    let started = std::time::Instant::now();
    let check_deadline = || {
        if started.elapsed() > kb.options.search_deadline {
            Err(ToolError::new(
                ErrorCode::SearchTimeout,
                messages::SEARCH_TIMEOUT,
            ))
        } else {
            Ok(())
        }
    };
    let analyzed = AnalyzedQuery::of(query.text);
    let plan = Plan {
        scope: query.scope,
        mode: query.mode,
        cjk: analyzed.cjk,
        literals: !analyzed.literals.is_empty(),
        semantic: model.is_some(),
        cross: cross_model.is_some(),
    };
    let lanes = Lane::reported(&plan);
    // The question's embeddings are made by their lanes, in the lanes' parallel run, each
    // on one thread: a question's dozen tokens are too few for e5's products to gain from
    // sharing the threads (products shared inside the lanes' run waited on the other lanes'
    // tasks: SciFact, warm server, 71 ms median a search), and each model then runs beside
    // the lexical lanes instead of before them.
    let make_query = || match lanes.contains(&Lane::ContentVector) {
        true => semantic::question_vector(&model, query.text, 1),
        false => None,
    };
    let make_cross = || match lanes.contains(&Lane::CrossVector) {
        true => semantic::cross_question_vector(&cross_model, query.text),
        false => None,
    };
    let (query_vector, cross_vector) = (Embedding::new(&make_query), Embedding::new(&make_cross));
    let searcher = kb.search.searcher();
    let cut_short = CutShort::default();
    let input = LaneInput {
        kb,
        index: kb.search.view(&searcher),
        query: &analyzed,
        scope: query.scope,
        query_vector: &query_vector,
        cross_vector: &cross_vector,
        cut_short: &cut_short,
    };
    let direct = lanes::run_direct(&input, &plan).map_err(unavailable)?;
    check_deadline()?;
    let mut scored = fusion::file_scores(kb, &analyzed, &direct, query.explain);
    let mut walks: Vec<(u32, Vec<Step>)> = Vec::new();
    if lanes.iter().any(|l| l.is_graph()) {
        walks = fusion::seed_walks(kb, query, &scored);
        let score_found = query.mode == Mode::Graph;
        fusion::add_graph_lanes(&input, &plan, score_found, &walks, &mut scored)
            .map_err(unavailable)?;
        // Translations are graph evidence: a zero depth or fanout turns them off too.
        if query.graph_depth > 0 && query.graph_fanout > 0 {
            translation::add(kb, &mut scored);
        }
        check_deadline()?;
    }
    let mut candidates = fusion::finish(kb, query, scored);
    let mut nearest = None;
    if candidates.is_empty() {
        if let Some((found, kind)) = fall_back(&input, &plan, query)? {
            candidates = found;
            nearest = Some(kind);
        }
    }
    check_deadline()?;
    Ok(Ranking {
        candidates,
        lanes,
        walks,
        semantic: semantic_state,
        nearest,
        query: analyzed,
        cut_short: cut_short.get(),
    })
}

/// The candidates of the fallback lane, when `plan` has one and it finds pages that pass the
/// filters: positive scores that fall with the rank (a score orders the list and never rises).
fn fall_back(
    input: &LaneInput<'_>,
    plan: &Plan,
    query: &Query<'_>,
) -> Result<Option<(Vec<Candidate>, Nearest)>, ToolError> {
    for &lane in Lane::ALL {
        let Runner::Fallback(run) = lane.runner() else {
            continue;
        };
        if lane.runs(plan) != Runs::Fallback {
            continue;
        }
        let Some((pages, kind)) = run(input, query.keep).map_err(unavailable)? else {
            continue;
        };
        let count = pages.len();
        let candidates = pages
            .into_iter()
            .enumerate()
            .map(|(rank, position)| {
                let mut lanes = LaneSet::default();
                lanes.insert(lane);
                Candidate {
                    position,
                    score: (count - rank) as f64 / count as f64 * 0.01,
                    lanes,
                    content: false,
                    section: None,
                    explained: query.explain.then(Default::default),
                }
            })
            .collect();
        return Ok(Some((candidates, kind)));
    }
    Ok(None)
}
