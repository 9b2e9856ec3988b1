//! The relation graph is a petgraph graph: petgraph's own traversals and algorithms run on the
//! catalog read in place, and agree with the bounded walk the tools use.

use std::collections::BTreeSet;

use kbtools::graph;
use petgraph::visit::{Bfs, EdgeRef, IntoEdgeReferences, IntoEdges, NodeCount};

use crate::common::open_fixture;

#[test]
fn petgraph_traversals_and_algorithms_run_on_the_catalog() {
    let opened = open_fixture("focowiki-docs");
    let kb = &opened.kb;
    let g = kb.graph();
    assert_eq!(g.node_count(), kb.catalog.file_count());
    assert_eq!(g.edge_references().count(), kb.catalog.relation_count());
    assert!(kb.catalog.relation_count() > 0, "the fixture has relations");

    let mut walked_from_somewhere = 0;
    for seed in 0..kb.catalog.file_count() as u32 {
        for edge in g.edges(seed) {
            assert_eq!(edge.source(), seed);
            assert_eq!(kb.catalog.relation(edge.id()).to, edge.target());
        }
        // petgraph's breadth-first search reaches what an unbounded walk reaches.
        let mut bfs = Bfs::new(g, seed);
        let mut reached = BTreeSet::new();
        while let Some(node) = bfs.next(g) {
            reached.insert(node);
        }
        let mut walked: BTreeSet<u32> = graph::walk(g, seed, u8::MAX, usize::MAX, usize::MAX)
            .iter()
            .map(|step| step.to)
            .collect();
        walked.insert(seed);
        assert_eq!(reached, walked, "seed {seed}");
        walked_from_somewhere += usize::from(walked.len() > 1);
    }
    assert!(walked_from_somewhere > 0);

    let ranks = petgraph::algo::page_rank(g, 0.85_f64, 20);
    assert_eq!(ranks.len(), kb.catalog.file_count());
    assert!(ranks.iter().all(|r| r.is_finite() && *r >= 0.0));
}
