//! The relation graph of source pages (the catalog's per-page relation ranges), and the bounded walk shared by
//! `expand_graph` and the `graphContext` of search results: breadth-first from a seed, at most
//! `fanout` new relations per explored node, each target listed once at its shallowest depth
//! (DECISIONS 11), relations taken in target-path order.

use crate::index::catalog::{Catalog, CatalogRelation};

/// One step of a walk: a relation from `from` to `to`, found at `depth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub from: u32,
    pub to: u32,
    pub relation: u32,
    pub depth: u8,
}

/// The relations as a directed graph over catalog positions: the catalog keeps each page's
/// relations as one range of relation numbers, sorted by source page, which is the graph's
/// adjacency list (compressed sparse rows) read in place, so opening a knowledge base builds
/// nothing and a walk decodes only the blocks of the pages it visits.
#[derive(Debug, Default, Clone, Copy)]
pub struct RelationGraph;

fn preference(rel: &CatalogRelation) -> u8 {
    // `related` is preferred over `references` when both reach one target (as online).
    match rel.relation_type.as_str() {
        "related" => 0,
        "references" => 1,
        _ => 2,
    }
}

impl RelationGraph {
    pub fn new(_catalog: &Catalog) -> Self {
        RelationGraph
    }

    /// The relations of `page` with their numbers, ordered by target path, then preferred
    /// type, then type.
    pub fn ordered_relations<'c>(
        &self,
        catalog: &'c Catalog,
        page: u32,
    ) -> Vec<(u32, &'c CatalogRelation)> {
        let Some(range) = catalog.relation_range(page) else {
            return Vec::new();
        };
        let mut out: Vec<(u32, &CatalogRelation)> =
            range.map(|r| (r, catalog.relation(r))).collect();
        // Catalog positions are in path order: comparing them compares the target paths.
        out.sort_by(|a, b| {
            a.1.to
                .cmp(&b.1.to)
                .then(preference(a.1).cmp(&preference(b.1)))
                .then(a.1.relation_type.cmp(&b.1.relation_type))
                .then(a.0.cmp(&b.0))
        });
        out
    }

    /// Walks from `seed` up to `depth` (0–2) taking at most `fanout` new targets per node, and
    /// at most `total` steps in all.
    pub fn walk(
        &self,
        catalog: &Catalog,
        seed: u32,
        depth: u8,
        fanout: usize,
        total: usize,
    ) -> Vec<Step> {
        let mut steps = Vec::new();
        if depth == 0 || fanout == 0 || total == 0 {
            return steps;
        }
        let mut visited = rustc_hash::FxHashSet::default();
        visited.insert(seed);
        let mut frontier = vec![seed];
        for d in 1..=depth {
            let mut next = Vec::new();
            for &node in &frontier {
                let mut taken = 0;
                for (relation, rel) in self.ordered_relations(catalog, node) {
                    if taken == fanout {
                        break;
                    }
                    if !visited.insert(rel.to) {
                        continue;
                    }
                    steps.push(Step {
                        from: node,
                        to: rel.to,
                        relation,
                        depth: d,
                    });
                    next.push(rel.to);
                    taken += 1;
                    if steps.len() == total {
                        return steps;
                    }
                }
            }
            frontier = next;
        }
        steps
    }
}
