//! The lanes over the page index (`crate::index::search_index`): BM25F over weighted fields
//! (the lexical lane and its `scope=metadata` form), the dictionary-word lane, exact path and
//! title, the pages a query names, near titles, phrases and literals, the passage lane over the
//! page lane's hits, the excerpter's term weights, and IDFs (remembered per opened generation).

use std::collections::BTreeMap;

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, FuzzyTermQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{Searcher, Term};

use super::bm25;
use super::excerpt::{Excerpter, EXCERPT_WINDOW_BYTES};
pub use super::lane_hit::LaneHit;
use super::passages::{self, Passages};
use crate::error::IndexError;
use crate::index::search_index::{
    exact_term, field, lock, stats, SearchIndex, TitleTerms, IDF_MEMO_ENTRIES,
};
use crate::ingest::analysis;

/// Field weights of the `lexical` lane (BM25F: per term, the fields' normalized frequencies
/// are weighted and summed, then saturated once). Tuned with `kbtools eval` on the SciFact train
/// split and the CMRC 2018 trial split only.
const LEXICAL_FIELDS: [(&str, f32); 4] =
    [("body", 1.0), ("title", 2.0), ("meta", 0.5), ("path", 0.3)];
/// Field weights of the `lexical` lane with `scope=metadata` (no body).
const METADATA_FIELDS: [(&str, f32); 3] = [("title", 1.0), ("path", 0.5), ("meta", 1.0)];
/// Field weights of the `jieba` lane: dictionary words of the body's CJK text, with the body's
/// `kb_text` terms (character bigrams, so that a word the dictionary splits differently still
/// matches, and the Latin words and numbers, which `body_w` does not hold).
const WORD_FIELDS: [(&str, f32); 2] = [("body_w", 0.5), ("body", 1.0)];
/// BM25 parameters (the classic defaults; the train splits are flat around them).
pub(crate) const BM25: bm25::FieldParams = bm25::FieldParams {
    weight: 1.0,
    k1: 1.2,
    b: 0.75,
};

/// A query's `kb_text` terms and their weights ([`analysis::query_terms`],
/// [`analysis::query_term_weights`]): analysed once per query (a CJK query is segmented by
/// jieba) and shared by every lane that reads them.
pub struct QueryTerms {
    pub terms: Vec<String>,
    pub weights: Vec<f32>,
}

impl QueryTerms {
    pub fn of(query: &str) -> Self {
        let terms = analysis::query_terms(query);
        let weights = analysis::query_term_weights(&terms);
        QueryTerms { terms, weights }
    }

    /// These terms and the English words the glossary lends the question's Chinese words
    /// ([`analysis::glossary`]), each Chinese word's at [`BORROWED_WEIGHT`] split among its
    /// alternatives; a term the question has already keeps its own weight.
    pub(crate) fn with_borrowed(mut self, query: &str) -> Self {
        for alternatives in analysis::glossary::borrowed(query) {
            let share = BORROWED_WEIGHT / alternatives.len() as f32;
            for english in alternatives {
                for term in analysis::query_terms(english) {
                    if !self.terms.contains(&term) {
                        // A question-framing word ("need") weighs as little borrowed as asked.
                        let weight = analysis::query_term_weights(std::slice::from_ref(&term));
                        self.weights.push(share * weight[0]);
                        self.terms.push(term);
                    }
                }
            }
        }
        self
    }
}

/// What a Chinese word's English words weigh in a question, together.
pub(crate) const BORROWED_WEIGHT: f32 = 1.0;

impl SearchIndex {
    fn run(
        &self,
        searcher: &Searcher,
        query: &dyn Query,
        limit: usize,
    ) -> Result<Vec<LaneHit>, IndexError> {
        let top = searcher.search(query, &TopDocs::with_limit(limit.max(1)).order_by_score())?;
        let positions = self.pages.few_positions(searcher, &self.positions)?;
        let mut top: Vec<bm25::TopDoc> = top
            .into_iter()
            .map(|(score, address)| bm25::TopDoc {
                score,
                address,
                order: positions.order(address),
            })
            .collect();
        // Equal scores rank by catalog position (path order), not by where the writer threads
        // put the documents: ranks feed the fusion.
        top.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(a.order.cmp(&b.order))
                .then(a.address.cmp(&b.address))
        });
        Ok(Self::hits(top))
    }

    /// The hits of scored documents (best first, equal scores by catalog position) that the
    /// catalog knows.
    fn hits(top: Vec<bm25::TopDoc>) -> Vec<LaneHit> {
        top.into_iter()
            .filter_map(|d| {
                Some(LaneHit {
                    position: u32::try_from(d.order).ok().filter(|&p| p != u32::MAX)?,
                    score: d.score,
                    address: d.address,
                })
            })
            .collect()
    }

    /// Schema fields with their BM25 parameters and whether they hold dictionary words (`*_w`);
    /// unknown names are skipped.
    fn weighted(&self, fields: &[(&str, f32)]) -> Vec<(bool, Field, bm25::FieldParams)> {
        fields
            .iter()
            .filter_map(|(name, weight)| {
                let field = self.schema.get_field(name).ok()?;
                let params = bm25::FieldParams {
                    weight: *weight,
                    ..BM25
                };
                Some((name.ends_with("_w"), field, params))
            })
            .collect()
    }

    fn lane(
        &self,
        searcher: &Searcher,
        fields: &[(&str, f32)],
        query_text: &str,
        text: &QueryTerms,
        limit: usize,
    ) -> Result<Vec<LaneHit>, IndexError> {
        let weighted = self.weighted(fields);
        let word_terms = if weighted.iter().any(|(words, _, _)| *words) {
            analysis::query_words(query_text)
        } else {
            Vec::new()
        };
        let queries: Vec<bm25::FieldQuery<'_>> = weighted
            .into_iter()
            .map(|(words, field, params)| bm25::FieldQuery {
                field,
                params,
                terms: if words { &word_terms } else { &text.terms },
                term_weights: if words { &[] } else { &text.weights },
            })
            .collect();
        let top = self
            .pages
            .with_collection(searcher, &self.positions, |collection| {
                bm25::top_docs(searcher, &queries, limit, collection)
            })?;
        Ok(Self::hits(top))
    }

    /// BM25F over `kb_text` fields: the query's terms in every field, frequencies weighted and
    /// length-normalized per field, then saturated once per term.
    fn fielded(
        &self,
        searcher: &Searcher,
        fields: &[(&str, f32)],
        query: &QueryTerms,
        limit: usize,
    ) -> Result<Vec<LaneHit>, IndexError> {
        let fields: Vec<(Field, bm25::FieldParams)> = self
            .weighted(fields)
            .into_iter()
            .map(|(_, field, params)| (field, params))
            .collect();
        let (terms, weights) = (&query.terms, &query.weights);
        let top = self
            .pages
            .with_collection(searcher, &self.positions, |collection| {
                bm25::top_docs_bm25f(
                    searcher, &fields, terms, weights, BM25.k1, limit, collection,
                )
            })?;
        Ok(Self::hits(top))
    }

    /// The `lexical` lane: BM25F over the weighted fields with the `kb_text` analysis.
    pub fn lexical(
        &self,
        searcher: &Searcher,
        query: &QueryTerms,
        limit: usize,
    ) -> Result<Vec<LaneHit>, IndexError> {
        self.fielded(searcher, &LEXICAL_FIELDS, query, limit)
    }

    /// The `lexical` lane with `scope=metadata`: title, path and metadata only.
    pub fn metadata(
        &self,
        searcher: &Searcher,
        query: &QueryTerms,
        limit: usize,
    ) -> Result<Vec<LaneHit>, IndexError> {
        self.fielded(searcher, &METADATA_FIELDS, query, limit)
    }

    /// The `jieba` lane: BM25 with dictionary-word analysis (of `query_text`) and the query's
    /// `kb_text` terms.
    pub fn words(
        &self,
        searcher: &Searcher,
        query_text: &str,
        query: &QueryTerms,
        limit: usize,
    ) -> Result<Vec<LaneHit>, IndexError> {
        self.lane(searcher, &WORD_FIELDS, query_text, query, limit)
    }

    /// Catalog positions of the pages whose body contains every phrase, in order and adjacent
    /// (CJK phrases as consecutive bigrams: an exact substring). A phrase with one token needs
    /// that token; a phrase with no token matches everything.
    pub(crate) fn phrase_matches(
        &self,
        searcher: &Searcher,
        phrases: &[String],
    ) -> Result<std::collections::HashSet<u32>, IndexError> {
        let clauses: Vec<(Occur, Box<dyn Query>)> = phrases
            .iter()
            .filter_map(|phrase| self.phrase_query(phrase))
            .map(|query| (Occur::Must, query))
            .collect();
        if clauses.is_empty() {
            return Ok(self.positions.positions().collect());
        }
        let positions = self.pages.doc_positions(searcher, &self.positions)?;
        let docs = searcher.search(
            &BooleanQuery::new(clauses),
            &tantivy::collector::DocSetCollector,
        )?;
        Ok(docs.into_iter().filter_map(|a| positions.get(a)).collect())
    }

    /// The query of the body that holds `phrase` as written: its terms in order, adjacent (one
    /// term per position: the longest token there, CJK bigrams over unigrams); `None` when it
    /// has no term.
    fn phrase_query(&self, phrase: &str) -> Option<Box<dyn Query>> {
        let mut longest: Vec<(usize, usize, String)> = Vec::new();
        let mut analyzer = analysis::text_analyzer();
        let mut stream = analyzer.token_stream(phrase);
        while stream.advance() {
            let t = stream.token();
            let span = t.offset_to - t.offset_from;
            match longest.last_mut() {
                Some(last) if last.0 == t.position => {
                    if span > last.1 {
                        *last = (t.position, span, t.text.clone());
                    }
                }
                _ => longest.push((t.position, span, t.text.clone())),
            }
        }
        let mut terms: Vec<(usize, Term)> = longest
            .into_iter()
            .map(|(position, _, text)| (position, Term::from_field_text(self.fields.body, &text)))
            .collect();
        match terms.len() {
            0 => None,
            1 => Some(Box::new(TermQuery::new(
                terms.remove(0).1,
                IndexRecordOption::Basic,
            ))),
            _ => Some(Box::new(tantivy::query::PhraseQuery::new_with_offset(
                terms,
            ))),
        }
    }

    /// The pages whose body holds the words of each of `literals` adjacent and in order (the
    /// candidates of [`crate::search::literal`], which reads them for the literal itself), in
    /// catalog order, one list per literal.
    pub(crate) fn literal_candidates(
        &self,
        searcher: &Searcher,
        literals: &[String],
    ) -> Result<Vec<Vec<u32>>, IndexError> {
        let mut out = Vec::with_capacity(literals.len());
        for literal in literals {
            let Some(query) = self.phrase_query(literal) else {
                out.push(Vec::new());
                continue;
            };
            let docs = searcher.search(&query, &tantivy::collector::DocSetCollector)?;
            let positions = self.pages.few_positions(searcher, &self.positions)?;
            let mut pages: Vec<u32> = docs.into_iter().filter_map(|a| positions.get(a)).collect();
            pages.sort_unstable();
            pages.dedup();
            out.push(pages);
        }
        Ok(out)
    }

    fn exact(
        &self,
        searcher: &Searcher,
        field: Field,
        key: &str,
    ) -> Result<Vec<LaneHit>, IndexError> {
        let term = Term::from_field_u64(field, exact_term(key));
        let query = TermQuery::new(term, IndexRecordOption::Basic);
        self.run(searcher, &query, 1000)
    }

    /// The `exact_path` lane: pages whose path (with or without `pages/`) equals the query.
    pub fn exact_path(&self, searcher: &Searcher, key: &str) -> Result<Vec<LaneHit>, IndexError> {
        self.exact(searcher, self.fields.exact_path, key)
    }

    /// The pages named `name` (lower case; [`crate::index::catalog::page_names`]), at most
    /// `most + 1` of them (a caller that takes at most `most` knows more were there).
    pub(crate) fn pages_named(
        &self,
        searcher: &Searcher,
        name: &str,
        most: usize,
    ) -> Result<Vec<LaneHit>, IndexError> {
        let term = Term::from_field_u64(self.fields.name, exact_term(name));
        let query = TermQuery::new(term, IndexRecordOption::Basic);
        self.run(searcher, &query, most + 1)
    }

    /// The pages whose title or path holds a word within `edits` of one of `terms` (each with
    /// its own number of edits, a transposition one edit), best first by how many of the terms
    /// they hold so: the fallback of a search that found nothing ([`crate::search::nearest`]).
    pub(crate) fn near_titles(
        &self,
        searcher: &Searcher,
        terms: &[(String, u8)],
        limit: usize,
    ) -> Result<Vec<LaneHit>, IndexError> {
        let path = field(&self.schema, "path")?;
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms
            .iter()
            .flat_map(|(term, edits)| {
                [self.fields.title, path].map(|field| {
                    let term = Term::from_field_text(field, term);
                    let query: Box<dyn Query> = Box::new(FuzzyTermQuery::new(term, *edits, true));
                    (Occur::Should, query)
                })
            })
            .collect();
        if clauses.is_empty() {
            return Ok(Vec::new());
        }
        self.run(searcher, &BooleanQuery::new(clauses), limit)
    }

    /// The `exact_title` lane: pages whose title equals the query.
    pub fn exact_title(&self, searcher: &Searcher, key: &str) -> Result<Vec<LaneHit>, IndexError> {
        self.exact(searcher, self.fields.exact_title, key)
    }

    /// An excerpter for the query's `kb_text` terms in the body (what tantivy's
    /// `SnippetGenerator` would highlight: each term the body field holds, weighted
    /// `1 / (1 + document frequency)`); `None` when the query has no term.
    pub(crate) fn excerpter(&self, searcher: &Searcher, query_text: &str) -> Option<Excerpter> {
        let terms = analysis::terms(&mut analysis::text_analyzer(), query_text);
        if terms.is_empty() {
            return None;
        }
        // As `SnippetGenerator::create` weighs terms (1 / (1 + document frequency)), with the
        // frequency among live documents: an incremental build keeps deleted ones around.
        let deleted = self.pages.deleted(searcher);
        let mut weights = BTreeMap::new();
        for term in terms {
            let df = stats::alive_doc_freq(
                searcher,
                &deleted,
                &Term::from_field_text(self.fields.body, &term),
            )
            .ok()?;
            if df > 0 {
                weights.insert(term, 1.0 / (1.0 + df as f32));
            }
        }
        Some(Excerpter {
            terms: weights,
            max_num_chars: EXCERPT_WINDOW_BYTES,
        })
    }

    /// The passage lane over the page lane's `candidates` ([`passages`]): BM25 over
    /// their heading sections with the lexical lane's query terms and weights.
    pub fn passages(
        &self,
        searcher: &Searcher,
        query: &QueryTerms,
        candidates: &[LaneHit],
    ) -> Result<Passages, IndexError> {
        let stats = self
            .pages
            .section_stats(searcher, self.fields.title, self.fields.body)?;
        let index = passages::Index {
            searcher,
            title: self.fields.title,
            body: self.fields.body,
            stats,
            deleted: &self.pages.deleted(searcher),
        };
        passages::score(&index, &query.terms, &query.weights, BM25, candidates)
    }

    /// The BM25 inverse document frequency of a `kb_text` term over the `body` field (as the
    /// lexical lane weighs it), for scoring text that is not in the index.
    pub fn idf(&self, searcher: &Searcher, term: &str) -> Result<f32, IndexError> {
        Ok(self
            .idfs(searcher, &[term])?
            .first()
            .copied()
            .unwrap_or_default())
    }

    /// [`Self::idf`] of each of `terms`, the index's deleted documents read once for all.
    pub fn idfs(&self, searcher: &Searcher, terms: &[&str]) -> Result<Vec<f32>, IndexError> {
        if !self.pages.reads_opened(searcher) {
            return self.idfs_read(searcher, terms);
        }
        let mut idfs = vec![0.0; terms.len()];
        let mut missing = Vec::new();
        {
            let memo = lock(&self.pages.memo.idfs);
            for (i, term) in terms.iter().enumerate() {
                match memo.get(*term) {
                    Some(&idf) => idfs[i] = idf,
                    None => missing.push(i),
                }
            }
        }
        if missing.is_empty() {
            return Ok(idfs);
        }
        let looked_up: Vec<&str> = missing.iter().map(|&i| terms[i]).collect();
        let read = self.idfs_read(searcher, &looked_up)?;
        let mut memo = lock(&self.pages.memo.idfs);
        if memo.len() + read.len() > IDF_MEMO_ENTRIES {
            memo.clear();
        }
        for (&i, idf) in missing.iter().zip(read) {
            idfs[i] = idf;
            memo.insert(terms[i].to_string(), idf);
        }
        Ok(idfs)
    }

    /// Each of `pages`' title terms (`terms_of`: the analysed title of a page) with its IDF
    /// ([`Self::idfs`]), remembered per page for the opened segments.
    pub fn title_terms(
        &self,
        searcher: &Searcher,
        pages: &[u32],
        terms_of: impl Fn(u32) -> Vec<String>,
    ) -> Result<Vec<TitleTerms>, IndexError> {
        let opened = self.pages.reads_opened(searcher);
        let mut known: Vec<Option<TitleTerms>> = if opened {
            let memo = lock(&self.pages.memo.titles);
            pages.iter().map(|page| memo.get(page).cloned()).collect()
        } else {
            vec![None; pages.len()]
        };
        let missing: Vec<(usize, Vec<String>)> = known
            .iter()
            .enumerate()
            .filter(|(_, terms)| terms.is_none())
            .map(|(i, _)| (i, terms_of(pages[i])))
            .collect();
        if !missing.is_empty() {
            let mut distinct: Vec<&str> = missing
                .iter()
                .flat_map(|(_, terms)| terms.iter().map(String::as_str))
                .collect();
            distinct.sort_unstable();
            distinct.dedup();
            let idfs = self.idfs(searcher, &distinct)?;
            let idf = |term: &str| distinct.binary_search(&term).map_or(0.0, |at| idfs[at]);
            let made: Vec<(usize, TitleTerms)> = missing
                .iter()
                .map(|(i, terms)| {
                    let weighted: TitleTerms = terms.iter().map(|t| (t.clone(), idf(t))).collect();
                    (*i, weighted)
                })
                .collect();
            let mut memo = opened.then(|| lock(&self.pages.memo.titles));
            for (i, weighted) in made {
                if let Some(memo) = memo.as_mut() {
                    memo.insert(pages[i], weighted.clone());
                }
                known[i] = Some(weighted);
            }
        }
        Ok(known.into_iter().map(Option::unwrap_or_default).collect())
    }

    /// [`Self::idfs`] read from the segments.
    fn idfs_read(&self, searcher: &Searcher, terms: &[&str]) -> Result<Vec<f32>, IndexError> {
        let total = searcher.num_docs().max(1) as f32;
        let deleted = self.pages.deleted(searcher);
        terms
            .iter()
            .map(|term| {
                let df = stats::alive_doc_freq(
                    searcher,
                    &deleted,
                    &Term::from_field_text(self.fields.body, term),
                )? as f32;
                Ok((1.0 + (total - df + 0.5) / (df + 0.5)).ln())
            })
            .collect()
    }
}
