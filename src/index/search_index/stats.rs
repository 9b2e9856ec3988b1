//! What the lanes read of the page index beyond its postings: collection statistics over the
//! live documents (field lengths, deleted documents, live document frequencies) and the heading
//! sections' statistics. Scoring itself is `crate::search`'s.

use tantivy::postings::Postings;
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocAddress, DocId, DocSet, Searcher, Term, TERMINATED};

use crate::error::IndexError;
use crate::ingest::analysis::SECTION_MARK;

/// What scoring needs of the index beyond the searcher.
pub(crate) struct Collection<'a> {
    /// A document's catalog position, to order equal scores.
    pub order: &'a dyn Fn(DocAddress) -> u64,
    /// The average length of a field over the live documents.
    pub average_field_length: &'a dyn Fn(Field) -> Result<f32, IndexError>,
    /// The live documents of the index, for the IDF.
    pub total_docs: u64,
    /// The deleted documents of each segment ([`deleted_docs`]).
    pub deleted: &'a [Vec<DocId>],
}

/// Average length of `field` over the live documents (at least 1), from the same quantized
/// field norms the scores use. Tantivy's own token totals are estimates once a segment with
/// deleted documents is merged, and the average must not depend on how the index was built
/// (incrementally or at once).
pub(crate) fn average_field_length(searcher: &Searcher, field: Field) -> Result<f32, IndexError> {
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
pub(crate) fn deleted_docs(searcher: &Searcher) -> Vec<Vec<DocId>> {
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
pub(crate) fn alive_doc_freq(
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

/// The sections of the live pages of two or more sections: how many, and their length in
/// tokens, each with its page's title.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SectionStats {
    pub sections: u64,
    pub length: u64,
}

impl SectionStats {
    /// Reads the statistics of `searcher`'s live documents from the marks' postings.
    pub fn read(searcher: &Searcher, title: Field, body: Field) -> Result<Self, IndexError> {
        let mark = Term::from_field_text(body, SECTION_MARK);
        let mut stats = SectionStats::default();
        let mut bounds = Vec::new();
        for segment in searcher.segment_readers() {
            let Some(mut postings) = segment
                .inverted_index(body)?
                .read_postings(&mark, IndexRecordOption::WithFreqsAndPositions)
                .map_err(tantivy::TantivyError::from)?
            else {
                continue;
            };
            let alive = segment.alive_bitset();
            let titles = segment.get_fieldnorms_reader(title)?;
            let mut doc = postings.doc();
            while doc != TERMINATED {
                if alive.is_none_or(|a| a.is_alive(doc)) {
                    postings.positions(&mut bounds);
                    for length in section_lengths(&bounds, titles.fieldnorm(doc)) {
                        stats.sections += 1;
                        stats.length += u64::from(length);
                    }
                }
                doc = postings.advance();
            }
        }
        Ok(stats)
    }

    pub(crate) fn average_length(&self) -> f32 {
        if self.sections == 0 {
            1.0
        } else {
            (self.length as f32 / self.sections as f32).max(1.0)
        }
    }
}

/// The length BM25 reads of each section of a page whose marks stand at `ends`: the section's
/// tokens (the positions between two marks, `kb_body`) and its page's title's (`title`),
/// quantized to tantivy's one-byte field norms as every length the lanes score with is (and
/// as the sections' own documents had it when they were an index of their own).
pub(crate) fn section_lengths(ends: &[u32], title: u32) -> impl Iterator<Item = u32> + '_ {
    use tantivy::fieldnorm::FieldNormReader;
    let mut start = 0u32;
    ends.iter().map(move |&end| {
        let tokens = end.saturating_sub(start);
        start = end.saturating_add(1);
        FieldNormReader::id_to_fieldnorm(FieldNormReader::fieldnorm_to_id(
            tokens.saturating_add(title),
        ))
    })
}
