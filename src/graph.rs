//! The relation graph of source pages, as a [petgraph] graph read in place from the catalog,
//! and the bounded walk shared by `expand_graph`, the `graphContext` of search results and the
//! search graph lanes: breadth-first from a seed, at most `fanout` new relations per explored
//! node, each target listed once at its shallowest depth, relations taken in target-path order.
//!
//! [`CatalogGraph`] implements petgraph's `visit` traits over the catalog's adjacency: each
//! page's relations are one range of relation numbers, sorted by source page (compressed sparse
//! rows), so opening a knowledge base builds nothing and a walk decodes only the blocks of the
//! pages it visits. Nodes are catalog positions, edges relation numbers; a node's edges come in
//! the walk's order (`CatalogGraph::ordered_relations`). petgraph's traversals and algorithms
//! (`Bfs`, `page_rank`, …) run on it as they run on a `Graph`.

use petgraph::visit::{
    Data, EdgeRef, GraphBase, GraphRef, IntoEdgeReferences, IntoEdges, IntoNeighbors,
    IntoNodeIdentifiers, NodeCount, NodeIndexable, VisitMap, Visitable,
};
use rustc_hash::FxHashSet;

use crate::index::catalog::{Catalog, CatalogRelation};

/// One step of a walk: a relation from `from` to `to`, found at `depth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub from: u32,
    pub to: u32,
    pub relation: u32,
    pub depth: u8,
}

/// The catalog's relations as a directed petgraph graph over catalog positions.
#[derive(Debug, Clone, Copy)]
pub struct CatalogGraph<'c> {
    catalog: &'c Catalog,
}

/// An edge of [`CatalogGraph`]: relation number `relation` from `from` to `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelationEdge {
    pub from: u32,
    pub to: u32,
    pub relation: u32,
}

fn preference(rel: &CatalogRelation) -> u8 {
    // `related` is preferred over `references` when both reach one target (as online).
    match rel.relation_type.as_str() {
        "related" => 0,
        "references" => 1,
        _ => 2,
    }
}

impl<'c> CatalogGraph<'c> {
    pub fn new(catalog: &'c Catalog) -> Self {
        CatalogGraph { catalog }
    }

    /// The relations of `page` with their numbers, ordered by target path, then preferred
    /// type, then type.
    pub(crate) fn ordered_relations(self, page: u32) -> Vec<(u32, &'c CatalogRelation)> {
        let catalog = self.catalog;
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
}

/// Walks `graph` from `seed` up to `depth` (0–2) taking at most `fanout` new targets per node
/// (a node's edges in the graph's order), and at most `total` steps in all.
pub fn walk<G>(graph: G, seed: u32, depth: u8, fanout: usize, total: usize) -> Vec<Step>
where
    G: IntoEdges<NodeId = u32, EdgeId = u32> + Visitable,
{
    let mut steps = Vec::new();
    if depth == 0 || fanout == 0 || total == 0 {
        return steps;
    }
    let mut visited = graph.visit_map();
    visited.visit(seed);
    let mut frontier = vec![seed];
    for d in 1..=depth {
        let mut next = Vec::new();
        for &node in &frontier {
            let mut taken = 0;
            for edge in graph.edges(node) {
                if taken == fanout {
                    break;
                }
                if !visited.visit(edge.target()) {
                    continue;
                }
                steps.push(Step {
                    from: node,
                    to: edge.target(),
                    relation: edge.id(),
                    depth: d,
                });
                next.push(edge.target());
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

impl GraphBase for CatalogGraph<'_> {
    type NodeId = u32;
    type EdgeId = u32;
}

/// A copyable view: petgraph's traversals take it by value.
impl GraphRef for CatalogGraph<'_> {}

impl Data for CatalogGraph<'_> {
    type NodeWeight = ();
    /// The relation number.
    type EdgeWeight = u32;
}

impl EdgeRef for RelationEdge {
    type NodeId = u32;
    type EdgeId = u32;
    type Weight = u32;

    fn source(&self) -> u32 {
        self.from
    }

    fn target(&self) -> u32 {
        self.to
    }

    fn weight(&self) -> &u32 {
        &self.relation
    }

    fn id(&self) -> u32 {
        self.relation
    }
}

impl NodeCount for CatalogGraph<'_> {
    fn node_count(&self) -> usize {
        self.catalog.file_count()
    }
}

impl NodeIndexable for CatalogGraph<'_> {
    fn node_bound(&self) -> usize {
        self.catalog.file_count()
    }

    fn to_index(&self, a: u32) -> usize {
        a as usize
    }

    fn from_index(&self, i: usize) -> u32 {
        i as u32
    }
}

impl Visitable for CatalogGraph<'_> {
    /// A walk visits a few pages of many: a set, not a bit per page.
    type Map = FxHashSet<u32>;

    fn visit_map(&self) -> FxHashSet<u32> {
        FxHashSet::default()
    }

    fn reset_map(&self, map: &mut FxHashSet<u32>) {
        map.clear();
    }
}

/// A page's relations in walk order, as edges (one allocation: the ordering's).
type OrderedEdges<'c> = std::iter::Map<
    std::vec::IntoIter<(u32, &'c CatalogRelation)>,
    fn((u32, &'c CatalogRelation)) -> RelationEdge,
>;

fn edge((relation, rel): (u32, &CatalogRelation)) -> RelationEdge {
    RelationEdge {
        from: rel.from,
        to: rel.to,
        relation,
    }
}

impl<'c> IntoNeighbors for CatalogGraph<'c> {
    type Neighbors = std::iter::Map<OrderedEdges<'c>, fn(RelationEdge) -> u32>;

    fn neighbors(self, a: u32) -> Self::Neighbors {
        self.edges(a).map(|edge| edge.to)
    }
}

impl<'c> IntoEdges for CatalogGraph<'c> {
    type Edges = OrderedEdges<'c>;

    fn edges(self, a: u32) -> Self::Edges {
        self.ordered_relations(a).into_iter().map(edge)
    }
}

impl<'c> IntoEdgeReferences for CatalogGraph<'c> {
    type EdgeRef = RelationEdge;
    type EdgeReferences = std::iter::FlatMap<
        std::ops::Range<u32>,
        OrderedEdges<'c>,
        Box<dyn Fn(u32) -> OrderedEdges<'c> + 'c>,
    >;

    fn edge_references(self) -> Self::EdgeReferences {
        (0..self.catalog.file_count() as u32).flat_map(Box::new(move |page| self.edges(page)))
    }
}

impl<'c> IntoNodeIdentifiers for CatalogGraph<'c> {
    type NodeIdentifiers = std::ops::Range<u32>;

    fn node_identifiers(self) -> Self::NodeIdentifiers {
        0..self.catalog.file_count() as u32
    }
}
