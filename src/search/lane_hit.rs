//! What every lane over the page index returns for a page.

use tantivy::DocAddress;

/// A hit of one lane: the catalog position, the lane score and where the document is.
#[derive(Debug, Clone, Copy)]
pub struct LaneHit {
    pub position: u32,
    pub score: f32,
    pub address: DocAddress,
}
