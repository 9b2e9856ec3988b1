//! What the queries of an opened generation look up again and again, remembered ([`super::Memo`]):
//! the BM25 IDF of a body term and each page's title terms with their IDFs. A searcher over
//! other segments than the opened ones reads them afresh.

use tantivy::{Searcher, Term};

use super::{lock, stats, SearchIndex, TitleTerms, IDF_MEMO_ENTRIES};
use crate::error::IndexError;

impl SearchIndex {
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
