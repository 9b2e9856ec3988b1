//! The local HTTP server, black-box over real sockets: the library's `http::serve` runs on a
//! tokio runtime in a background thread, bound to 127.0.0.1:0, and the tests speak plain
//! HTTP/1.1 to it over `std::net::TcpStream` (no client dependency).
//!
//! The main test walks the fixture the way a client follows links: the whole tree from the root,
//! a few searches, then every non-null `readActions` link found in any response, breadth-first,
//! each answered 200 with JSON that validates against the contract schema of its operation.

use crate::common;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use kbtools::serve::http::HttpOptions;
use serde_json::Value;

/// A running server over some fixtures; stops (gracefully) when dropped.
pub(crate) struct Server {
    addr: SocketAddr,
    ids: Vec<String>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    _indexes: Vec<tempfile::TempDir>,
}

impl Server {
    fn start(fixtures: &[&str], options: HttpOptions) -> Server {
        let mut kbs = Vec::new();
        let mut indexes = Vec::new();
        for name in fixtures {
            let opened = common::open_fixture(name);
            kbs.push(opened.kb);
            indexes.push(opened.index_dir);
        }
        Server::serving(kbs, indexes, options)
    }

    /// A server over knowledge bases already open (their index folders kept until it stops).
    pub(crate) fn serving(
        kbs: Vec<kbtools::kb::KnowledgeBase>,
        indexes: Vec<tempfile::TempDir>,
        options: HttpOptions,
    ) -> Server {
        let ids = kbs
            .iter()
            .map(|kb| kb.manifest.knowledge_base_id.clone())
            .collect();
        let stop = Arc::new(AtomicBool::new(false));
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let stop_flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                let shutdown = async move {
                    while !stop_flag.load(Ordering::Relaxed) {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                };
                kbtools::serve::http::serve(listener, kbs, options, shutdown)
                    .await
                    .unwrap();
            });
        });
        let addr = addr_rx.recv_timeout(common::HANG).unwrap();
        Server {
            addr,
            ids,
            stop,
            thread: Some(thread),
            _indexes: indexes,
        }
    }

    fn kb(&self) -> &str {
        &self.ids[0]
    }

    /// `/openapi/v2/knowledge-bases/<first kb><rest>`.
    pub(crate) fn long(&self, rest: &str) -> String {
        format!("/openapi/v2/knowledge-bases/{}{rest}", self.kb())
    }

    pub(crate) fn get(&self, target: &str) -> Reply {
        self.request("GET", target, &[])
    }

    fn request(&self, method: &str, target: &str, headers: &[(&str, &str)]) -> Reply {
        let mut text = format!("{method} {target} HTTP/1.1\r\nHost: {}\r\n", self.addr);
        for (name, value) in headers {
            text.push_str(&format!("{name}: {value}\r\n"));
        }
        text.push_str("Connection: close\r\n\r\n");
        self.raw(text.as_bytes())
    }

    /// Sends bytes as they are and reads the whole reply (the request asks to close).
    fn raw(&self, request: &[u8]) -> Reply {
        let mut stream = TcpStream::connect(self.addr).unwrap();
        stream.set_read_timeout(Some(common::HANG)).unwrap();
        stream.write_all(request).unwrap();
        let mut bytes = Vec::new();
        stream.read_to_end(&mut bytes).unwrap();
        Reply::parse(&bytes)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    headers: BTreeMap<String, String>,
    pub(crate) body: Vec<u8>,
}

impl Reply {
    fn parse(bytes: &[u8]) -> Reply {
        let split = bytes
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("a complete HTTP response head");
        let head = std::str::from_utf8(&bytes[..split]).unwrap();
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap();
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
        let headers = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect::<BTreeMap<_, _>>();
        let body = bytes[split + 4..].to_vec();
        if let Some(length) = headers.get("content-length") {
            assert_eq!(length.parse::<usize>().unwrap(), body.len(), "body length");
        }
        Reply {
            status,
            headers,
            body,
        }
    }

    pub(crate) fn json(&self) -> Value {
        let content_type = self.headers.get("content-type").map(String::as_str);
        assert_eq!(
            content_type,
            Some("application/json; charset=utf-8"),
            "status {}",
            self.status
        );
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body[..self.body.len().min(300)])
            )
        })
    }

    fn request_id(&self) -> &str {
        self.headers
            .get("x-request-id")
            .map(String::as_str)
            .expect("x-request-id header")
    }

    /// Asserts the contract's error envelope with `code` and `status`; returns it.
    fn error(&self, status: u16, code: &str) -> Value {
        assert_eq!(
            self.status,
            status,
            "{}",
            String::from_utf8_lossy(&self.body)
        );
        let body = self.json();
        assert_eq!(body["error"]["code"], code, "{body}");
        assert_eq!(body["error"]["httpStatus"], status, "{body}");
        assert!(body["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()));
        assert_eq!(body["requestId"], self.request_id(), "{body}");
        let problems = common::violations(&common::schema_for("getFileById", 404), &body);
        assert!(problems.is_empty(), "{problems:?} {body}");
        body
    }
}

/// JavaScript `encodeURIComponent`, for query values.
pub(crate) fn encode(value: &str) -> String {
    kbtools::text::encode_uri_component(value)
}

fn is_generated_request_id(id: &str) -> bool {
    let Some(uuid) = id.strip_prefix("req-") else {
        return false;
    };
    uuid::Uuid::parse_str(uuid).is_ok_and(|u| u.get_version_num() == 4) && uuid.len() == 36
}

/// Every non-null `readActions` link anywhere in `value`, with its key.
fn read_actions(value: &Value, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                if key == "readActions" {
                    for (kind, link) in v.as_object().into_iter().flatten() {
                        if let Some(link) = link.as_str() {
                            out.push((kind.clone(), link.to_string()));
                        }
                    }
                } else {
                    read_actions(v, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| read_actions(v, out)),
        _ => {}
    }
}

/// The contract operation a `readActions` key links to.
fn operation_of_link(kind: &str) -> &'static str {
    match kind {
        "fileDetailById" => "getFileById",
        "fileContentById" => "getFileContentById",
        "fileContentByPath" => "getFileContentByPath",
        "relatedFilesById" => "listRelatedFiles",
        "graphExpansionByFileId" => "expandGraph",
        other => panic!("unexpected readActions key {other} (offline links are null)"),
    }
}

fn assert_valid(operation: &str, target: &str, body: &Value) {
    let problems = common::violations(&common::schema_for(operation, 200), body);
    assert!(
        problems.is_empty(),
        "{target} violates {operation}: {problems:?}"
    );
}

#[test]
fn every_read_action_link_answers_200_with_contract_json() {
    let server = Server::start(&["focowiki-docs"], HttpOptions::default());
    let mut links: Vec<(String, String)> = Vec::new();

    // The whole tree, every page of every directory.
    let mut directories = VecDeque::from([String::from("root")]);
    let mut files = 0usize;
    let mut listed_directories = 0usize;
    while let Some(dir) = directories.pop_front() {
        listed_directories += 1;
        let mut cursor: Option<String> = None;
        loop {
            let mut target = server.long(&format!("/tree?parentPath={}&limit=7", encode(&dir)));
            if let Some(c) = &cursor {
                target.push_str(&format!("&cursor={}", encode(c)));
            }
            let reply = server.get(&target);
            assert_eq!(reply.status, 200, "{target}");
            let page = reply.json();
            assert_valid("listKnowledgeBaseTree", &target, &page);
            for item in page["items"].as_array().unwrap() {
                match item["entryType"].as_str().unwrap() {
                    "directory" => {
                        assert!(item["readActions"].is_null());
                        directories.push_back(item["path"].as_str().unwrap().to_string());
                    }
                    _ => files += 1,
                }
            }
            read_actions(&page, &mut links);
            match page["nextCursor"].as_str() {
                Some(next) => cursor = Some(next.to_string()),
                None => break,
            }
        }
    }
    assert!(files > 200, "{files} files listed");
    assert!(listed_directories > 10, "{listed_directories} directories");

    // A few searches (long and short routes).
    for (route, query) in [
        ("/files/search", "How do agents read related files?"),
        ("/files/search", "OKF frontmatter status"),
        ("/files/search", "知识库"),
        ("/search", "upload session"),
    ] {
        let target = if route == "/search" {
            format!("/search?query={}&limit=20", encode(query))
        } else {
            server.long(&format!("{route}?query={}&limit=20", encode(query)))
        };
        let reply = server.get(&target);
        assert_eq!(reply.status, 200, "{target}");
        let body = reply.json();
        assert_valid("searchGeneratedFiles", &target, &body);
        assert!(!body["items"].as_array().unwrap().is_empty(), "{target}");
        read_actions(&body, &mut links);
    }

    // Every link, breadth-first; responses (related files, graph expansion, ...) add links.
    let mut queue: VecDeque<(String, String)> = links.into_iter().collect();
    let mut seen = BTreeSet::new();
    let mut by_kind: BTreeMap<String, usize> = BTreeMap::new();
    let prefix = format!("/openapi/v2/knowledge-bases/{}/", server.kb());
    while let Some((kind, link)) = queue.pop_front() {
        if !seen.insert(link.clone()) {
            continue;
        }
        assert!(link.starts_with(&prefix), "{link}");
        let operation = operation_of_link(&kind);
        let reply = server.get(&link);
        assert_eq!(
            reply.status,
            200,
            "{kind} {link}: {}",
            String::from_utf8_lossy(&reply.body)
        );
        let body = reply.json();
        assert_valid(operation, &link, &body);
        *by_kind.entry(kind).or_default() += 1;
        let mut more = Vec::new();
        read_actions(&body, &mut more);
        queue.extend(more.into_iter().filter(|(_, l)| !seen.contains(l)));
    }
    for kind in [
        "fileDetailById",
        "fileContentById",
        "fileContentByPath",
        "relatedFilesById",
        "graphExpansionByFileId",
    ] {
        assert!(by_kind.get(kind).copied().unwrap_or(0) > 10, "{by_kind:?}");
    }
    assert!(seen.len() > 600, "{} links followed", seen.len());
}

#[test]
fn unknown_routes_and_methods_are_404_unsupported_route() {
    let server = Server::start(&["focowiki-docs"], HttpOptions::default());
    for target in [
        "/openapi/v2/nope".to_string(),
        "/nope".to_string(),
        "/assets/nope.js".to_string(),
        server.long("/source-files/source-file-1"),
        server.long("/graph/overview"),
        server.long("/files/a/b/content"),
    ] {
        server.get(&target).error(404, "UNSUPPORTED_ROUTE");
    }
    for method in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"] {
        for target in [
            "/openapi/v2/health".to_string(),
            "/openapi/v2/knowledge-bases".to_string(),
            server.long("/tree"),
            "/search?query=ab".to_string(),
        ] {
            let reply = server.request(method, &target, &[("Content-Length", "0")]);
            reply.error(404, "UNSUPPORTED_ROUTE");
        }
    }
}

#[test]
fn unknown_knowledge_base_is_404_not_found() {
    let server = Server::start(&["focowiki-docs"], HttpOptions::default());
    for rest in ["/tree", "/files/search?query=agents", "/files/x/content"] {
        let target = format!("/openapi/v2/knowledge-bases/knowledge-base-nope{rest}");
        server.get(&target).error(404, "NOT_FOUND");
    }
    // A known knowledge base, an unknown file.
    server
        .get(&server.long("/files/source-file-nope"))
        .error(404, "NOT_FOUND");
    server
        .get(&server.long("/files/content?path=pages%2Fno-such-page.md"))
        .error(404, "NOT_FOUND");
}

/// A search answers the contract's body and, in headers for the search page, the question's
/// rare terms (not the words most pages hold) and how each result was found.
#[test]
fn a_search_tells_the_page_what_to_mark_and_how_each_result_was_found() {
    let server = Server::start(&["focowiki-docs"], HttpOptions::default());
    let reply = server.get(&server.long(
        "/files/search?query=Can%20Focowiki%20agents%20retry%20a%20failed%20webhook%20delivery%3F",
    ));
    assert_eq!(reply.status, 200);
    let items = reply.json()["items"].as_array().unwrap().len();
    let marks = reply.headers["x-kbtools-marks"].clone();
    let marks: Vec<&str> = marks.split(' ').collect();
    assert!(marks.contains(&"webhook"), "{marks:?}");
    assert!(!marks.contains(&"focowiki"), "{marks:?}");
    assert!(!marks.contains(&"can"), "{marks:?}");
    let found = &reply.headers["x-kbtools-found-by"];
    assert_eq!(found.split(',').count(), items, "{found}");
    for ways in found.split(',') {
        for way in ways.split('+') {
            let known = [
                "name",
                "text",
                "meaning",
                "other-language",
                "links",
                "nearest",
            ];
            assert!(known.contains(&way), "{found}");
        }
    }
    // Other tools carry neither.
    let tree = server.get(&server.long("/tree"));
    assert!(!tree.headers.contains_key("x-kbtools-marks"));
}

#[test]
fn a_plain_folder_path_as_the_user_sees_it_and_a_typo_with_the_nearest_paths() {
    let server = Server::start(&["rule-reference"], HttpOptions::default());
    let read = server.get(&server.long("/files/content?path=rules%2Fmd013.md"));
    assert_eq!(read.json()["file"]["path"], "pages/rules/md013.md");
    let typo = server.get(&server.long("/files/content?path=rules%2Fmd0133.md"));
    let body = typo.json();
    let hint = body["error"]["details"]["hint"]
        .as_str()
        .unwrap_or_default();
    assert!(hint.contains("nearest: pages/rules/md013.md"), "{body}");
}

#[test]
fn request_id_is_echoed_or_generated() {
    let server = Server::start(&["focowiki-docs"], HttpOptions::default());
    // Given: echoed on success and on errors, in the header and the body.
    let reply = server.request("GET", "/openapi/v2/health", &[("x-request-id", "trace-42")]);
    assert_eq!(reply.status, 200);
    assert_eq!(reply.request_id(), "trace-42");
    let reply = server.request(
        "GET",
        &server.long("/files/nope"),
        &[("X-Request-Id", "my-trace/7:a")],
    );
    assert_eq!(reply.error(404, "NOT_FOUND")["requestId"], "my-trace/7:a");
    // Absent, or not a sane token: a new `req-<uuid v4>`, different each time.
    let first = server.get("/openapi/v2/health");
    let second = server.get("/nope");
    for reply in [&first, &second] {
        assert!(
            is_generated_request_id(reply.request_id()),
            "{}",
            reply.request_id()
        );
    }
    assert_ne!(first.request_id(), second.request_id());
    assert_eq!(second.json()["requestId"], second.request_id());
    let too_long = "x".repeat(201);
    for bad in ["has space", too_long.as_str()] {
        let reply = server.request("GET", "/openapi/v2/health", &[("x-request-id", bad)]);
        assert!(is_generated_request_id(reply.request_id()), "{bad}");
    }
}

#[test]
fn token_is_checked_before_routing_and_validation() {
    let token = "s3cret-token";
    let server = Server::start(
        &["focowiki-docs"],
        HttpOptions {
            token: Some(token.into()),
            ..HttpOptions::default()
        },
    );
    let right = format!("Bearer {token}");
    let wrong = format!("Bearer {token}x");
    let targets = [
        "/openapi/v2/health".to_string(),
        "/openapi/v2/openapi.json".to_string(),
        server.long("/tree"),
        server.long("/tree?limit=0"),
        "/openapi/v2/knowledge-bases/knowledge-base-nope/tree".to_string(),
        "/nope".to_string(),
        "/search?query=a&query=b".to_string(),
    ];
    for target in &targets {
        for headers in [
            vec![],
            vec![("Authorization", wrong.as_str())],
            vec![("Authorization", token)],
            vec![("Authorization", "Basic czNjcmV0LXRva2Vu")],
        ] {
            let reply = server.request("GET", target, &headers);
            reply.error(401, "UNAUTHORIZED");
        }
    }
    let ok = |target: &str| server.request("GET", target, &[("Authorization", right.as_str())]);
    assert_eq!(ok("/openapi/v2/health").status, 200);
    assert_eq!(ok(&server.long("/tree")).status, 200);
    assert_eq!(ok("/search?query=agents").status, 200);
    let spec = ok("/openapi/v2/openapi.json").json();
    assert_eq!(spec["security"], serde_json::json!([{ "bearerAuth": [] }]));
    // Past authentication, the usual answers.
    ok(&server.long("/tree?limit=0")).error(422, "VALIDATION_ERROR");
    ok("/openapi/v2/knowledge-bases/knowledge-base-nope/tree").error(404, "NOT_FOUND");
    ok("/nope").error(404, "UNSUPPORTED_ROUTE");
}

#[test]
fn query_parameters_given_twice_or_not_taken_are_422() {
    let server = Server::start(&["focowiki-docs"], HttpOptions::default());
    let body = server
        .get(&server.long("/files/search?query=agents&limit=3&limit=4"))
        .error(422, "VALIDATION_ERROR");
    assert_eq!(body["error"]["details"]["field"], "limit");
    server
        .get("/tree?cursor=&cursor=")
        .error(422, "VALIDATION_ERROR");
    server
        .get("/openapi/v2/knowledge-bases?limit=1&limit=1")
        .error(422, "VALIDATION_ERROR");
    // A parameter the operation does not take (the served document lists exactly those).
    for (target, field) in [
        (server.long("/files/x?fileId=y"), "fileId"),
        (server.long("/files/x/content?type=search"), "type"),
        (server.long("/tree?entryType=file"), "entryType"),
        ("/graph/expand?fileId=x&mode=graph".to_string(), "mode"),
        ("/openapi/v2/knowledge-bases?offset=1".to_string(), "offset"),
    ] {
        let body = server.get(&target).error(422, "VALIDATION_ERROR");
        assert_eq!(body["error"]["details"]["field"], field, "{target}");
    }
    // Any `query` on the tree: the online API's own message.
    let body = server
        .get(&server.long("/tree?query=agents"))
        .error(422, "VALIDATION_ERROR");
    assert_eq!(
        body["error"]["message"],
        "Tree search is not supported. Use the file search endpoint."
    );
    // Blank numbers and enums count as omitted, as online.
    assert_eq!(
        server
            .get("/search?query=agents&limit=&mode=&rerank=")
            .status,
        200
    );
}

#[test]
fn two_bundles_are_listed_and_answer_under_their_ids() {
    let server = Server::start(&["focowiki-docs", "plain-notes"], HttpOptions::default());
    assert_eq!(server.ids.len(), 2);
    assert_ne!(server.ids[0], server.ids[1]);
    let list = server.get("/openapi/v2/knowledge-bases").json();
    let listed: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|kb| kb["knowledgeBaseId"].as_str().unwrap())
        .collect();
    assert_eq!(
        listed,
        server.ids.iter().map(String::as_str).collect::<Vec<_>>()
    );
    assert!(list["nextCursor"].is_null());
    // Paged one at a time.
    let first = server.get("/openapi/v2/knowledge-bases?limit=1").json();
    assert_eq!(first["items"][0]["knowledgeBaseId"], server.ids[0].as_str());
    let cursor = first["nextCursor"].as_str().unwrap().to_string();
    let second = server
        .get(&format!(
            "/openapi/v2/knowledge-bases?limit=1&cursor={cursor}"
        ))
        .json();
    assert_eq!(
        second["items"][0]["knowledgeBaseId"],
        server.ids[1].as_str()
    );
    assert!(second["nextCursor"].is_null());
    server
        .get("/openapi/v2/knowledge-bases?cursor=kb-9")
        .error(422, "VALIDATION_ERROR");

    // Each answers under its own id, with its own files.
    let mut roots = Vec::new();
    for id in &server.ids {
        let tree = server
            .get(&format!("/openapi/v2/knowledge-bases/{id}/tree"))
            .json();
        let paths: Vec<String> = tree["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["path"].as_str().unwrap().to_string())
            .collect();
        roots.push(paths);
        let search = server
            .get(&format!(
                "/openapi/v2/knowledge-bases/{id}/files/search?query=getting%20started"
            ))
            .json();
        for item in search["items"].as_array().unwrap() {
            let link = item["readActions"]["fileContentById"].as_str().unwrap();
            assert!(link.starts_with(&format!("/openapi/v2/knowledge-bases/{id}/")));
            assert_eq!(server.get(link).status, 200, "{link}");
        }
    }
    assert!(roots[0].contains(&"_index".to_string()), "{:?}", roots[0]);
    assert!(!roots[1].contains(&"_index".to_string()), "{:?}", roots[1]);
    assert_ne!(roots[0], roots[1]);
    let note = server
        .get(&format!(
            "/openapi/v2/knowledge-bases/{}/files/content?path=pages%2Fgetting-started.md",
            server.ids[1]
        ))
        .json();
    assert_eq!(note["file"]["knowledgeBaseId"], server.ids[1].as_str());
    // The short routes answer for the first.
    let short = server.get("/tree").json();
    let long = server.get(&server.long("/tree")).json();
    assert_eq!(short, long);
    // The served document lists both ids, and no other.
    let spec = server.get("/openapi/v2/openapi.json").json();
    let ids = &spec["paths"]["/openapi/v2/knowledge-bases/{knowledgeBaseId}/tree"]["get"]
        ["parameters"][0]["schema"]["enum"];
    assert_eq!(ids, &serde_json::json!(server.ids));
}

#[test]
fn request_body_over_the_limit_is_413() {
    let server = Server::start(
        &["focowiki-docs"],
        HttpOptions {
            max_body_bytes: 1024,
            ..HttpOptions::default()
        },
    );
    let reply = server.raw(
        format!(
            "GET /openapi/v2/health HTTP/1.1\r\nHost: {}\r\nContent-Length: 100000\r\nx-request-id: big-1\r\nConnection: close\r\n\r\n",
            server.addr
        )
        .as_bytes(),
    );
    let body = reply.error(413, "PAYLOAD_TOO_LARGE");
    assert_eq!(body["requestId"], "big-1");
    // A small body on a GET is read past and ignored.
    let reply = server.raw(
        format!(
            "GET /openapi/v2/health HTTP/1.1\r\nHost: {}\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
            server.addr
        )
        .as_bytes(),
    );
    assert_eq!(reply.status, 200);
}

#[test]
fn concurrent_searches_all_succeed() {
    let server = Arc::new(Server::start(&["focowiki-docs"], HttpOptions::default()));
    let queries = [
        "How do agents read related files?",
        "upload session",
        "OKF frontmatter status",
        "knowledge base tree",
    ];
    let handles: Vec<_> = (0..32)
        .map(|i| {
            let server = server.clone();
            let query = queries[i % queries.len()];
            std::thread::spawn(move || {
                let target = server.long(&format!("/files/search?query={}", encode(query)));
                let reply = server.get(&target);
                assert_eq!(reply.status, 200, "{target}");
                let body = reply.json();
                assert!(!body["items"].as_array().unwrap().is_empty());
                (
                    query,
                    body["items"][0]["path"].as_str().unwrap().to_string(),
                )
            })
        })
        .collect();
    let mut first_hit: BTreeMap<&str, String> = BTreeMap::new();
    for handle in handles {
        let (query, top) = handle.join().unwrap();
        // Same request, same answer, however many run at once.
        let expected = first_hit.entry(query).or_insert_with(|| top.clone());
        assert_eq!(*expected, top, "{query}");
    }
}

#[test]
fn served_document_describes_this_server() {
    let server = Server::start(&["focowiki-docs"], HttpOptions::default());
    let spec = server.get("/openapi/v2/openapi.json").json();
    assert_eq!(spec["security"], serde_json::json!([]));
    let paths = spec["paths"].as_object().unwrap();
    assert_eq!(paths.len(), 17);
    for (path, item) in paths {
        let operation = &item["get"];
        assert!(operation.get("security").is_none(), "{path}");
        for (status, response) in operation["responses"].as_object().unwrap() {
            assert!(
                response["headers"]["x-request-id"].is_object(),
                "{path} {status}"
            );
            assert_ne!(status, "401");
            assert_ne!(status, "429");
        }
    }
    // The parameter examples are real: they open.
    let fetch = &paths["/openapi/v2/knowledge-bases/{knowledgeBaseId}/files/{fileId}"]["get"];
    let example = fetch["parameters"][1]["example"].as_str().unwrap();
    assert_eq!(
        server
            .get(&server.long(&format!("/files/{example}")))
            .status,
        200
    );
}

impl Server {
    /// A POST with a JSON body (MCP over HTTP), the request asking to close.
    fn post(&self, target: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        let mut text = format!(
            "POST {target} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            self.addr,
            body.len()
        );
        for (name, value) in headers {
            text.push_str(&format!("{name}: {value}\r\n"));
        }
        text.push_str("Connection: close\r\n\r\n");
        text.push_str(body);
        self.raw(text.as_bytes())
    }
}

/// The JSON-RPC messages of an MCP reply (a JSON body, or the `data:` lines of an event
/// stream).
fn mcp_messages(reply: &Reply) -> Vec<Value> {
    let text = String::from_utf8_lossy(&reply.body);
    if let Ok(one) = serde_json::from_str::<Value>(text.trim()) {
        return vec![one];
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str(data).ok())
        .collect()
}

const MCP_INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}"#;

/// `/mcp` answers MCP over Streamable HTTP behind the same front door as the OpenAPI routes:
/// the token, the limits, and the DNS-rebinding checks (`Host`, `Origin`).
#[test]
fn mcp_over_http_sits_behind_the_front_door() {
    let server = Server::start(
        &["focowiki-docs"],
        HttpOptions {
            token: Some("sesame".into()),
            ..HttpOptions::default()
        },
    );
    let auth = ("Authorization", "Bearer sesame");
    // No token: the contract's 401, before MCP sees the request.
    server
        .post("/mcp", &[], MCP_INITIALIZE)
        .error(401, "UNAUTHORIZED");
    // A page elsewhere (DNS rebinding) is refused by its Origin, and so is a foreign Host.
    let foreign = server.post(
        "/mcp",
        &[auth, ("Origin", "http://attacker.example")],
        MCP_INITIALIZE,
    );
    assert_eq!(foreign.status, 403);
    let raw = format!(
        "POST /mcp HTTP/1.1\r\nHost: attacker.example\r\nAuthorization: Bearer sesame\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{MCP_INITIALIZE}",
        MCP_INITIALIZE.len()
    );
    assert_eq!(server.raw(raw.as_bytes()).status, 403);
    // A message over the MCP limit is the contract's 413, before it is read.
    let big = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer sesame\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        server.addr,
        2 * 1024 * 1024
    );
    let body = server.raw(big.as_bytes()).error(413, "PAYLOAD_TOO_LARGE");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("MCP"),
        "{body}"
    );

    // The handshake from a local page, a session, and a tool call in it.
    let init = server.post(
        "/mcp",
        &[auth, ("Origin", "http://localhost:5173")],
        MCP_INITIALIZE,
    );
    assert_eq!(init.status, 200, "{}", String::from_utf8_lossy(&init.body));
    let session = init
        .headers
        .get("mcp-session-id")
        .expect("a session")
        .clone();
    let result = &mcp_messages(&init)[0]["result"];
    assert_eq!(result["serverInfo"]["name"], "kbtools");
    assert!(result["capabilities"]["tools"].is_object());
    let in_session = [
        auth,
        ("Mcp-Session-Id", session.as_str()),
        ("Mcp-Protocol-Version", "2025-11-25"),
    ];
    let initialized = server.post(
        "/mcp",
        &in_session,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert_eq!(initialized.status, 202);
    let call = server.post(
        "/mcp",
        &in_session,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_files","arguments":{"query":"How do agents read related files?","format":"json","limit":3}}}"#,
    );
    assert_eq!(call.status, 200);
    let answer = &mcp_messages(&call)[0]["result"];
    assert_eq!(answer["isError"], false, "{answer}");
    assert_eq!(
        answer["structuredContent"]["items"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    // The same server under the knowledge base's own id.
    let by_id = server.post(&format!("/mcp/{}", server.kb()), &[auth], MCP_INITIALIZE);
    assert_eq!(by_id.status, 200);
}

/// With several knowledge bases, each has its own `/mcp/{id}`; `/mcp` names none of them.
#[test]
fn several_knowledge_bases_have_an_mcp_route_each() {
    let server = Server::start(&["focowiki-docs", "plain-notes"], HttpOptions::default());
    server
        .post("/mcp", &[], MCP_INITIALIZE)
        .error(404, "UNSUPPORTED_ROUTE");
    for id in &server.ids {
        let reply = server.post(&format!("/mcp/{id}"), &[], MCP_INITIALIZE);
        assert_eq!(reply.status, 200, "{id}");
        let instructions = mcp_messages(&reply)[0]["result"]["instructions"].clone();
        assert!(instructions.as_str().is_some_and(|i| !i.is_empty()));
    }
}

/// The search page: its shell at `/` and `/kb/…`, its two assets, a strict policy, no token
/// needed for them (they hold no knowledge-base data) while the API still needs it.
#[test]
fn the_search_page_is_served_with_a_strict_policy() {
    let server = Server::start(
        &["focowiki-docs"],
        HttpOptions {
            token: Some("sesame".into()),
            ..HttpOptions::default()
        },
    );
    let mut total = 0;
    for (target, content_type) in [
        ("/", "text/html; charset=utf-8"),
        (
            "/kb/any-id/read?path=pages%2Fa.md",
            "text/html; charset=utf-8",
        ),
        ("/assets/app.js", "text/javascript; charset=utf-8"),
        ("/assets/app.css", "text/css; charset=utf-8"),
    ] {
        let reply = server.get(target);
        assert_eq!(reply.status, 200, "{target}");
        assert_eq!(reply.headers["content-type"], content_type, "{target}");
        let csp = &reply.headers["content-security-policy"];
        assert!(
            csp.contains("default-src 'none'") && csp.contains("script-src 'self'"),
            "{csp}"
        );
        assert!(!csp.contains("unsafe"), "{csp}");
        assert_eq!(reply.headers["x-content-type-options"], "nosniff");
        assert_eq!(reply.headers["referrer-policy"], "no-referrer");
        if !target.starts_with("/kb/") {
            total += reply.body.len();
        }
    }
    // The page's whole transfer (HTML, JS, CSS), uncompressed.
    assert!(total <= 200 * 1024, "{total} bytes");
    let html = String::from_utf8(server.get("/").body).unwrap();
    assert!(
        !html.contains("<script>")
            && html.contains("<script src=\"/assets/app.js\" defer></script>"),
        "no inline script"
    );
    assert_eq!(server.get("/favicon.ico").status, 204);
    // The API behind it still needs the token.
    server
        .get("/openapi/v2/knowledge-bases")
        .error(401, "UNAUTHORIZED");
}
