//! The fusion's parameters: each lane's weight, the reciprocal-rank constant and the graph
//! and translation shares, with the measurements that chose them.

use super::Lane;

/// The fusion's parameters ([`WEIGHTS`]).
#[derive(Debug, Clone, Copy)]
pub struct Weights {
    pub rrf_k: f64,
    pub exact_path: f64,
    pub exact_title: f64,
    /// A page the query names by identifier ([`super::identifier`]).
    pub identifier: f64,
    pub lexical: f64,
    /// The pages whose title the question covers ([`super::title`]).
    pub title: f64,
    /// The pages that hold the code the query quotes as written ([`super::literal`]).
    pub literal: f64,
    pub passage: f64,
    pub jieba: f64,
    /// The semantic lane (`content_vector`).
    pub content_vector: f64,
    /// The cross-language lane.
    pub cross_vector: f64,
    /// The cross-language lane's share is multiplied by this for a page in another script
    /// than the question that has no translation in the question's script: the answer exists
    /// only across languages, and this lane is its one good witness.
    pub untranslated: f64,
    /// The semantic lane's share is multiplied by this for a page in another script than the
    /// question (CJK against alphabetic, by the page's language root): the lexical lanes
    /// cannot match such a page, so the semantic lane is its only direct witness, and it must
    /// stand against same-language pages that several lanes add up for.
    pub cross_language: f64,
    /// Windows less similar to the query than this do not count for the semantic lane.
    pub min_cosine: f32,
    /// The share of a semantic-lane window's score that is its page's opening window's cosine
    /// ([`crate::index::vectors::Vectors::search`]): a window that matches the question on
    /// words a page only mentions (a code example, a neighbouring rule's name) counts less
    /// when the page as a whole is about something else. Not for the cross-language lane.
    pub opening: f32,
    /// A vector lane's page counts at the rank its cosine's distance below the lane's best
    /// is worth, when that is lower than its place: one rank per `1 / cosine_ranks` of the
    /// distance from the best to the page at this place (`vector_ranks`).
    pub cosine_ranks: usize,
    /// Seeds of the graph lanes: the best pages by file score.
    pub seeds: usize,
    /// Share of a seed's file score a page it links to gets (depth 1).
    pub graph: f64,
    /// Each further depth divides the share by this.
    pub graph_depth: f64,
    /// Exponent of the hub damping: the share is divided by `relations ^ hub` of both ends of
    /// the step.
    pub hub: f64,
    /// Share of a seed's file score a related page gets when the relation's text holds every
    /// query term (less when it holds fewer).
    pub relationship: f64,
    /// Share of a page's score its translation gets.
    pub translation: f64,
    /// Pages (best first) whose translations follow them.
    pub translated: usize,
}

/// The weights in use, chosen on the dev sets (nDCG@10, `kbtools eval`; docs/ranking.md):
/// a small `k` (5, not the online 60) so that a lane's first ranks count for more than its
/// tenth — over the 36 to 162 pages of a knowledge base, 60 made every lane's top ten nearly
/// equal and any added share outweighed the lexical order; passages weigh three times the
/// whole page (answers sit in one section of a long page); graph shares of a tenth, damped
/// by the square roots of both ends' relation counts (with a rule reference's links resolved,
/// a fifth damped by the page reached only put its default mode below `file`, 0.7149 against
/// 0.7211); translations at half their page's score;
/// the title lane as much as the page lane (at 2 the rule reference's default mode fell below
/// its `file` mode, 0.6923 against 0.6999; at 4 `vue-docs` fell below its figure without the
/// lane, 0.7488 against 0.7504); the literal lane as much too (at 8 and 16 `vue-docs` fell
/// below its figure without the lane, 0.7597 and 0.7529 against 0.7647).
/// A vector lane's page counts no higher than its cosine's distance below the best is worth
/// in ranks, measured by the lane's own first five (the embeddings rank near-identical pages,
/// one rule's page and its neighbours', a few thousandths apart and then fall off; by place
/// alone the pages after the fall counted almost as much as those before it): the rule
/// reference 0.7294 → 0.7445, `focowiki-docs` 0.8783 → 0.8929, `vue-docs` 0.8347 → 0.8316,
/// SciFact 0.7169 → 0.7140, CMRC 0.9937 both (2, 3, 5 and 10 places tried; docs/semantic.md).
/// The semantic lane weighs 8, twice that for a page in the question's other script, with no
/// cosine floor; the cross-language lane 4, six times that for a page that answers only across
/// languages (at 8 for every page SciFact fell to 0.7103 and CMRC to 0.9915; without the
/// factor `xquad-enzh`'s cross-language questions scored 0.36). The dev-set figures that chose
/// them are in docs/semantic.md.
pub const WEIGHTS: Weights = Weights {
    rrf_k: 5.0,
    exact_path: 16.0,
    exact_title: 12.0,
    identifier: 16.0,
    lexical: 3.0,
    title: 3.0,
    literal: 3.0,
    passage: 10.0,
    jieba: 4.0,
    content_vector: 8.0,
    cross_vector: 4.0,
    untranslated: 6.0,
    cross_language: 2.0,
    min_cosine: 0.0,
    opening: 0.15,
    cosine_ranks: 5,
    seeds: 20,
    graph: 0.1,
    graph_depth: 2.0,
    hub: 0.5,
    relationship: 0.2,
    translation: 0.5,
    translated: 50,
};

/// The weight of a direct lane's reciprocal ranks (graph shares and the fallback: none).
pub(crate) fn lane_weight(w: &Weights, lane: Lane) -> f64 {
    match lane {
        Lane::ExactPath => w.exact_path,
        Lane::ExactTitle => w.exact_title,
        Lane::Identifier => w.identifier,
        Lane::Lexical => w.lexical,
        Lane::Title => w.title,
        Lane::Literal => w.literal,
        Lane::Passage => w.passage,
        Lane::Jieba => w.jieba,
        Lane::ContentVector => w.content_vector,
        Lane::CrossVector => w.cross_vector,
        Lane::FileGraph | Lane::FileRelationship | Lane::Nearest => 0.0,
    }
}
