//! One score per page from the lanes. The direct lanes are fused by weighted reciprocal rank
//! (`weight / (k + rank)`) into the page's *file score*; the graph lanes and translations add
//! to it shares of other pages' file scores ([`Scored`]); exact-path hits and the pages the
//! query names rank first, then exact-title hits, then the rest by score, ties by path.

use super::lexical::LaneHits;
use super::{Candidate, Explained, Lane, LaneSet, LaneShare, Mode, Query, MAX_RESULTS};
use crate::kb::KnowledgeBase;

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
    /// distance from the best to the page at this place ([`vector_ranks`]).
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

fn lane_weight(w: &Weights, lane: Lane) -> f64 {
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

/// What is known of one page while the lanes are fused.
#[derive(Debug, Clone, Default)]
pub struct Entry {
    /// Fused direct-lane score.
    pub file: f64,
    /// Added by the graph lanes (the best share offered, per lane).
    pub graph: f64,
    pub relationship: f64,
    /// Added as the translation of a better page.
    pub translation: f64,
    /// The reported lanes that found it.
    pub lanes: LaneSet,
    /// Found by a reported content lane (it then has an excerpt; rules#excerpts: exact-only and
    /// graph-only hits have none).
    pub content: bool,
    pub section: Option<crate::index::search_index::Section>,
    /// Each direct lane's share, when the query is explained.
    pub shares: Vec<LaneShare>,
}

impl Entry {
    pub fn score(&self) -> f64 {
        self.file + self.graph + self.relationship + self.translation
    }
}

/// Every page some lane found, by catalog position.
pub type Scored = rustc_hash::FxHashMap<u32, Entry>;

/// Whether `path` is a page in another script than `question`: one of them CJK (Chinese,
/// Japanese, Korean) and the other not, the page's by its language root (a page outside
/// language roots is in no particular script).
fn other_script(question_is_cjk: bool, path: &str) -> bool {
    crate::bundle::paths::language_root(path).is_some_and(|code| {
        let cjk = ["zh", "ja", "ko"].iter().any(|c| code.starts_with(c));
        cjk != question_is_cjk
    })
}

/// Whether the page at `position` is in another script than the question: by its language
/// root, else by its text (the script its vectors recorded).
fn page_in_other_script(kb: &KnowledgeBase, question_is_cjk: bool, position: u32) -> bool {
    use crate::index::vectors::Script;
    let path = &kb.catalog.file(position).path;
    if crate::bundle::paths::language_root(path).is_some() {
        return other_script(question_is_cjk, path);
    }
    let script = kb
        .cross_vectors()
        .or(kb.vectors())
        .map_or(Script::Unknown, |v| v.script(position));
    match script {
        Script::Cjk => !question_is_cjk,
        Script::Other => question_is_cjk,
        Script::Unknown => false,
    }
}

/// Whether the page at `position` holds an answer that only the cross-language lane can see: in
/// another script than the question, with no translation in the question's script.
fn answers_only_across(kb: &KnowledgeBase, question_is_cjk: bool, position: u32) -> bool {
    page_in_other_script(kb, question_is_cjk, position)
        && !super::translation::translations(kb, position)
            .iter()
            .any(|&t| !page_in_other_script(kb, question_is_cjk, t))
}

/// The file score of every page a direct lane found (each lane counts at the page's rank in
/// it; a page is in a lane once).
pub fn file_scores(
    kb: &KnowledgeBase,
    question: &str,
    direct: &[LaneHits],
    explain: bool,
) -> Scored {
    let w = &WEIGHTS;
    let question_is_cjk = crate::analysis::has_cjk(question);
    let mut scored = Scored::default();
    for lane in direct {
        let weight = lane_weight(w, lane.lane);
        let ranks = vector_ranks(w, lane);
        for hit in &lane.hits {
            if !kb.catalog.is_source(hit.position) {
                continue;
            }
            let weight = match lane.lane {
                Lane::ContentVector
                    if other_script(question_is_cjk, &kb.catalog.file(hit.position).path) =>
                {
                    weight * w.cross_language
                }
                Lane::CrossVector if answers_only_across(kb, question_is_cjk, hit.position) => {
                    weight * w.untranslated
                }
                _ => weight,
            };
            let entry = scored.entry(hit.position).or_default();
            let rank = ranks.map_or(f64::from(hit.rank), |r| r.of(hit));
            let share = weight / (w.rrf_k + rank + 1.0);
            entry.file += share;
            if explain {
                entry.shares.push(LaneShare {
                    lane: lane.lane.name(),
                    rank: hit.rank + 1,
                    weight,
                    share,
                });
            }
            if lane.reported {
                entry.lanes.insert(lane.lane);
            }
            if lane.reported && lane.lane.is_content() {
                entry.content = true;
            }
            if hit.section.is_some() && entry.section.is_none() {
                entry.section = hit.section;
            }
        }
    }
    scored
}

/// How a vector lane's hits count: at their place, or lower when their cosine falls further
/// below the best than the lane's first [`Weights::cosine_ranks`] places span on average.
#[derive(Debug, Clone, Copy)]
struct CosineRanks {
    best: f64,
    /// The cosine distance one rank is worth.
    step: f64,
}

impl CosineRanks {
    fn of(self, hit: &super::lexical::Hit) -> f64 {
        let by_cosine = (self.best - f64::from(hit.cosine)) / self.step;
        by_cosine.max(f64::from(hit.rank))
    }
}

/// The cosine ranks of a vector lane (none for the other lanes, or when its first places are
/// tied).
fn vector_ranks(w: &Weights, lane: &LaneHits) -> Option<CosineRanks> {
    if !matches!(lane.lane, Lane::ContentVector | Lane::CrossVector) || w.cosine_ranks == 0 {
        return None;
    }
    let best = f64::from(lane.hits.first()?.cosine);
    let at = w.cosine_ranks.min(lane.hits.len() - 1);
    let step = (best - f64::from(lane.hits[at].cosine)) / at.max(1) as f64;
    (step > 0.0).then_some(CosineRanks { best, step })
}

/// The best `take` pages by `score`, best first, ties by catalog position (path order).
pub fn best(scored: &Scored, take: usize, score: impl Fn(&Entry) -> f64) -> Vec<(u32, f64)> {
    let mut pages: Vec<(u32, f64)> = scored.iter().map(|(&p, e)| (p, score(e))).collect();
    let order = |a: &(u32, f64), b: &(u32, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if take < pages.len() {
        pages.select_nth_unstable_by(take, order);
        pages.truncate(take);
    }
    pages.sort_unstable_by(order);
    pages
}

/// The graph lanes' seeds: the best pages by file score.
pub fn seeds(scored: &Scored) -> Vec<u32> {
    best(scored, WEIGHTS.seeds, |e| e.file)
        .into_iter()
        .filter(|&(_, s)| s > 0.0)
        .map(|(p, _)| p)
        .collect()
}

/// The final list: source pages that pass the filters, exact-path hits first, then
/// exact-title hits, then by score; at most [`MAX_RESULTS`]. In `graph` mode a page needs graph
/// evidence (a seed is a graph node in its own right) or an exact hit.
pub fn finish(kb: &KnowledgeBase, query: &Query<'_>, scored: Scored) -> Vec<Candidate> {
    let mut candidates: Vec<Candidate> = scored
        .into_iter()
        .filter(|(position, _)| kb.catalog.is_source(*position))
        .filter(|(_, e)| query.mode != Mode::Graph || e.lanes.iter().next().is_some())
        .filter(|(position, _)| (query.keep)(*position))
        .map(|(position, e)| Candidate {
            position,
            score: e.score(),
            lanes: e.lanes,
            content: e.content,
            section: e.section,
            explained: query.explain.then(|| {
                Box::new(Explained {
                    lanes: e.shares,
                    graph: e.graph,
                    relationship: e.relationship,
                    translation: e.translation,
                })
            }),
        })
        .collect();
    let class = |c: &Candidate| c.lanes.priority_class();
    candidates.sort_unstable_by(|a, b| {
        class(a)
            .cmp(&class(b))
            .then(b.score.total_cmp(&a.score))
            // Catalog positions are in path order (and paths are distinct).
            .then(a.position.cmp(&b.position))
    });
    candidates.truncate(MAX_RESULTS);
    candidates
}

#[cfg(test)]
mod tests {
    use super::super::lexical::{Hit, LaneHits};
    use super::super::Lane;

    fn lane(lane: Lane, cosines: &[f32]) -> LaneHits {
        let hits = cosines
            .iter()
            .enumerate()
            .map(|(rank, &cosine)| Hit {
                position: rank as u32,
                rank: rank as u32,
                section: None,
                cosine,
            })
            .collect();
        LaneHits {
            lane,
            reported: true,
            hits,
        }
    }

    #[test]
    fn a_vector_lane_counts_a_page_after_a_fall_in_cosine_lower_never_higher() {
        let w = &super::WEIGHTS;
        // Six near-identical pages a thousandth apart, then a fall of a tenth.
        let hits = lane(
            Lane::ContentVector,
            &[0.900, 0.899, 0.898, 0.897, 0.896, 0.895, 0.795, 0.8999],
        );
        let ranks = super::vector_ranks(w, &hits).expect("a vector lane");
        let of: Vec<f64> = hits.hits.iter().map(|h| ranks.of(h)).collect();
        for (rank, r) in of.iter().enumerate().take(6) {
            assert!((r - rank as f64).abs() < 1e-6, "{rank}: {r}");
        }
        // 0.105 below the best, a thousandth a rank.
        assert!((of[6] - 105.0).abs() < 1e-3, "{}", of[6]);
        // A page nearly tied with the best keeps its place.
        assert!((of[7] - 7.0).abs() < 1e-6, "{}", of[7]);
        // The lexical lanes and a lane whose first places tie count by place.
        assert!(super::vector_ranks(w, &lane(Lane::Lexical, &[0.0, 0.0])).is_none());
        assert!(super::vector_ranks(w, &lane(Lane::CrossVector, &[0.5; 7])).is_none());
        assert!(super::vector_ranks(w, &lane(Lane::CrossVector, &[0.5])).is_none());
    }

    #[test]
    fn other_script_compares_cjk_with_the_rest_by_language_root() {
        assert!(super::other_script(true, "pages/en/guide/a.md"));
        assert!(!super::other_script(true, "pages/zh-CN/guide/a.md"));
        assert!(super::other_script(false, "zh/a.md"));
        assert!(!super::other_script(false, "en-GB/a.md"));
        assert!(!super::other_script(false, "fr/a.md"));
        assert!(super::other_script(false, "ja/a.md"));
        // No language root: no script to compare.
        assert!(!super::other_script(true, "guide/a.md"));
        assert!(!super::other_script(false, "guide/a.md"));
    }
}
