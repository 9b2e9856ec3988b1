//! `search_files`' input: the query rules and every field's validation, in the order the API
//! checks them, into a [`Request`].

use serde_json::Value;
use unicode_segmentation::UnicodeSegmentation;

use crate::error::{messages, ToolError};
use crate::okf::{Freshness, OkfStatus, TrustTier};
pub use crate::search::{FileKind, Mode, Scope};
use crate::tools::{Input, ToolName};

use super::{DEFAULT_LIMIT, MAX_GRAPHEMES, MAX_LIMIT, MAX_QUERY_BYTES};

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

fn invalid(code: &str) -> ToolError {
    ToolError::invalid_code(messages::SEARCH_INVALID, code)
}

fn is_rejected_query_char(c: char) -> bool {
    matches!(c as u32, 0x00..=0x08 | 0x0A..=0x1F | 0x7F..=0x9F)
}

/// The query rules, in order: raw control characters, NFKC + whitespace collapse,
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

/// Field `key` as one of a closed set's values (absent or empty: `None`); any other value is
/// `code`.
fn enum_field<T: std::str::FromStr>(
    input: &Input<'_>,
    key: &str,
    code: &str,
) -> Result<Option<T>, ToolError> {
    match input.trimmed(key) {
        Ok(None) => Ok(None),
        Ok(Some(v)) => v.parse().map(Some).map_err(|_| invalid(code)),
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
    let scope = enum_field(&input, "scope", "INVALID_FILE_SEARCH_SCOPE")?.unwrap_or(Scope::All);
    let file_kind =
        enum_field(&input, "fileKind", "INVALID_FILE_SEARCH_KIND")?.unwrap_or(FileKind::Page);
    let mode = enum_field(&input, "mode", "INVALID_FILE_SEARCH_MODE")?.unwrap_or(Mode::Hybrid);
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
    let okf_status = enum_field(&input, "okfStatus", "INVALID_FILE_SEARCH_OKF_STATUS")?;
    let okf_trust_tier = enum_field(&input, "okfTrustTier", "INVALID_FILE_SEARCH_OKF_TRUST_TIER")?;
    let okf_freshness = enum_field(&input, "okfFreshness", "INVALID_FILE_SEARCH_OKF_FRESHNESS")?;
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
