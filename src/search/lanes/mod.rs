//! The lanes, declared once. One table (`lanes!`) gives each lane its name (`--explain`), its
//! family (`evidenceStatus`), the field a match of it reports (`matchedFields`), its evidence
//! (content, other file evidence, or graph), its weight, when it runs ([`plan::Plan`]) and the
//! function that runs it ([`Runner`]); [`Lane`], its spellings and every property come from that
//! one list, and the runner (`run_direct`) iterates it, so a lane cannot be forgotten. One file
//! per lane: each runs over the question analysed once ([`crate::search::query`]) and the
//! index's read-only view ([`io::LaneInput`]), and names nothing of this table.
//!
//! A new lane over the index's existing data is a file here and a row of the table.

use rayon::prelude::*;

use crate::error::IndexError;
use crate::index::search_index::PageHit;

pub mod content_vector;
pub mod cross_language;
pub mod exact_path;
pub mod exact_title;
pub mod file_graph;
pub mod file_relationship;
pub mod identifier;
pub mod io;
pub mod jieba;
pub mod lexical;
pub mod literal;
pub mod nearest;
pub mod passage;
pub mod plan;
pub mod title;

use io::{GraphInput, Hit, LaneInput, Offers, Share};
use plan::{Plan, Runs};

/// What a lane's evidence is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evidence {
    /// A match of the page's content: what a quoted phrase filters, and where an excerpt
    /// comes from.
    Content,
    /// A match of the page's path or title ("file evidence" for `matchType`, without an
    /// excerpt).
    File,
    /// An edge of the knowledge base, not a match of the question (docs/rules.md#fusion).
    Graph,
}

/// A fallback lane's function: its pages that pass the filter, and what found them.
pub type FallbackFn = fn(
    &LaneInput<'_>,
    &dyn Fn(u32) -> bool,
) -> Result<Option<(Vec<u32>, nearest::Nearest)>, IndexError>;

/// How a lane runs, and the function that runs it.
#[derive(Clone, Copy)]
pub enum Runner {
    /// A direct lane: its pages, best first.
    Direct(fn(&LaneInput<'_>) -> Result<Vec<Hit>, IndexError>),
    /// A direct lane whose pages keep their documents, for the [`Runner::Rescore`] lanes,
    /// which run after it in its task.
    Source(fn(&LaneInput<'_>) -> Result<Vec<PageHit>, IndexError>),
    /// A direct lane that scores the [`Runner::Source`] lane's pages again.
    Rescore(fn(&LaneInput<'_>, &[PageHit]) -> Result<Vec<Hit>, IndexError>),
    /// A graph lane: what the seeds' walks offer, and which share of a page's score it is.
    Graph(fn(&GraphInput<'_>) -> Result<Offers, IndexError>, Share),
    /// Pages for a search no other lane matched, that pass a filter, and what found them.
    Fallback(FallbackFn),
}

/// Declares [`Lane`] (a `wire_enum!`, spelled by its `--explain` name, in the table's order:
/// the order the fusion adds the lanes in) with one accessor per column.
macro_rules! lanes {
    (
        $(
            $(#[$doc:meta])*
            $variant:ident = $name:literal {
                family: $family:literal,
                field: $field:literal,
                evidence: $evidence:ident,
                weight: $weight:literal,
                runs: $runs:expr,
                run: $run:expr $(,)?
            }
        ),+ $(,)?
    ) => {
        crate::wire::wire_enum! {
            /// A retrieval lane (its spelling is its name in `--explain`).
            #[derive(PartialOrd, Ord)]
            pub enum Lane {
                $( $(#[$doc])* $variant = $name, )+
            }
        }

        impl Lane {
            /// The lane's own name (`--explain`).
            pub fn name(self) -> &'static str {
                self.as_str()
            }

            /// Its `evidenceStatus` family.
            pub fn family(self) -> &'static str {
                match self {
                    $( Lane::$variant => $family, )+
                }
            }

            /// The field a match of it reports in `matchedFields`.
            pub(crate) fn matched_field(self) -> &'static str {
                match self {
                    $( Lane::$variant => $field, )+
                }
            }

            pub(crate) fn evidence(self) -> Evidence {
                match self {
                    $( Lane::$variant => Evidence::$evidence, )+
                }
            }

            /// A direct lane's weight of its reciprocal ranks; a graph lane's share of a
            /// seed's score; nothing for the fallback.
            pub(crate) fn weight(self) -> f64 {
                match self {
                    $( Lane::$variant => $weight, )+
                }
            }

            /// Whether and how the lane runs for `plan`.
            pub(crate) fn runs(self, plan: &Plan) -> Runs {
                match self {
                    $( Lane::$variant => ($runs)(plan), )+
                }
            }

            pub(crate) fn runner(self) -> Runner {
                match self {
                    $( Lane::$variant => $run, )+
                }
            }
        }
    };
}

// The weights were chosen on the dev sets (nDCG@10, `kbtools eval`; docs/ranking.md): an exact
// path or a page the query names first, then an exact title; passages weigh three times the
// whole page (answers sit in one section of a long page); the title lane as much as the page
// lane (at 2 the rule reference's default mode fell below its `file` mode, 0.6923 against
// 0.6999; at 4 `vue-docs` fell below its figure without the lane, 0.7488 against 0.7504); the
// literal lane as much too (at 8 and 16 `vue-docs` fell below its figure without the lane,
// 0.7597 and 0.7529 against 0.7647). The semantic lane weighs 6 (twice that for a page in the
// question's other script: `crate::search::weights`; 8 while its pages counted at their
// places), the cross-language lane 4 (six times that for a page that answers only across
// languages; at 8 for every page SciFact fell to 0.7103 and CMRC to 0.9915); docs/semantic.md
// and docs/ranking.md have the figures. The graph lanes offer a tenth and a
// fifth of a seed's score, damped by the square roots of both ends' relation counts (with a
// rule reference's links resolved, a fifth damped by the page reached only put its default
// mode below `file`, 0.7149 against 0.7211).
lanes! {
    ExactPath = "exact_path" {
        family: "exact_path", field: "path", evidence: File, weight: 16.0,
        runs: Plan::exact, run: Runner::Direct(exact_path::run),
    },
    ExactTitle = "exact_title" {
        family: "exact_title", field: "title", evidence: File, weight: 12.0,
        runs: Plan::exact, run: Runner::Direct(exact_title::run),
    },
    /// The pages the query names by identifier ([`identifier`]): lexical evidence of the path.
    Identifier = "identifier" {
        family: "lexical", field: "path", evidence: File, weight: 16.0,
        runs: Plan::content, run: Runner::Direct(identifier::run),
    },
    /// The page lane, BM25F ([`lexical`]).
    Lexical = "lexical" {
        family: "lexical", field: "content", evidence: Content, weight: 3.0,
        runs: Plan::page, run: Runner::Source(lexical::run),
    },
    /// The page lane's pages by their best section ([`passage`]): lexical evidence.
    Passage = "passage" {
        family: "lexical", field: "content", evidence: Content, weight: 10.0,
        runs: Plan::content, run: Runner::Rescore(passage::run),
    },
    /// The pages whose title the question covers ([`title`]): lexical evidence, reported as
    /// the page lane's (`content`; `title` in `matchedFields` means an exact title).
    Title = "title" {
        family: "lexical", field: "content", evidence: Content, weight: 3.0,
        runs: Plan::content, run: Runner::Direct(title::run),
    },
    /// The pages whose body holds the code the query quotes as written ([`literal`]): lexical
    /// evidence of the content.
    Literal = "literal" {
        family: "lexical", field: "content", evidence: Content, weight: 3.0,
        runs: Plan::literal, run: Runner::Direct(literal::run),
    },
    /// The CJK word lane ([`jieba`]).
    Jieba = "jieba" {
        family: "jieba", field: "content", evidence: Content, weight: 4.0,
        runs: Plan::words, run: Runner::Direct(jieba::run),
    },
    /// The semantic lane ([`content_vector`]).
    ContentVector = "content_vector" {
        family: "content_vector", field: "content", evidence: Content, weight: 6.0,
        runs: Plan::semantic, run: Runner::Direct(content_vector::run),
    },
    /// The cross-language vector lane ([`cross_language`]): `content_vector` evidence.
    CrossVector = "cross_language" {
        family: "content_vector", field: "content", evidence: Content, weight: 4.0,
        runs: Plan::cross_language, run: Runner::Direct(cross_language::run),
    },
    /// Pages a matching page links to ([`file_graph`]).
    FileGraph = "file_graph" {
        family: "file_graph", field: "graph_node", evidence: Graph, weight: 0.1,
        runs: Plan::graph, run: Runner::Graph(file_graph::run, Share::Graph),
    },
    /// Pages reached by relations whose text matches the query ([`file_relationship`]).
    FileRelationship = "file_relationship" {
        family: "file_relationship", field: "file_relationship", evidence: Graph, weight: 0.2,
        runs: Plan::graph, run: Runner::Graph(file_relationship::run, Share::Relationship),
    },
    /// The fallback of a search no other lane matched ([`nearest`]): pages near the query's
    /// words by title or path, or the entry pages. Reported as lexical evidence of the path.
    Nearest = "nearest" {
        family: "lexical", field: "path", evidence: File, weight: 0.0,
        runs: Plan::fallback, run: Runner::Fallback(nearest::run),
    },
}

impl Lane {
    /// The graph lanes run only when the mode is not `file` and the scope is `all`.
    pub(crate) fn is_graph(self) -> bool {
        self.evidence() == Evidence::Graph
    }

    /// "File evidence" for `matchType` (docs/rules.md#fusion).
    pub(crate) fn is_file_evidence(self) -> bool {
        !self.is_graph()
    }

    /// Content lanes: what a quoted phrase filters, and where an excerpt comes from.
    pub(crate) fn is_content(self) -> bool {
        self.evidence() == Evidence::Content
    }

    /// Whether the lane ranks by an embedding's cosine (the semantic and cross-language lanes).
    pub(crate) fn is_vector(self) -> bool {
        matches!(self, Lane::ContentVector | Lane::CrossVector)
    }

    /// How a person would say the lane found a page (the CLI's text and the search page name
    /// it; `matchedFields` says `content` for the words and the models alike): by its name, its
    /// text, its meaning, in another language, by its links, or as a nearest page.
    pub fn found_as(self) -> &'static str {
        match self {
            Lane::ExactPath | Lane::ExactTitle | Lane::Title => "name",
            Lane::ContentVector => "meaning",
            Lane::CrossVector => "other language",
            Lane::FileGraph | Lane::FileRelationship => "links",
            Lane::Nearest => "nearest",
            Lane::Identifier | Lane::Lexical | Lane::Passage | Lane::Literal | Lane::Jieba => {
                "text"
            }
        }
    }

    /// The lanes `plan` reports, in table order.
    pub(crate) fn reported(plan: &Plan) -> Vec<Lane> {
        Lane::ALL
            .iter()
            .copied()
            .filter(|lane| lane.runs(plan) == Runs::Report)
            .collect()
    }
}

/// A set of lanes (a bit per lane), iterated in table order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LaneSet(u16);

// A bit per lane.
const _: () = assert!(Lane::ALL.len() <= 16);

impl LaneSet {
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
        Lane::ALL.iter().copied().filter(|lane| self.contains(lane))
    }
}

/// One direct lane's hits, and whether the lane is reported (in `graph` mode the content
/// lanes run only to pick the graph lanes' seeds).
pub struct LaneHits {
    pub lane: Lane,
    pub reported: bool,
    pub hits: Vec<Hit>,
}

/// Runs the direct lanes `plan` runs, in table order. They are independent reads of the index
/// and run at once (the page lane and the passage lane after it cost about as much as the rest
/// of a query together); a [`Runner::Rescore`] lane runs in its source lane's task. Quoted
/// phrases must then appear as written (in order, adjacent) in a content-lane hit.
pub(crate) fn run_direct(input: &LaneInput<'_>, plan: &Plan) -> Result<Vec<LaneHits>, IndexError> {
    let planned: Vec<(Lane, bool)> = Lane::ALL
        .iter()
        .filter_map(|&lane| match lane.runs(plan) {
            Runs::Report => Some((lane, true)),
            Runs::Seed => Some((lane, false)),
            Runs::Skip | Runs::Fallback => None,
        })
        .collect();
    let ran: Vec<Vec<LaneHits>> = planned
        .par_iter()
        .map(|&(lane, reported)| {
            let one = |hits| LaneHits {
                lane,
                reported,
                hits,
            };
            match lane.runner() {
                Runner::Direct(run) => Ok(vec![one(run(input)?)]),
                Runner::Source(run) => {
                    let pages = run(input)?;
                    let mut out = vec![one(io::page_hits(&pages))];
                    for &(next, reported) in &planned {
                        if let Runner::Rescore(rescore) = next.runner() {
                            out.push(LaneHits {
                                lane: next,
                                reported,
                                hits: rescore(input, &pages)?,
                            });
                        }
                    }
                    Ok(out)
                }
                Runner::Rescore(_) | Runner::Graph(..) | Runner::Fallback(_) => Ok(Vec::new()),
            }
        })
        .collect::<Result<_, IndexError>>()?;
    let mut out: Vec<LaneHits> = ran.into_iter().flatten().collect();
    out.sort_by_key(|lanes| lanes.lane);
    let phrases = &input.query.phrases;
    if !phrases.is_empty() {
        let pages = crate::search::phrases::pages_holding_all(input.index, phrases)?;
        // A question that quotes words no page holds (an error message as the asker saw it,
        // or translated) is still a question: its quotes then filter nothing. A short query
        // around a quote asked for that quote, and finds nothing without it, unless it ends
        // with a question mark (`What was named "The Tesla" in his honor?`).
        let (terms, asked) = (input.query.unquoted_terms, input.query.question_mark);
        let quoting_question =
            pages.is_empty() && (terms >= nearest::MIN_QUESTION_TERMS || asked && terms > 0);
        if !quoting_question {
            for lane in out.iter_mut().filter(|l| l.lane.is_content()) {
                lane.hits.retain(|h| pages.contains(&h.position));
            }
        }
    }
    Ok(out)
}
