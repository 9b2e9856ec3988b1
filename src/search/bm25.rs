//! Term-at-a-time BM25 over tantivy postings: a weighted sum of per-field BM25 with `k1` and
//! `b` per field (tantivy's own scorer fixes them), collection statistics over all segments, and
//! a dense score array per segment (no per-document allocation, no heap of scorers). The dense
//! arrays are kept per thread between queries, and only the documents near the top of a
//! segment's scores are ordered exactly.

use std::cell::Cell;
use std::cmp::Ordering;

use tantivy::fastfield::AliveBitSet;
use tantivy::postings::Postings;
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocAddress, DocSet, Searcher, Term, TERMINATED};

use crate::error::IndexError;
use crate::index::search_index::stats::{alive_doc_freq, Collection};
use crate::index::search_index::{PageHit, SearchView};

/// BM25 parameters (the classic defaults; the train splits are flat around them).
pub(crate) const BM25: FieldParams = FieldParams {
    weight: 1.0,
    k1: 1.2,
    b: 0.75,
};

/// BM25 parameters of one field.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FieldParams {
    pub weight: f32,
    pub k1: f32,
    pub b: f32,
}

/// One field of a query and the terms it is queried with, each with its query weight.
pub(crate) struct FieldQuery<'a> {
    pub field: Field,
    pub params: FieldParams,
    pub terms: &'a [String],
    pub term_weights: &'a [f32],
}

/// Scores every document that matches any term and returns the best `limit`, best first
/// (ties by address).
pub(crate) fn top_docs(
    searcher: &Searcher,
    fields: &[FieldQuery<'_>],
    limit: usize,
    collection: &Collection<'_>,
) -> Result<Vec<TopDoc>, IndexError> {
    let total_docs = collection.total_docs.max(1) as f32;
    let deleted = collection.deleted;
    // Collection statistics: document frequency and average field length, over all segments.
    let mut average_length = Vec::with_capacity(fields.len());
    for fq in fields {
        average_length.push((collection.average_field_length)(fq.field)?);
    }
    let mut idf: Vec<Vec<f32>> = Vec::with_capacity(fields.len());
    for fq in fields {
        let mut row = Vec::with_capacity(fq.terms.len());
        for t in fq.terms {
            let df = alive_doc_freq(searcher, deleted, &Term::from_field_text(fq.field, t))? as f32;
            row.push(
                (1.0 + (total_docs - df + 0.5) / (df + 0.5)).ln()
                    * term_weight(fq.term_weights, row.len()),
            );
        }
        idf.push(row);
    }

    let mut best = TopK::new(limit, collection.order);
    // Taken for the query and put back after it (dropped on an error).
    let mut scratch = SCRATCH.take();
    for (segment_ord, segment) in searcher.segment_readers().iter().enumerate() {
        let max_doc = segment.max_doc() as usize;
        let scores = zeroed(&mut scratch.scores, max_doc);
        for (fi, fq) in fields.iter().enumerate() {
            let inverted = segment.inverted_index(fq.field)?;
            let norms = segment.get_fieldnorms_reader(fq.field)?;
            let FieldParams { weight, k1, b } = fq.params;
            for (ti, t) in fq.terms.iter().enumerate() {
                let term = Term::from_field_text(fq.field, t);
                let Some(mut postings) = inverted
                    .read_postings(&term, IndexRecordOption::WithFreqs)
                    .map_err(|e| IndexError::Tantivy(e.to_string()))?
                else {
                    continue;
                };
                let term_weight = weight * idf[fi][ti];
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    let tf = postings.term_freq() as f32;
                    let length = norms.fieldnorm(doc) as f32;
                    let norm = k1 * (1.0 - b + b * length / average_length[fi]);
                    scores[doc as usize] += term_weight * tf * (k1 + 1.0) / (tf + norm);
                    doc = postings.advance();
                }
            }
        }
        best.collect(segment.alive_bitset(), segment_ord, scores);
    }
    SCRATCH.set(scratch);
    Ok(best.into_sorted())
}

/// BM25F: per term, the fields' length-normalized frequencies are weighted and summed first,
/// then saturated once (`k1`), so a term in both title and body is not counted twice over.
/// Every field is queried with the same `terms`; the IDF is the largest of the fields', times
/// the term's query weight.
pub(crate) fn top_docs_bm25f(
    searcher: &Searcher,
    fields: &[(Field, FieldParams)],
    terms: &[String],
    term_weights: &[f32],
    k1: f32,
    limit: usize,
    collection: &Collection<'_>,
) -> Result<Vec<TopDoc>, IndexError> {
    let total_docs = collection.total_docs.max(1) as f32;
    let deleted = collection.deleted;
    let mut average_length = Vec::with_capacity(fields.len());
    for (field, _) in fields {
        average_length.push((collection.average_field_length)(*field)?);
    }
    let mut idf = Vec::with_capacity(terms.len());
    for t in terms {
        let mut df = 0u64;
        for (field, _) in fields {
            df = df.max(alive_doc_freq(
                searcher,
                deleted,
                &Term::from_field_text(*field, t),
            )?);
        }
        let df = df as f32;
        idf.push(
            (1.0 + (total_docs - df + 0.5) / (df + 0.5)).ln()
                * term_weight(term_weights, idf.len()),
        );
    }
    let mut best = TopK::new(limit, collection.order);
    // Taken for the query and put back after it (dropped on an error).
    let mut scratch = SCRATCH.take();
    let Scratch {
        scores,
        combined,
        touched,
    } = &mut scratch;
    for (segment_ord, segment) in searcher.segment_readers().iter().enumerate() {
        let max_doc = segment.max_doc() as usize;
        let scores = zeroed(scores, max_doc);
        let combined = zeroed(combined, max_doc);
        touched.clear();
        let mut readers = Vec::with_capacity(fields.len());
        for (field, _) in fields {
            readers.push((
                segment.inverted_index(*field)?,
                segment.get_fieldnorms_reader(*field)?,
            ));
        }
        for (ti, t) in terms.iter().enumerate() {
            for (fi, (field, params)) in fields.iter().enumerate() {
                let (inverted, norms) = &readers[fi];
                let Some(mut postings) = inverted
                    .read_postings(
                        &Term::from_field_text(*field, t),
                        IndexRecordOption::WithFreqs,
                    )
                    .map_err(|e| IndexError::Tantivy(e.to_string()))?
                else {
                    continue;
                };
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    let tf = postings.term_freq() as f32;
                    let length = norms.fieldnorm(doc) as f32;
                    let norm = 1.0 - params.b + params.b * length / average_length[fi];
                    if combined[doc as usize] == 0.0 {
                        touched.push(doc);
                    }
                    combined[doc as usize] += params.weight * tf / norm;
                    doc = postings.advance();
                }
            }
            for &doc in touched.iter() {
                let tf = combined[doc as usize];
                scores[doc as usize] += idf[ti] * tf * (k1 + 1.0) / (tf + k1);
                combined[doc as usize] = 0.0;
            }
            touched.clear();
        }
        best.collect(segment.alive_bitset(), segment_ord, scores);
    }
    SCRATCH.set(scratch);
    Ok(best.into_sorted())
}

/// The schema's fields among `fields` (name and weight) with their BM25 parameters, and
/// whether each holds dictionary words (`*_w`); unknown names are skipped.
pub(crate) fn weighted_fields(
    index: &SearchView<'_>,
    fields: &[(&str, f32)],
) -> Vec<(bool, Field, FieldParams)> {
    fields
        .iter()
        .filter_map(|(name, weight)| {
            let field = index.field(name)?;
            let params = FieldParams {
                weight: *weight,
                ..BM25
            };
            Some((name.ends_with("_w"), field, params))
        })
        .collect()
}

/// The hits of scored documents (best first, equal scores by catalog position) that the
/// catalog knows.
pub(crate) fn hits(top: Vec<TopDoc>) -> Vec<PageHit> {
    top.into_iter()
        .filter_map(|d| PageHit::of(d.score, d.address, d.order))
        .collect()
}

/// The query weight of term `i` (1 when none is given).
pub(crate) fn term_weight(weights: &[f32], i: usize) -> f32 {
    weights.get(i).copied().unwrap_or(1.0)
}

/// Dense per-document arrays, reused by the queries of one thread (a query allocating and
/// zero-filling fresh arrays the size of a segment pays for the page faults every time).
#[derive(Default)]
struct Scratch {
    scores: Vec<f32>,
    combined: Vec<f32>,
    touched: Vec<u32>,
}

thread_local! {
    static SCRATCH: Cell<Scratch> = Cell::new(Scratch::default());
}

/// `buffer` as `len` zeros.
fn zeroed(buffer: &mut Vec<f32>, len: usize) -> &mut [f32] {
    buffer.clear();
    buffer.resize(len, 0.0);
    buffer
}

/// A kept document of `TopK`: its score, address and ranking order (the catalog position,
/// `u64::MAX` when the catalog does not know it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct TopDoc {
    pub score: f32,
    pub address: DocAddress,
    pub order: u64,
}

impl TopDoc {
    /// The ranking order: higher score first, then lower `order` (where the writer put a
    /// document must not decide which of two equal documents makes the cut), then lower
    /// address. `Less` is better.
    fn rank(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then(self.order.cmp(&other.order))
            .then(self.address.cmp(&other.address))
    }
}

/// The best `limit` documents of those offered, in the ranking order of [`TopDoc::rank`] (a
/// total order, so the kept set is the first `limit` of a full sort, whatever the offering
/// order).
///
/// A segment's scores are read in one pass against a bound: the higher of a score estimated
/// from a sample of them, which about 1.5 × `limit` documents of the segment reach, and the
/// `limit`-th best score kept from the segments before (the floor). When fewer than `limit`
/// documents of the segment reach the sampled bound, the rest down to the floor are added too.
/// Either way every document that can be among the overall best `limit` is a candidate: one
/// below the sampled bound has `limit` better ones in its own segment, one below the floor has
/// `limit` better ones already kept. Candidates are ordered by score alone until the end; the
/// tie order (a catalog lookup each) is read only for the documents kept then.
struct TopK<'a> {
    limit: usize,
    candidates: Vec<(f32, DocAddress)>,
    /// The key of the `limit`-th best score kept so far (0, below every key, until `limit`
    /// documents are kept).
    floor: u32,
    order: &'a dyn Fn(DocAddress) -> u64,
}

/// A score that makes its document a hit: positive (or NaN, which no BM25 score is, but the
/// test is the one the full sort used, `!(score <= 0.0)`).
fn is_scored(score: f32) -> bool {
    score > 0.0 || score.is_nan()
}

/// Scores sampled per segment to estimate the bound.
const SAMPLES: usize = 4096;

/// The score as a `u32` that orders as `f32::total_cmp` does (without branches: negative
/// scores have every bit flipped, the others only the sign bit).
fn key(score: f32) -> u32 {
    let bits = score.to_bits();
    let negative = ((bits as i32) >> 31) as u32;
    bits ^ (negative | 0x8000_0000)
}

/// Documents per block of the bound scan (the bits of a `u64`).
const SCAN_BLOCK: usize = 64;

impl<'a> TopK<'a> {
    fn new(limit: usize, order: &'a dyn Fn(DocAddress) -> u64) -> Self {
        TopK {
            limit,
            candidates: Vec::new(),
            floor: 0,
            order,
        }
    }

    /// Offers the positive scores of a segment's live documents.
    fn collect(&mut self, alive: Option<&AliveBitSet>, segment_ord: usize, scores: &[f32]) {
        if self.limit == 0 {
            return;
        }
        let floor = self.floor;
        let is_offered = |doc: usize, score: f32| {
            is_scored(score) && alive.is_none_or(|a| a.is_alive(doc as u32))
        };
        // The sampled bound: a score that about 1.5 × `limit` documents should reach (the
        // floor when the sample is too small to tell).
        let stride = (scores.len() / SAMPLES).max(1);
        let mut sample: Vec<u32> = scores
            .iter()
            .enumerate()
            .step_by(stride)
            .filter(|&(doc, &score)| key(score) >= floor && is_offered(doc, score))
            .map(|(_, &score)| key(score))
            .collect();
        let rank = (self.limit * 3).div_ceil(2 * stride) + 8;
        let bound = if rank < sample.len() {
            *sample.select_nth_unstable_by(rank, |a, b| b.cmp(a)).1
        } else {
            floor
        };
        let candidates = &mut self.candidates;
        let mut reached = 0usize;
        for (block, chunk) in scores.chunks(SCAN_BLOCK).enumerate() {
            // The block's documents at or above the bound, as bits (no branch per document).
            let mut at_bound = chunk.iter().enumerate().fold(0u64, |bits, (i, &score)| {
                bits | (u64::from(key(score) >= bound) << i)
            });
            while at_bound != 0 {
                let i = at_bound.trailing_zeros() as usize;
                at_bound &= at_bound - 1;
                let (doc, score) = (block * SCAN_BLOCK + i, chunk[i]);
                if is_offered(doc, score) {
                    candidates.push((score, DocAddress::new(segment_ord as u32, doc as u32)));
                    reached += 1;
                }
            }
        }
        if reached < self.limit && bound > floor {
            for (doc, &score) in scores.iter().enumerate() {
                let k = key(score);
                if k < bound && k >= floor && is_offered(doc, score) {
                    candidates.push((score, DocAddress::new(segment_ord as u32, doc as u32)));
                }
            }
        }
        self.prune();
    }

    /// Keeps the candidates that score at least the `limit`-th best score (all its ties: the
    /// tie order is not read yet), and raises the floor to it.
    fn prune(&mut self) {
        if self.candidates.len() <= self.limit {
            return;
        }
        let nth = self
            .candidates
            .select_nth_unstable_by(self.limit - 1, |a, b| b.0.total_cmp(&a.0))
            .1
             .0;
        self.floor = key(nth);
        let floor = self.floor;
        self.candidates.retain(|c| key(c.0) >= floor);
    }

    /// The kept documents, best first.
    fn into_sorted(self) -> Vec<TopDoc> {
        let order = self.order;
        let mut kept: Vec<TopDoc> = self
            .candidates
            .into_iter()
            .map(|(score, address)| TopDoc {
                score,
                address,
                order: order(address),
            })
            .collect();
        if kept.len() > self.limit {
            kept.select_nth_unstable_by(self.limit, TopDoc::rank);
            kept.truncate(self.limit);
        }
        kept.sort_unstable_by(TopDoc::rank);
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The best `limit` of every segment's offered documents by a full sort, as before the
    /// bounded collection.
    fn full_sort(
        segments: &[Vec<f32>],
        limit: usize,
        order: &dyn Fn(DocAddress) -> u64,
    ) -> Vec<(f32, DocAddress)> {
        let mut all: Vec<(f32, DocAddress)> = Vec::new();
        for (ord, scores) in segments.iter().enumerate() {
            for (doc, &score) in scores.iter().enumerate() {
                if is_scored(score) {
                    all.push((score, DocAddress::new(ord as u32, doc as u32)));
                }
            }
        }
        all.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| order(a.1).cmp(&order(b.1)))
                .then(a.1.cmp(&b.1))
        });
        all.truncate(limit);
        all
    }

    #[test]
    fn bounded_collection_keeps_the_best_of_a_full_sort() {
        let mut next = crate::test_rng::xorshift(0x2545_f491_4f6c_dd1d);
        // Reversed catalog order, so that ties do not follow the addresses.
        let order =
            |a: DocAddress| u64::MAX - (u64::from(a.segment_ord) << 32 | u64::from(a.doc_id));
        for case in 0..60 {
            let segments: Vec<Vec<f32>> = (0..1 + case % 3)
                .map(|_| {
                    let len = (next() % 30_000) as usize;
                    // Few distinct values (many ties), zeros, and the odd negative score.
                    let distinct = 1 + next() % if case % 2 == 0 { 50 } else { 100_000 };
                    (0..len)
                        .map(|_| match next() % 10 {
                            0..=2 => 0.0,
                            3 if case % 5 == 0 => -1.5,
                            _ => (next() % distinct) as f32 * 0.37 + 0.01,
                        })
                        .collect()
                })
                .collect();
            let mut segments = segments;
            if case % 4 == 3 {
                // High scores exactly where the bound is sampled: the bound overshoots and the
                // rest must be added.
                let len = 40_000;
                let stride = len / SAMPLES;
                segments.push(
                    (0..len)
                        .map(|doc| if doc % stride == 0 { 9.0 } else { 1.0 })
                        .collect(),
                );
            }
            for limit in [0, 1, 20, 1000, 5000, 12_000] {
                let mut top = TopK::new(limit, &order);
                for (ord, scores) in segments.iter().enumerate() {
                    top.collect(None, ord, scores);
                }
                let kept: Vec<(f32, DocAddress)> = top
                    .into_sorted()
                    .into_iter()
                    .inspect(|d| assert_eq!(d.order, order(d.address)))
                    .map(|d| (d.score, d.address))
                    .collect();
                assert_eq!(
                    kept,
                    full_sort(&segments, limit, &order),
                    "case {case}, limit {limit}"
                );
            }
        }
    }
}
