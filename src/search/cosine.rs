//! Vector scoring for the vector lanes: an exact scan of a generation's passage windows
//! (`crate::index::vectors`, unit vectors, so a dot product is the cosine), each page at its
//! best window. The index stores the vectors; this file is the one place that scores them.

use crate::index::vectors::Vectors;

/// A page the scan found: its best window's section and score.
#[derive(Debug, Clone, Copy)]
pub struct VectorHit {
    pub position: u32,
    pub section: u32,
    pub score: f32,
}

/// The `depth` pages whose best window is closest to `query` (a unit vector), best first,
/// ties by position; windows below `min_score` do not count. A window's score is its cosine
/// with `query`, `lead` of it taken from the cosine of its page's first window (the title and
/// what the page opens with, which say what the whole page is about).
pub fn best_windows(
    vectors: &Vectors,
    query: &[f32],
    depth: usize,
    min_score: f32,
    lead: f32,
) -> Vec<VectorHit> {
    if query.len() != vectors.dim || vectors.dim == 0 {
        return Vec::new();
    }
    let mut hits: Vec<VectorHit> = vectors
        .pages
        .iter()
        .filter_map(|p| {
            let mut best: Option<VectorHit> = None;
            let windows = p.first as usize..(p.first + p.count) as usize;
            // A page of one window is its own opening.
            let opening =
                (lead > 0.0 && p.count > 1).then(|| dot(vectors.window(p.first as usize), query));
            for w in windows {
                let cosine = dot(vectors.window(w), query);
                let score = opening.map_or(cosine, |o| (1.0 - lead) * cosine + lead * o);
                if score >= min_score && best.is_none_or(|b| score > b.score) {
                    best = Some(VectorHit {
                        position: p.position,
                        section: vectors.sections[w],
                        score,
                    });
                }
            }
            best
        })
        .collect();
    let order = |a: &VectorHit, b: &VectorHit| {
        b.score
            .total_cmp(&a.score)
            .then(a.position.cmp(&b.position))
    };
    if depth < hits.len() {
        hits.select_nth_unstable_by(depth, order);
        hits.truncate(depth);
    }
    hits.sort_unstable_by(order);
    hits
}

/// `a · b` in eight running sums, so that the loop vectorizes (a single running sum keeps the
/// additions in order, one at a time: SciFact's 9,218 windows took 4 ms a query that way).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut sums = [0.0f32; 8];
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a8
        .remainder()
        .iter()
        .zip(b8.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a8.zip(b8) {
        for i in 0..8 {
            sums[i] += x[i] * y[i];
        }
    }
    sums.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::vectors::tests::sample;

    #[test]
    fn dot_sums_every_product() {
        for n in [0usize, 3, 8, 19, 384] {
            let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
            let b: Vec<f32> = (0..n)
                .map(|i| if i % 2 == 0 { 1.0 } else { -2.0 })
                .collect();
            let want: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert_eq!(dot(&a, &b), want, "length {n}");
        }
    }

    #[test]
    fn search_takes_each_pages_best_window() {
        let v = sample();
        let hits = best_windows(&v, &[0.0, 1.0], 10, -1.0, 0.0);
        assert_eq!(hits.len(), 2);
        assert_eq!((hits[0].position, hits[0].section), (7, 0));
        assert_eq!((hits[1].position, hits[1].section), (3, 1));
        assert!((hits[1].score - 0.8).abs() < 1e-6);
        // The threshold leaves out windows below it.
        assert_eq!(best_windows(&v, &[1.0, 0.0], 10, 0.7, 0.0).len(), 1);
        assert_eq!(best_windows(&v, &[0.0, 1.0], 1, -1.0, 0.0)[0].position, 7);
    }

    #[test]
    fn a_window_counts_part_of_its_pages_opening() {
        let v = sample();
        // Page 3 opens with [1, 0]: its second window (0.8 from [0, 1]) keeps three quarters
        // of its cosine and adds a quarter of the opening's (0); page 7 is one window.
        let hits = best_windows(&v, &[0.0, 1.0], 10, -1.0, 0.25);
        assert_eq!((hits[0].position, hits[1].position), (7, 3));
        assert!((hits[0].score - 1.0).abs() < 1e-6);
        assert!((hits[1].score - 0.6).abs() < 1e-6, "{}", hits[1].score);
        // Near the opening, the page's best window gains from it: 0.75 × 1 + 0.25 × 0.6.
        let hits = best_windows(&v, &[0.6, 0.8], 10, -1.0, 0.25);
        assert_eq!((hits[0].position, hits[0].section), (3, 1));
        assert!((hits[0].score - 0.9).abs() < 1e-6, "{}", hits[0].score);
        assert!((hits[1].score - 0.8).abs() < 1e-6);
    }
}
