//! The routes: the Developer OpenAPI's knowledge-base routes and the short ones, each a tool
//! (its input from the path and query, checked against the route's parameters), the
//! knowledge-base list, health and the served OpenAPI document.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{MatchedPath, Path, RawQuery, Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Map, Value};

use crate::door::{Call, OutputFormat};
use crate::error::{ErrorCode, ToolError};
use crate::kb::KnowledgeBase;
use crate::render;
use crate::serve::live::LiveKnowledgeBase;
use crate::serve::pool;
use crate::tools;

use super::responses::{error_response, json_response, rendered_response, request_id};
use super::{spec, Served, Shared};

pub(super) async fn unsupported(request: Request) -> Response {
    let id = request_id(request.extensions());
    error_response(&unsupported_route(), &id)
}

fn unsupported_route() -> ToolError {
    ToolError::new(ErrorCode::UnsupportedRoute, "Route is not supported.")
}

/// `{"status": "ok"}` while the server answers, with each knowledge base's revision, generation
/// and state (docs/rules.md#health): what a load balancer in front of replicas reads.
pub(super) async fn health(State(served): State<Shared>) -> Response {
    // On the blocking pool: a probe may open the generation `CURRENT` names now.
    let kbs = tokio::task::spawn_blocking(move || {
        served
            .order
            .iter()
            .filter_map(|id| served.by_id.get(id))
            .map(|live| live.health())
            .collect::<Vec<_>>()
    })
    .await
    .unwrap_or_default();
    json_response(
        StatusCode::OK,
        &json!({ "status": "ok", "knowledgeBases": kbs }),
    )
}

pub(super) async fn openapi(State(served): State<Shared>) -> Response {
    json_response(StatusCode::OK, &served.spec)
}

pub(super) async fn list_kbs(
    State(served): State<Shared>,
    RawQuery(query): RawQuery,
    request: Request,
) -> Response {
    let id = request_id(request.extensions());
    // On the blocking pool: the page takes a snapshot of each knowledge base it lists.
    let page = tokio::task::spawn_blocking(move || knowledge_base_page(&served, query.as_deref()))
        .await
        .unwrap_or_else(|e| {
            Err(ToolError::new(
                ErrorCode::InternalError,
                format!("The request failed: {e}"),
            ))
        });
    match page {
        Ok(page) => json_response(StatusCode::OK, &page),
        Err(e) => error_response(&e, &id),
    }
}

/// A page of `GET /openapi/v2/knowledge-bases`: `limit` as the other list routes read it, and
/// the cursor this route issues (`kb-<offset>`).
fn knowledge_base_page(served: &Served, query: Option<&str>) -> Result<Value, ToolError> {
    let params = Value::Object(parse_query(query)?);
    if let Some(key) = params.as_object().and_then(|m| {
        m.keys()
            .find(|k| !spec::KNOWLEDGE_BASES_PARAMETERS.contains(&k.as_str()))
    }) {
        return Err(unknown_parameter(key, &spec::KNOWLEDGE_BASES_PARAMETERS));
    }
    let input = tools::Input::new(&params, &spec::KNOWLEDGE_BASES_PARAMETERS)?;
    let limit = tools::page_limit(
        &input,
        spec::KNOWLEDGE_BASES_DEFAULT_LIMIT,
        spec::KNOWLEDGE_BASES_MAX_LIMIT,
    )? as usize;
    let offset = match input.cursor()? {
        None => 0,
        Some(text) => match text
            .strip_prefix("kb-")
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse::<usize>().ok())
        {
            Some(n) if n > 0 && n < served.order.len() => n,
            _ => return Err(ToolError::cursor_invalid()),
        },
    };
    let items: Vec<Value> = served
        .order
        .iter()
        .skip(offset)
        .take(limit)
        .filter_map(|kb_id| served.by_id.get(kb_id))
        .map(|kb| knowledge_base_record(&kb.get(), &served.started))
        .collect();
    let end = offset.saturating_add(limit);
    let next = if end < served.order.len() {
        Value::String(format!("kb-{end}"))
    } else {
        Value::Null
    };
    Ok(json!({ "items": items, "nextCursor": next }))
}

/// 422 for a query parameter the operation does not take.
fn unknown_parameter(key: &str, accepted: &[&str]) -> ToolError {
    let shown = crate::text::truncate_chars(key, 64);
    let accepted = if accepted.is_empty() {
        "none".to_string()
    } else {
        accepted.join(", ")
    };
    ToolError::invalid_field(
        &format!("Unknown query parameter `{shown}`. This operation takes: {accepted}."),
        shown,
    )
}

/// A served knowledge base as the `KnowledgeBase` schema describes it.
/// `createdAt`/`updatedAt` are the time the server started serving it.
fn knowledge_base_record(kb: &KnowledgeBase, started: &str) -> Value {
    let m = &kb.manifest;
    let built = started;
    json!({
        "knowledgeBaseId": m.knowledge_base_id,
        "name": m.knowledge_base_name,
        "description": Value::Null,
        "activeContentRevision": m.active_content_revision,
        "resourceRevision": m.active_content_revision.max(1),
        "createdAt": built,
        "updatedAt": built,
    })
}

pub(super) fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    now.format(&format).unwrap_or_default()
}

/// Query parameters, percent-decoded (`+` is a space); a parameter given twice is refused, as
/// the online API refuses an array where it expects one value.
fn parse_query(query: Option<&str>) -> Result<Map<String, Value>, ToolError> {
    let mut map = Map::new();
    let Some(query) = query else { return Ok(map) };
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let (Some(key), Some(value)) = (decode_component(k), decode_component(v)) else {
            return Err(ToolError::invalid_field(
                "A query parameter is not valid percent-encoded UTF-8.",
                "query",
            ));
        };
        if map.contains_key(&key) {
            return Err(ToolError::invalid_field(
                &format!(
                    "Query parameter `{}` is given more than once.",
                    crate::text::truncate_chars(&key, 64)
                ),
                &key,
            ));
        }
        map.insert(key, Value::String(value));
    }
    Ok(map)
}

fn decode_component(s: &str) -> Option<String> {
    crate::text::percent_decode_once(&s.replace('+', " "))
}

/// The tool input of a route's request: its query, and the fileId of its path.
fn tool_input(
    route: &spec::KbRoute,
    file_id: Option<String>,
    mut query: Map<String, Value>,
) -> Value {
    if let Some(id) = file_id {
        query.insert("fileId".into(), Value::String(id));
    }
    if route.path == "/files/content" && !query.contains_key("path") {
        // The route's required parameter: absent is a validation error of `path`.
        query.insert("path".into(), Value::String(String::new()));
    }
    Value::Object(query)
}

/// The `{fileId}` segment of a request path matched by `template`, percent-decoded: `Ok(None)`
/// when the route has none, `Err` when it is empty or does not decode to UTF-8.
fn file_id_segment(template: &str, path: &str) -> Result<Option<String>, ()> {
    let Some((_, raw)) = template
        .split('/')
        .zip(path.split('/'))
        .find(|(t, _)| *t == "{fileId}")
    else {
        return Ok(None);
    };
    if raw.is_empty() {
        return Err(());
    }
    crate::text::percent_decode_once(raw).map(Some).ok_or(())
}

/// 422 for a query parameter the route does not take (the served document lists exactly the
/// ones it does); any `query` on the tree is the online API's own message.
fn check_parameters(route: &spec::KbRoute, query: &Map<String, Value>) -> Result<(), ToolError> {
    if route.path == "/tree" && query.contains_key("query") {
        return Err(ToolError::invalid_field(
            "Tree search is not supported. Use the file search endpoint.",
            "query",
        ));
    }
    match query.keys().find(|k| !route.query().contains(&k.as_str())) {
        Some(key) => Err(unknown_parameter(key, route.query())),
        None => Ok(()),
    }
}

pub(super) async fn kb_route(
    route: &'static spec::KbRoute,
    State(served): State<Shared>,
    Path(params): Path<HashMap<String, String>>,
    request: Request,
) -> Response {
    let id = request_id(request.extensions());
    let kb_id = params.get("knowledgeBaseId").cloned().unwrap_or_default();
    let Some(kb) = served.by_id.get(&kb_id).cloned() else {
        return error_response(
            &ToolError::new(ErrorCode::NotFound, crate::error::messages::NOT_FOUND),
            &id,
        );
    };
    answer(kb, route, matched(&request), request.uri().clone(), &id).await
}

pub(super) async fn short_route(
    route: &'static spec::KbRoute,
    State(served): State<Shared>,
    request: Request,
) -> Response {
    let id = request_id(request.extensions());
    let Some(kb) = served
        .order
        .first()
        .and_then(|kb_id| served.by_id.get(kb_id))
        .cloned()
    else {
        return error_response(
            &ToolError::new(ErrorCode::NotFound, crate::error::messages::NOT_FOUND),
            &id,
        );
    };
    answer(kb, route, matched(&request), request.uri().clone(), &id).await
}

/// The route the router matched a request to (its `{fileId}` segment is the file id).
fn matched(request: &Request) -> String {
    request
        .extensions()
        .get::<MatchedPath>()
        .map_or("", MatchedPath::as_str)
        .to_string()
}

/// Answers one tool route as every door answers a call ([`crate::door`]), from one snapshot of
/// `kb` taken on the blocking pool.
pub(super) async fn answer(
    kb: Arc<LiveKnowledgeBase>,
    route: &'static spec::KbRoute,
    template: String,
    uri: axum::http::Uri,
    id: &str,
) -> Response {
    let Ok(file_id) = file_id_segment(&template, uri.path()) else {
        return error_response(&unsupported_route(), id);
    };
    let query = match parse_query(uri.query()).and_then(|q| check_parameters(route, &q).map(|()| q))
    {
        Ok(q) => q,
        Err(e) => return error_response(&e, id),
    };
    let call = Call::with_id(route.tool, tool_input(route, file_id, query), id.into());
    // The contract JSON, the one format the served document describes; a search's hints for
    // the search page in headers beside it.
    let rendered = pool::on_snapshot(kb, move |kb| {
        let answer = call.answer(kb);
        let hints = page_hints(kb, &answer.result);
        (
            answer.render(OutputFormat::Json, render::DEFAULT_TEXT_BUDGET),
            hints,
        )
    })
    .await;
    match rendered {
        Ok((rendered, hints)) => {
            let mut response = rendered_response(rendered, id);
            response.headers_mut().extend(hints);
            response
        }
        Err(e) => error_response(
            &ToolError::new(ErrorCode::InternalError, format!("The request failed: {e}")),
            id,
        ),
    }
}

/// A search's terms to mark, at most this many.
const MOST_MARKS: usize = 32;

/// For the search page, beside a search's contract JSON (headers, so the body stays the
/// contract's): `x-kbtools-marks`, the question's rare terms (on at most half of the pages:
/// [`crate::search::excerpt::rare_terms`]), percent-encoded and space-separated; and
/// `x-kbtools-found-by`, how each result was found as people say it
/// ([`crate::search::Lane::found_as`]), a result's ways joined by `+`, results by `,`.
fn page_hints(
    kb: &KnowledgeBase,
    result: &Result<tools::Output, ToolError>,
) -> axum::http::HeaderMap {
    use axum::http::HeaderValue;
    use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
    let mut headers = axum::http::HeaderMap::new();
    let Ok(tools::Output::SearchFiles(output)) = result else {
        return headers;
    };
    let marks: Vec<String> = crate::search::excerpt::rare_terms(kb, &output.query.query)
        .iter()
        .take(MOST_MARKS)
        .map(|term| utf8_percent_encode(term, NON_ALPHANUMERIC).to_string())
        .collect();
    let found: Vec<String> = output
        .items
        .iter()
        .map(|item| {
            let mut ways: Vec<&str> = Vec::new();
            for way in item.lanes.iter().map(|lane| lane.found_as()) {
                if !ways.contains(&way) {
                    ways.push(way);
                }
            }
            ways.join("+").replace(' ', "-")
        })
        .collect();
    for (name, value) in [
        ("x-kbtools-marks", marks.join(" ")),
        ("x-kbtools-found-by", found.join(",")),
    ] {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(name, value);
        }
    }
    headers
}
