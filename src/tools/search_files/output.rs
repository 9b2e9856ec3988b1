//! `search_files`' output: the query context, the statuses, and each result's fields (its
//! excerpt, read actions and graph context), as the contract names them.

use serde::Serialize;
use serde_json::{json, Value};

use crate::ids::ReadActions;
use crate::ingest::bundle::paths;
use crate::ingest::bundle::paths::ContractFileKind;
use crate::kb::KnowledgeBase;
use crate::okf::{Freshness, OkfSignals, OkfStatus, TrustTier};
pub use crate::search::{Candidate, FileKind, Lane, LaneSet, Mode, Ranking, Scope};
use crate::tools::{read_actions, tags_of, RelatedFile};

use super::request::{Request, SORT};
use super::SemanticState;

/// `FileSearchQueryContext`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryContext {
    pub query: String,
    pub normalized_query: String,
    pub scope: Scope,
    pub file_kind: FileKind,
    pub mode: Mode,
    pub graph_depth: u8,
    pub graph_fanout: u64,
    pub okf_status: Option<OkfStatus>,
    pub okf_trust_tier: Option<TrustTier>,
    pub okf_freshness: Option<Freshness>,
    pub rerank: bool,
    pub rerank_top_k: Option<u64>,
    pub rerank_score_threshold: Option<f64>,
    pub limit: u64,
    pub cursor_provided: bool,
}

crate::wire::wire_enum! {
    /// `searchStatus`: whether any page matched.
    pub enum SearchStatus {
        Ok = "ok",
        NoCandidates = "no_candidates",
    }
}

crate::wire::wire_enum! {
    /// `graphStatus`: whether the graph lanes could run.
    pub enum GraphStatus {
        Available = "available",
        DisabledForFileMode = "disabled_for_file_mode",
        IndexUnavailable = "index_unavailable",
    }
}

crate::wire::wire_enum! {
    /// The `state` of `semanticStatus` and `rerankerStatus`.
    pub enum LaneState {
        Ready = "ready",
        Degraded = "degraded",
        Unavailable = "unavailable",
        NotConfigured = "not_configured",
        Skipped = "skipped",
    }
}

crate::wire::wire_enum! {
    /// `matchType` (docs/rules.md#fusion): the kind of evidence that found a result.
    pub enum MatchType {
        FileDirect = "file_direct",
        GraphNeighbor = "graph_neighbor",
        GraphEdge = "graph_edge",
        Hybrid = "hybrid",
    }
}

crate::wire::wire_enum! {
    /// The `safeCode` of `semanticStatus` and `rerankerStatus`: why a lane is not `ready`.
    pub enum SafeCode {
        SemanticAdoptionRequired = "SEMANTIC_ADOPTION_REQUIRED",
        SemanticLanePartialFailure = "SEMANTIC_LANE_PARTIAL_FAILURE",
        SemanticSearchUnavailable = "SEMANTIC_SEARCH_UNAVAILABLE",
        RerankerNotConfigured = "RERANKER_NOT_CONFIGURED",
        RerankerDisabled = "RERANKER_DISABLED",
        RerankerRetrievalUnavailable = "RERANKER_RETRIEVAL_UNAVAILABLE",
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub state: LaneState,
    pub safe_code: Option<SafeCode>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EvidenceStatus {
    pub completed_families: Vec<&'static str>,
    pub degraded_families: Vec<&'static str>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GraphSummary {
    pub available: bool,
    pub indexed_document_count: u64,
    pub indexed_relationship_count: u64,
    pub depth: u8,
    pub fanout: u64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResultSummary {
    pub result_count: u64,
    pub has_more: bool,
    pub sort: [&'static str; 3],
    pub meaning: &'static str,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GraphContext {
    pub graph_ref: String,
    pub depth: u8,
    pub seed_source_file_id: String,
    pub relationships: Vec<RelatedFile>,
    pub graph_paths: Vec<String>,
}

/// `FileSearchResult`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchResult {
    pub active_content_revision: u64,
    pub file_id: String,
    pub knowledge_base_id: String,
    pub source_file_id: Option<String>,
    pub path: String,
    pub file_kind: ContractFileKind,
    pub title: Option<String>,
    pub description: Option<String>,
    pub tags: Vec<String>,
    pub frontmatter: serde_json::Map<String, Value>,
    pub okf_signals: OkfSignals,
    pub matched_fields: Vec<&'static str>,
    pub evidence_types: Vec<&'static str>,
    pub source_excerpt: Option<String>,
    pub score: f64,
    pub content_available: bool,
    pub read_actions: ReadActions,
    pub match_type: MatchType,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graph_context: Option<GraphContext>,
    /// The lanes that found the page (not in the contract: for a person's rendering, which
    /// says "meaning" or "other language" where the contract's fields say `content`).
    #[serde(skip)]
    pub lanes: LaneSet,
}

/// `FileSearchResponse`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Output {
    pub active_content_revision: Option<u64>,
    pub query: QueryContext,
    pub items: Vec<SearchResult>,
    pub next_cursor: Option<String>,
    pub search_status: SearchStatus,
    pub search_mode: Mode,
    pub semantic_status: Status,
    pub evidence_status: EvidenceStatus,
    pub reranker_status: Status,
    pub graph_status: GraphStatus,
    pub graph_summary: GraphSummary,
    pub result_summary: ResultSummary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<Option<&'static str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_actions: Option<Vec<&'static str>>,
    /// Set when no lane matched and the items are the nearest pages: what the compact text
    /// says on a line of its own (DECISIONS item 29: the JSON keeps the contract's shape, and
    /// the items' evidence says it). Not serialized.
    #[serde(skip)]
    pub nearest: Option<&'static str>,
}

pub(super) fn context(request: &Request) -> QueryContext {
    QueryContext {
        query: request.query.clone(),
        normalized_query: request.query.clone(),
        scope: request.scope,
        file_kind: request.file_kind,
        mode: request.mode,
        graph_depth: request.graph_depth,
        graph_fanout: request.graph_fanout,
        okf_status: request.okf_status,
        okf_trust_tier: request.okf_trust_tier,
        okf_freshness: request.okf_freshness,
        rerank: request.rerank,
        rerank_top_k: request.rerank_top_k,
        rerank_score_threshold: request.rerank_score_threshold,
        limit: request.limit,
        cursor_provided: request.cursor.is_some(),
    }
}

pub(super) fn reranker_status(request: &Request) -> Status {
    if request.rerank {
        Status {
            state: LaneState::NotConfigured,
            safe_code: Some(SafeCode::RerankerNotConfigured),
        }
    } else {
        Status {
            state: LaneState::Skipped,
            safe_code: Some(SafeCode::RerankerDisabled),
        }
    }
}

/// The cursor scope: every input that shapes the result set, limit included (rules#cursors).
pub(super) fn cursor_scope(request: &Request) -> Value {
    json!({
        "query": request.query,
        "scope": request.scope,
        // A boolean since the first cursors: their scopes must stay the same bytes.
        "fileKind": request.file_kind == FileKind::All,
        "mode": request.mode,
        "graphDepth": request.graph_depth,
        "graphFanout": request.graph_fanout,
        "okfStatus": request.okf_status,
        "okfTrustTier": request.okf_trust_tier,
        "okfFreshness": request.okf_freshness,
        "limit": request.limit,
        "rerank": request.rerank,
        "rerankTopK": request.rerank_top_k,
        "rerankScoreThreshold": request.rerank_score_threshold,
    })
}

pub(super) fn no_content_output(request: &Request) -> Output {
    Output {
        active_content_revision: None,
        query: context(request),
        items: Vec::new(),
        next_cursor: None,
        search_status: SearchStatus::NoCandidates,
        search_mode: request.mode,
        semantic_status: Status {
            state: LaneState::Unavailable,
            safe_code: Some(SafeCode::SemanticAdoptionRequired),
        },
        evidence_status: EvidenceStatus {
            completed_families: Vec::new(),
            degraded_families: Vec::new(),
        },
        reranker_status: Status {
            state: LaneState::Skipped,
            safe_code: Some(if request.rerank {
                SafeCode::RerankerRetrievalUnavailable
            } else {
                SafeCode::RerankerDisabled
            }),
        },
        graph_status: if request.mode == Mode::File {
            GraphStatus::DisabledForFileMode
        } else {
            GraphStatus::IndexUnavailable
        },
        graph_summary: GraphSummary {
            available: false,
            indexed_document_count: 0,
            indexed_relationship_count: 0,
            depth: request.graph_depth,
            fanout: request.graph_fanout,
        },
        result_summary: ResultSummary {
            result_count: 0,
            has_more: false,
            sort: SORT,
            meaning: "No current readable files matched the search.",
        },
        message: None,
        next_actions: None,
        nearest: None,
    }
}

/// `matchType` (docs/rules.md#fusion): file and graph evidence → `hybrid`; else `file_relationship` →
/// `graph_edge`; else `file_graph` → `graph_neighbor`; else `file_direct`.
fn match_type(lanes: &LaneSet) -> MatchType {
    let file = lanes.iter().any(|l| l.is_file_evidence());
    let graph = lanes.iter().any(|l| l.is_graph());
    if file && graph {
        MatchType::Hybrid
    } else if lanes.contains(&Lane::FileRelationship) {
        MatchType::GraphEdge
    } else if lanes.contains(&Lane::FileGraph) {
        MatchType::GraphNeighbor
    } else {
        MatchType::FileDirect
    }
}

pub(super) fn result(
    kb: &KnowledgeBase,
    request: &Request,
    revision: u64,
    candidate: &Candidate,
    score: f64,
    excerpter: Option<&crate::search::excerpt::Excerpter>,
    ranking: &Ranking,
) -> SearchResult {
    let file = kb.catalog.file(candidate.position);
    let (matched_fields, evidence_types): (Vec<&'static str>, Vec<&'static str>) =
        if request.scope == Scope::Metadata {
            (vec!["metadata"], vec!["metadata"])
        } else {
            let mut fields: Vec<&'static str> =
                candidate.lanes.iter().map(|l| l.matched_field()).collect();
            fields.sort_unstable();
            fields.dedup();
            (fields.clone(), fields)
        };
    let match_type = match_type(&candidate.lanes);
    let source_excerpt = match (candidate.content, excerpter) {
        (true, Some(excerpter)) => kb.indexed_content(file).and_then(|content| {
            let body = crate::ingest::bundle::indexed_body_text(&content);
            // The best section's passage, else the best passage of the page.
            candidate
                .section
                .and_then(|section| section.text(&body))
                .and_then(|text| excerpter.excerpt_matching(text))
                .or_else(|| excerpter.excerpt(&body))
        }),
        _ => None,
    };
    // Present only when the mode is not `file`, and only with a `graphRef` that opens
    // (rules#graph-refs-open; ingest gives every source page a record, so this always holds in
    // practice).
    let graph_ref = paths::per_file_graph_path(&file.path);
    let graph_ref_opens = kb.catalog.by_path(&graph_ref).is_some();
    let graph_context = (request.mode != Mode::File && graph_ref_opens).then(|| {
        // Per-node fanout = graphFanout and at most graphFanout in all: breadth first, so depth 2
        // appears only when depth 1 did not use the fanout up.
        // A seed's walk is known already.
        let fanout = request.graph_fanout as usize;
        let walked;
        let steps = match ranking.walk(candidate.position, fanout) {
            Some(steps) => steps,
            None => {
                walked = crate::graph::walk(
                    kb.graph(),
                    candidate.position,
                    request.graph_depth,
                    fanout,
                    fanout,
                );
                &walked[..]
            }
        };
        let relationships: Vec<RelatedFile> = steps
            .iter()
            .map(|s| {
                let rel = kb.catalog.relation(s.relation);
                RelatedFile::new(kb, revision, rel, rel.direction, s.depth)
            })
            .collect();
        // The distinct [own record, related pages' records], each one that opens.
        let graph_paths = crate::tools::expand_graph::graph_paths(
            kb,
            std::iter::once(file.path.as_str())
                .chain(relationships.iter().map(|r| r.path.as_str())),
        );
        GraphContext {
            graph_ref,
            depth: request.graph_depth,
            seed_source_file_id: file.file_id.clone(),
            relationships,
            graph_paths,
        }
    });
    SearchResult {
        active_content_revision: revision,
        file_id: file.file_id.clone(),
        knowledge_base_id: kb.kb_id().to_string(),
        source_file_id: Some(file.file_id.clone()),
        path: file.path.clone(),
        file_kind: ContractFileKind::Page,
        title: file.title.clone(),
        description: file
            .frontmatter
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_string),
        tags: tags_of(&file.frontmatter),
        frontmatter: file.frontmatter.map().clone(),
        okf_signals: OkfSignals::compute(&file.frontmatter, kb.options.today),
        matched_fields,
        evidence_types,
        source_excerpt,
        score: (score * 1e9).round() / 1e9,
        content_available: true,
        read_actions: read_actions(kb, file),
        match_type,
        graph_context,
        lanes: candidate.lanes,
    }
}

/// `semanticStatus` and `evidenceStatus` of the lanes that ran (`lanes`), the semantic lane's
/// state being `semantic`; `cut_short` when a lexical lane did part of its work only (the
/// literal lane past its budget: `crate::search::lanes::io::CutShort`), which puts `lexical`
/// among the degraded families too.
pub(super) fn lane_statuses(
    lanes: &[Lane],
    semantic: SemanticState,
    cut_short: bool,
) -> (Status, EvidenceStatus) {
    // docs/rules.md#semantic-lane: the semantic lane is `ready` when it ran over vectors of every page,
    // `degraded` (and its family degraded) when some pages have none.
    let vector_ran = lanes.contains(&Lane::ContentVector);
    let degraded_vectors = vector_ran && semantic == SemanticState::Degraded;
    let completed: Vec<&'static str> = {
        let mut families: Vec<&'static str> = lanes
            .iter()
            .filter(|l| !(degraded_vectors && **l == Lane::ContentVector))
            .map(|l| l.family())
            .collect();
        families.sort_unstable();
        families.dedup();
        families
    };
    let semantic_status = match (vector_ran, semantic) {
        (true, SemanticState::Ready) => Status {
            state: LaneState::Ready,
            safe_code: None,
        },
        (true, _) => Status {
            state: LaneState::Degraded,
            safe_code: Some(SafeCode::SemanticLanePartialFailure),
        },
        (false, _) => Status {
            state: LaneState::Unavailable,
            safe_code: Some(SafeCode::SemanticSearchUnavailable),
        },
    };
    let evidence = EvidenceStatus {
        completed_families: completed,
        degraded_families: {
            let mut families = Vec::new();
            if degraded_vectors {
                families.push(Lane::ContentVector.family());
            }
            if cut_short {
                families.push(Lane::Literal.family());
            }
            families.sort_unstable();
            families
        },
    };
    (semantic_status, evidence)
}

/// `graphSummary`: the graph's size when the mode reads it, with the request's walk bounds.
pub(super) fn graph_summary(kb: &KnowledgeBase, request: &Request) -> GraphSummary {
    let available = request.mode != Mode::File;
    GraphSummary {
        available,
        indexed_document_count: if available {
            kb.catalog.source_page_count()
        } else {
            0
        },
        indexed_relationship_count: if available {
            kb.catalog.distinct_relation_count()
        } else {
            0
        },
        depth: request.graph_depth,
        fanout: request.graph_fanout,
    }
}
