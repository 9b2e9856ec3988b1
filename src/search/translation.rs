//! Translations: a bilingual knowledge base keeps each page under sibling language-code roots
//! with the same relative path (`pages/en/a.md` and `pages/zh-CN/a.md`; rules#translations).
//! A page's translation holds the same answer in the other language, so the translations of the best
//! pages follow them, at a share of their score (reported as `file_graph` evidence: the pair is
//! an edge of the knowledge base, not a match of the question).

use crate::kb::KnowledgeBase;
use crate::search::fusion::{best, Scored};
use crate::search::lanes::Lane;
use crate::search::weights::WEIGHTS;

/// Offers the translations of the best pages a share of their score.
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
        for other in kb.catalog.translations(page) {
            offers.push((other, w.translation * score));
        }
    }
    for (page, offer) in offers {
        let entry = scored.entry(page).or_default();
        entry.lanes.insert(Lane::FileGraph);
        entry.translation = entry.translation.max(offer);
    }
}
