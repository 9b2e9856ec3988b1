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

use super::{Params, DEFAULT_LIMIT, MAX_GRAPHEMES, MAX_LIMIT, MAX_QUERY_BYTES};

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

fn invalid(code: &str) -> ToolError {
    ToolError::invalid_code(messages::SEARCH_INVALID, code)
}

fn is_rejected_query_char(c: char) -> bool {
    matches!(c as u32, 0x00..=0x08 | 0x0A..=0x1F | 0x7F..=0x9F)
}

/// The query rules, in order: raw control characters, NFKC + whitespace collapse,
/// required, at least 2 grapheme clusters, at most 512 clusters and 2,048 UTF-8 bytes.
pub fn normalize_query(raw: &str) -> Result<String, ToolError> {
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

impl Params {
    /// A JSON input as `Params`, and the fields it gave in a form they cannot hold.
    pub(crate) fn from_json(value: &Value) -> Result<(Params, Malformed), ToolError> {
        let mut r = Reader::new(value, ToolName::SearchFiles.fields())?;
        let params = Params {
            query: r.string("query").unwrap_or_default(),
            mode: r.choice("mode"),
            graph_depth: r.integer("graphDepth"),
            graph_fanout: r.integer("graphFanout"),
            rerank: r.flag("rerank"),
            cursor: r.string("cursor"),
            limit: r.integer("limit"),
            scope: r.choice("scope"),
            file_kind: r.choice("fileKind"),
            okf_status: r.choice("okfStatus"),
            okf_trust_tier: r.choice("okfTrustTier"),
            okf_freshness: r.choice("okfFreshness"),
            rerank_top_k: r.integer("rerankTopK"),
            rerank_score_threshold: r.number("rerankScoreThreshold"),
        };
        Ok((params, r.malformed))
    }
}

/// `given`, or `code` when the input gave `field` in a form `Params` cannot hold.
fn checked<T>(m: &Malformed, field: &str, given: T, code: &str) -> Result<T, ToolError> {
    m.check(field, given).map_err(|_| invalid(code))
}

/// `given` (absent: `default`) when it is in `range` and `field` was not malformed; else `code`.
fn bounded<T: PartialOrd>(
    malformed: &Malformed,
    field: &str,
    given: Option<T>,
    default: T,
    range: std::ops::RangeInclusive<T>,
    code: &str,
) -> Result<T, ToolError> {
    match malformed.check(field, given) {
        Ok(None) => Ok(default),
        Ok(Some(n)) if range.contains(&n) => Ok(n),
        _ => Err(invalid(code)),
    }
}

/// Validates typed parameters.
pub fn validate(params: &Params) -> Result<Request, ToolError> {
    validate_with(params, &Malformed::default())
}

/// Validates a search in the API's order; the first failure wins.
pub(super) fn validate_with(params: &Params, malformed: &Malformed) -> Result<Request, ToolError> {
    let m = malformed;
    if m.has("query") {
        return Err(invalid("INVALID_FILE_SEARCH_QUERY"));
    }
    let query = normalize_query(&params.query)?;
    let scope =
        checked(m, "scope", params.scope, "INVALID_FILE_SEARCH_SCOPE")?.unwrap_or(Scope::All);
    let file_kind = checked(m, "fileKind", params.file_kind, "INVALID_FILE_SEARCH_KIND")?
        .unwrap_or(FileKind::Page);
    let mode = checked(m, "mode", params.mode, "INVALID_FILE_SEARCH_MODE")?.unwrap_or(Mode::Hybrid);
    let graph_depth = bounded(
        m,
        "graphDepth",
        params.graph_depth,
        1,
        0..=2,
        "INVALID_FILE_SEARCH_GRAPH_DEPTH",
    )?;
    let graph_fanout = bounded(
        m,
        "graphFanout",
        params.graph_fanout,
        10,
        0..=25,
        "INVALID_FILE_SEARCH_GRAPH_FANOUT",
    )?;
    let okf_status = checked(
        m,
        "okfStatus",
        params.okf_status,
        "INVALID_FILE_SEARCH_OKF_STATUS",
    )?;
    let okf_trust_tier = checked(
        m,
        "okfTrustTier",
        params.okf_trust_tier,
        "INVALID_FILE_SEARCH_OKF_TRUST_TIER",
    )?;
    let okf_freshness = checked(
        m,
        "okfFreshness",
        params.okf_freshness,
        "INVALID_FILE_SEARCH_OKF_FRESHNESS",
    )?;
    let limit = bounded(
        m,
        "limit",
        params.limit,
        DEFAULT_LIMIT,
        1..=MAX_LIMIT,
        "INVALID_FILE_SEARCH_LIMIT",
    )?;
    let rerank_invalid = || invalid("INVALID_FILE_SEARCH_RERANK_CONTROLS");
    let rerank = m
        .check("rerank", params.rerank)
        .map_err(|_| rerank_invalid())?
        .unwrap_or(false);
    let top_k = m
        .check("rerankTopK", params.rerank_top_k)
        .map_err(|_| rerank_invalid())?;
    let rerank_top_k = match (rerank, top_k) {
        (false, Some(_)) => return Err(rerank_invalid()),
        (false, None) => None,
        (true, None) => Some(limit.max(30)),
        (true, Some(k)) if (1..=50).contains(&k) && k >= limit => Some(k),
        (true, Some(_)) => return Err(rerank_invalid()),
    };
    let threshold = m
        .check("rerankScoreThreshold", params.rerank_score_threshold)
        .map_err(|_| rerank_invalid())?;
    let rerank_score_threshold = match (rerank, threshold) {
        (false, Some(_)) => return Err(rerank_invalid()),
        (false, None) => None,
        (true, None) => Some(0.35),
        (true, Some(t)) if t.is_finite() && (0.0..=1.0).contains(&t) => Some(t),
        (true, Some(_)) => return Err(rerank_invalid()),
    };
    let cursor = input::cursor(m, params.cursor.as_deref())?;
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
