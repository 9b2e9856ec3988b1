//! `search_files` → `searchGeneratedFiles`: candidate source pages for a question. This file
//! holds the tool's contract: input validation (§8.1), the cursor, and the output (each
//! result's fields, its excerpt — the best section's passage — and its graph context). The
//! ranking itself is [`crate::search`]. Results are candidates to read, never answer evidence.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use unicode_segmentation::UnicodeSegmentation;

use super::ToolName;
use super::{read_actions, tags_of, Input, RelatedFile};
use crate::bundle::paths;
use crate::cursor;
use crate::error::{messages, ToolError};
use crate::ids::ReadActions;
use crate::kb::KnowledgeBase;
use crate::okf::OkfSignals;
use crate::search::nearest::Nearest;
pub use crate::search::{Candidate, Lane, LaneSet, Mode, Ranking, Scope, SemanticState};

pub const NAME: &str = ToolName::SearchFiles.as_str();
pub const DEFAULT_LIMIT: i64 = 10;
pub const MAX_LIMIT: i64 = 50;
const MAX_GRAPHEMES: usize = 512;
const MAX_QUERY_BYTES: usize = 2048;

const NO_MATCH_MESSAGE: &str = "No generated files matched this query. The knowledge base may still contain relevant data through different titles, paths, or metadata terms.";
/// The message of a search whose items are its nearest pages ([`crate::search::nearest`]).
const NEAREST_TITLES_MESSAGE: &str = "No page holds the query's words. These are the pages whose titles or paths are closest to them: weak candidates, to be read before they are used.";
const NEAREST_ENTRIES_MESSAGE: &str = "No page holds the query's words. These are the knowledge base's entry pages (its index and most connected pages), where exploration can start; they are not matches.";
const NEAREST_MEANING: &str =
    "No current readable files matched the search; the results are the nearest pages.";
const NO_MATCH_ACTIONS: [&str; 5] = [
    "Split the user question into shorter terms and search again.",
    "Read index.md through the file content endpoint.",
    "List the file tree and continue exploration from visible directories.",
    "Try title, path, subject, product name, workflow, identifier, or shorter terms from the question.",
    "Use graph or hybrid search mode when a direct file search does not find enough evidence.",
];
const SORT: [&str; 3] = ["relevance_desc", "logical_path_asc", "source_file_id_asc"];

/// A validated request.
#[derive(Debug, Clone)]
pub struct Request {
    pub query: String,
    pub scope: Scope,
    pub file_kind_all: bool,
    pub mode: Mode,
    pub graph_depth: u8,
    pub graph_fanout: u64,
    pub okf_status: Option<String>,
    pub okf_trust_tier: Option<String>,
    pub okf_freshness: Option<String>,
    pub limit: u64,
    pub rerank: bool,
    pub rerank_top_k: Option<u64>,
    pub rerank_score_threshold: Option<f64>,
    pub cursor: Option<String>,
}

fn invalid(code: &str) -> ToolError {
    ToolError::invalid_code(messages::SEARCH_INVALID, code)
}

fn is_rejected_query_char(c: char) -> bool {
    matches!(c as u32, 0x00..=0x08 | 0x0A..=0x1F | 0x7F..=0x9F)
}

/// The query rules of §8.1, in order: raw control characters, NFKC + whitespace collapse,
/// required, at least 2 grapheme clusters, at most 512 clusters and 2,048 UTF-8 bytes.
pub fn normalize_query(raw: Option<&Value>) -> Result<String, ToolError> {
    let raw = match raw {
        None => return Err(invalid("FILE_SEARCH_QUERY_REQUIRED")),
        Some(Value::String(s)) => s,
        Some(_) => return Err(invalid("INVALID_FILE_SEARCH_QUERY")),
    };
    if raw.chars().any(is_rejected_query_char) {
        return Err(invalid("INVALID_FILE_SEARCH_QUERY"));
    }
    let normalized = crate::text::normalize_query_text(raw);
    if normalized.is_empty() {
        return Err(invalid("FILE_SEARCH_QUERY_REQUIRED"));
    }
    let graphemes = normalized.graphemes(true).take(MAX_GRAPHEMES + 1).count();
    if graphemes < 2 {
        return Err(invalid("FILE_SEARCH_QUERY_TOO_SHORT"));
    }
    if graphemes > MAX_GRAPHEMES || normalized.len() > MAX_QUERY_BYTES {
        return Err(invalid("FILE_SEARCH_QUERY_TOO_LONG"));
    }
    Ok(normalized)
}

fn enum_field<'a>(
    input: &Input<'a>,
    key: &str,
    allowed: &[&'a str],
    code: &str,
) -> Result<Option<&'a str>, ToolError> {
    match input.trimmed(key) {
        Ok(None) => Ok(None),
        Ok(Some(v)) => allowed
            .iter()
            .find(|a| **a == v)
            .copied()
            .map(Some)
            .ok_or_else(|| invalid(code)),
        Err(_) => Err(invalid(code)),
    }
}

fn int_field(
    input: &Input<'_>,
    key: &str,
    default: i64,
    max: i64,
    min: i64,
    code: &str,
) -> Result<i64, ToolError> {
    match input.integer(key) {
        Ok(None) => Ok(default),
        Ok(Some(n)) if (min..=max).contains(&n) => Ok(n),
        _ => Err(invalid(code)),
    }
}

/// Validates a search input in the API's order; the first failure wins.
pub fn validate(value: &Value) -> Result<Request, ToolError> {
    let input = Input::new(value, ToolName::SearchFiles.fields())?;
    let query = normalize_query(input.get("query"))?;
    let scope = match enum_field(
        &input,
        "scope",
        &["all", "path", "metadata"],
        "INVALID_FILE_SEARCH_SCOPE",
    )? {
        Some("path") => Scope::Path,
        Some("metadata") => Scope::Metadata,
        _ => Scope::All,
    };
    let file_kind_all = enum_field(
        &input,
        "fileKind",
        &["all", "page"],
        "INVALID_FILE_SEARCH_KIND",
    )? == Some("all");
    let mode = match enum_field(
        &input,
        "mode",
        &["file", "graph", "hybrid"],
        "INVALID_FILE_SEARCH_MODE",
    )? {
        Some("file") => Mode::File,
        Some("graph") => Mode::Graph,
        _ => Mode::Hybrid,
    };
    let graph_depth = int_field(
        &input,
        "graphDepth",
        1,
        2,
        0,
        "INVALID_FILE_SEARCH_GRAPH_DEPTH",
    )? as u8;
    let graph_fanout = int_field(
        &input,
        "graphFanout",
        10,
        25,
        0,
        "INVALID_FILE_SEARCH_GRAPH_FANOUT",
    )? as u64;
    let okf_status = enum_field(
        &input,
        "okfStatus",
        &["draft", "stable", "deprecated"],
        "INVALID_FILE_SEARCH_OKF_STATUS",
    )?;
    let okf_trust_tier = enum_field(
        &input,
        "okfTrustTier",
        &["unverified", "machine-confirmed", "human-reviewed"],
        "INVALID_FILE_SEARCH_OKF_TRUST_TIER",
    )?;
    let okf_freshness = enum_field(
        &input,
        "okfFreshness",
        &["fresh", "stale"],
        "INVALID_FILE_SEARCH_OKF_FRESHNESS",
    )?;
    let limit = int_field(
        &input,
        "limit",
        DEFAULT_LIMIT,
        MAX_LIMIT,
        1,
        "INVALID_FILE_SEARCH_LIMIT",
    )? as u64;
    let rerank_invalid = || invalid("INVALID_FILE_SEARCH_RERANK_CONTROLS");
    let rerank = match input.get("rerank") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) if s.is_empty() => false,
        Some(Value::String(s)) if s == "true" => true,
        Some(Value::String(s)) if s == "false" => false,
        Some(_) => return Err(rerank_invalid()),
    };
    let top_k = input.integer("rerankTopK").map_err(|_| rerank_invalid())?;
    let rerank_top_k = match (rerank, top_k) {
        (false, Some(_)) => return Err(rerank_invalid()),
        (false, None) => None,
        (true, None) => Some(limit.max(30)),
        (true, Some(k)) if (1..=50).contains(&k) && k as u64 >= limit => Some(k as u64),
        (true, Some(_)) => return Err(rerank_invalid()),
    };
    let threshold = match input.get("rerankScoreThreshold") {
        None => None,
        Some(Value::Number(n)) => Some(n.as_f64().ok_or_else(rerank_invalid)?),
        Some(Value::String(s)) if s.trim().is_empty() => None,
        Some(Value::String(s)) => Some(s.trim().parse::<f64>().map_err(|_| rerank_invalid())?),
        Some(_) => return Err(rerank_invalid()),
    };
    let rerank_score_threshold = match (rerank, threshold) {
        (false, Some(_)) => return Err(rerank_invalid()),
        (false, None) => None,
        (true, None) => Some(0.35),
        (true, Some(t)) if t.is_finite() && (0.0..=1.0).contains(&t) => Some(t),
        (true, Some(_)) => return Err(rerank_invalid()),
    };
    let cursor = input.cursor()?.map(str::to_string);
    Ok(Request {
        query,
        scope,
        file_kind_all,
        mode,
        graph_depth,
        graph_fanout,
        okf_status: okf_status.map(str::to_string),
        okf_trust_tier: okf_trust_tier.map(str::to_string),
        okf_freshness: okf_freshness.map(str::to_string),
        limit,
        rerank,
        rerank_top_k,
        rerank_score_threshold,
        cursor,
    })
}

/// `FileSearchQueryContext`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryContext {
    pub query: String,
    pub normalized_query: String,
    pub scope: &'static str,
    pub file_kind: &'static str,
    pub mode: &'static str,
    pub graph_depth: u8,
    pub graph_fanout: u64,
    pub okf_status: Option<String>,
    pub okf_trust_tier: Option<String>,
    pub okf_freshness: Option<String>,
    pub rerank: bool,
    pub rerank_top_k: Option<u64>,
    pub rerank_score_threshold: Option<f64>,
    pub limit: u64,
    pub cursor_provided: bool,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub state: &'static str,
    pub safe_code: Option<&'static str>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EvidenceStatus {
    pub completed_families: Vec<&'static str>,
    pub degraded_families: Vec<&'static str>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GraphSummary {
    pub available: bool,
    pub indexed_document_count: u64,
    pub indexed_relationship_count: u64,
    pub depth: u8,
    pub fanout: u64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResultSummary {
    pub result_count: u64,
    pub has_more: bool,
    pub sort: [&'static str; 3],
    pub meaning: &'static str,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GraphContext {
    pub graph_ref: String,
    pub depth: u8,
    pub seed_source_file_id: String,
    pub relationships: Vec<RelatedFile>,
    pub graph_paths: Vec<String>,
}

/// `FileSearchResult`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchResult {
    pub active_content_revision: u64,
    pub file_id: String,
    pub knowledge_base_id: String,
    pub source_file_id: Option<String>,
    pub path: String,
    pub file_kind: &'static str,
    pub title: Option<String>,
    pub description: Option<String>,
    pub tags: Vec<String>,
    pub frontmatter: serde_json::Map<String, Value>,
    pub okf_signals: OkfSignals,
    pub matched_fields: Vec<&'static str>,
    pub evidence_types: Vec<&'static str>,
    pub source_excerpt: Option<String>,
    pub score: f64,
    pub content_available: bool,
    pub read_actions: ReadActions,
    pub match_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graph_context: Option<GraphContext>,
}

/// `FileSearchResponse`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Output {
    pub active_content_revision: Option<u64>,
    pub query: QueryContext,
    pub items: Vec<SearchResult>,
    pub next_cursor: Option<String>,
    pub search_status: &'static str,
    pub search_mode: &'static str,
    pub semantic_status: Status,
    pub evidence_status: EvidenceStatus,
    pub reranker_status: Status,
    pub graph_status: &'static str,
    pub graph_summary: GraphSummary,
    pub result_summary: ResultSummary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<Option<&'static str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_actions: Option<Vec<&'static str>>,
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::File => "file",
        Mode::Graph => "graph",
        Mode::Hybrid => "hybrid",
    }
}

fn context(request: &Request) -> QueryContext {
    QueryContext {
        query: request.query.clone(),
        normalized_query: request.query.clone(),
        scope: match request.scope {
            Scope::All => "all",
            Scope::Path => "path",
            Scope::Metadata => "metadata",
        },
        file_kind: if request.file_kind_all { "all" } else { "page" },
        mode: mode_name(request.mode),
        graph_depth: request.graph_depth,
        graph_fanout: request.graph_fanout,
        okf_status: request.okf_status.clone(),
        okf_trust_tier: request.okf_trust_tier.clone(),
        okf_freshness: request.okf_freshness.clone(),
        rerank: request.rerank,
        rerank_top_k: request.rerank_top_k,
        rerank_score_threshold: request.rerank_score_threshold,
        limit: request.limit,
        cursor_provided: request.cursor.is_some(),
    }
}

fn reranker_status(request: &Request) -> Status {
    if request.rerank {
        Status {
            state: "not_configured",
            safe_code: Some("RERANKER_NOT_CONFIGURED"),
        }
    } else {
        Status {
            state: "skipped",
            safe_code: Some("RERANKER_DISABLED"),
        }
    }
}

/// The cursor scope: every input that shapes the result set, limit included (rules#cursors).
fn cursor_scope(request: &Request) -> Value {
    json!({
        "query": request.query,
        "scope": context(request).scope,
        "fileKind": request.file_kind_all,
        "mode": mode_name(request.mode),
        "graphDepth": request.graph_depth,
        "graphFanout": request.graph_fanout,
        "okfStatus": request.okf_status,
        "okfTrustTier": request.okf_trust_tier,
        "okfFreshness": request.okf_freshness,
        "limit": request.limit,
        "rerank": request.rerank,
        "rerankTopK": request.rerank_top_k,
        "rerankScoreThreshold": request.rerank_score_threshold,
    })
}

fn no_content_output(request: &Request) -> Output {
    Output {
        active_content_revision: None,
        query: context(request),
        items: Vec::new(),
        next_cursor: None,
        search_status: "no_candidates",
        search_mode: mode_name(request.mode),
        semantic_status: Status {
            state: "unavailable",
            safe_code: Some("SEMANTIC_ADOPTION_REQUIRED"),
        },
        evidence_status: EvidenceStatus {
            completed_families: Vec::new(),
            degraded_families: Vec::new(),
        },
        reranker_status: Status {
            state: "skipped",
            safe_code: Some(if request.rerank {
                "RERANKER_RETRIEVAL_UNAVAILABLE"
            } else {
                "RERANKER_DISABLED"
            }),
        },
        graph_status: if request.mode == Mode::File {
            "disabled_for_file_mode"
        } else {
            "index_unavailable"
        },
        graph_summary: GraphSummary {
            available: false,
            indexed_document_count: 0,
            indexed_relationship_count: 0,
            depth: request.graph_depth,
            fanout: request.graph_fanout,
        },
        result_summary: ResultSummary {
            result_count: 0,
            has_more: false,
            sort: SORT,
            meaning: "No current readable files matched the search.",
        },
        message: None,
        next_actions: None,
    }
}

fn passes_filters(kb: &KnowledgeBase, request: &Request, position: u32) -> bool {
    if request.okf_status.is_none()
        && request.okf_trust_tier.is_none()
        && request.okf_freshness.is_none()
    {
        return true;
    }
    let signals = OkfSignals::compute(&kb.catalog.file(position).frontmatter, kb.options.today);
    if let Some(status) = &request.okf_status {
        if signals.effective_status.as_ref() != Some(status) {
            return false;
        }
    }
    if let Some(tier) = &request.okf_trust_tier {
        if signals.trust_tier.as_ref() != Some(tier) {
            return false;
        }
    }
    match request.okf_freshness.as_deref() {
        Some("stale") => signals.is_stale == Some(true),
        Some("fresh") => signals.is_stale == Some(false),
        _ => true,
    }
}

/// The tool input, for Rust callers and schemas.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Params {
    /// The user's whole question (or key words), 2–512 characters: send the question as asked.
    #[schemars(length(min = 2, max = 512))]
    pub query: String,
    /// The lanes that rank: `file` (the lexical and exact lanes), `graph` (relations of the best
    /// lexical hits) or `hybrid` (all of them) (default hybrid).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["file", "graph", "hybrid"]))]
    pub mode: Option<String>,
    /// How many relation steps the graph lanes walk, 0–2 (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 2))]
    pub graph_depth: Option<u8>,
    /// Relations the graph lanes follow per page, 0–25 (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 25))]
    pub graph_fanout: Option<u64>,
    /// Ask for a reranker; none runs offline, and `rerankerStatus` says so (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank: Option<bool>,
    /// The `nextCursor` of the previous page of the same search (default the first page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Results per page, 1–50 (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<u64>,
    /// Where to match: `all` (content and metadata), `path` or `metadata` (default all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["all", "path", "metadata"]))]
    pub scope: Option<String>,
    /// `page` (the knowledge base's pages) or `all` (navigation pages and records too)
    /// (default page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["page", "all"]))]
    pub file_kind: Option<String>,
    /// Only pages whose OKF status is `draft`, `stable` or `deprecated` (default any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["draft", "stable", "deprecated"]))]
    pub okf_status: Option<String>,
    /// Only pages whose OKF trust tier is `unverified`, `machine-confirmed` or `human-reviewed`
    /// (default any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["unverified", "machine-confirmed", "human-reviewed"]))]
    pub okf_trust_tier: Option<String>,
    /// Only `fresh` or only `stale` pages (OKF `stale_after`) (default any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["fresh", "stale"]))]
    pub okf_freshness: Option<String>,
    /// With `rerank`: candidates the reranker would see, 1–50 and at least `limit`
    /// (default the larger of `limit` and 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 50))]
    pub rerank_top_k: Option<u64>,
    /// With `rerank`: the lowest reranker score kept, 0–1 (default 0.35).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank_score_threshold: Option<f64>,
}

/// Runs the tool with typed parameters (the same validation as JSON input).
pub fn run_params(kb: &KnowledgeBase, params: &Params) -> Result<Output, ToolError> {
    run(kb, &serde_json::to_value(params).unwrap_or(Value::Null))
}

/// The fused, ordered candidates of a validated request (at most 1,000), and the lanes that ran.
pub fn ranked(
    kb: &KnowledgeBase,
    request: &Request,
) -> Result<(Vec<Candidate>, Vec<Lane>), ToolError> {
    let ranking = rank(kb, request)?;
    Ok((ranking.candidates, ranking.lanes))
}

/// The engine's ranking for a validated request.
fn rank(kb: &KnowledgeBase, request: &Request) -> Result<Ranking, ToolError> {
    rank_with(kb, request, false)
}

fn rank_with(kb: &KnowledgeBase, request: &Request, explain: bool) -> Result<Ranking, ToolError> {
    let keep = |position: u32| passes_filters(kb, request, position);
    crate::search::rank(
        kb,
        &crate::search::Query {
            text: &request.query,
            scope: request.scope,
            mode: request.mode,
            graph_depth: request.graph_depth,
            graph_fanout: request.graph_fanout as usize,
            keep: &keep,
            explain,
        },
    )
}

/// One result of [`explain`]: the page, its place, and its score by lane.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExplainedResult {
    pub rank: usize,
    pub path: String,
    pub score: f64,
    /// `path` (an exact path or a page the query names), `title` (an exact title) or `score`:
    /// the class that orders results before their score.
    pub class: &'static str,
    #[serde(flatten)]
    pub explained: crate::search::Explained,
}

/// Where the scores of a search's first `limit` results come from (`kbtools search --explain`,
/// `kbtools eval --explain`): the same ranking as [`run`], lane by lane.
pub fn explain(kb: &KnowledgeBase, input: &Value) -> Result<Vec<ExplainedResult>, ToolError> {
    let request = validate(input)?;
    if kb.revision().is_none() {
        return Ok(Vec::new());
    }
    let ranking = rank_with(kb, &request, true)?;
    Ok(ranking
        .candidates
        .into_iter()
        .take(request.limit as usize)
        .enumerate()
        .map(|(i, c)| ExplainedResult {
            rank: i + 1,
            path: kb.catalog.file(c.position).path.clone(),
            score: c.score,
            class: ["path", "title", "score"][usize::from(c.lanes.priority_class())],
            explained: c.explained.map(|e| *e).unwrap_or_default(),
        })
        .collect())
}

pub fn run(kb: &KnowledgeBase, input: &Value) -> Result<Output, ToolError> {
    let request = validate(input)?;
    let Some(revision) = kb.revision() else {
        return Ok(no_content_output(&request));
    };
    let scope = cursor_scope(&request);
    let offset = cursor::start(request.cursor.as_deref(), NAME, &scope, revision)?;
    let ranking = rank(kb, &request)?;
    let (candidates, lanes) = (&ranking.candidates, &ranking.lanes);
    let searcher = kb.search.searcher();
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
    let excerpter = kb.search.excerpter(&searcher, &request.query);
    // Results in parallel: each reads its page for the excerpt (order is kept).
    let items: Vec<SearchResult> = candidates[start..end]
        .par_iter()
        .zip(&shown_scores[start..end])
        .map(|(c, &score)| {
            result(
                kb,
                &request,
                revision,
                c,
                score,
                excerpter.as_ref(),
                &ranking,
            )
        })
        .collect();

    // DECISIONS 24: the semantic lane is `ready` when it ran over vectors of every page,
    // `degraded` (and its family degraded) when some pages have none.
    let vector_ran = lanes.contains(&Lane::ContentVector);
    let degraded_vectors = vector_ran && ranking.semantic == SemanticState::Degraded;
    let completed: Vec<&'static str> = {
        let mut families: Vec<&'static str> = lanes
            .iter()
            .filter(|l| !(degraded_vectors && **l == Lane::ContentVector))
            .map(|l| l.family())
            .collect();
        families.sort_unstable();
        families.dedup();
        families
    };
    let semantic_status = match (vector_ran, ranking.semantic) {
        (true, SemanticState::Ready) => Status {
            state: "ready",
            safe_code: None,
        },
        (true, _) => Status {
            state: "degraded",
            safe_code: Some("SEMANTIC_LANE_PARTIAL_FAILURE"),
        },
        (false, _) => Status {
            state: "unavailable",
            safe_code: Some("SEMANTIC_SEARCH_UNAVAILABLE"),
        },
    };
    let graph_available = request.mode != Mode::File;
    let empty = items.is_empty();
    // No lane matched: the items are the nearest pages, and the output says so.
    let nearest_message = ranking.nearest.map(|kind| match kind {
        Nearest::Titles => NEAREST_TITLES_MESSAGE,
        Nearest::Entries => NEAREST_ENTRIES_MESSAGE,
    });
    Ok(Output {
        active_content_revision: Some(revision),
        query: context(&request),
        next_cursor: next_cursor.clone(),
        search_status: if empty { "no_candidates" } else { "ok" },
        search_mode: mode_name(request.mode),
        semantic_status,
        evidence_status: EvidenceStatus {
            completed_families: completed,
            degraded_families: if degraded_vectors {
                vec![Lane::ContentVector.family()]
            } else {
                Vec::new()
            },
        },
        reranker_status: reranker_status(&request),
        graph_status: if graph_available {
            "available"
        } else {
            "disabled_for_file_mode"
        },
        graph_summary: GraphSummary {
            available: graph_available,
            indexed_document_count: if graph_available {
                kb.catalog.source_page_count()
            } else {
                0
            },
            indexed_relationship_count: if graph_available {
                kb.catalog.distinct_relation_count()
            } else {
                0
            },
            depth: request.graph_depth,
            fanout: request.graph_fanout,
        },
        result_summary: ResultSummary {
            result_count: items.len() as u64,
            has_more: next_cursor.is_some(),
            sort: SORT,
            meaning: if empty {
                "No current readable files matched the search."
            } else if nearest_message.is_some() {
                NEAREST_MEANING
            } else {
                "Results match the current readable knowledge base."
            },
        },
        message: Some(if empty {
            Some(NO_MATCH_MESSAGE)
        } else {
            nearest_message
        }),
        next_actions: Some(if empty || nearest_message.is_some() {
            NO_MATCH_ACTIONS.to_vec()
        } else {
            Vec::new()
        }),
        items,
    })
}

/// `matchType` (§8.4): file and graph evidence → `hybrid`; else `file_relationship` →
/// `graph_edge`; else `file_graph` → `graph_neighbor`; else `file_direct`.
fn match_type(lanes: &LaneSet) -> &'static str {
    let file = lanes.iter().any(|l| l.is_file_evidence());
    let graph = lanes.iter().any(|l| l.is_graph());
    if file && graph {
        "hybrid"
    } else if lanes.contains(&Lane::FileRelationship) {
        "graph_edge"
    } else if lanes.contains(&Lane::FileGraph) {
        "graph_neighbor"
    } else {
        "file_direct"
    }
}

fn result(
    kb: &KnowledgeBase,
    request: &Request,
    revision: u64,
    candidate: &Candidate,
    score: f64,
    excerpter: Option<&crate::index::search_index::Excerpter>,
    ranking: &Ranking,
) -> SearchResult {
    let file = kb.catalog.file(candidate.position);
    let (matched_fields, evidence_types): (Vec<&'static str>, Vec<&'static str>) =
        if request.scope == Scope::Metadata {
            (vec!["metadata"], vec!["metadata"])
        } else {
            let mut fields: Vec<&'static str> =
                candidate.lanes.iter().map(|l| l.matched_field()).collect();
            fields.sort_unstable();
            fields.dedup();
            (fields.clone(), fields)
        };
    let source_excerpt = match (candidate.content, excerpter) {
        (true, Some(excerpter)) => super::read_indexed_content(kb, file).and_then(|content| {
            let body = crate::bundle::indexed_body_text(&content);
            // The best section's passage, else the best passage of the page.
            candidate
                .section
                .and_then(|section| section.text(&body))
                .and_then(|text| excerpter.excerpt_matching(text))
                .or_else(|| excerpter.excerpt(&body))
        }),
        _ => None,
    };
    // Present only when the mode is not `file`, and only with a `graphRef` that opens
    // (rules#graph-refs-open; ingest gives every source page a record, so this always holds in
    // practice).
    let graph_ref = paths::per_file_graph_path(&file.path);
    let graph_ref_opens = kb.catalog.by_path(&graph_ref).is_some();
    let graph_context = (request.mode != Mode::File && graph_ref_opens).then(|| {
        // Per-node fanout = graphFanout and at most graphFanout in all: breadth first, so depth 2
        // appears only when depth 1 did not use the fanout up.
        // A seed's walk is known already.
        let fanout = request.graph_fanout as usize;
        let walked;
        let steps = match ranking.walk(candidate.position, fanout) {
            Some(steps) => steps,
            None => {
                walked = crate::graph::walk(
                    kb.graph(),
                    candidate.position,
                    request.graph_depth,
                    fanout,
                    fanout,
                );
                &walked[..]
            }
        };
        let relationships: Vec<RelatedFile> = steps
            .iter()
            .map(|s| {
                let rel = kb.catalog.relation(s.relation);
                RelatedFile::new(kb, revision, rel, rel.direction, s.depth)
            })
            .collect();
        // The distinct [own record, related pages' records], each one that opens.
        let graph_paths = super::expand_graph::graph_paths(
            kb,
            std::iter::once(file.path.as_str())
                .chain(relationships.iter().map(|r| r.path.as_str())),
        );
        GraphContext {
            graph_ref,
            depth: request.graph_depth,
            seed_source_file_id: file.file_id.clone(),
            relationships,
            graph_paths,
        }
    });
    SearchResult {
        active_content_revision: revision,
        file_id: file.file_id.clone(),
        knowledge_base_id: kb.kb_id().to_string(),
        source_file_id: Some(file.file_id.clone()),
        path: file.path.clone(),
        file_kind: "page",
        title: file.title.clone(),
        description: file
            .frontmatter
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_string),
        tags: tags_of(&file.frontmatter),
        frontmatter: file.frontmatter.map().clone(),
        okf_signals: OkfSignals::compute(&file.frontmatter, kb.options.today),
        matched_fields,
        evidence_types,
        source_excerpt,
        score: (score * 1e9).round() / 1e9,
        content_available: true,
        read_actions: read_actions(kb, file),
        match_type: match_type(&candidate.lanes),
        graph_context,
    }
}
