//! The library's one error type for tool calls, and the table that maps each kind to the
//! contract's error code, HTTP status and default message. Every front door (CLI exit code, MCP
//! `isError`, HTTP status) maps from this one table.

use serde::Serialize;
use serde_json::{Map, Value};

/// A contract error code (`Error.error.code` in the OpenAPI document).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum ErrorCode {
    NotFound,
    Conflict,
    PayloadTooLarge,
    ValidationError,
    UnsupportedRoute,
    Unauthorized,
    /// A request the server refuses to answer whoever asks (a foreign `Host` or `Origin`).
    Forbidden,
    InternalError,
    DatabaseRepositoryUnavailable,
    SearchTimeout,
    SearchUnavailable,
}

impl ErrorCode {
    /// The HTTP status the online API answers with for this code.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::NotFound | ErrorCode::UnsupportedRoute => 404,
            ErrorCode::Conflict => 409,
            ErrorCode::PayloadTooLarge => 413,
            ErrorCode::ValidationError => 422,
            ErrorCode::Unauthorized => 401,
            ErrorCode::Forbidden => 403,
            ErrorCode::InternalError => 500,
            ErrorCode::DatabaseRepositoryUnavailable | ErrorCode::SearchUnavailable => 503,
            ErrorCode::SearchTimeout => 504,
        }
    }

    /// The code as the contract spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::Conflict => "CONFLICT",
            ErrorCode::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            ErrorCode::ValidationError => "VALIDATION_ERROR",
            ErrorCode::UnsupportedRoute => "UNSUPPORTED_ROUTE",
            ErrorCode::Unauthorized => "UNAUTHORIZED",
            ErrorCode::Forbidden => "FORBIDDEN",
            ErrorCode::InternalError => "INTERNAL_ERROR",
            ErrorCode::DatabaseRepositoryUnavailable => "DATABASE_REPOSITORY_UNAVAILABLE",
            ErrorCode::SearchTimeout => "SEARCH_TIMEOUT",
            ErrorCode::SearchUnavailable => "SEARCH_UNAVAILABLE",
        }
    }
}

/// Messages the online API uses verbatim (docs/contracts.md#contracts).
pub mod messages {
    pub const NOT_FOUND: &str = "Resource was not found.";
    pub(crate) const RELATED_CONFLICT: &str =
        "Only readable files created from uploaded Markdown can return related files.";
    pub const PAYLOAD_TOO_LARGE: &str =
        "The requested file exceeds the configured content read limit.";
    pub(crate) const CURSOR_INVALID: &str = "Pagination cursor is invalid.";
    pub(crate) const LIMIT_INVALID: &str = "Pagination limit is invalid.";
    pub(crate) const TREE_PARENT_INVALID: &str = "Tree parent path is invalid.";
    pub(crate) const PATH_UNSUPPORTED: &str = "This knowledge-base file path is not supported.";
    pub const SEARCH_INVALID: &str = "File search query is invalid.";
    pub(crate) const EXPAND_INVALID: &str = "Relationship exploration query is invalid.";
    pub(crate) const INPUT_INVALID: &str = "The request failed validation.";
    pub(crate) const SEARCH_UNAVAILABLE: &str =
        "Search is temporarily unavailable. Retry after the service recovers.";
    pub const SEARCH_TIMEOUT: &str = "Search exceeded the configured response deadline.";
    pub(crate) const DATA_UNAVAILABLE: &str = "The requested data is temporarily unavailable. Retry later and keep the request ID if support assistance is needed.";
}

/// A failed tool call: what the contract's error envelope carries, less the request id.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{} {}", code.as_str(), message)]
pub struct ToolError {
    pub code: ErrorCode,
    pub message: String,
    /// `error.details`; omitted from the envelope when `None`.
    pub details: Option<Map<String, Value>>,
}

impl ToolError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ToolError {
            code,
            message: message.into(),
            details: None,
        }
    }

    pub fn not_found() -> Self {
        ToolError::new(ErrorCode::NotFound, messages::NOT_FOUND)
    }

    /// 422 with `details: {field}`.
    pub(crate) fn invalid_field(message: &str, field: &str) -> Self {
        ToolError::new(ErrorCode::ValidationError, message).with_detail("field", field)
    }

    /// 422 with `details: {code}`.
    pub(crate) fn invalid_code(message: &str, detail_code: &str) -> Self {
        ToolError::new(ErrorCode::ValidationError, message).with_detail("code", detail_code)
    }

    pub(crate) fn cursor_invalid() -> Self {
        ToolError::invalid_field(messages::CURSOR_INVALID, "cursor")
    }

    pub(crate) fn limit_invalid() -> Self {
        ToolError::invalid_field(messages::LIMIT_INVALID, "limit")
    }

    pub(crate) fn with_detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details
            .get_or_insert_with(Map::new)
            .insert(key.to_string(), value.into());
        self
    }

    pub fn http_status(&self) -> u16 {
        self.code.http_status()
    }

    /// The contract's error envelope `{error: {code, message, httpStatus, details?}, requestId}`.
    pub fn envelope(&self, request_id: &str) -> Value {
        let mut error = Map::new();
        error.insert("code".into(), Value::from(self.code.as_str()));
        error.insert("message".into(), Value::from(self.message.clone()));
        error.insert("httpStatus".into(), Value::from(self.http_status()));
        if let Some(details) = &self.details {
            error.insert("details".into(), Value::Object(details.clone()));
        }
        let mut root = Map::new();
        root.insert("error".into(), Value::Object(error));
        root.insert("requestId".into(), Value::from(request_id));
        Value::Object(root)
    }
}

/// Errors of building or opening an index (not tool-call errors): the CLI exits 2 on these.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Bundle(String),
    #[error("index at {path} has format version {found}, this kbtools reads version {expected}: run `kbtools index` again")]
    FormatVersion {
        path: String,
        found: u64,
        expected: u64,
    },
    #[error("index at {path} is damaged ({reason}): run `kbtools index` again")]
    Corrupt { path: String, reason: String },
    #[error("search index: {0}")]
    Tantivy(String),
    /// The semantic lane's vectors cannot be made (no model, or a build without the feature).
    #[error("semantic index: {0}")]
    Semantic(String),
}

impl IndexError {
    pub fn io(path: impl AsRef<std::path::Path>, source: std::io::Error) -> Self {
        IndexError::Io {
            path: path.as_ref().display().to_string(),
            source,
        }
    }
}

impl From<tantivy::TantivyError> for IndexError {
    fn from(e: tantivy::TantivyError) -> Self {
        IndexError::Tantivy(e.to_string())
    }
}

/// A fresh request id, `req-<uuid v4>` (rules#request-id).
pub fn new_request_id() -> String {
    format!("req-{}", uuid::Uuid::new_v4())
}
