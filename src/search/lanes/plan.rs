//! Whether a lane runs for a request (docs/rules.md#fusion): the conditions the table of lanes
//! (`super`) names for each lane, over what a [`Plan`] knows of the request. The vector lanes
//! (`content_vector`) run in `hybrid` only, where their models are installed; the graph lanes
//! outside `file`; in `graph` mode the content lanes run unreported, to pick the graph lanes'
//! seeds.

use crate::search::query::{Mode, Scope};

/// What decides which lanes a request runs.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub scope: Scope,
    pub mode: Mode,
    /// The question has CJK text.
    pub cjk: bool,
    /// The question quotes code without quote marks (literals).
    pub literals: bool,
    /// The semantic lane's model can run.
    pub semantic: bool,
    /// The cross-language lane's model can run.
    pub cross: bool,
}

/// How a lane runs for a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    Skip,
    /// It runs, and its evidence is reported.
    Report,
    /// It runs unreported, to pick the graph lanes' seeds (`graph` mode).
    Seed,
    /// It runs only when no other lane found a page.
    Fallback,
}

impl Plan {
    /// The exact lanes: in every scope but `metadata`.
    pub fn exact(&self) -> Runs {
        match self.scope {
            Scope::Metadata => Runs::Skip,
            Scope::All | Scope::Path => Runs::Report,
        }
    }

    /// The page lane: in `metadata` over the metadata fields, else as a content lane.
    pub fn page(&self) -> Runs {
        match self.scope {
            Scope::Metadata => Runs::Report,
            _ => self.content(),
        }
    }

    /// A content lane: in scope `all`, reported outside `graph` mode, which it seeds.
    pub fn content(&self) -> Runs {
        match (self.scope, self.mode) {
            (Scope::All, Mode::Graph) => Runs::Seed,
            (Scope::All, _) => Runs::Report,
            _ => Runs::Skip,
        }
    }

    /// The literal lane: a content lane, for a question that quotes code.
    pub fn literal(&self) -> Runs {
        match self.literals {
            true => self.content(),
            false => Runs::Skip,
        }
    }

    /// The CJK word lane: it segments CJK text, so a question without CJK has nothing for it
    /// to add (it would repeat the page lane), and it does not seed the graph.
    pub fn words(&self) -> Runs {
        match (self.content(), self.cjk) {
            (Runs::Report, true) => Runs::Report,
            _ => Runs::Skip,
        }
    }

    /// The semantic lane: in `hybrid`, scope `all`, with its model.
    pub fn semantic(&self) -> Runs {
        match (self.scope, self.mode, self.semantic) {
            (Scope::All, Mode::Hybrid, true) => Runs::Report,
            _ => Runs::Skip,
        }
    }

    /// The cross-language lane: beside the semantic lane, with its own model.
    pub fn cross_language(&self) -> Runs {
        match (self.semantic(), self.cross) {
            (Runs::Report, true) => Runs::Report,
            _ => Runs::Skip,
        }
    }

    /// The graph lanes: outside `file` mode, in scope `all`.
    pub fn graph(&self) -> Runs {
        match (self.scope, self.mode) {
            (Scope::All, Mode::File) => Runs::Skip,
            (Scope::All, _) => Runs::Report,
            _ => Runs::Skip,
        }
    }

    /// The fallback of a search in scope `all` that no lane matched.
    pub fn fallback(&self) -> Runs {
        match self.scope {
            Scope::All => Runs::Fallback,
            _ => Runs::Skip,
        }
    }
}
