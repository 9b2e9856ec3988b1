//! How every HTTP answer is made: the JSON body and its content type, the error envelope with
//! its status and `x-request-id`, and the request id the front door gives each request.

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::Value;

use crate::error::{new_request_id, ToolError};

/// The request id of a request: the incoming `x-request-id` when it is a sane token, otherwise
/// `req-<uuid v4>`.
#[derive(Clone)]
pub(super) struct RequestId(pub(super) String);

pub(super) const JSON_CONTENT_TYPE: &str = "application/json; charset=utf-8";

pub(super) fn json_response(status: StatusCode, body: &Value) -> Response {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let mut response = Response::new(Body::from(bytes));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(JSON_CONTENT_TYPE),
    );
    response
}

pub(super) fn error_response(error: &ToolError, request_id: &str) -> Response {
    let status =
        StatusCode::from_u16(error.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = json_response(status, &error.envelope(request_id));
    if let Ok(value) = HeaderValue::from_str(request_id) {
        response.headers_mut().insert("x-request-id", value);
    }
    response
}

pub(super) fn request_id(headers_source: &axum::http::Extensions) -> String {
    headers_source
        .get::<RequestId>()
        .map(|r| r.0.clone())
        .unwrap_or_else(new_request_id)
}
