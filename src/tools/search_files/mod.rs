//! `search_files` → `searchGeneratedFiles`: candidate source pages for a question. This folder
//! holds the tool's contract: input validation (`request.rs`, docs/rules.md#tool-inputs), the
//! cursor, and the output (`output.rs`: each result's fields, its excerpt — the best section's
//! passage — and its graph context). The
//! ranking itself is [`crate::search`]. Results are candidates to read, never answer evidence.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::fields::{wire_names, Bounds};
use super::ToolName;
use crate::cursor;
use crate::error::ToolError;
use crate::kb::KnowledgeBase;
use crate::okf::{Freshness, OkfStatus, TrustTier};
use crate::search::nearest::Nearest;
pub use crate::search::{Candidate, FileKind, Lane, LaneSet, Mode, Ranking, Scope, SemanticState};

pub const NAME: &str = ToolName::SearchFiles.as_str();
/// `query`: grapheme clusters after normalization, and UTF-8 bytes at most.
pub(crate) const MIN_GRAPHEMES: usize = 2;
pub(crate) const MAX_GRAPHEMES: usize = 512;
pub(crate) const MAX_QUERY_BYTES: usize = 2048;
/// `graphDepth`: relation steps the graph lanes walk.
pub(crate) const GRAPH_DEPTH: Bounds<u8> = Bounds {
    min: 0,
    max: 2,
    default: 1,
};
/// `graphFanout`: relations the graph lanes follow per page.
pub(crate) const GRAPH_FANOUT: Bounds<u64> = Bounds {
    min: 0,
    max: 25,
    default: 10,
};
/// `limit`: results per page.
pub(crate) const LIMIT: Bounds<u64> = Bounds {
    min: 1,
    max: 50,
    default: 10,
};
/// `rerankTopK`: candidates the reranker would see, at least `limit` (default the larger of
/// `limit` and this default).
pub(crate) const RERANK_TOP_K: Bounds<u64> = Bounds {
    min: 1,
    max: 50,
    default: 30,
};
/// `rerankScoreThreshold`: the lowest reranker score kept.
pub(crate) const RERANK_SCORE_THRESHOLD: Bounds<f64> = Bounds {
    min: 0.0,
    max: 1.0,
    default: 0.35,
};

const NO_MATCH_MESSAGE: &str = "No generated files matched this query. The knowledge base may still contain relevant data through different titles, paths, or metadata terms.";
/// The message of a search whose items are its nearest pages ([`crate::search::nearest`]).
const NEAREST_TITLES_MESSAGE: &str = "No page holds the query's words. These are the pages whose titles or paths are closest to them: weak candidates, to be read before they are used.";
const NEAREST_ENTRIES_MESSAGE: &str = "No page holds the query's words. These are the knowledge base's entry pages (its index and most connected pages), where exploration can start; they are not matches.";
const NO_MATCH_ACTIONS: [&str; 5] = [
    "Split the user question into shorter terms and search again.",
    "Read index.md through the file content endpoint.",
    "List the file tree and continue exploration from visible directories.",
    "Try title, path, subject, product name, workflow, identifier, or shorter terms from the question.",
    "Use graph or hybrid search mode when a direct file search does not find enough evidence.",
];
mod output;
mod request;

use output::{
    context, cursor_scope, graph_summary, lane_statuses, no_content_output, reranker_status, result,
};
pub use output::{
    EvidenceStatus, GraphContext, GraphStatus, GraphSummary, LaneState, MatchType, Output,
    QueryContext, ResultSummary, SafeCode, SearchResult, SearchStatus, Status,
};
use request::SORT;
pub use request::{normalize_query, validate, InvalidSearch, Request};

/// The tool input, for Rust callers and schemas.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Params {
    /// The user's whole question (or key words), 2–512 characters: send the question as asked.
    #[schemars(length(min = MIN_GRAPHEMES, max = MAX_GRAPHEMES))]
    pub query: String,
    /// The lanes that rank: `file` (the lexical and exact lanes), `graph` (relations of the best
    /// lexical hits) or `hybrid` (all of them) (default hybrid).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// How many relation steps the graph lanes walk, 0–2 (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = GRAPH_DEPTH.min, max = GRAPH_DEPTH.max))]
    pub graph_depth: Option<u8>,
    /// Relations the graph lanes follow per page, 0–25 (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = GRAPH_FANOUT.min, max = GRAPH_FANOUT.max))]
    pub graph_fanout: Option<u64>,
    /// Ask for a reranker; none runs offline, and `rerankerStatus` says so (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank: Option<bool>,
    /// The `nextCursor` of the previous page of the same search (default the first page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Results per page, 1–50 (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = LIMIT.min, max = LIMIT.max))]
    pub limit: Option<u64>,
    /// Where to match: `all` (content and metadata), `path` or `metadata` (default all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    /// `page` (the knowledge base's pages) or `all` (navigation pages and records too)
    /// (default page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_kind: Option<FileKind>,
    /// Only pages whose OKF status is `draft`, `stable` or `deprecated` (default any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub okf_status: Option<OkfStatus>,
    /// Only pages whose OKF trust tier is `unverified`, `machine-confirmed` or `human-reviewed`
    /// (default any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub okf_trust_tier: Option<TrustTier>,
    /// Only `fresh` or only `stale` pages (OKF `stale_after`) (default any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub okf_freshness: Option<Freshness>,
    /// With `rerank`: candidates the reranker would see, 1–50 and at least `limit`
    /// (default the larger of `limit` and 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = RERANK_TOP_K.min, max = RERANK_TOP_K.max))]
    pub rerank_top_k: Option<u64>,
    /// With `rerank`: the lowest reranker score kept, 0–1 (default 0.35).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank_score_threshold: Option<f64>,
}

wire_names! {
    /// The wire names of [`Params`]' fields.
    pub struct ParamNames for Params {
        query,
        mode,
        graph_depth,
        graph_fanout,
        rerank,
        cursor,
        limit,
        scope,
        file_kind,
        okf_status,
        okf_trust_tier,
        okf_freshness,
        rerank_top_k,
        rerank_score_threshold,
    }
}

/// Runs the tool with typed parameters.
pub fn run_params(kb: &KnowledgeBase, params: &Params) -> Result<Output, ToolError> {
    answer(kb, &validate(params)?)
}

/// A JSON input validated: read into `Params`, then [`validate`]d.
pub(crate) fn validate_json(input: &Value) -> Result<Request, ToolError> {
    let (params, malformed) = Params::from_json(input)?;
    request::validate_with(&params, &malformed)
}

/// The answer to `request` with no candidates, to which the renderer's tests add their own.
#[cfg(test)]
pub(crate) fn empty_output(request: &Request) -> Output {
    no_content_output(request)
}

/// The fused, ordered candidates of a validated request (at most 1,000), and the lanes that ran.
pub fn ranked(
    kb: &KnowledgeBase,
    request: &Request,
) -> Result<(Vec<Candidate>, Vec<Lane>), ToolError> {
    let ranking = request.rank(kb, false)?;
    Ok((ranking.candidates, ranking.lanes))
}

crate::wire::wire_enum! {
    /// The class that orders results before their score (docs/rules.md#order): an exact path or
    /// a page the query names, an exact title, or neither.
    pub enum ResultClass {
        Path = "path",
        Title = "title",
        Score = "score",
    }
}

impl ResultClass {
    /// The class of a candidate's lanes ([`LaneSet::priority_class`]: 0, 1 or 2).
    fn of(lanes: &LaneSet) -> ResultClass {
        match lanes.priority_class() {
            0 => ResultClass::Path,
            1 => ResultClass::Title,
            _ => ResultClass::Score,
        }
    }
}

/// One result of [`explain`]: the page, its place, and its score by lane.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExplainedResult {
    pub rank: usize,
    pub path: String,
    pub score: f64,
    pub class: ResultClass,
    #[serde(flatten)]
    pub explained: crate::search::Explained,
}

/// Where the scores of a search's first `limit` results come from (`kbtools search --explain`,
/// `kbtools eval --explain`): the same ranking as [`run`], lane by lane.
pub fn explain(kb: &KnowledgeBase, input: &Value) -> Result<Vec<ExplainedResult>, ToolError> {
    let request = validate_json(input)?;
    if kb.revision().is_none() {
        return Ok(Vec::new());
    }
    let ranking = request.rank(kb, true)?;
    Ok(ranking
        .candidates
        .into_iter()
        .take(request.limit as usize)
        .enumerate()
        .map(|(i, c)| ExplainedResult {
            rank: i + 1,
            path: kb.catalog.file(c.position).path.clone(),
            score: c.score,
            class: ResultClass::of(&c.lanes),
            explained: c.explained.map(|e| *e).unwrap_or_default(),
        })
        .collect())
}

/// Runs the tool with its JSON input.
pub fn run(kb: &KnowledgeBase, input: &Value) -> Result<Output, ToolError> {
    answer(kb, &validate_json(input)?)
}

fn answer(kb: &KnowledgeBase, request: &Request) -> Result<Output, ToolError> {
    let Some(revision) = kb.revision() else {
        return Ok(no_content_output(request));
    };
    let scope = cursor_scope(request);
    let offset = cursor::start(request.cursor.as_deref(), NAME, &scope, revision)?;
    let ranking = request.rank(kb, false)?;
    let (candidates, lanes) = (&ranking.candidates, &ranking.lanes);
    let (range, next_cursor) = cursor::page(
        NAME,
        &scope,
        revision,
        offset,
        request.limit,
        candidates.len(),
    );
    let (start, end) = (range.start, range.end);
    // Scores never increase down the list (rules#order): exact-priority hits are ranked first,
    // and a later candidate shows at most the score of the one before it.
    let mut ceiling = f64::INFINITY;
    let mut shown_scores = Vec::with_capacity(end);
    for c in &candidates[..end] {
        ceiling = ceiling.min(c.score);
        shown_scores.push(ceiling);
    }
    let query = context(request);
    let (semantic_status, evidence_status) =
        lane_statuses(lanes, ranking.semantic, ranking.cut_short);
    let reranker_status = reranker_status(request);
    let graph_summary = graph_summary(kb, request);
    let excerpter = ranking.excerpter(kb);
    // Results in parallel: each reads its page for the excerpt (order is kept).
    let items: Vec<SearchResult> = candidates[start..end]
        .par_iter()
        .zip(&shown_scores[start..end])
        .map(|(c, &score)| {
            result(
                kb,
                request,
                revision,
                c,
                score,
                excerpter.as_ref(),
                &ranking,
            )
        })
        .collect();

    let graph_available = request.mode != Mode::File;
    let empty = items.is_empty();
    // No lane matched: the items are the nearest pages. The JSON keeps the contract's two
    // shapes (DECISIONS item 29: items, so `ok`, no message, no next actions); the items'
    // evidence and the compact text's own line say what they are.
    let nearest_message = ranking.nearest.map(|kind| match kind {
        Nearest::Titles => NEAREST_TITLES_MESSAGE,
        Nearest::Entries => NEAREST_ENTRIES_MESSAGE,
    });
    Ok(Output {
        active_content_revision: Some(revision),
        query,
        next_cursor: next_cursor.clone(),
        search_status: if empty {
            SearchStatus::NoCandidates
        } else {
            SearchStatus::Ok
        },
        search_mode: request.mode,
        semantic_status,
        evidence_status,
        reranker_status,
        graph_status: if graph_available {
            GraphStatus::Available
        } else {
            GraphStatus::DisabledForFileMode
        },
        graph_summary,
        result_summary: ResultSummary {
            result_count: items.len() as u64,
            has_more: next_cursor.is_some(),
            sort: SORT,
            meaning: if empty {
                "No current readable files matched the search."
            } else {
                "Results match the current readable knowledge base."
            },
        },
        message: Some(if empty { Some(NO_MATCH_MESSAGE) } else { None }),
        next_actions: Some(if empty {
            NO_MATCH_ACTIONS.to_vec()
        } else {
            Vec::new()
        }),
        nearest: nearest_message,
        items,
    })
}
