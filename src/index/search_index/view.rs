//! A read-only view of the pages' index through one searcher: what the lanes of
//! `crate::search` read of it (the schema's fields, the pages a tantivy query matches, in
//! catalog order, the collection's statistics, the IDFs the opened generation remembers), and
//! nothing that scores: the lanes own their queries and their arithmetic.

use std::borrow::Cow;

use tantivy::collector::TopDocs;
use tantivy::query::Query;
use tantivy::schema::Field;
use tantivy::{DocAddress, DocId, Searcher};

use super::{field, stats, DocPositions, Fields, Positions, SearchIndex, TitleTerms};
use crate::error::IndexError;

/// A page a query matched: its catalog position, its score and where its document is.
#[derive(Debug, Clone, Copy)]
pub struct PageHit {
    pub position: u32,
    pub score: f32,
    pub address: DocAddress,
}

impl PageHit {
    /// The hit of a scored document whose catalog order ([`Positions::order`]) is `order`;
    /// `None` when the catalog does not know the document.
    pub(crate) fn of(score: f32, address: DocAddress, order: u64) -> Option<PageHit> {
        Some(PageHit {
            position: u32::try_from(order).ok().filter(|&p| p != u32::MAX)?,
            score,
            address,
        })
    }
}

/// The pages' index as one searcher reads it ([`SearchIndex::view`]).
#[derive(Clone, Copy)]
pub struct SearchView<'a> {
    index: &'a SearchIndex,
    searcher: &'a Searcher,
}

impl SearchIndex {
    /// The view of this index through `searcher` (one of [`SearchIndex::searcher`]'s).
    pub fn view<'a>(&'a self, searcher: &'a Searcher) -> SearchView<'a> {
        SearchView {
            index: self,
            searcher,
        }
    }
}

impl<'a> SearchView<'a> {
    pub fn searcher(&self) -> &'a Searcher {
        self.searcher
    }

    /// The fields the lanes query by name.
    pub(crate) fn fields(&self) -> Fields {
        self.index.fields
    }

    /// The schema's field `name`, if it has one.
    pub(crate) fn field(&self, name: &str) -> Option<Field> {
        self.index.schema.get_field(name).ok()
    }

    /// The schema's field `name`; an error when it is missing.
    pub(crate) fn required_field(&self, name: &str) -> Result<Field, IndexError> {
        field(&self.index.schema, name)
    }

    /// The best `limit` pages `query` matches by tantivy's own score, best first, equal scores
    /// by catalog position (path order), not by where the writer threads put the documents:
    /// ranks feed the fusion.
    pub(crate) fn top_docs(
        &self,
        query: &dyn Query,
        limit: usize,
    ) -> Result<Vec<PageHit>, IndexError> {
        let searcher = self.searcher;
        let top = searcher.search(query, &TopDocs::with_limit(limit.max(1)).order_by_score())?;
        let positions = self.few_positions()?;
        let mut top: Vec<(f32, DocAddress, u64)> = top
            .into_iter()
            .map(|(score, address)| (score, address, positions.order(address)))
            .collect();
        top.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.2.cmp(&b.2)).then(a.1.cmp(&b.1)));
        Ok(top
            .into_iter()
            .filter_map(|(score, address, order)| PageHit::of(score, address, order))
            .collect())
    }

    /// The catalog position of every document ([`super::Part::doc_positions`]).
    pub(crate) fn doc_positions(&self) -> Result<Cow<'a, DocPositions>, IndexError> {
        self.index
            .pages
            .doc_positions(self.searcher, &self.index.positions)
    }

    /// Positions for looking up a few documents ([`super::Part::few_positions`]).
    pub(crate) fn few_positions(&self) -> Result<Positions<'a>, IndexError> {
        self.index
            .pages
            .few_positions(self.searcher, &self.index.positions)
    }

    /// The catalog position of every indexed page.
    pub(crate) fn all_positions(&self) -> impl Iterator<Item = u32> + 'a {
        self.index.positions.positions()
    }

    /// Runs `score` with the collection's statistics ([`super::Part::with_collection`]).
    pub(crate) fn with_collection<T>(
        &self,
        score: impl FnOnce(&stats::Collection<'_>) -> Result<T, IndexError>,
    ) -> Result<T, IndexError> {
        self.index
            .pages
            .with_collection(self.searcher, &self.index.positions, score)
    }

    /// The deleted documents of each segment.
    pub(crate) fn deleted(&self) -> Cow<'a, [Vec<DocId>]> {
        self.index.pages.deleted(self.searcher)
    }

    /// The sections' statistics of the body.
    pub(crate) fn section_stats(&self) -> Result<stats::SectionStats, IndexError> {
        let fields = self.index.fields;
        self.index
            .pages
            .section_stats(self.searcher, fields.title, fields.body)
    }

    /// [`SearchIndex::idf`].
    pub(crate) fn idf(&self, term: &str) -> Result<f32, IndexError> {
        self.index.idf(self.searcher, term)
    }

    /// [`SearchIndex::title_terms`].
    pub(crate) fn title_terms(
        &self,
        pages: &[u32],
        terms_of: impl Fn(u32) -> Vec<String>,
    ) -> Result<Vec<TitleTerms>, IndexError> {
        self.index.title_terms(self.searcher, pages, terms_of)
    }

    /// Number of indexed pages ([`SearchIndex::num_docs`]).
    pub(crate) fn num_docs(&self) -> u64 {
        self.index.num_docs()
    }
}
