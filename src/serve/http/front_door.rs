//! What every request passes before its route: the request id, the `Host` and `Origin` checks
//! (DNS rebinding), the bearer token, the head and body limits, and the contract's envelope on
//! the bare answers of the timeout and body-limit layers.

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use sha2::{Digest, Sha256};

use crate::error::{new_request_id, ErrorCode, ToolError};

use super::responses::{error_response, RequestId, JSON_CONTENT_TYPE};
use super::{mcp, web, Shared};

pub(super) fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The size of a request's head as sent in HTTP/1.1 (request line, `name: value` lines, the blank
/// line).
fn head_bytes(request: &Request) -> usize {
    let line = request.method().as_str().len() + 1 + request.uri().to_string().len() + 11;
    let fields: usize = request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + 2 + value.len() + 2)
        .sum();
    line + fields + 2
}

/// 431 for a head over the limit, closing the connection, as hyper answers one it caught.
fn head_too_large() -> Response {
    let mut response =
        axum::response::IntoResponse::into_response(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// Request id, then authentication (before any routing or validation, as online), then the
/// body size, then the route; the request id is echoed on every response, and the bare
/// responses of the timeout and body-limit layers get the contract's error envelope.
pub(super) async fn front_door(
    State(served): State<Shared>,
    mut request: Request,
    next: Next,
) -> Response {
    // hyper checks its limit between reads, so a head up to one read past it gets through.
    if head_bytes(&request) > served.max_head_bytes {
        return head_too_large();
    }
    let is_mcp = is_mcp_path(request.uri().path());
    let id = request
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty() && v.len() <= 200 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map(str::to_string)
        .unwrap_or_else(new_request_id);
    // DNS rebinding: every route, before anything else (hosts.rs).
    let headers = request.headers();
    let checked = served.hosts.check(
        headers.get(header::HOST).map(HeaderValue::as_bytes),
        headers.get(header::ORIGIN).map(HeaderValue::as_bytes),
        is_mcp,
    );
    if let Err(refusal) = checked {
        let mut response = error_response(
            &ToolError::new(ErrorCode::Forbidden, refusal.message()),
            &id,
        );
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        return response;
    }
    // The page and its assets hold no knowledge-base data: served without the token, which
    // the page asks for before it calls the API.
    if let Some(expected) = served
        .token_digest
        .filter(|_| !web::is_page_path(request.uri().path()))
    {
        let presented = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer_token)
            .map(digest);
        if presented != Some(expected) {
            let mut response = error_response(
                &ToolError::new(ErrorCode::Unauthorized, "Valid bearer API key is required."),
                &id,
            );
            // RFC 6750 §3: the scheme a client must use (an MCP client that finds no
            // challenge reports an OAuth problem instead of a wrong token).
            let challenge = match presented {
                Some(_) => r#"Bearer realm="kbtools", error="invalid_token""#,
                None => r#"Bearer realm="kbtools""#,
            };
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(challenge),
            );
            return response;
        }
    }
    let declared_length = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let max_body = if is_mcp {
        mcp::MAX_MCP_BODY_BYTES
    } else {
        served.max_body_bytes
    };
    if declared_length.is_some_and(|n| n > max_body as u64) {
        return body_too_large(max_body, is_mcp, &id);
    }
    request.extensions_mut().insert(RequestId(id.clone()));
    let mut response = next.run(request).await;
    let bare = response.headers().get(header::CONTENT_TYPE)
        != Some(&HeaderValue::from_static(JSON_CONTENT_TYPE));
    if response.headers().get(header::CONTENT_TYPE).is_none()
        && response.status() == StatusCode::SERVICE_UNAVAILABLE
    {
        // The timeout layer's bare 503 (no body, no type).
        return error_response(
            &ToolError::new(
                ErrorCode::SearchUnavailable,
                "The request took too long and was stopped.",
            ),
            &id,
        );
    }
    if bare && response.status() == StatusCode::PAYLOAD_TOO_LARGE && !is_mcp {
        return body_too_large(served.max_body_bytes, false, &id);
    }
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert("x-request-id", value);
    }
    let headers = response.headers_mut();
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// The token of an `Authorization: Bearer <token>` value; the scheme's case does not matter
/// (RFC 9110 §11.1).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once([' ', '\t'])?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

fn body_too_large(max: usize, mcp: bool, request_id: &str) -> Response {
    let why = if mcp {
        "an MCP message is a small JSON-RPC object"
    } else {
        "every OpenAPI route is a GET"
    };
    error_response(
        &ToolError::new(
            ErrorCode::PayloadTooLarge,
            format!("The request body is larger than {max} bytes; {why}."),
        ),
        request_id,
    )
}

/// `/mcp` or `/mcp/{knowledgeBaseId}`.
fn is_mcp_path(path: &str) -> bool {
    path == "/mcp" || path.starts_with("/mcp/")
}
