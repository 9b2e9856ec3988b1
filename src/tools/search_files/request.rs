//! `search_files`' input: the query rules and every field's validation, in the order the API
//! checks them, into a [`Request`].

use serde_json::Value;
use unicode_segmentation::UnicodeSegmentation;

use crate::error::{messages, ToolError};
use crate::kb::KnowledgeBase;
use crate::okf::{Freshness, OkfSignals, OkfStatus, TrustTier};
use crate::search::Ranking;
pub use crate::search::{FileKind, Mode, Scope};
use crate::tools::input;
use crate::tools::{Malformed, Reader, ToolName};

use super::{
    Params, GRAPH_DEPTH, GRAPH_FANOUT, LIMIT, MAX_GRAPHEMES, MAX_QUERY_BYTES, MIN_GRAPHEMES,
    RERANK_SCORE_THRESHOLD, RERANK_TOP_K,
};
use crate::tools::fields::Bounds;

pub(super) const SORT: [&str; 3] = ["relevance_desc", "logical_path_asc", "source_file_id_asc"];

/// A validated request.
#[derive(Debug, Clone)]
pub struct Request {
    pub query: String,
    pub scope: Scope,
    pub file_kind: FileKind,
    pub mode: Mode,
    pub graph_depth: u8,
    pub graph_fanout: u64,
    pub okf_status: Option<OkfStatus>,
    pub okf_trust_tier: Option<TrustTier>,
    pub okf_freshness: Option<Freshness>,
    pub limit: u64,
    pub rerank: bool,
    pub rerank_top_k: Option<u64>,
    pub rerank_score_threshold: Option<f64>,
    pub cursor: Option<String>,
}

impl Request {
    /// The engine's ranking of this request (each candidate's score by lane when `explain`).
    pub(crate) fn rank(&self, kb: &KnowledgeBase, explain: bool) -> Result<Ranking, ToolError> {
        let keep = |position: u32| passes_filters(kb, self, position);
        crate::search::rank(
            kb,
            &crate::search::Query {
                text: &self.query,
                scope: self.scope,
                mode: self.mode,
                graph_depth: self.graph_depth,
                graph_fanout: self.graph_fanout as usize,
                keep: &keep,
                explain,
            },
        )
    }
}

/// Whether the page at `position` passes `request`'s OKF filters.
fn passes_filters(kb: &KnowledgeBase, request: &Request, position: u32) -> bool {
    if request.okf_status.is_none()
        && request.okf_trust_tier.is_none()
        && request.okf_freshness.is_none()
    {
        return true;
    }
    let signals = OkfSignals::compute(&kb.catalog.file(position).frontmatter, kb.options.today);
    fn passes<T: PartialEq>(wanted: Option<T>, has: Option<T>) -> bool {
        wanted.is_none() || wanted == has
    }
    passes(request.okf_status, signals.effective_status)
        && passes(request.okf_trust_tier, signals.trust_tier)
        && passes(request.okf_freshness, signals.freshness())
}

crate::wire::wire_enum! {
    /// A search's validation error: its `details.code`.
    pub enum InvalidSearch {
        Query = "INVALID_FILE_SEARCH_QUERY",
        QueryRequired = "FILE_SEARCH_QUERY_REQUIRED",
        QueryTooShort = "FILE_SEARCH_QUERY_TOO_SHORT",
        QueryTooLong = "FILE_SEARCH_QUERY_TOO_LONG",
        Scope = "INVALID_FILE_SEARCH_SCOPE",
        FileKind = "INVALID_FILE_SEARCH_KIND",
        Mode = "INVALID_FILE_SEARCH_MODE",
        GraphDepth = "INVALID_FILE_SEARCH_GRAPH_DEPTH",
        GraphFanout = "INVALID_FILE_SEARCH_GRAPH_FANOUT",
        OkfStatus = "INVALID_FILE_SEARCH_OKF_STATUS",
        OkfTrustTier = "INVALID_FILE_SEARCH_OKF_TRUST_TIER",
        OkfFreshness = "INVALID_FILE_SEARCH_OKF_FRESHNESS",
        Limit = "INVALID_FILE_SEARCH_LIMIT",
        RerankControls = "INVALID_FILE_SEARCH_RERANK_CONTROLS",
    }
}

impl InvalidSearch {
    /// The input field the error is about, when it is about one field (the hints name it).
    pub fn field(self) -> Option<&'static str> {
        let f = Params::WIRE;
        Some(match self {
            Self::Query => f.query,
            Self::Mode => f.mode,
            Self::Scope => f.scope,
            Self::FileKind => f.file_kind,
            Self::Limit => f.limit,
            Self::GraphDepth => f.graph_depth,
            Self::GraphFanout => f.graph_fanout,
            Self::OkfStatus => f.okf_status,
            Self::OkfTrustTier => f.okf_trust_tier,
            Self::OkfFreshness => f.okf_freshness,
            Self::RerankControls => f.rerank_top_k,
            Self::QueryRequired | Self::QueryTooShort | Self::QueryTooLong => return None,
        })
    }
}

fn invalid(code: InvalidSearch) -> ToolError {
    ToolError::invalid_code(messages::SEARCH_INVALID, code.as_str())
}

fn is_rejected_query_char(c: char) -> bool {
    matches!(c as u32, 0x00..=0x08 | 0x0A..=0x1F | 0x7F..=0x9F)
}

/// The query rules, in order: raw control characters, NFKC + whitespace collapse,
/// required, at least 2 grapheme clusters, at most 512 clusters and 2,048 UTF-8 bytes.
pub fn normalize_query(raw: &str) -> Result<String, ToolError> {
    if raw.chars().any(is_rejected_query_char) {
        return Err(invalid(InvalidSearch::Query));
    }
    let normalized = crate::text::normalize_query_text(raw);
    if normalized.is_empty() {
        return Err(invalid(InvalidSearch::QueryRequired));
    }
    let graphemes = normalized.graphemes(true).take(MAX_GRAPHEMES + 1).count();
    if graphemes < MIN_GRAPHEMES {
        return Err(invalid(InvalidSearch::QueryTooShort));
    }
    if graphemes > MAX_GRAPHEMES || normalized.len() > MAX_QUERY_BYTES {
        return Err(invalid(InvalidSearch::QueryTooLong));
    }
    Ok(normalized)
}

impl Params {
    /// A JSON input as `Params`, and the fields it gave in a form they cannot hold.
    pub(crate) fn from_json(value: &Value) -> Result<(Params, Malformed), ToolError> {
        let mut r = Reader::new(value, ToolName::SearchFiles.fields())?;
        let f = Params::WIRE;
        let params = Params {
            query: r.string(f.query).unwrap_or_default(),
            mode: r.choice(f.mode),
            graph_depth: r.integer(f.graph_depth),
            graph_fanout: r.integer(f.graph_fanout),
            rerank: r.flag(f.rerank),
            cursor: r.string(f.cursor),
            limit: r.integer(f.limit),
            scope: r.choice(f.scope),
            file_kind: r.choice(f.file_kind),
            okf_status: r.choice(f.okf_status),
            okf_trust_tier: r.choice(f.okf_trust_tier),
            okf_freshness: r.choice(f.okf_freshness),
            rerank_top_k: r.integer(f.rerank_top_k),
            rerank_score_threshold: r.number(f.rerank_score_threshold),
        };
        Ok((params, r.malformed))
    }
}

/// `given`, or `code` when the input gave `field` in a form `Params` cannot hold.
fn checked<T>(m: &Malformed, field: &str, given: T, code: InvalidSearch) -> Result<T, ToolError> {
    m.check(field, given).map_err(|_| invalid(code))
}

/// `given` (absent: its default) when it is within `bounds` and `field` was not malformed;
/// else `code`.
fn bounded<T: PartialOrd + Copy>(
    malformed: &Malformed,
    field: &str,
    given: Option<T>,
    bounds: Bounds<T>,
    code: InvalidSearch,
) -> Result<T, ToolError> {
    match malformed.check(field, given) {
        Ok(given) => bounds.check(given).ok_or_else(|| invalid(code)),
        Err(_) => Err(invalid(code)),
    }
}

/// Validates typed parameters.
pub fn validate(params: &Params) -> Result<Request, ToolError> {
    validate_with(params, &Malformed::default())
}

/// Validates a search in the API's order; the first failure wins.
pub(super) fn validate_with(params: &Params, malformed: &Malformed) -> Result<Request, ToolError> {
    let (m, f) = (malformed, Params::WIRE);
    if m.has(f.query) {
        return Err(invalid(InvalidSearch::Query));
    }
    let query = normalize_query(&params.query)?;
    let scope = checked(m, f.scope, params.scope, InvalidSearch::Scope)?.unwrap_or(Scope::All);
    let file_kind = checked(m, f.file_kind, params.file_kind, InvalidSearch::FileKind)?
        .unwrap_or(FileKind::Page);
    let mode = checked(m, f.mode, params.mode, InvalidSearch::Mode)?.unwrap_or(Mode::Hybrid);
    let graph_depth = bounded(
        m,
        f.graph_depth,
        params.graph_depth,
        GRAPH_DEPTH,
        InvalidSearch::GraphDepth,
    )?;
    let graph_fanout = bounded(
        m,
        f.graph_fanout,
        params.graph_fanout,
        GRAPH_FANOUT,
        InvalidSearch::GraphFanout,
    )?;
    let okf_status = checked(m, f.okf_status, params.okf_status, InvalidSearch::OkfStatus)?;
    let okf_trust_tier = checked(
        m,
        f.okf_trust_tier,
        params.okf_trust_tier,
        InvalidSearch::OkfTrustTier,
    )?;
    let okf_freshness = checked(
        m,
        f.okf_freshness,
        params.okf_freshness,
        InvalidSearch::OkfFreshness,
    )?;
    let limit = bounded(m, f.limit, params.limit, LIMIT, InvalidSearch::Limit)?;
    let rerank_invalid = || invalid(InvalidSearch::RerankControls);
    let rerank = m
        .check(f.rerank, params.rerank)
        .map_err(|_| rerank_invalid())?
        .unwrap_or(false);
    let top_k = m
        .check(f.rerank_top_k, params.rerank_top_k)
        .map_err(|_| rerank_invalid())?;
    let rerank_top_k = match (rerank, top_k) {
        (false, Some(_)) => return Err(rerank_invalid()),
        (false, None) => None,
        (true, None) => Some(limit.max(RERANK_TOP_K.default)),
        (true, Some(k)) if RERANK_TOP_K.contains(k) && k >= limit => Some(k),
        (true, Some(_)) => return Err(rerank_invalid()),
    };
    let threshold = m
        .check(f.rerank_score_threshold, params.rerank_score_threshold)
        .map_err(|_| rerank_invalid())?;
    let rerank_score_threshold = match (rerank, threshold) {
        (false, Some(_)) => return Err(rerank_invalid()),
        (false, None) => None,
        (true, None) => Some(RERANK_SCORE_THRESHOLD.default),
        (true, Some(t)) if t.is_finite() && RERANK_SCORE_THRESHOLD.contains(t) => Some(t),
        (true, Some(_)) => return Err(rerank_invalid()),
    };
    let cursor = input::cursor(m, f.cursor, params.cursor.as_deref())?;
    Ok(Request {
        query,
        scope,
        file_kind,
        mode,
        graph_depth,
        graph_fanout,
        okf_status,
        okf_trust_tier,
        okf_freshness,
        limit,
        rerank,
        rerank_top_k,
        rerank_score_threshold,
        cursor,
    })
}
