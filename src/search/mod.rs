//! The ranking engine of `search_files`: a pipeline from the question to ordered candidates.
//! `tools::search_files` validates the input, pages through the candidates and shapes the
//! contract output; nothing here knows the output format.
//!
//! [`query`] analyses the question once; [`lanes`] declares every lane in one table and holds
//! one file per lane, each over the index's read-only view; [`fusion`] turns the lanes into one
//! score per page; `rank` runs the pipeline. Beside them: [`aggregates`] (changelogs and
//! collections in their place), the scorers (`bm25`, `cosine`),
//! the quoted text's matching ([`phrases`]), [`translation`], the vector lanes' models
//! (`semantic`), the fusion's parameters (`weights`) and the excerpts (`excerpt`).

pub mod aggregates;
pub mod bm25;
pub mod cosine;
pub mod excerpt;
pub mod fusion;
pub mod lanes;
pub mod phrases;
pub mod query;
pub mod rank;
pub mod semantic;
pub mod translation;
pub mod weights;

pub(crate) use fusion::PageScripts;
pub use fusion::{Candidate, Explained, LaneShare};
pub use lanes::{identifier, literal, nearest, Lane, LaneSet};
pub use query::{AnalyzedQuery, FileKind, Mode, Query, Scope};
pub use rank::{rank, Ranking};
pub use semantic::{semantic, SemanticState};
