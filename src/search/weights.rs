//! The fusion's parameters besides each lane's weight (which the table of lanes gives:
//! `crate::search::lanes`): the reciprocal-rank constant, the vector lanes' cosine and script
//! rules, and the graph and translation shares, with the measurements that chose them.

/// The fusion's parameters ([`WEIGHTS`]).
#[derive(Debug, Clone, Copy)]
pub struct Weights {
    pub rrf_k: f64,
    /// The cross-language lane's share is multiplied by this for a page in another script
    /// than the question that has no translation in the question's script: the answer exists
    /// only across languages, and this lane is its one good witness.
    pub untranslated: f64,
    /// The cross-language lane's factor instead, for every page, when no page is in the
    /// question's script (a Chinese question over English docs): the lane then lifts no page
    /// over another, and the factor only weighs it against the lexical lanes, which match such
    /// a question by its glossary words and quoted code alone.
    pub untranslated_everywhere: f64,
    /// The semantic lane's share is multiplied by this for a page in another script than the
    /// question (CJK against alphabetic, by the page's language root): the lexical lanes
    /// cannot match such a page, so the semantic lane is its only direct witness, and it must
    /// stand against same-language pages that several lanes add up for.
    pub cross_language: f64,
    /// Windows less similar to the query than this do not count for the semantic lane.
    pub min_cosine: f32,
    /// The share of a semantic-lane window's score that is its page's opening window's cosine
    /// ([`crate::search::cosine::best_windows`]): a window that matches the question on
    /// words a page only mentions (a code example, a neighbouring rule's name) counts less
    /// when the page as a whole is about something else. Not for the cross-language lane.
    pub opening: f32,
    /// A vector lane's page counts at the rank its cosine's distance below the lane's best is
    /// worth, one rank per `1 / cosine_ranks` of the distance from the best to the page at this
    /// place (`vector_ranks`): a page in the question's script (or in a folder with none) at
    /// that rank, a page in the other script at it or its place, whichever is lower.
    pub cosine_ranks: usize,
    /// Seeds of the graph lanes: the best pages by file score.
    pub seeds: usize,
    /// Each further depth divides a graph lane's share by this.
    pub graph_depth: f64,
    /// Exponent of the hub damping: the share is divided by `relations ^ hub` of both ends of
    /// the step.
    pub hub: f64,
    /// Share of a page's score its translation gets.
    pub translation: f64,
    /// Pages (best first) whose translations follow them.
    pub translated: usize,
    /// The share of its weight a content lane gives a history (a changelog, release notes)
    /// when the question does not ask about releases (`crate::search::aggregates`).
    pub history: f64,
}

/// The weights in use, chosen on the dev sets (nDCG@10, `kbtools eval`; docs/ranking.md):
/// a small `k` (5, not the online 60) so that a lane's first ranks count for more than its
/// tenth — over the 36 to 162 pages of a knowledge base, 60 made every lane's top ten nearly
/// equal and any added share outweighed the lexical order; graph shares halved per further
/// depth and damped by the square roots of both ends' relation counts; translations at half
/// their page's score.
/// A vector lane's page counts no higher than its cosine's distance below the best is worth
/// in ranks, measured by the lane's own first five (the embeddings rank near-identical pages,
/// one rule's page and its neighbours', a few thousandths apart and then fall off; by place
/// alone the pages after the fall counted almost as much as those before it): the rule
/// reference 0.7294 → 0.7445, `focowiki-docs` 0.8783 → 0.8929, `vue-docs` 0.8347 → 0.8316,
/// SciFact 0.7169 → 0.7140, CMRC 0.9937 both (2, 3, 5 and 10 places tried; docs/semantic.md).
/// The semantic lane counts twice for a page in the question's other script, with no cosine
/// floor; the cross-language lane six times for a page that answers only across languages
/// (without the factor `xquad-enzh`'s cross-language questions scored 0.36). The dev-set
/// figures that chose them are in docs/semantic.md.
/// Since issue 60, a page in the question's script (or any page, in a folder with none in it)
/// counts at its cosine's rank even when that is above its place, the semantic lane weighs 6
/// (not 8), and in a folder with no page in the question's script the cross-language lane
/// counts four times for every page (not six): both models, eslint-jest 0.9224 → 0.9393,
/// stylelint-docs 0.7599 → 0.7664, markdownlint 0.9109 → 0.9188, `focowiki-docs` 0.8919 →
/// 0.8980, CMRC 0.9934 → 0.9949, SciFact 0.7142 → 0.7167, `vue-docs` 0.8506 → 0.8490,
/// XQuAD-zh 0.9752 → 0.9737 (docs/ranking.md has every set).
pub const WEIGHTS: Weights = Weights {
    rrf_k: 5.0,
    untranslated: 6.0,
    untranslated_everywhere: 4.0,
    cross_language: 2.0,
    min_cosine: 0.0,
    opening: 0.15,
    cosine_ranks: 5,
    seeds: 20,
    graph_depth: 2.0,
    hub: 0.5,
    translation: 0.5,
    translated: 50,
    history: 0.3,
};
