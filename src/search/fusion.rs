//! One score per page from the lanes. The direct lanes are fused by weighted reciprocal rank
//! (`weight / (k + rank)`) into the page's *file score*; the graph lanes and translations add
//! to it shares of other pages' file scores (`Scored`); exact-path hits and the pages the
//! query names rank first, then exact-title hits, then the rest by score, ties by path.

use crate::error::IndexError;
use crate::graph::Step;
use crate::kb::KnowledgeBase;
use crate::search::aggregates;
use crate::search::lanes::io::{GraphInput, Hit, LaneInput, Offers, Section, Share};
use crate::search::lanes::plan::{Plan, Runs};
use crate::search::lanes::{Lane, LaneHits, LaneSet, Runner};
use crate::search::query::{AnalyzedQuery, Mode, Query, MAX_RESULTS};
use crate::search::weights::{Weights, WEIGHTS};

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
    /// The page's best section, when the passage or a vector lane found one: the excerpt
    /// comes from it.
    pub section: Option<Section>,
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
    pub lane: Lane,
    /// The page's rank in the lane, 1 for the first.
    pub rank: u32,
    pub weight: f64,
    pub share: f64,
    /// The cosine of the page's best window, in the vector lanes (`content_vector`,
    /// `cross_language`): how near the question its meaning is, which places alone hide.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cosine: Option<f32>,
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
    pub section: Option<Section>,
    /// Each direct lane's share, when the query is explained.
    pub shares: Vec<LaneShare>,
}

impl Entry {
    pub fn score(&self) -> f64 {
        self.file + self.graph + self.relationship + self.translation
    }
}

/// Every page some lane found, by catalog position.
pub(crate) type Scored = rustc_hash::FxHashMap<u32, Entry>;

/// Whether `path` is a page in another script than `question`: one of them CJK (Chinese,
/// Japanese, Korean) and the other not, the page's by its language root (a page outside
/// language roots is in no particular script).
fn other_script(question_is_cjk: bool, path: &str) -> bool {
    crate::ingest::bundle::paths::language_root(path).is_some_and(|code| {
        let cjk = ["zh", "ja", "ko"].iter().any(|c| code.starts_with(c));
        cjk != question_is_cjk
    })
}

/// Whether the page at `position` is in another script than the question: by its language
/// root, else by its text (the script its vectors recorded).
fn page_in_other_script(kb: &KnowledgeBase, question_is_cjk: bool, position: u32) -> bool {
    use crate::index::vectors::Script;
    let path = &kb.catalog.file(position).path;
    if crate::ingest::bundle::paths::language_root(path).is_some() {
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
/// `in_other`: whether the page is in another script ([`page_in_other_script`]).
fn answers_only_across(
    kb: &KnowledgeBase,
    question_is_cjk: bool,
    position: u32,
    in_other: bool,
) -> bool {
    in_other
        && !kb
            .catalog
            .translations(position)
            .iter()
            .any(|&t| !page_in_other_script(kb, question_is_cjk, t))
}

/// Whether a knowledge base has source pages in a CJK question's script and in an alphabetic
/// question's (by `page_in_other_script`'s rule: a page of no known script is in both).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PageScripts {
    /// Some page is in a CJK question's script.
    pub cjk: bool,
    /// Some page is in an alphabetic question's script.
    pub other: bool,
}

impl PageScripts {
    fn of(kb: &KnowledgeBase) -> PageScripts {
        let mut scripts = PageScripts::default();
        for position in 0..kb.catalog.file_count() as u32 {
            if !kb.catalog.is_source(position) {
                continue;
            }
            scripts.cjk |= !page_in_other_script(kb, true, position);
            scripts.other |= !page_in_other_script(kb, false, position);
            if scripts.cjk && scripts.other {
                break;
            }
        }
        scripts
    }

    /// Whether some page is in the question's script.
    fn has(self, question_is_cjk: bool) -> bool {
        match question_is_cjk {
            true => self.cjk,
            false => self.other,
        }
    }
}

/// Whether no source page is in the question's script (a Chinese question over English docs):
/// every page then answers only across languages.
fn none_in_script(kb: &KnowledgeBase, question_is_cjk: bool) -> bool {
    !kb.page_scripts
        .get_or_init(|| PageScripts::of(kb))
        .has(question_is_cjk)
}

/// The file score of every page a direct lane found (each lane counts at the page's rank in
/// it, its weight the table's: [`Lane::weight`]; a page is in a lane once). A content lane
/// counts a history at a share of its weight ([`aggregates::damping`]).
pub(crate) fn file_scores(
    kb: &KnowledgeBase,
    question: &AnalyzedQuery,
    direct: &[LaneHits],
    explain: bool,
) -> Scored {
    let w = &WEIGHTS;
    let question_is_cjk = question.cjk;
    let across_only = direct
        .iter()
        .any(|l| l.lane.is_vector() && !l.hits.is_empty())
        && none_in_script(kb, question_is_cjk);
    let mut scored = Scored::default();
    for lane in direct {
        let weight = lane.lane.weight();
        let ranks = vector_ranks(w, lane);
        for hit in &lane.hits {
            if !kb.catalog.is_source(hit.position) {
                continue;
            }
            let weight = match lane.lane.is_content() {
                true => {
                    weight * aggregates::damping(&kb.catalog, hit.position, question.asks_releases)
                }
                false => weight,
            };
            // Asked once per vector hit: its weight and its rank depend on it.
            let in_other =
                lane.lane.is_vector() && page_in_other_script(kb, question_is_cjk, hit.position);
            let weight = match lane.lane {
                Lane::ContentVector
                    if other_script(question_is_cjk, &kb.catalog.file(hit.position).path) =>
                {
                    weight * w.cross_language
                }
                Lane::CrossVector if across_only => weight * w.untranslated_everywhere,
                Lane::CrossVector
                    if answers_only_across(kb, question_is_cjk, hit.position, in_other) =>
                {
                    weight * w.untranslated
                }
                _ => weight,
            };
            let entry = scored.entry(hit.position).or_default();
            let comparable = ranks.is_some() && (across_only || !in_other);
            let rank = ranks.map_or(f64::from(hit.rank), |r| r.of(hit, comparable));
            let share = weight / (w.rrf_k + rank + 1.0);
            entry.file += share;
            if explain {
                entry.shares.push(LaneShare {
                    lane: lane.lane,
                    rank: hit.rank + 1,
                    weight,
                    share,
                    cosine: lane.lane.is_vector().then_some(hit.cosine),
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

/// How a vector lane's hits count: by their cosine's distance below the lane's best, in ranks
/// of the average distance between the lane's first [`Weights::cosine_ranks`] places.
#[derive(Debug, Clone, Copy)]
struct CosineRanks {
    best: f64,
    /// The cosine distance one rank is worth.
    step: f64,
}

impl CosineRanks {
    /// The rank `hit` counts at. A page `comparable` with the lane's best (in the question's
    /// script, or in a folder with no page in it) counts at its distance alone: two pages a few
    /// thousandths apart are as near the question as each other, and their places, first and
    /// second, would give the first a sixth more (`w / 6` against `w / 7`). Another page counts
    /// no higher than its place: the models' cosines across scripts do not compare with those
    /// within one (a Chinese page's cosine with an English question sits lower, as a rule, than
    /// an English page's), and the lanes' factors for such pages (`Weights::cross_language`,
    /// `Weights::untranslated`) were measured with places.
    fn of(self, hit: &Hit, comparable: bool) -> f64 {
        let by_cosine = (self.best - f64::from(hit.cosine)) / self.step;
        match comparable {
            true => by_cosine,
            false => by_cosine.max(f64::from(hit.rank)),
        }
    }
}

/// The cosine ranks of a vector lane (none for the other lanes, or when its first places are
/// tied).
fn vector_ranks(w: &Weights, lane: &LaneHits) -> Option<CosineRanks> {
    if !lane.lane.is_vector() || w.cosine_ranks == 0 {
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
pub(crate) fn seeds(scored: &Scored) -> Vec<u32> {
    best(scored, WEIGHTS.seeds, |e| e.file)
        .into_iter()
        .filter(|&(_, s)| s > 0.0)
        .map(|(p, _)| p)
        .collect()
}

/// Adds a graph lane's `offers` to `scored` as its `share` of a page's score: each marked page
/// that a direct lane found gets the lane; each offered page gets it and keeps the best offer
/// as score when no direct lane found it, or when `score_found` (`graph` mode, which ranks by
/// the graph).
pub(crate) fn add_offers(
    scored: &mut Scored,
    lane: Lane,
    share: Share,
    offers: Offers,
    score_found: bool,
) {
    for seed in offers.marked {
        if let Some(entry) = scored.get_mut(&seed) {
            entry.lanes.insert(lane);
        }
    }
    for (page, offer) in offers.offers {
        let entry = scored.entry(page).or_default();
        entry.lanes.insert(lane);
        if score_found || entry.file == 0.0 {
            let kept = match share {
                Share::Graph => &mut entry.graph,
                Share::Relationship => &mut entry.relationship,
            };
            *kept = kept.max(offer);
        }
    }
}

/// The graph lanes' seeds (the best pages by file score), each with its walk.
pub(crate) fn seed_walks(
    kb: &KnowledgeBase,
    query: &Query<'_>,
    scored: &Scored,
) -> Vec<(u32, Vec<Step>)> {
    seeds(scored)
        .iter()
        .map(|&seed| {
            let steps = crate::graph::walk(
                kb.graph(),
                seed,
                query.graph_depth,
                query.graph_fanout,
                usize::MAX,
            );
            (seed, steps)
        })
        .collect()
}

/// Runs the graph lanes `plan` reports, in table order, each adding its offers to `scored`
/// (`score_found`: pages a direct lane found take their offers as score too).
pub(crate) fn add_graph_lanes(
    input: &LaneInput<'_>,
    plan: &Plan,
    score_found: bool,
    walks: &[(u32, Vec<Step>)],
    scored: &mut Scored,
) -> Result<(), IndexError> {
    // A graph lane's shares do not change a seed's file score.
    let seed_scores: Vec<f64> = walks
        .iter()
        .map(|(seed, _)| scored.get(seed).map_or(0.0, |e| e.file))
        .collect();
    for &lane in Lane::ALL {
        let Runner::Graph(run, share) = lane.runner() else {
            continue;
        };
        if lane.runs(plan) != Runs::Report {
            continue;
        }
        let graph = GraphInput {
            kb: input.kb,
            index: input.index,
            query: input.query,
            walks,
            seed_scores: &seed_scores,
            weight: lane.weight(),
        };
        let offers = run(&graph)?;
        add_offers(scored, lane, share, offers, score_found);
    }
    Ok(())
}

/// The final list: source pages that pass the filters, exact-path hits first, then
/// exact-title hits, then by score; at most `MAX_RESULTS`. In `graph` mode a page needs graph
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
    use crate::search::lanes::io::Hit;
    use crate::search::lanes::{Lane, LaneHits};

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
    fn a_vector_lane_counts_its_own_script_by_cosine_and_the_other_no_higher_than_its_place() {
        let w = &crate::search::weights::WEIGHTS;
        // Six near-identical pages a thousandth apart, then a fall of a tenth, then a page
        // nearly tied with the best at the end.
        let hits = lane(
            Lane::ContentVector,
            &[0.900, 0.899, 0.898, 0.897, 0.896, 0.895, 0.795, 0.8999],
        );
        let ranks = super::vector_ranks(w, &hits).expect("a vector lane");
        let near = |r: f64, want: f64| (r - want).abs() < 1e-3;
        // Comparable pages count by distance alone, a thousandth a rank: nearly tied pages
        // nearly alike, whatever their places.
        let comparable: Vec<f64> = hits.hits.iter().map(|h| ranks.of(h, true)).collect();
        for (rank, &r) in comparable.iter().enumerate().take(6) {
            assert!(near(r, rank as f64), "{rank}: {r}");
        }
        assert!(near(comparable[6], 105.0), "{}", comparable[6]);
        assert!(near(comparable[7], 0.1), "{}", comparable[7]);
        // Pages in the other script never count higher than their place.
        let other: Vec<f64> = hits.hits.iter().map(|h| ranks.of(h, false)).collect();
        assert!(near(other[6], 105.0), "{}", other[6]);
        assert!(near(other[7], 7.0), "{}", other[7]);
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
