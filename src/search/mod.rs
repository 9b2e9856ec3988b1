//! The ranking engine of `search_files`: which lanes a query runs, each lane's candidates, and
//! how they are fused into one ordered list. `tools::search_files` validates the input, pages
//! through this list and shapes the contract output; nothing here knows the output format.
//!
//! One file per lane family: [`lexical`] (exact path, exact title, the BM25F page lane, the
//! passage lane over heading sections and the CJK word lane: direct file evidence),
//! [`graph_lane`] (`file_graph`: pages a matching page links to), [`relationship`]
//! (`file_relationship`: relations whose text matches the query), [`translation`] (the same
//! page in the knowledge base's other language roots), and [`fusion`], which turns the lanes
//! into one score per page.
//!
//! The fusion (rules#fusion, with this tool's own weights and passage evidence): the direct
//! lanes are fused by weighted reciprocal rank into a *file score*; the graph lanes do not rank
//! pages on their own but add to a page a share of the file score of the matching page that
//! points to it, damped by how many relations the page has (a hub linked from everywhere is
//! evidence for nothing in particular); a page's translation follows it at a fraction of its
//! score. docs/ranking.md records the weights and the figures that chose them.

pub mod bm25;
pub mod excerpt;
pub mod fusion;
pub mod graph_lane;
pub mod identifier;
pub mod lane_hit;
pub mod lexical;
pub mod literal;
pub mod nearest;
pub mod page_lanes;
pub mod passages;
pub mod relationship;
pub mod title;
pub mod translation;
#[cfg(feature = "semantic")]
pub mod vector;
pub mod weights;

use crate::error::{messages, ErrorCode, IndexError, ToolError};
use crate::graph::Step;
use crate::kb::KnowledgeBase;
use crate::search::page_lanes::QueryTerms;

/// A retrieval lane (an `evidenceStatus` family; the passage lane is lexical evidence).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Lane {
    ExactPath,
    ExactTitle,
    /// The pages the query names by identifier ([`identifier`]): lexical evidence of the path.
    Identifier,
    Lexical,
    /// The pages whose title the question covers ([`title`]): lexical evidence, reported as
    /// the page lane's (`content`).
    Title,
    /// The pages whose body holds the code the query quotes as written ([`literal`]): lexical
    /// evidence of the content.
    Literal,
    Passage,
    Jieba,
    ContentVector,
    /// The cross-language vector lane (`vector`): reported as `content_vector` evidence.
    CrossVector,
    FileGraph,
    FileRelationship,
    /// The fallback of a search no other lane matched ([`nearest`]): pages near the query's
    /// words by title or path, or the entry pages. Reported as lexical evidence of the path.
    Nearest,
}

impl Lane {
    /// The lane's own name (`--explain`): its family, or `identifier`, `title` and `passage`
    /// for the lexical lanes besides the page lane.
    pub fn name(self) -> &'static str {
        match self {
            Lane::Identifier => "identifier",
            Lane::Title => "title",
            Lane::Literal => "literal",
            Lane::Passage => "passage",
            Lane::Nearest => "nearest",
            Lane::CrossVector => "cross_language",
            other => other.family(),
        }
    }

    pub fn family(self) -> &'static str {
        match self {
            Lane::ExactPath => "exact_path",
            Lane::ExactTitle => "exact_title",
            Lane::Identifier
            | Lane::Lexical
            | Lane::Title
            | Lane::Literal
            | Lane::Passage
            | Lane::Nearest => "lexical",
            Lane::Jieba => "jieba",
            Lane::ContentVector | Lane::CrossVector => "content_vector",
            Lane::FileGraph => "file_graph",
            Lane::FileRelationship => "file_relationship",
        }
    }

    /// The graph lanes run only when the mode is not `file` and the scope is `all`.
    pub(crate) fn is_graph(self) -> bool {
        matches!(self, Lane::FileGraph | Lane::FileRelationship)
    }

    /// "File evidence" for `matchType` (docs/rules.md#fusion).
    pub(crate) fn is_file_evidence(self) -> bool {
        !self.is_graph()
    }

    /// Content lanes: what a quoted phrase filters, and where an excerpt comes from.
    pub(crate) fn is_content(self) -> bool {
        matches!(
            self,
            Lane::Lexical
                | Lane::Title
                | Lane::Literal
                | Lane::Passage
                | Lane::Jieba
                | Lane::ContentVector
                | Lane::CrossVector
        )
    }

    pub(crate) fn matched_field(self) -> &'static str {
        match self {
            Lane::ExactPath | Lane::Identifier | Lane::Nearest => "path",
            Lane::ExactTitle => "title",
            // `title` in `matchedFields` means an exact title, which ranks before the rest;
            // the title lane is the page lane's words measured another way.
            Lane::Lexical
            | Lane::Title
            | Lane::Literal
            | Lane::Passage
            | Lane::Jieba
            | Lane::ContentVector
            | Lane::CrossVector => "content",
            Lane::FileGraph => "graph_node",
            Lane::FileRelationship => "file_relationship",
        }
    }
}

/// A set of lanes (a bit per lane), iterated in lane order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LaneSet(u16);

impl LaneSet {
    const ALL: [Lane; 13] = [
        Lane::ExactPath,
        Lane::ExactTitle,
        Lane::Identifier,
        Lane::Lexical,
        Lane::Title,
        Lane::Literal,
        Lane::Passage,
        Lane::Jieba,
        Lane::ContentVector,
        Lane::CrossVector,
        Lane::FileGraph,
        Lane::FileRelationship,
        Lane::Nearest,
    ];

    fn bit(lane: Lane) -> u16 {
        1 << lane as u16
    }

    /// Adds `lane`; false when it was in the set already.
    pub fn insert(&mut self, lane: Lane) -> bool {
        let had = self.contains(&lane);
        self.0 |= Self::bit(lane);
        !had
    }

    pub fn contains(&self, lane: &Lane) -> bool {
        self.0 & Self::bit(*lane) != 0
    }

    /// The class that orders results before their score: 0 for an exact path or a page the
    /// query names (`matchedFields` say `path`), 1 for an exact title, 2 for the rest.
    pub fn priority_class(&self) -> u8 {
        if self.contains(&Lane::ExactPath) || self.contains(&Lane::Identifier) {
            0
        } else if self.contains(&Lane::ExactTitle) {
            1
        } else {
            2
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = Lane> + '_ {
        Self::ALL.into_iter().filter(|lane| self.contains(lane))
    }
}

crate::wire::wire_enum! {
    /// Where a search matches (`scope`).
    pub enum Scope {
        /// Content and metadata.
        All = "all",
        /// Paths and titles, exactly.
        Path = "path",
        /// Metadata only.
        Metadata = "metadata",
    }
}

crate::wire::wire_enum! {
    /// The lanes that rank (`mode`).
    pub enum Mode {
        /// The lexical and exact lanes.
        File = "file",
        /// Relations of the best lexical hits.
        Graph = "graph",
        /// All of them.
        Hybrid = "hybrid",
    }
}

crate::wire::wire_enum! {
    /// Which files a search returns (`fileKind`).
    pub enum FileKind {
        /// The knowledge base's pages.
        Page = "page",
        /// Navigation pages and records too.
        All = "all",
    }
}

/// What the engine needs of a validated request.
pub struct Query<'a> {
    pub text: &'a str,
    pub scope: Scope,
    pub mode: Mode,
    pub graph_depth: u8,
    pub graph_fanout: usize,
    /// Whether a page passes the request's filters (OKF signals).
    pub keep: &'a (dyn Fn(u32) -> bool + Sync),
    /// Keep each candidate's score by lane ([`Candidate::explained`]), for `--explain`.
    pub explain: bool,
}

/// A fused candidate.
pub struct Candidate {
    /// Catalog position of the page.
    pub position: u32,
    /// The fused score.
    pub score: f64,
    /// The lanes that returned it.
    pub lanes: LaneSet,
    /// Whether a content lane matched the page (it then has an excerpt).
    pub content: bool,
    /// The page's best section ([`crate::search::passages::PassageHit::section`]), when the
    /// passage lane found one: the excerpt comes from it.
    pub section: Option<passages::Section>,
    /// Where the score comes from, when the query asked ([`Query::explain`]).
    pub explained: Option<Box<Explained>>,
}

/// A candidate's score by lane: each direct lane's rank and share, then what the graph lanes
/// and translations added. The shares add up to the score.
#[derive(Debug, Clone, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explained {
    /// The direct lanes that found the page, in lane order.
    pub lanes: Vec<LaneShare>,
    /// The share of a seed's score a graph neighbour gets (`file_graph`).
    pub graph: f64,
    /// The share a matching relation gives (`file_relationship`).
    pub relationship: f64,
    /// The share of its translation's score (the same page in another language).
    pub translation: f64,
}

/// One direct lane's part of a score: `weight / (k + rank + 1)`.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LaneShare {
    pub lane: &'static str,
    /// The page's rank in the lane, 1 for the first.
    pub rank: u32,
    pub weight: f64,
    pub share: f64,
}

/// What [`rank`] finds: the fused candidates, the lanes that ran, and the graph walks of the
/// graph lanes' seeds.
pub struct Ranking {
    pub candidates: Vec<Candidate>,
    pub lanes: Vec<Lane>,
    /// Each seed with its walk (unbounded in total).
    pub walks: Vec<(u32, Vec<Step>)>,
    /// Whether the semantic lane could run.
    pub semantic: SemanticState,
    /// Set when no lane matched and the candidates are the [`nearest`] pages instead.
    pub nearest: Option<nearest::Nearest>,
}

impl Ranking {
    /// The walk of `page` with at most `total` steps, when `page` was a seed: the first `total`
    /// steps of its unbounded walk (a walk stops at its total, so it is always a prefix).
    pub fn walk(&self, page: u32, total: usize) -> Option<&[Step]> {
        self.walks
            .iter()
            .find(|(seed, _)| *seed == page)
            .map(|(_, steps)| &steps[..steps.len().min(total)])
    }
}

/// Whether the semantic lane can run (`semanticStatus`, docs/rules.md#semantic-lane).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SemanticState {
    /// The index has vectors of the installed model.
    Ready,
    /// Some pages have none (they changed while the model was missing): the lane runs over
    /// the rest.
    Degraded,
    /// No vectors, no model, another model's vectors, or turned off.
    Unavailable,
}

#[cfg(feature = "semantic")]
type SemanticModel = Option<std::sync::Arc<crate::embed::Model>>;
#[cfg(not(feature = "semantic"))]
type SemanticModel = Option<()>;

/// Whether the semantic lane can run on `kb`, and its model.
pub fn semantic(kb: &KnowledgeBase) -> (SemanticState, SemanticModel) {
    #[cfg(feature = "semantic")]
    {
        vector::state(kb)
    }
    #[cfg(not(feature = "semantic"))]
    {
        let _ = kb;
        (SemanticState::Unavailable, None)
    }
}

/// Results a cursor can page through.
pub(crate) const MAX_RESULTS: usize = 1000;

/// The lanes a request runs (docs/rules.md#fusion; the vector lanes, `content_vector`, in `hybrid`
/// only: the semantic lane when `semantic`, the cross-language lane beside it when `cross`).
pub fn plan(scope: Scope, mode: Mode, query: &str, semantic: bool, cross: bool) -> Vec<Lane> {
    match scope {
        Scope::Path => vec![Lane::ExactPath, Lane::ExactTitle],
        Scope::Metadata => vec![Lane::Lexical],
        Scope::All => {
            let mut lanes = vec![Lane::ExactPath, Lane::ExactTitle];
            if mode != Mode::Graph {
                lanes.push(Lane::Identifier);
                lanes.push(Lane::Lexical);
                lanes.push(Lane::Title);
                if !literal::literals(query).is_empty() {
                    lanes.push(Lane::Literal);
                }
                lanes.push(Lane::Passage);
                // The CJK word lane segments CJK text; a query without CJK has nothing for it
                // to add (it would repeat the lexical lane), so it does not run.
                if crate::ingest::analysis::has_cjk(query) {
                    lanes.push(Lane::Jieba);
                }
            }
            if mode == Mode::Hybrid && semantic {
                lanes.push(Lane::ContentVector);
                if cross {
                    lanes.push(Lane::CrossVector);
                }
            }
            if mode != Mode::File {
                lanes.push(Lane::FileGraph);
                lanes.push(Lane::FileRelationship);
            }
            lanes
        }
    }
}

pub(crate) fn unavailable(e: IndexError) -> ToolError {
    ToolError::new(ErrorCode::SearchUnavailable, messages::SEARCH_UNAVAILABLE)
        .with_detail("reason", e.to_string())
}

/// A query's embedding, shared with the embedding cache.
#[cfg(not(feature = "semantic"))]
type QueryVector = std::sync::Arc<Vec<f32>>;

/// Ranks the source pages for `query`: at most `MAX_RESULTS`, best first.
pub fn rank(kb: &KnowledgeBase, query: &Query<'_>) -> Result<Ranking, ToolError> {
    // The models load (once a process) before the clock starts: the deadline bounds the
    // search, not a first use. Only where the vector lanes can run: a `file`-mode call loaded
    // both models (0.55 s and 270 MB of a cold SciFact call) for nothing.
    let vector_lanes = query.mode == Mode::Hybrid && query.scope == Scope::All;
    let (semantic_state, model) = match vector_lanes {
        true => semantic(kb),
        false => (SemanticState::Unavailable, None),
    };
    #[cfg(feature = "semantic")]
    let cross_model = vector_lanes.then(|| vector::cross_model(kb)).flatten();
    #[cfg(not(feature = "semantic"))]
    let cross_model: Option<()> = None;
    let started = std::time::Instant::now();
    let check_deadline = || {
        if started.elapsed() > kb.options.search_deadline {
            Err(ToolError::new(
                ErrorCode::SearchTimeout,
                messages::SEARCH_TIMEOUT,
            ))
        } else {
            Ok(())
        }
    };
    let lanes = plan(
        query.scope,
        query.mode,
        query.text,
        model.is_some(),
        cross_model.is_some(),
    );
    // The query's embeddings first, their GEMMs on the whole pool: inside the lanes' parallel
    // run they waited on the other lanes' tasks (SciFact, warm server: 71 ms median a search).
    #[cfg(feature = "semantic")]
    let (query_vector, cross_vector) = (
        model
            .as_ref()
            .filter(|_| lanes.contains(&Lane::ContentVector))
            .map(|model| vector::query_vector(model, query.text)),
        cross_model
            .as_ref()
            .filter(|_| lanes.contains(&Lane::CrossVector))
            .map(|model| vector::cross_query_vector(model, query.text)),
    );
    #[cfg(not(feature = "semantic"))]
    let (query_vector, cross_vector): (Option<QueryVector>, Option<QueryVector>) = (None, None);
    let searcher = kb.search.searcher();
    let terms = QueryTerms::of(query.text).with_borrowed(query.text);
    let direct = lexical::run(
        kb,
        &searcher,
        query,
        &terms,
        &lanes,
        query_vector.as_deref().map(|v| &v[..]),
        cross_vector.as_deref().map(|v| &v[..]),
    )
    .map_err(unavailable)?;
    check_deadline()?;
    let mut scored = fusion::file_scores(kb, query.text, &direct, query.explain);
    let mut walks: Vec<(u32, Vec<Step>)> = Vec::new();
    if lanes.iter().any(|l| l.is_graph()) {
        let seeds = fusion::seeds(&scored);
        walks = seeds
            .iter()
            .map(|&seed| {
                (
                    seed,
                    crate::graph::walk(
                        kb.graph(),
                        seed,
                        query.graph_depth,
                        query.graph_fanout,
                        usize::MAX,
                    ),
                )
            })
            .collect();
        let score_found = query.mode == Mode::Graph;
        graph_lane::add(kb, &mut scored, &walks, score_found);
        relationship::add(
            kb,
            &searcher,
            &terms.terms,
            &mut scored,
            &walks,
            score_found,
        )
        .map_err(unavailable)?;
        // Translations are graph evidence: a zero depth or fanout turns them off too.
        if query.graph_depth > 0 && query.graph_fanout > 0 {
            translation::add(kb, &mut scored);
        }
        check_deadline()?;
    }
    let mut candidates = fusion::finish(kb, query, scored);
    let mut nearest = None;
    if candidates.is_empty() && query.scope == Scope::All {
        if let Some((found, kind)) =
            nearest::candidates(kb, &searcher, query, &terms).map_err(unavailable)?
        {
            candidates = found;
            nearest = Some(kind);
        }
    }
    check_deadline()?;
    Ok(Ranking {
        candidates,
        lanes,
        walks,
        semantic: semantic_state,
        nearest,
    })
}
