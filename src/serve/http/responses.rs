//! How every HTTP answer is made: a tool's rendered answer (its body and content type, its
//! status), the error envelope with its status and `x-request-id`, and the request id the front
//! door gives each request.

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::Value;

use crate::door::{self, Rendered};
use crate::error::{new_request_id, ToolError};

/// The request id of a request: the incoming `x-request-id` when it is a sane token, otherwise
/// `req-<uuid v4>`.
#[derive(Clone)]
pub(super) struct RequestId(pub(super) String);

pub(super) const JSON_CONTENT_TYPE: &str = "application/json; charset=utf-8";
const TEXT_CONTENT_TYPE: &str = "text/plain; charset=utf-8";

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

/// A request's error outside a tool call (a route, a parameter, a knowledge base not served):
/// its envelope, its status, its request id as `x-request-id`.
pub(super) fn error_response(error: &ToolError, request_id: &str) -> Response {
    let status =
        StatusCode::from_u16(error.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    with_request_id(
        json_response(status, &error.envelope(request_id)),
        request_id,
    )
}

/// The response of a tool's answer as the door rendered it ([`crate::door::Answer::render`]):
/// its body with its status, and on an error the request id as `x-request-id`.
pub(super) fn rendered_response(rendered: Rendered, request_id: &str) -> Response {
    let status = StatusCode::from_u16(rendered.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let response = match &rendered.body {
        door::Body::Json(json) => json_response(status, json),
        door::Body::Text(text) => text_response(status, text),
    };
    if rendered.is_error {
        with_request_id(response, request_id)
    } else {
        response
    }
}

fn text_response(status: StatusCode, text: &str) -> Response {
    let mut response = Response::new(Body::from(text.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(TEXT_CONTENT_TYPE),
    );
    response
}

fn with_request_id(mut response: Response, request_id: &str) -> Response {
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
