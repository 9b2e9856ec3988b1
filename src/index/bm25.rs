//! Term-at-a-time BM25 over tantivy postings: a weighted sum of per-field BM25 with `k1` and
//! `b` per field (tantivy's own scorer fixes them), collection statistics over all segments, and
//! a dense score array per segment (no per-document allocation, no heap of scorers).

use tantivy::postings::Postings;
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocAddress, DocId, DocSet, Searcher, Term, TERMINATED};

use crate::error::IndexError;

/// BM25 parameters of one field.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FieldParams {
    pub weight: f32,
    pub k1: f32,
    pub b: f32,
}

/// One field of a query and the terms it is queried with, each with its query weight.
pub struct FieldQuery<'a> {
    pub field: Field,
    pub params: FieldParams,
    pub terms: &'a [String],
    pub term_weights: &'a [f32],
}

/// Scores every document that matches any term and returns the best `limit`, best first
/// (ties by address).
pub fn top_docs(
    searcher: &Searcher,
    fields: &[FieldQuery<'_>],
    limit: usize,
    collection: &Collection<'_>,
) -> Result<Vec<(f32, DocAddress)>, IndexError> {
    let total_docs = searcher.num_docs().max(1) as f32;
    let deleted = deleted_docs(searcher);
    // Collection statistics: document frequency and average field length, over all segments.
    let mut average_length = Vec::with_capacity(fields.len());
    for fq in fields {
        average_length.push((collection.average_field_length)(fq.field)?);
    }
    let mut idf: Vec<Vec<f32>> = Vec::with_capacity(fields.len());
    for fq in fields {
        let mut row = Vec::with_capacity(fq.terms.len());
        for t in fq.terms {
            let df =
                alive_doc_freq(searcher, &deleted, &Term::from_field_text(fq.field, t))? as f32;
            row.push(
                (1.0 + (total_docs - df + 0.5) / (df + 0.5)).ln()
                    * term_weight(fq.term_weights, row.len()),
            );
        }
        idf.push(row);
    }

    let mut best: Vec<(f32, DocAddress)> = Vec::new();
    for (segment_ord, segment) in searcher.segment_readers().iter().enumerate() {
        let max_doc = segment.max_doc() as usize;
        let mut scores = vec![0f32; max_doc];
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
        collect_scored(segment, segment_ord, &scores, &mut best);
    }
    Ok(best_first(best, limit, collection.order))
}

/// BM25F: per term, the fields' length-normalized frequencies are weighted and summed first,
/// then saturated once (`k1`), so a term in both title and body is not counted twice over.
/// Every field is queried with the same `terms`; the IDF is the largest of the fields', times
/// the term's query weight.
pub fn top_docs_bm25f(
    searcher: &Searcher,
    fields: &[(Field, FieldParams)],
    terms: &[String],
    term_weights: &[f32],
    k1: f32,
    limit: usize,
    collection: &Collection<'_>,
) -> Result<Vec<(f32, DocAddress)>, IndexError> {
    let total_docs = searcher.num_docs().max(1) as f32;
    let deleted = deleted_docs(searcher);
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
                &deleted,
                &Term::from_field_text(*field, t),
            )?);
        }
        let df = df as f32;
        idf.push(
            (1.0 + (total_docs - df + 0.5) / (df + 0.5)).ln()
                * term_weight(term_weights, idf.len()),
        );
    }
    let mut best: Vec<(f32, DocAddress)> = Vec::new();
    for (segment_ord, segment) in searcher.segment_readers().iter().enumerate() {
        let max_doc = segment.max_doc() as usize;
        let mut scores = vec![0f32; max_doc];
        let mut combined = vec![0f32; max_doc];
        let mut touched: Vec<u32> = Vec::new();
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
            for &doc in &touched {
                let tf = combined[doc as usize];
                scores[doc as usize] += idf[ti] * tf * (k1 + 1.0) / (tf + k1);
                combined[doc as usize] = 0.0;
            }
            touched.clear();
        }
        collect_scored(segment, segment_ord, &scores, &mut best);
    }
    Ok(best_first(best, limit, collection.order))
}

/// What scoring needs of the index beyond the searcher.
pub struct Collection<'a> {
    /// A document's catalog position, to order equal scores.
    pub order: &'a dyn Fn(DocAddress) -> u64,
    /// The average length of a field over the live documents.
    pub average_field_length: &'a dyn Fn(Field) -> Result<f32, IndexError>,
}

/// The query weight of term `i` (1 when none is given).
fn term_weight(weights: &[f32], i: usize) -> f32 {
    weights.get(i).copied().unwrap_or(1.0)
}

/// Average length of `field` over the live documents (at least 1), from the same quantized
/// field norms the scores use. Tantivy's own token totals are estimates once a segment with
/// deleted documents is merged, and the average must not depend on how the index was built
/// (incrementally or at once).
pub fn average_field_length(searcher: &Searcher, field: Field) -> Result<f32, IndexError> {
    let mut total = 0u64;
    let mut docs = 0u64;
    for segment in searcher.segment_readers() {
        let norms = segment.get_fieldnorms_reader(field)?;
        let alive = segment.alive_bitset();
        for doc in 0..segment.max_doc() {
            if alive.is_some_and(|a| !a.is_alive(doc)) {
                continue;
            }
            total += u64::from(norms.fieldnorm(doc));
            docs += 1;
        }
    }
    Ok((total as f32 / docs.max(1) as f32).max(1.0))
}

/// The deleted documents of each segment, ascending.
pub fn deleted_docs(searcher: &Searcher) -> Vec<Vec<DocId>> {
    searcher
        .segment_readers()
        .iter()
        .map(|segment| match segment.alive_bitset() {
            Some(alive) if segment.num_deleted_docs() > 0 => (0..segment.max_doc())
                .filter(|d| !alive.is_alive(*d))
                .collect(),
            _ => Vec::new(),
        })
        .collect()
}

/// The number of live documents that contain `term` (`deleted` from [`deleted_docs`]).
/// tantivy's document frequency counts a deleted document until its segment is merged; an
/// incremental build deletes changed pages without rewriting the segments that held them, and
/// must rank exactly as a full build. Deleted documents are few (the build merges a segment once
/// they are many), so each is looked up in the term's postings.
pub fn alive_doc_freq(
    searcher: &Searcher,
    deleted: &[Vec<DocId>],
    term: &Term,
) -> Result<u64, IndexError> {
    let mut total = 0u64;
    for (ord, segment) in searcher.segment_readers().iter().enumerate() {
        let inverted = segment.inverted_index(term.field())?;
        let Some(info) = inverted
            .get_term_info(term)
            .map_err(tantivy::TantivyError::from)?
        else {
            continue;
        };
        let mut df = u64::from(info.doc_freq);
        let gone = deleted.get(ord).map(Vec::as_slice).unwrap_or_default();
        if !gone.is_empty() {
            let mut postings = inverted
                .read_postings_from_terminfo(&info, IndexRecordOption::Basic)
                .map_err(tantivy::TantivyError::from)?;
            for &doc in gone {
                let at = if postings.doc() < doc {
                    postings.seek(doc)
                } else {
                    postings.doc()
                };
                if at == TERMINATED {
                    break;
                }
                if at == doc {
                    df -= 1;
                }
            }
        }
        total += df;
    }
    Ok(total)
}

/// Appends the positive scores of a segment's live documents.
fn collect_scored(
    segment: &tantivy::SegmentReader,
    segment_ord: usize,
    scores: &[f32],
    best: &mut Vec<(f32, DocAddress)>,
) {
    let alive = segment.alive_bitset();
    for (doc, &score) in scores.iter().enumerate() {
        if score <= 0.0 || alive.is_some_and(|a| !a.is_alive(doc as u32)) {
            continue;
        }
        best.push((score, DocAddress::new(segment_ord as u32, doc as u32)));
    }
}

/// The best `limit` scored documents, best first, ties by `order` (the catalog position: where
/// the writer put a document must not decide which of two equal documents makes the cut).
fn best_first(
    mut best: Vec<(f32, DocAddress)>,
    limit: usize,
    order: &dyn Fn(DocAddress) -> u64,
) -> Vec<(f32, DocAddress)> {
    let by_score = |a: &(f32, DocAddress), b: &(f32, DocAddress)| {
        b.0.total_cmp(&a.0)
            .then_with(|| order(a.1).cmp(&order(b.1)))
            .then(a.1.cmp(&b.1))
    };
    if best.len() > limit {
        best.select_nth_unstable_by(limit, by_score);
        best.truncate(limit);
    }
    best.sort_by(by_score);
    best
}
