//! Translations: a bilingual knowledge base keeps each page under sibling language-code roots
//! with the same relative path (`pages/en/a.md` and `pages/zh-CN/a.md`; rules#translations).
//! A page's translation holds the same answer in the other language, so the translations of the best
//! pages follow them, at a share of their score (reported as `file_graph` evidence: the pair is
//! an edge of the knowledge base, not a match of the question).

use super::fusion::{best, Scored, WEIGHTS};
use super::Lane;
use crate::bundle::{paths, BundleKind};
use crate::kb::KnowledgeBase;

/// The translations of source page `page`: the source pages with its path under a sibling
/// language root, and in a plain folder also its `translation` relations (which hold the
/// translations its frontmatter names).
pub fn translations(kb: &KnowledgeBase, page: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for other in paths::translation_paths(&kb.catalog.file(page).path) {
        if let Some(p) = kb.catalog.by_exact_path(&other) {
            if kb.catalog.is_source(p) && !out.contains(&p) {
                out.push(p);
            }
        }
    }
    if kb.catalog.kind() == BundleKind::PlainFolder {
        for r in kb.catalog.relation_range(page).unwrap_or_default() {
            let rel = kb.catalog.relation(r);
            if rel.relation_type == "translation"
                && kb.catalog.is_source(rel.to)
                && !out.contains(&rel.to)
            {
                out.push(rel.to);
            }
        }
    }
    out
}

pub fn add(kb: &KnowledgeBase, scored: &mut Scored) {
    let w = &WEIGHTS;
    if w.translation <= 0.0 {
        return;
    }
    let mut offers: Vec<(u32, f64)> = Vec::new();
    for (page, score) in best(scored, w.translated, |e| e.file + e.graph + e.relationship) {
        if score <= 0.0 {
            break;
        }
        for other in translations(kb, page) {
            offers.push((other, w.translation * score));
        }
    }
    for (page, offer) in offers {
        let entry = scored.entry(page).or_default();
        entry.lanes.insert(Lane::FileGraph);
        entry.translation = entry.translation.max(offer);
    }
}
