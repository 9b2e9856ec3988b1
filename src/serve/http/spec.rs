//! The OpenAPI document the local server serves at `/openapi/v2/openapi.json`: the online
//! Developer OpenAPI (`focowiki-openapi.json`, embedded) cut down to what kbtools answers — the
//! read routes of the six tools, the knowledge-base list, health and this document — plus the
//! short backend-adapter routes, and made to describe this server exactly: the parameter bounds,
//! enums and path patterns kbtools enforces, the knowledge-base ids it serves, every status it
//! can answer, the `x-request-id` header on every response, and no parameter it does not take.
//!
//! The query parameters each route takes ([`KB_ROUTES`], `KNOWLEDGE_BASES_PARAMETERS`) are the
//! server's allowlist too: anything else is a 422, so the document and the server cannot drift.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use serde_json::{json, Map, Value};

use crate::tools::{ParamsDef, ToolName};

/// The online document, unchanged.
const ONLINE_SPEC: &str = include_str!("focowiki-openapi.json");

const BASE: &str = "/openapi/v2/knowledge-bases/{knowledgeBaseId}";

/// One read route of a knowledge base: the tool it runs and which of that tool's input fields it
/// takes as query parameters. The fields come from the tool's `Params`
/// ([`ToolName::fields`]), so a field added there is a parameter here, in the server's allowlist
/// and in the served document.
pub struct KbRoute {
    /// Path under `BASE` (the long route).
    pub path: &'static str,
    /// The short route for the default knowledge base.
    pub short: &'static str,
    /// The tool the route runs.
    pub tool: ToolName,
    /// The tool's fields the route takes as query parameters.
    pub fields: RouteFields,
}

/// Which of a tool's fields a route takes as query parameters.
pub enum RouteFields {
    /// All of them but these (a path segment gives `fileId`).
    AllBut(&'static [&'static str]),
    /// Only these: the route is one form of the tool (the online content routes read a whole
    /// file, so `read_file`'s partial reads are not parameters there).
    Only(&'static [&'static str]),
}

impl KbRoute {
    /// The query parameters the route takes (its allowlist), from its tool's `Params`.
    pub fn query(&self) -> &'static [&'static str] {
        static QUERIES: OnceLock<Vec<Vec<&'static str>>> = OnceLock::new();
        let queries = QUERIES.get_or_init(|| {
            let online = online_spec();
            KB_ROUTES
                .iter()
                .map(|route| {
                    let operation = &online["paths"][format!("{BASE}{}", route.path)]["get"];
                    route.query_of(route.tool.fields(), operation)
                })
                .collect()
        });
        KB_ROUTES
            .iter()
            .position(|route| route.path == self.path)
            .and_then(|i| queries.get(i))
            .map_or(&[], Vec::as_slice)
    }

    /// The query parameters the route takes of a tool with `fields`: in the online document's
    /// order (its `operation`), then the fields it does not have, in the tool's order.
    fn query_of(&self, fields: &'static [&'static str], operation: &Value) -> Vec<&'static str> {
        let taken: Vec<&'static str> = fields
            .iter()
            .copied()
            .filter(|f| match self.fields {
                RouteFields::AllBut(except) => !except.contains(f),
                RouteFields::Only(only) => only.contains(f),
            })
            .collect();
        let documented: Vec<&str> = operation["parameters"]
            .as_array()
            .map(|ps| {
                ps.iter()
                    .filter(|p| p["in"] == "query")
                    .filter_map(|p| p["name"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        let mut ordered: Vec<&'static str> = documented
            .iter()
            .filter_map(|name| taken.iter().copied().find(|f| f == name))
            .collect();
        ordered.extend(taken.iter().filter(|f| !documented.contains(f)));
        ordered
    }
}

fn online_spec() -> Value {
    serde_json::from_str(ONLINE_SPEC).unwrap_or_else(|_| json!({}))
}

/// The served read routes of a knowledge base.
pub static KB_ROUTES: [KbRoute; 7] = [
    KbRoute {
        path: "/tree",
        short: "/tree",
        tool: ToolName::ListTree,
        fields: RouteFields::AllBut(&[]),
    },
    KbRoute {
        path: "/files/content",
        short: "/files/content",
        tool: ToolName::ReadFile,
        fields: RouteFields::Only(&["path"]),
    },
    KbRoute {
        path: "/files/search",
        short: "/search",
        tool: ToolName::SearchFiles,
        fields: RouteFields::AllBut(&[]),
    },
    KbRoute {
        path: "/graph/expand",
        short: "/graph/expand",
        tool: ToolName::ExpandGraph,
        fields: RouteFields::AllBut(&[]),
    },
    KbRoute {
        path: "/files/{fileId}",
        short: "/files/{fileId}",
        tool: ToolName::GetFile,
        fields: RouteFields::AllBut(&["fileId"]),
    },
    KbRoute {
        path: "/files/{fileId}/content",
        short: "/files/{fileId}/content",
        tool: ToolName::ReadFile,
        fields: RouteFields::Only(&[]),
    },
    KbRoute {
        path: "/files/{fileId}/related",
        short: "/files/{fileId}/related",
        tool: ToolName::ReadRelated,
        fields: RouteFields::AllBut(&["fileId"]),
    },
];

/// The query parameters of `GET /openapi/v2/knowledge-bases`.
pub(crate) const KNOWLEDGE_BASES_PARAMETERS: [&str; 2] = ["limit", "cursor"];
/// Page size of `GET /openapi/v2/knowledge-bases` (the online admin-list defaults).
pub(crate) const KNOWLEDGE_BASES_DEFAULT_LIMIT: u64 = 50;
pub(crate) const KNOWLEDGE_BASES_MAX_LIMIT: u64 = 200;

/// The bounds of a numeric query parameter `(minimum, maximum)`: for a tool's field, the range
/// its `Params` declares (what kbtools enforces where the online document leaves it open).
fn bounds(route: &str, name: &str, tool: Option<&ParamsDef>) -> Option<(i64, i64)> {
    if route == "/openapi/v2/knowledge-bases" {
        return (name == "limit").then_some((1, KNOWLEDGE_BASES_MAX_LIMIT as i64));
    }
    let property = tool?.property(name);
    Some((property["minimum"].as_i64()?, property["maximum"].as_i64()?))
}

/// The parameter of a tool field the online document does not have, described from the tool's
/// input schema.
fn undocumented_parameter(name: &str, property: &Value) -> Value {
    let mut schema = Map::new();
    let kind = match &property["type"] {
        Value::Array(kinds) => kinds.iter().find(|k| *k != "null").cloned(),
        Value::Null => None,
        kind => Some(kind.clone()),
    };
    if let Some(kind) = kind {
        schema.insert("type".into(), kind);
    }
    for key in ["enum", "minimum", "maximum", "minLength", "maxLength"] {
        if let Some(value) = property.get(key) {
            schema.insert(key.into(), value.clone());
        }
    }
    json!({
        "name": name,
        "in": "query",
        "required": false,
        "description": property["description"].as_str().unwrap_or(""),
        "schema": schema,
    })
}

/// What the served document says beyond the online one.
#[derive(Debug, Clone, Default)]
pub struct SpecOptions {
    /// Requests need `Authorization: Bearer <token>`.
    pub with_auth: bool,
    /// The knowledge-base ids served, the default (short routes) first.
    pub knowledge_base_ids: Vec<String>,
    /// A served knowledge base renders `_graph/by-file/**/index.json` records (a plain Markdown
    /// folder with a page named `index.md`): those paths open too.
    pub virtual_index_graphs: bool,
    /// A source page of the default knowledge base, `(fileId, path)`, for parameter examples.
    pub example_page: Option<(String, String)>,
}

// ---- Patterns (ECMA-262 and Python `re` alike; both anchors explicit). ----

/// The characters a path may not hold: C0, DEL, C1 and the bidi controls (`is_forbidden_path_char`).
const CONTROLS: &str = r"\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069";
/// White space (Unicode `White_Space`) that is not a control character.
const SPACES: &str = r" \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000";

/// One path segment: 1–1,000 characters, no `/`, `\` or control, not `.` or `..`.
fn segment() -> String {
    let any = format!(r"[^/\\{CONTROLS}]");
    let no_dot = format!(r"[^./\\{CONTROLS}]");
    format!(r"(?:{no_dot}{any}{{0,999}}|\.{no_dot}{any}{{0,998}}|\.\.{any}{{1,998}})")
}

/// `index.md` or `index-<leaf>.md` (a navigation page).
const NAVIGATION: &str =
    r"(?:index\.md|index-(?!map-)[A-Za-z0-9](?:[A-Za-z0-9._-]{0,238}[A-Za-z0-9])?\.md)";
/// `-part-NNNN` with NNNN from 0001.
const PART: &str = r"(?:-part-(?:000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3}))";

/// `parentPath` of `list_tree`: empty or `root` (the root), or an allowed directory in canonical
/// form (`is_allowed_tree_parent`); a directory under `pages` must not end in `.md`.
pub(crate) fn parent_path_pattern() -> String {
    let s = segment();
    format!(
        r"^(?:root|pages(?:/{s})*(?<![^/]\.[mM][dD])|_index|_index/pages(?:/{s})*|_index/terms|_index/terms/(?:latin|han|kana|hangul|number|other)|_graph|_graph/by-directory(?:/{s})*|_graph/by-file(?:/{s})*)?(?<![{SPACES}])$"
    )
}

/// `path` of `read_file`: a canonical path of a file a bundle may hold (`classify`).
pub(crate) fn file_path_pattern(virtual_index_graphs: bool) -> String {
    let s = segment();
    let any = format!(r"[^/\\{CONTROLS}]");
    let nav = NAVIGATION;
    let part = PART;
    let reserved =
        r"(?:_[gG][rR][aA][pP][hH]|_[iI][nN][dD][eE][xX]|_[sS][eE][gG][mM][eE][nN][tT][sS])";
    let mut branches = vec![
        r"index\.md".to_string(),
        r"log\.md".to_string(),
        format!(r"pages(?!/{reserved}/)(?:/{s})*/{any}{{1,997}}\.[mM][dD]"),
        r"_index/catalog\.json".to_string(),
        r"_graph/catalog\.json".to_string(),
        format!(r"(?:_index|_graph)/{nav}"),
        format!(r"_index/pages(?:/{s})*/(?:{nav}|index\.json)"),
        format!(r"_index/pages/all-documents{part}?\.json"),
        format!(r"_index/pages(?:/{s})*/({s})/\1-documents{part}?\.json"),
        format!(r"_index/terms/(?:{nav}|index\.json)"),
        format!(
            r"_index/terms/(latin|han|kana|hangul|number|other)/(?:{nav}|index\.json|\2-terms{part}\.json)"
        ),
        format!(r"_graph/by-directory(?:/{s})*/(?:{nav}|index\.json)"),
        format!(r"_graph/by-directory/all-relationships{part}?\.json"),
        format!(r"_graph/by-directory(?:/{s})*/({s})/\3-relationships{part}?\.json"),
        format!(r"_graph/by-file(?:/{s})*/(?:{nav}|(?!index\.json$){any}{{1,995}}\.json)"),
    ];
    if virtual_index_graphs {
        branches.push(format!(r"_graph/by-file(?:/{s})*/index\.json"));
    }
    format!("^(?:{})$", branches.join("|"))
}

/// A blank value: only white space (Unicode `White_Space`), which the server trims away.
const BLANK_PATTERN: &str =
    r"^[\t\n\x0b\x0c\r\x85 \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$";

/// Optional query parameters whose blank value counts as omitted (the online API's rule for
/// numbers and enums; `rerank` only when empty).
const BLANK_MEANS_OMITTED: [&str; 13] = [
    "limit",
    "depth",
    "fanout",
    "graphDepth",
    "graphFanout",
    "rerankTopK",
    "rerankScoreThreshold",
    "scope",
    "fileKind",
    "mode",
    "okfStatus",
    "okfTrustTier",
    "okfFreshness",
];

/// A `fileId`: at least one character that is not white space (it is trimmed).
const FILE_ID_PATTERN: &str = r"^[\s\S]*[^\t\n\x0b\x0c\r\x85 \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][\s\S]*$";

/// The search `query`: none of the rejected control characters (tab is allowed) and at least one
/// character that is not white space.
fn query_pattern() -> String {
    let allowed = r"[^\x00-\x08\x0a-\x1f\x7f-\x9f]";
    format!(r"^{allowed}*[^\x00-\x20\x7f-\x9f{SPACES}]{allowed}*$")
}

/// The served document.
pub(crate) fn served_spec(options: &SpecOptions) -> Value {
    let mut spec = online_spec();
    let online_paths = spec
        .get("paths")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut paths = Map::new();
    for top in [
        "/openapi/v2/health",
        "/openapi/v2/openapi.json",
        "/openapi/v2/knowledge-bases",
    ] {
        if let Some(get) = online_paths.get(top).and_then(|p| p.get("get")) {
            let mut get = get.clone();
            let allowed: &[&str] = if top == "/openapi/v2/knowledge-bases" {
                &KNOWLEDGE_BASES_PARAMETERS
            } else {
                &[]
            };
            tighten(top, &mut get, allowed, None, options);
            finish_responses(&mut get, top == "/openapi/v2/knowledge-bases", false);
            paths.insert(top.to_string(), json!({ "get": get }));
        }
    }
    for route in &KB_ROUTES {
        let Some(get) = route_operation(route, &route.tool.params(), options) else {
            continue;
        };
        let mut short_get = get.clone();
        paths.insert(format!("{BASE}{}", route.path), json!({ "get": get }));
        // The short route answers for the default knowledge base: no knowledgeBaseId.
        if let Some(params) = short_get
            .get_mut("parameters")
            .and_then(Value::as_array_mut)
        {
            params.retain(|p| p.get("name").and_then(Value::as_str) != Some("knowledgeBaseId"));
        }
        if let Some(Value::String(id)) = short_get.get_mut("operationId") {
            id.push_str("Short");
        }
        if let Some(Value::Array(tags)) = short_get.get_mut("tags") {
            *tags = vec![json!(SHORT_TAG)];
        }
        paths.insert(route.short.to_string(), json!({ "get": short_get }));
    }
    let Some(object) = spec.as_object_mut() else {
        return spec;
    };
    object.insert("paths".into(), Value::Object(paths));
    object.insert("servers".into(), json!([{ "url": "/" }]));
    object.remove("webhooks");
    if let Some(info) = object.get_mut("info").and_then(Value::as_object_mut) {
        info.insert(
            "description".into(),
            json!("The read-only routes of the Focowiki Developer OpenAPI that kbtools serves offline for local knowledge-base bundles, plus short backend-adapter routes for the default (first) knowledge base. Every response carries an `x-request-id` header: the request's own `x-request-id` when it is 1–200 visible ASCII characters, otherwise a new `req-<uuid>`. A query parameter an operation does not list, or one given twice, is a 422 `VALIDATION_ERROR`; an unknown route or method is a 404 `UNSUPPORTED_ROUTE`. A request whose `Host` names a host the server does not answer for (by default anything but a loopback name or address) is a 403 `FORBIDDEN`, against DNS rebinding."),
        );
    }
    if options.with_auth {
        object.insert("security".into(), json!([{ "bearerAuth": [] }]));
    } else {
        // No authentication: an empty requirement list (the key stays, as the contract's
        // document schema requires it).
        object.insert("security".into(), json!([]));
        if let Some(Value::Object(paths)) = object.get_mut("paths") {
            for path in paths.values_mut() {
                if let Some(get) = path.get_mut("get").and_then(Value::as_object_mut) {
                    get.remove("security");
                    if let Some(Value::Object(responses)) = get.get_mut("responses") {
                        responses.remove("401");
                    }
                }
            }
        }
    }
    prune(object);
    describe_health(&mut spec);
    spec
}

/// The health response as this server answers it: the contract's `status`, and what a load
/// balancer in front of replicas reads of each knowledge base (docs/rules.md#health).
fn describe_health(spec: &mut Value) {
    let Some(Value::Object(health)) =
        spec.pointer_mut("/components/schemas/HealthResponse/properties")
    else {
        return;
    };
    health.insert(
        "knowledgeBases".into(),
        json!({
            "type": "array",
            "description": "Each knowledge base served: the revision and index generation it answers from, and whether that is the generation the index folder names now (`switching` while a newer one opens, `stale` when it did not open or the folder's `CURRENT` names none; the previous one answers meanwhile).",
            "items": {
                "type": "object",
                "additionalProperties": false,
                "required": ["knowledgeBaseId", "activeContentRevision", "generation", "state"],
                "properties": {
                    "knowledgeBaseId": { "type": "string" },
                    "activeContentRevision": { "type": "integer", "minimum": 0 },
                    "generation": { "type": ["string", "null"] },
                    "state": { "type": "string", "enum": crate::serve::live::HealthState::NAMES },
                    "embedding": embedding_health(),
                }
            }
        }),
    );
}

/// The health answer's `embedding`: how far the server's background embedding has come
/// (docs/semantic.md).
fn embedding_health() -> Value {
    json!({
        "type": "object",
        "description": "How far embedding in the background has come (present while the server runs one): `pending` before it looked at the index, `running` while it embeds the pages the answering generation lacks (searches meanwhile say `degraded` or `unavailable` in `semanticStatus`), `done` when that generation has every vector the installed models make, `failed` when the last background build failed (`error` says why; lexical answers go on).",
        "additionalProperties": false,
        "required": ["state", "windowsDone", "windowsTotal", "secondsLeft", "error"],
        "properties": {
            "state": { "type": "string", "enum": crate::serve::live::EmbeddingState::NAMES },
            "windowsDone": { "type": "integer", "minimum": 0 },
            "windowsTotal": { "type": "integer", "minimum": 0 },
            "secondsLeft": { "type": ["integer", "null"], "minimum": 0 },
            "error": { "type": ["string", "null"] },
        }
    })
}

/// The served operation of `route` (its long form) for a tool whose input is `params`: the
/// online operation with the parameters the route takes of `params`, tightened.
pub fn route_operation(
    route: &KbRoute,
    params: &ParamsDef,
    options: &SpecOptions,
) -> Option<Value> {
    let online = online_spec();
    let mut get = online["paths"]
        .get(format!("{BASE}{}", route.path))?
        .get("get")?
        .clone();
    let allowed = route.query_of(params.fields, &get);
    tighten(route.path, &mut get, &allowed, Some(params), options);
    finish_responses(&mut get, true, true);
    Some(get)
}

const SHORT_TAG: &str = "Backend adapter (short routes)";

/// Drops the parameters kbtools does not take, adds the fields the online document lacks,
/// applies [`bounds`], patterns and the served ids
/// to the operation of `route`.
fn tighten(
    route: &str,
    get: &mut Value,
    allowed: &[&str],
    params: Option<&ParamsDef>,
    options: &SpecOptions,
) {
    let tool = params;
    let Some(operation) = get.get_mut("parameters").and_then(Value::as_array_mut) else {
        return;
    };
    operation.retain(|p| {
        p.get("in").and_then(Value::as_str) != Some("query")
            || allowed.contains(&p.get("name").and_then(Value::as_str).unwrap_or(""))
    });
    for name in allowed {
        let documented = operation
            .iter()
            .any(|p| p["in"] == "query" && p["name"] == *name);
        if let (false, Some(tool)) = (documented, tool) {
            operation.push(undocumented_parameter(name, tool.property(name)));
        }
    }
    for p in operation.iter_mut() {
        let name = p
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let location = p
            .get("in")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let Some(param) = p.as_object_mut() else {
            continue;
        };
        let mut schema = param
            .get("schema")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        if let Some((min, max)) = bounds(route, &name, tool) {
            schema.remove("enum");
            schema.insert("minimum".into(), json!(min));
            schema.insert("maximum".into(), json!(max));
        }
        describe(route, (&name, &location), param, &mut schema, options);
        if location == "query" && (BLANK_MEANS_OMITTED.contains(&name.as_str()) || name == "rerank")
        {
            schema = blank_or(schema, name == "rerank");
            let text = param
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let note = if name == "rerank" {
                "An empty value counts as omitted."
            } else {
                "A blank value counts as omitted."
            };
            param.insert("description".into(), json!(format!("{text} {note}")));
        }
        param.insert("schema".into(), Value::Object(schema));
    }
}

/// What kbtools serves of parameter `name` in `location` of `route` beyond the online
/// document: the ids it serves, the patterns and limits its validation applies, examples from
/// the served knowledge base, and what a value outside them answers.
fn describe(
    route: &str,
    (name, location): (&str, &str),
    param: &mut Map<String, Value>,
    schema: &mut Map<String, Value>,
    options: &SpecOptions,
) {
    let example_page = options.example_page.as_ref();
    match (name, location) {
        ("knowledgeBaseId", "path") => {
            schema.insert("enum".into(), json!(options.knowledge_base_ids));
            param.insert(
                "description".into(),
                json!("Identifier of a knowledge base this server serves (`GET /openapi/v2/knowledge-bases` lists them); any other id is a 404."),
            );
            if let Some(first) = options.knowledge_base_ids.first() {
                param.insert("example".into(), json!(first));
            }
        }
        ("fileId", _) => {
            schema.insert("pattern".into(), json!(FILE_ID_PATTERN));
            if route == "/files/{fileId}" {
                // `/files/search` and `/files/content` are other operations.
                schema.insert("not".into(), json!({ "enum": ["search", "content"] }));
            }
            if let Some((id, _)) = example_page {
                param.insert("example".into(), json!(id));
            }
            param.insert(
                "description".into(),
                json!(format!(
                    "{} A bundle path is accepted too. Leading and trailing white space is ignored; an empty or blank value is a 422.",
                    param.get("description").and_then(Value::as_str).unwrap_or("")
                )),
            );
        }
        ("path", "query") => {
            schema.insert(
                "pattern".into(),
                json!(file_path_pattern(options.virtual_index_graphs)),
            );
            schema.insert("maxLength".into(), json!(2048));
            if let Some((_, path)) = example_page {
                schema.insert("example".into(), json!(path));
            }
            param.insert(
                "description".into(),
                json!("Canonical bundle path of a readable file: `index.md`, `log.md`, `pages/**.md`, or a record under `_index/` or `_graph/` (the pattern lists the forms). Canonical means relative, `/`-separated, in Unicode NFC, at most 2,048 UTF-16 code units with segments of at most 1,000 characters, no empty, `.` or `..` segment, no backslash, control or bidi-control character, no trailing white space, and no segment that percent-decodes to a traversal, separator, control character or invalid UTF-8. Any other value is a 422; a canonical path with no file is a 404."),
            );
        }
        ("parentPath", _) => {
            schema.insert("pattern".into(), json!(parent_path_pattern()));
            schema.insert("maxLength".into(), json!(2048));
            param.insert(
                "description".into(),
                json!("Directory to list: `root`, empty or absent for the bundle root, else an allowed directory (`pages[/…]` not ending in `.md`, `_index`, `_index/pages[/…]`, `_index/terms[/latin|han|kana|hangul|number|other]`, `_graph`, `_graph/by-directory[/…]`, `_graph/by-file[/…]`) in canonical form (see `path` of `getFileContentByPath`). Any other value is a 422; an allowed directory that does not exist lists nothing."),
            );
        }
        ("query", "query") if route == "/files/search" => {
            schema.insert("pattern".into(), json!(query_pattern()));
            param.insert(
                "description".into(),
                json!("One standalone natural-language question or search text. No control character other than tab. After NFKC normalization and white-space collapsing it must hold 2 through 512 grapheme clusters and at most 2,048 UTF-8 bytes; otherwise 422."),
            );
        }
        ("cursor", _) => {
            param.insert(
                "description".into(),
                json!("`nextCursor` of the previous page of this operation, with the same other parameters; an empty value means none. Any other value (made up, from another operation or other parameters, or from an older revision) is a 422: restart without a cursor."),
            );
        }
        ("rerank", _) => {
            // The examples of the rerank controls only go together with `rerank=true`.
            param.insert("example".into(), json!(true));
        }
        ("rerankTopK", _) | ("rerankScoreThreshold", _) => {
            schema.remove("example");
            let example = if name == "rerankTopK" {
                json!(30)
            } else {
                json!(0.35)
            };
            param.insert("example".into(), example);
            let text = param
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            param.insert(
                "description".into(),
                json!(format!("{text} Given without `rerank=true`, or `rerankTopK` below `limit`, it is a 422 (`INVALID_FILE_SEARCH_RERANK_CONTROLS`)."))
            );
        }
        _ => {}
    }
}

/// `schema`, or a blank value that counts as omitted (`empty_only`: only the empty string).
fn blank_or(mut schema: Map<String, Value>, empty_only: bool) -> Map<String, Value> {
    let default = schema.remove("default");
    let blank = if empty_only {
        json!({ "type": "string", "maxLength": 0 })
    } else {
        json!({ "type": "string", "pattern": BLANK_PATTERN })
    };
    let mut wrapped = Map::new();
    wrapped.insert("anyOf".into(), json!([Value::Object(schema), blank]));
    if let Some(default) = default {
        wrapped.insert("default".into(), default);
    }
    wrapped
}

/// Makes the responses of an operation those this server gives: no 429 (no rate limit
/// offline); a 413 for a request body over the limit; a 422 for a parameter the operation does
/// not take or one given twice (`validates`); 404 for an unknown knowledge base or file
/// (`kb_scoped`); and the `x-request-id` header on each.
fn finish_responses(get: &mut Value, validates: bool, kb_scoped: bool) {
    let Some(Value::Object(responses)) = get.get_mut("responses") else {
        return;
    };
    responses.remove("429");
    let error = |code: &str, status: u16, message: &str, description: &str| {
        json!({
            "description": description,
            "content": { "application/json": {
                "schema": { "$ref": "#/components/schemas/Error" },
                "example": {
                    "error": { "code": code, "message": message, "httpStatus": status },
                    "requestId": "req-11111111-1111-4111-8111-111111111111"
                }
            } }
        })
    };
    if !responses.contains_key("413") {
        responses.insert(
            "413".into(),
            error(
                "PAYLOAD_TOO_LARGE",
                413,
                "The request body is too large.",
                "The request body is larger than the server accepts, or the file exceeds the configured content read limit.",
            ),
        );
    }
    if validates && !responses.contains_key("422") {
        responses.insert(
            "422".into(),
            error(
                "VALIDATION_ERROR",
                422,
                "The request failed validation.",
                "The request failed validation: a parameter is invalid, given twice, or not one this operation takes.",
            ),
        );
    }
    if kb_scoped && !responses.contains_key("404") {
        responses.insert(
            "404".into(),
            error(
                "NOT_FOUND",
                404,
                "Resource was not found.",
                "The requested resource was not found.",
            ),
        );
    }
    for response in responses.values_mut() {
        if let Some(object) = response.as_object_mut() {
            object.insert(
                "headers".into(),
                json!({ "x-request-id": {
                    "description": "The request's own `x-request-id` when it is 1–200 visible ASCII characters, otherwise a new `req-<uuid>`; error bodies carry the same value as `requestId`.",
                    "required": true,
                    "schema": { "type": "string", "pattern": "^[!-~]{1,200}$" }
                } }),
            );
        }
    }
}

/// Keeps only the tags and component schemas the served paths use.
fn prune(object: &mut Map<String, Value>) {
    let paths = object.get("paths").cloned().unwrap_or(Value::Null);
    let mut used_tags = BTreeSet::new();
    if let Some(paths) = paths.as_object() {
        for path in paths.values() {
            if let Some(tags) = path.pointer("/get/tags").and_then(Value::as_array) {
                used_tags.extend(tags.iter().filter_map(Value::as_str).map(str::to_string));
            }
        }
    }
    if let Some(Value::Array(tags)) = object.get_mut("tags") {
        tags.retain(|t| {
            t.get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| used_tags.contains(n))
        });
        tags.push(json!({
            "name": SHORT_TAG,
            "description": "The same operations for the default (first) knowledge base, without the `/openapi/v2/knowledge-bases/{knowledgeBaseId}` prefix.",
        }));
    }
    let schemas = object
        .get("components")
        .and_then(|c| c.get("schemas"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut reachable = BTreeSet::new();
    let mut pending = Vec::new();
    collect_refs(&paths, &mut pending);
    while let Some(name) = pending.pop() {
        if reachable.insert(name.clone()) {
            if let Some(schema) = schemas.get(&name) {
                collect_refs(schema, &mut pending);
            }
        }
    }
    if let Some(Value::Object(schemas)) = object
        .get_mut("components")
        .and_then(|c| c.get_mut("schemas"))
    {
        schemas.retain(|name, _| reachable.contains(name));
    }
}

fn collect_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                if key == "$ref" {
                    if let Some(name) = v
                        .as_str()
                        .and_then(|r| r.strip_prefix("#/components/schemas/"))
                    {
                        out.push(name.to_string());
                    }
                } else {
                    collect_refs(v, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
