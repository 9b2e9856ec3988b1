//! The search page for people: a small web application served at `/` (and `/kb/{id}/…`, the
//! addresses it shows), every asset embedded in the binary. It calls the same `/openapi/v2/…`
//! routes as any client, with the same token (which it asks for and keeps in the tab's session
//! storage). Its responses carry a strict Content-Security-Policy: scripts and styles from this
//! server only, no inline script, requests to this server only.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

const INDEX_HTML: &str = include_str!("web/index.html");
const APP_JS: &str = include_str!("web/app.js");
const APP_CSS: &str = include_str!("web/app.css");

/// What the page may load: its own script and style, requests to this server; nothing inline,
/// no frames, no plugins, no form posts elsewhere.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; \
     form-action 'self'; frame-ancestors 'none'";

/// Whether `path` is the page's (the shell and its assets, which hold no knowledge-base data:
/// served without the token, which the page then asks for).
pub(crate) fn is_page_path(path: &str) -> bool {
    path == "/"
        || path == "/favicon.ico"
        || path.starts_with("/kb/")
        || path.starts_with("/assets/")
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut response = (StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // The assets change with the binary: a browser asks again (cheap, they are small).
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The page's shell (every address of the application).
pub async fn index() -> Response {
    asset("text/html; charset=utf-8", INDEX_HTML)
}

pub async fn script() -> Response {
    asset("text/javascript; charset=utf-8", APP_JS)
}

pub async fn style() -> Response {
    asset("text/css; charset=utf-8", APP_CSS)
}

/// No icon: an empty answer rather than a 404 in every browser's console.
pub async fn no_icon() -> Response {
    StatusCode::NO_CONTENT.into_response()
}
