//! `search_files` → `searchGeneratedFiles`: candidate source pages for a question. Lanes
//! (DECISIONS 13): exact path, exact title, BM25 `lexical` over weighted fields, the `jieba`
//! dictionary-word lane, and, when the mode is not `file` (and the scope is `all`), the two graph
//! lanes: `file_graph` (neighbours of the lexical candidates) and `file_relationship` (pages at
//! either end of the relations near those candidates whose text matches the query); fused by
//! weighted reciprocal rank (k = 60), exact-path hits first, then exact-title hits. Results are
//! candidates to read, never answer evidence.

use std::collections::HashMap;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use unicode_segmentation::UnicodeSegmentation;

use super::{read_actions, tags_of, Input, RelatedFile};
use crate::bundle::paths;
use crate::cursor;
use crate::error::{messages, ErrorCode, IndexError, ToolError};
use crate::graph::Step;
use crate::ids::ReadActions;
use crate::index::search_index::LaneHit;
use crate::index::KnowledgeBase;
use crate::okf::OkfSignals;

pub const NAME: &str = "search_files";
const FIELDS: [&str; 14] = [
    "query",
    "mode",
    "graphDepth",
    "graphFanout",
    "rerank",
    "cursor",
    "limit",
    "scope",
    "fileKind",
    "okfStatus",
    "okfTrustTier",
    "okfFreshness",
    "rerankTopK",
    "rerankScoreThreshold",
];
pub const DEFAULT_LIMIT: i64 = 10;
pub const MAX_LIMIT: i64 = 50;
const MAX_GRAPHEMES: usize = 512;
const MAX_QUERY_BYTES: usize = 2048;
/// Candidates each lane contributes; fixed, so that paging never repeats or skips a result.
const LANE_DEPTH: usize = 1000;
/// Lexical candidates that seed the graph lanes.
const GRAPH_SEEDS: usize = 20;
/// Results a cursor can page through.
const MAX_RESULTS: usize = 1000;
const RRF_K: f64 = 60.0;

const NO_MATCH_MESSAGE: &str = "No generated files matched this query. The knowledge base may still contain relevant data through different titles, paths, or metadata terms.";
const NO_MATCH_ACTIONS: [&str; 5] = [
    "Split the user question into shorter terms and search again.",
    "Read index.md through the file content endpoint.",
    "List the file tree and continue exploration from visible directories.",
    "Try title, path, subject, product name, workflow, identifier, or shorter terms from the question.",
    "Use graph or hybrid search mode when a direct file search does not find enough evidence.",
];
const SORT: [&str; 3] = ["relevance_desc", "logical_path_asc", "source_file_id_asc"];

/// A retrieval lane (an `evidenceStatus` family).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Lane {
    ExactPath,
    ExactTitle,
    Lexical,
    Jieba,
    FileGraph,
    FileRelationship,
}

impl Lane {
    pub fn family(self) -> &'static str {
        match self {
            Lane::ExactPath => "exact_path",
            Lane::ExactTitle => "exact_title",
            Lane::Lexical => "lexical",
            Lane::Jieba => "jieba",
            Lane::FileGraph => "file_graph",
            Lane::FileRelationship => "file_relationship",
        }
    }

    fn weight(self) -> f64 {
        match self {
            Lane::ExactPath => 16.0,
            Lane::ExactTitle => 12.0,
            Lane::Lexical => 5.0,
            Lane::Jieba => 4.0,
            Lane::FileGraph => 3.0,
            Lane::FileRelationship => 4.0,
        }
    }

    /// The graph lanes run only when the mode is not `file` and the scope is `all`.
    pub fn is_graph(self) -> bool {
        matches!(self, Lane::FileGraph | Lane::FileRelationship)
    }

    /// "File evidence" of §8.4 (`matchType`).
    fn is_file_evidence(self) -> bool {
        matches!(
            self,
            Lane::ExactPath | Lane::ExactTitle | Lane::Lexical | Lane::Jieba
        )
    }

    fn matched_field(self) -> &'static str {
        match self {
            Lane::ExactPath => "path",
            Lane::ExactTitle => "title",
            Lane::Lexical | Lane::Jieba => "content",
            Lane::FileGraph => "graph_node",
            Lane::FileRelationship => "file_relationship",
        }
    }
}

/// A set of lanes (a bit per lane), iterated in lane order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LaneSet(u8);

impl LaneSet {
    const ALL: [Lane; 6] = [
        Lane::ExactPath,
        Lane::ExactTitle,
        Lane::Lexical,
        Lane::Jieba,
        Lane::FileGraph,
        Lane::FileRelationship,
    ];

    fn bit(lane: Lane) -> u8 {
        1 << lane as u8
    }

    /// Adds `lane`; false when it was in the set already.
    pub fn insert(&mut self, lane: Lane) -> bool {
        let had = self.contains(&lane);
        self.0 |= Self::bit(lane);
        !had
    }

    pub fn contains(&self, lane: &Lane) -> bool {
        self.0 & Self::bit(*lane) != 0
    }

    pub fn iter(&self) -> impl Iterator<Item = Lane> + '_ {
        Self::ALL.into_iter().filter(|lane| self.contains(lane))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    All,
    Path,
    Metadata,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    File,
    Graph,
    Hybrid,
}

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
    let input = Input::new(value, &FIELDS)?;
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

/// The lanes a request runs (§8.4 lane plan, without vector lanes).
fn plan(request: &Request) -> Vec<Lane> {
    match request.scope {
        Scope::Path => vec![Lane::ExactPath, Lane::ExactTitle],
        Scope::Metadata => vec![Lane::Lexical],
        Scope::All => {
            let mut lanes = vec![Lane::ExactPath, Lane::ExactTitle];
            if request.mode != Mode::Graph {
                lanes.push(Lane::Lexical);
                // The CJK word lane segments CJK text; a query without CJK has nothing for it
                // to add (it would repeat the lexical lane), so it does not run.
                if crate::analysis::has_cjk(&request.query) {
                    lanes.push(Lane::Jieba);
                }
            }
            if request.mode != Mode::File {
                lanes.push(Lane::FileGraph);
                lanes.push(Lane::FileRelationship);
            }
            lanes
        }
    }
}

/// The cursor scope: every input that shapes the result set, limit included (DECISIONS 10).
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

/// A fused candidate.
pub struct Candidate {
    /// Catalog position of the page.
    pub position: u32,
    /// Weighted reciprocal-rank fusion score.
    pub score: f64,
    /// The lanes that returned it.
    pub lanes: LaneSet,
    /// Where the document sits in tantivy, from the first content lane that found it.
    address: Option<tantivy::DocAddress>,
}

fn unavailable(e: crate::error::IndexError) -> ToolError {
    ToolError::new(ErrorCode::SearchUnavailable, messages::SEARCH_UNAVAILABLE)
        .with_detail("reason", e.to_string())
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
    /// The user's full question, 2–512 characters.
    #[schemars(length(min = 2, max = 512))]
    pub query: String,
    /// `file`, `graph` or `hybrid` (default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["file", "graph", "hybrid"]))]
    pub mode: Option<String>,
    /// 0–2 (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 2))]
    pub graph_depth: Option<u8>,
    /// 0–25 (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 25))]
    pub graph_fanout: Option<u64>,
    /// Ask for a reranker (none runs offline; the status says so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// 1–50 (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<u64>,
    /// `all` (default), `path` or `metadata`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["all", "path", "metadata"]))]
    pub scope: Option<String>,
    /// `page` (default) or `all`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["page", "all"]))]
    pub file_kind: Option<String>,
    /// `draft`, `stable` or `deprecated`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["draft", "stable", "deprecated"]))]
    pub okf_status: Option<String>,
    /// `unverified`, `machine-confirmed` or `human-reviewed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["unverified", "machine-confirmed", "human-reviewed"]))]
    pub okf_trust_tier: Option<String>,
    /// `fresh` or `stale`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["fresh", "stale"]))]
    pub okf_freshness: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank_top_k: Option<u64>,
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

/// What [`rank`] finds: the fused candidates, the lanes that ran, and the graph walks of the
/// graph lanes' seeds.
struct Ranking {
    candidates: Vec<Candidate>,
    lanes: Vec<Lane>,
    /// Each seed with its walk (unbounded in total).
    walks: Vec<(u32, Vec<Step>)>,
}

impl Ranking {
    /// The walk of `page` with at most `total` steps, when `page` was a seed: the first `total`
    /// steps of its unbounded walk (a walk stops at its total, so it is always a prefix).
    fn walk(&self, page: u32, total: usize) -> Option<&[Step]> {
        self.walks
            .iter()
            .find(|(seed, _)| *seed == page)
            .map(|(_, steps)| &steps[..steps.len().min(total)])
    }
}

fn rank(kb: &KnowledgeBase, request: &Request) -> Result<Ranking, ToolError> {
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
    let lanes = plan(request);
    let searcher = kb.search.searcher();
    let exact_key = crate::text::exact_key(&request.query);

    let mut results: Vec<(Lane, Vec<LaneHit>)> = Vec::new();
    for &lane in &lanes {
        let hits = match lane {
            Lane::ExactPath => kb.search.exact_path(&searcher, &exact_key),
            Lane::ExactTitle => kb.search.exact_title(&searcher, &exact_key),
            Lane::Lexical if request.scope == Scope::Metadata => {
                kb.search.metadata(&searcher, &request.query, LANE_DEPTH)
            }
            Lane::Lexical => kb.search.lexical(&searcher, &request.query, LANE_DEPTH),
            Lane::Jieba => kb.search.words(&searcher, &request.query, LANE_DEPTH),
            // Filled below, from the lexical candidates.
            Lane::FileGraph | Lane::FileRelationship => Ok(Vec::new()),
        }
        .map_err(unavailable)?;
        results.push((lane, hits));
        check_deadline()?;
    }
    // Quoted phrases must appear as written (in order, adjacent) in a content-lane hit.
    let phrases = crate::text::quoted_phrases(&request.query);
    let phrase_pages = if phrases.is_empty() {
        None
    } else {
        Some(
            kb.search
                .phrase_matches(&searcher, &phrases)
                .map_err(unavailable)?,
        )
    };
    let keep = |position: u32| {
        phrase_pages
            .as_ref()
            .is_none_or(|set| set.contains(&position))
    };
    for (lane, hits) in results.iter_mut() {
        if matches!(lane, Lane::Lexical | Lane::Jieba) {
            hits.retain(|h| keep(h.position));
        }
    }
    let mut seed_walks: Vec<(u32, Vec<Step>)> = Vec::new();
    if lanes.iter().any(|l| l.is_graph()) {
        // The seeds: the best lexical candidates (in graph mode the lexical lane is not a ranked
        // lane, but it still picks the seeds).
        let seeds = match results.iter().find(|(l, _)| *l == Lane::Lexical) {
            Some((_, hits)) => hits
                .iter()
                .take(GRAPH_SEEDS)
                .map(|h| h.position)
                .collect::<Vec<_>>(),
            None => kb
                .search
                .lexical(
                    &searcher,
                    &request.query,
                    if phrase_pages.is_some() {
                        LANE_DEPTH
                    } else {
                        GRAPH_SEEDS
                    },
                )
                .map_err(unavailable)?
                .iter()
                .map(|h| h.position)
                .filter(|&p| keep(p))
                .take(GRAPH_SEEDS)
                .collect(),
        };
        // One bounded walk per seed (at most fanout + fanout² steps), shared by both lanes.
        let walks: Vec<Vec<Step>> = seeds
            .iter()
            .map(|&seed| {
                kb.graph.walk(
                    &kb.catalog,
                    seed,
                    request.graph_depth,
                    request.graph_fanout as usize,
                    usize::MAX,
                )
            })
            .collect();
        for (lane, hits) in results.iter_mut() {
            match lane {
                Lane::FileGraph => *hits = graph_lane(kb, &seeds, &walks),
                Lane::FileRelationship => {
                    *hits = relationship_lane(kb, &searcher, &request.query, &walks)
                        .map_err(unavailable)?
                }
                _ => {}
            }
        }
        seed_walks = seeds.into_iter().zip(walks).collect();
        check_deadline()?;
    }

    // Weighted reciprocal-rank fusion, one entry per source page: every hit as (page, lane,
    // rank), sorted, so that each page's hits are together in lane order, then rank order (the
    // order its score is summed in, a lane counting at its best rank).
    let mut occurrences: Vec<(u32, u32, u32)> = Vec::new();
    for (lane_index, (_, hits)) in results.iter().enumerate() {
        for (rank, hit) in hits.iter().enumerate() {
            occurrences.push((hit.position, lane_index as u32, rank as u32));
        }
    }
    occurrences.sort_unstable();
    let mut candidates: Vec<Candidate> = Vec::new();
    for page in occurrences.chunk_by(|a, b| a.0 == b.0) {
        let position = page[0].0;
        if !kb.catalog.is_source(position) {
            continue;
        }
        let mut candidate = Candidate {
            position,
            score: 0.0,
            lanes: LaneSet::default(),
            address: None,
        };
        for &(_, lane_index, rank) in page {
            let (lane, hits) = &results[lane_index as usize];
            if candidate.lanes.insert(*lane) {
                candidate.score += lane.weight() / (RRF_K + rank as f64 + 1.0);
            }
            if candidate.address.is_none() && matches!(lane, Lane::Lexical | Lane::Jieba) {
                candidate.address = Some(hits[rank as usize].address);
            }
        }
        if passes_filters(kb, request, position) {
            candidates.push(candidate);
        }
    }
    let class = |c: &Candidate| {
        if c.lanes.contains(&Lane::ExactPath) {
            0
        } else if c.lanes.contains(&Lane::ExactTitle) {
            1
        } else {
            2
        }
    };
    // (Pages have distinct paths: the order is total, and an unstable sort gives the one order.)
    candidates.sort_unstable_by(|a, b| {
        class(a)
            .cmp(&class(b))
            .then(b.score.total_cmp(&a.score))
            // Catalog positions are in path order (and paths are distinct).
            .then(a.position.cmp(&b.position))
    });
    candidates.truncate(MAX_RESULTS);
    check_deadline()?;
    Ok(Ranking {
        candidates,
        lanes,
        walks: seed_walks,
    })
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
    // Scores never increase down the list (DECISIONS 15): exact-priority hits are ranked first,
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

    let completed: Vec<&'static str> = {
        let mut families: Vec<&'static str> = lanes.iter().map(|l| l.family()).collect();
        families.sort_unstable();
        families
    };
    let graph_available = request.mode != Mode::File;
    let empty = items.is_empty();
    Ok(Output {
        active_content_revision: Some(revision),
        query: context(&request),
        next_cursor: next_cursor.clone(),
        search_status: if empty { "no_candidates" } else { "ok" },
        search_mode: mode_name(request.mode),
        semantic_status: Status {
            state: "unavailable",
            safe_code: Some("SEMANTIC_SEARCH_UNAVAILABLE"),
        },
        evidence_status: EvidenceStatus {
            completed_families: completed,
            degraded_families: Vec::new(),
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
        items,
    })
}

/// Hits of a graph lane, best first, ties by path; only source pages (relations join source
/// pages, but a graph lane never relies on that).
fn graph_hits(kb: &KnowledgeBase, scores: HashMap<u32, f64>) -> Vec<LaneHit> {
    let mut hits: Vec<(u32, f64)> = scores
        .into_iter()
        .filter(|&(position, score)| score > 0.0 && kb.catalog.is_source(position))
        .collect();
    hits.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            // Catalog positions are in path order.
            .then(a.0.cmp(&b.0))
    });
    hits.into_iter()
        .map(|(position, score)| LaneHit {
            position,
            score: score as f32,
            address: tantivy::DocAddress::new(0, 0),
        })
        .collect()
}

/// The `file_graph` lane: the seed pages themselves (`1 / (60 + seed rank)`) and the pages
/// their walks reach (the best over the seeds that reach them of `1 / ((60 + seed rank) ·
/// (depth + 1))`).
fn graph_lane(kb: &KnowledgeBase, seeds: &[u32], walks: &[Vec<Step>]) -> Vec<LaneHit> {
    // Graph nodes are the source pages (their document records): a seed matches as a node in
    // its own right; its neighbours follow, discounted by depth (depth 1 counts half). A page
    // takes its best path, not the sum: summed, a page many seeds link to outranks the seeds
    // themselves, and in a densely linked bundle the lane then ranks hubs over the matches.
    let mut scores: HashMap<u32, f64> = HashMap::new();
    let mut offer = |page: u32, score: f64| {
        let best = scores.entry(page).or_default();
        *best = best.max(score);
    };
    for (rank, &seed) in seeds.iter().enumerate() {
        offer(seed, 1.0 / (RRF_K + rank as f64 + 1.0));
    }
    for (rank, steps) in walks.iter().enumerate() {
        for step in steps {
            offer(
                step.to,
                1.0 / ((RRF_K + rank as f64 + 1.0) * (f64::from(step.depth) + 1.0)),
            );
        }
    }
    graph_hits(kb, scores)
}

/// A relation of the `file_relationship` lane: an unordered page pair (the unit
/// `indexedRelationshipCount` counts), at the shallowest depth any walk traversed it, with the
/// best text score of its traversed relation records.
struct ScoredPair {
    a: u32,
    b: u32,
    depth: u8,
    score: f64,
}

/// Which query terms a relation's text contains, analysed like the lexical lane (`kb_text`).
/// `kb_text` tokens never span whitespace, so text is analysed one whitespace-separated chunk
/// at a time, each distinct chunk once per query: titles and reason sentences repeat their
/// words, so most relations cost a few hash lookups. A chunk's tokens are its token spans
/// through the thread's span analyzer (the same terms as the analyzer's, see
/// [`crate::analysis::SpanAnalyzer`]), which remembers the terms of words across queries.
struct TermMatcher<'q, 'c> {
    term_index: HashMap<&'q str, usize>,
    chunks: HashMap<&'c str, Vec<usize>>,
}

impl<'q, 'c> TermMatcher<'q, 'c> {
    fn new(terms: &'q [String]) -> Self {
        TermMatcher {
            term_index: terms
                .iter()
                .enumerate()
                .map(|(i, t)| (t.as_str(), i))
                .collect(),
            chunks: HashMap::new(),
        }
    }

    /// Adds to `out` the indices of the query terms in `text` that it does not hold yet.
    fn add_matches(&mut self, text: &'c str, out: &mut Vec<usize>) {
        for chunk in text.split_whitespace() {
            let found = match self.chunks.entry(chunk) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    let mut found = Vec::new();
                    let term_index = &self.term_index;
                    crate::analysis::with_span_analyzer(|spans| {
                        crate::analysis::text_token_spans(chunk, |from, to, _| {
                            let Some(term) = spans.term(&chunk[from..to]) else {
                                return;
                            };
                            if let Some(&i) = term_index.get(term.as_ref()) {
                                if !found.contains(&i) {
                                    found.push(i);
                                }
                            }
                        })
                    });
                    e.insert(found)
                }
            };
            for &i in found.iter() {
                if !out.contains(&i) {
                    out.push(i);
                }
            }
        }
    }
}

/// The `file_relationship` lane, the offline counterpart of the online search over relationship
/// documents. Every relation the seeds' walks traverse is scored by how well the query matches
/// its text (both endpoint titles and the reason, analysed like the lexical lane): the sum of
/// the body IDF of each distinct query term the text contains. A page scores the sum over the
/// matching relations it is an endpoint of (either end, seeds included) of `score / depth`;
/// pages whose relations match no query term are not returned. The work is bounded by the
/// walks (≤ seeds × (fanout + fanout²) steps); nothing is read from disk.
fn relationship_lane(
    kb: &KnowledgeBase,
    searcher: &tantivy::Searcher,
    query: &str,
    walks: &[Vec<Step>],
) -> Result<Vec<LaneHit>, IndexError> {
    if walks.iter().all(Vec::is_empty) {
        return Ok(Vec::new());
    }
    let terms = crate::analysis::query_terms(query);
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    let mut matcher = TermMatcher::new(&terms);
    // IDF of the query terms, looked up when a relation first contains them.
    let mut idf: Vec<Option<f64>> = vec![None; terms.len()];
    let mut record_scores: HashMap<u32, f64> = HashMap::new();
    let mut pairs: Vec<ScoredPair> = Vec::new();
    let mut pair_of: HashMap<(u32, u32), usize> = HashMap::new();
    let mut found: Vec<usize> = Vec::new();
    for step in walks.iter().flatten() {
        let score = match record_scores.get(&step.relation) {
            Some(&score) => score,
            None => {
                let rel = kb.catalog.relation(step.relation);
                found.clear();
                for page in [rel.from, rel.to] {
                    if let Some(title) = &kb.catalog.file(page).title {
                        matcher.add_matches(title, &mut found);
                    }
                }
                if let Some(reason) = &rel.reason {
                    matcher.add_matches(reason, &mut found);
                }
                let mut score = 0.0;
                for &i in &found {
                    let weight = match idf[i] {
                        Some(w) => w,
                        None => {
                            let w = f64::from(kb.search.idf(searcher, &terms[i])?);
                            idf[i] = Some(w);
                            w
                        }
                    };
                    score += weight;
                }
                record_scores.insert(step.relation, score);
                score
            }
        };
        let key = (step.from.min(step.to), step.from.max(step.to));
        match pair_of.get(&key) {
            Some(&i) => {
                let pair = &mut pairs[i];
                pair.depth = pair.depth.min(step.depth);
                pair.score = pair.score.max(score);
            }
            None => {
                pair_of.insert(key, pairs.len());
                pairs.push(ScoredPair {
                    a: key.0,
                    b: key.1,
                    depth: step.depth,
                    score,
                });
            }
        }
    }
    // Sums in first-traversal order, so that equal inputs give equal bits.
    let mut scores: HashMap<u32, f64> = HashMap::new();
    for pair in pairs.iter().filter(|p| p.score > 0.0) {
        let contribution = pair.score / f64::from(pair.depth.max(1));
        *scores.entry(pair.a).or_default() += contribution;
        *scores.entry(pair.b).or_default() += contribution;
    }
    Ok(graph_hits(kb, scores))
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
    let source_excerpt = match (candidate.address, excerpter) {
        (Some(_), Some(excerpter)) => super::read_indexed_content(kb, file)
            .and_then(|content| excerpter.excerpt(&crate::bundle::indexed_body_text(&content))),
        _ => None,
    };
    // Present only when the mode is not `file`, and only with a `graphRef` that opens
    // (DECISIONS 21; ingest gives every source page a record, so this always holds in practice).
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
                walked = kb.graph.walk(
                    &kb.catalog,
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
                RelatedFile::new(kb, revision, rel, &rel.direction, s.depth)
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
