//! The bundle-wide steps of ingest: which files are source pages, every title, the relations
//! (from the graph records of a bundle, or the links of a plain folder), and the per-file graph
//! records kbtools renders for pages that have none.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::paths::PathClass;
use super::{
    is_source_page, paths, plain, record_title, resolve_title, BundleKind, Code, Diagnostic,
    ReadFile,
};
use crate::relation::Direction;

/// A per-file graph record kbtools renders for a source page that has none on disk.
#[derive(Debug, Clone)]
pub struct VirtualFile {
    pub path: String,
    /// The read file (a source page) whose relations it renders.
    pub page: u32,
    pub size: u64,
    pub sha256: String,
    pub title: String,
    /// False for a page without relations: readable, not listed.
    pub listed: bool,
}

/// Marks a relation seen from its target's side (a mirrored relation).
const FLIPPED: u32 = 1 << 31;
/// The source of a relation a plain folder derives.
const PLAIN: u32 = u32::MAX;

/// A relation between two source pages (by their index among the files read), from `from`'s
/// point of view. Its type, direction and reason stay where ingest read them ([`Assembly::text`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelationRef {
    pub from: u32,
    pub to: u32,
    /// The per-file graph record (a file index) that holds it, or [`PLAIN`].
    source: u32,
    /// Its place in that record (with [`FLIPPED`]), or in [`Assembly::plain`].
    item: u32,
}

/// The type, direction and reason of a relation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct RelationText<'a> {
    pub relation_type: &'a str,
    pub direction: Direction,
    pub reason: Option<&'a str>,
}

/// What the bundle-wide steps make of the files read: which are source pages, every title, the
/// relations, the relation records kbtools renders and the diagnostics of these steps.
#[derive(Debug, Default)]
pub struct Assembly {
    /// Per file read.
    pub source_backed: Vec<bool>,
    pub titles: Vec<String>,
    /// Per file read: its title comes from its document record.
    pub record_titled: Vec<bool>,
    /// Sorted by path.
    pub virtual_files: Vec<VirtualFile>,
    /// Sorted (by source page, target page, type, direction, reason) and deduplicated.
    pub relations: Vec<RelationRef>,
    /// (type, direction, reason) of the relations a plain folder derives.
    plain: Vec<(String, Direction, Option<String>)>,
    pub diagnostics: Vec<Diagnostic>,
}

impl Assembly {
    /// The type, direction and reason of `rel` (`read` are the files it was assembled from).
    pub fn text<'a>(&'a self, read: &'a [ReadFile], rel: &RelationRef) -> RelationText<'a> {
        if rel.source == PLAIN {
            let (relation_type, direction, reason) = &self.plain[rel.item as usize];
            return RelationText {
                relation_type,
                direction: *direction,
                reason: reason.as_deref(),
            };
        }
        let record = read[rel.source as usize]
            .detail
            .record
            .as_ref()
            .expect("a relation's record was read");
        let item = &record.relationships[(rel.item & !FLIPPED) as usize];
        RelationText {
            relation_type: item.relation_type.as_str(),
            direction: if rel.item & FLIPPED != 0 {
                item.direction.flipped()
            } else {
                item.direction
            },
            reason: item.reason.as_deref(),
        }
    }

    /// Sorts and deduplicates the relations, then renders the relation records of the source
    /// pages that have none on disk.
    fn finish(&mut self, read: &[ReadFile], by_path: &HashMap<&str, u32>) {
        let mut relations = std::mem::take(&mut self.relations);
        relations.sort_by(|a, b| {
            (a.from, a.to)
                .cmp(&(b.from, b.to))
                .then_with(|| self.text(read, a).cmp(&self.text(read, b)))
        });
        relations.dedup_by(|a, b| {
            (a.from, a.to) == (b.from, b.to) && self.text(read, a) == self.text(read, b)
        });
        self.relations = relations;
        self.add_virtual_graphs(read, by_path);
    }

    /// Adds a `_graph/by-file/**.json` record for every source page that has none on disk:
    /// listed when the page has relations, readable but unlisted when it has none (so every
    /// `graphRef` opens, rules#plain-folders, rules#graph-refs-open).
    fn add_virtual_graphs(&mut self, read: &[ReadFile], by_path: &HashMap<&str, u32>) {
        // Relations are sorted by source page: each page's are one run.
        let mut starts = vec![0u32; read.len() + 1];
        for rel in &self.relations {
            starts[rel.from as usize + 1] += 1;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut added: HashSet<String> = HashSet::new();
        let mut virtual_files = Vec::new();
        for (i, file) in read.iter().enumerate() {
            if !self.source_backed[i] {
                continue;
            }
            let graph_path = paths::per_file_graph_path(&file.path);
            // Skipped for a record on disk or one already rendered for a page whose path
            // differs only in the case of `.md` (both map to one record path).
            if paths::check_canonical(&graph_path).is_err()
                || by_path.contains_key(graph_path.as_str())
                || !added.insert(graph_path.clone())
            {
                continue;
            }
            let rels = &self.relations[starts[i] as usize..starts[i + 1] as usize];
            let views: Vec<RelationView<'_>> = rels
                .iter()
                .map(|rel| {
                    let text = self.text(read, rel);
                    RelationView {
                        to: &read[rel.to as usize].path,
                        to_title: &self.titles[rel.to as usize],
                        relation_type: text.relation_type,
                        direction: text.direction,
                        reason: text.reason,
                    }
                })
                .collect();
            let title = &self.titles[i];
            let content = render_per_file_graph(&file.path, title, &views, &|path| {
                by_path.contains_key(path)
            });
            let mut hasher = Sha256::new();
            hasher.update(content.as_bytes());
            virtual_files.push(VirtualFile {
                path: graph_path,
                page: i as u32,
                size: content.len() as u64,
                sha256: hex::encode(hasher.finalize()),
                title: format!("{title} relationships"),
                listed: !rels.is_empty(),
            });
        }
        virtual_files.sort_by(|a, b| a.path.cmp(&b.path));
        self.virtual_files = virtual_files;
    }
}

/// The bundle-wide steps over the files read (in path order).
pub fn assemble(kind: BundleKind, read: &[ReadFile]) -> Assembly {
    assemble_excluding(kind, read, &|_| false)
}

/// [`assemble`] where `excluded` tells the bundle paths the walk left out
/// ([`super::exclusions`]): a record or a link that names one is not reported as naming a
/// missing file (DECISIONS 26).
pub fn assemble_excluding(
    kind: BundleKind,
    read: &[ReadFile],
    excluded: &dyn Fn(&str) -> bool,
) -> Assembly {
    match kind {
        BundleKind::Focowiki => assemble_bundle(read, excluded),
        BundleKind::PlainFolder => assemble_plain(read, excluded),
    }
}

/// Walks the `_index/pages` routers from the root router, reading every packet they name.
fn routed_packets<'a>(
    read: &'a [ReadFile],
    by_path: &HashMap<&'a str, u32>,
    excluded: &dyn Fn(&str) -> bool,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<&'a str> {
    let mut packets = Vec::new();
    let mut seen_routers = HashSet::new();
    let mut queue: Vec<&str> = vec!["_index/pages/index.json"];
    while let Some(router) = queue.pop() {
        if !seen_routers.insert(router) || seen_routers.len() > 1_000_000 {
            continue;
        }
        let Some(&file) = by_path.get(router) else {
            if excluded(router) {
                continue;
            }
            diagnostics.push(Diagnostic::new(
                Code::MissingRouter,
                router.to_string(),
                None,
                "router is missing".into(),
            ));
            continue;
        };
        let Some(record) = &read[file as usize].detail.record else {
            continue;
        };
        for child in &record.children {
            queue.push(child);
        }
        for resource in &record.resources {
            if by_path.contains_key(resource.as_str()) {
                packets.push(resource.as_str());
            } else if !excluded(resource) {
                diagnostics.push(Diagnostic::new(
                    Code::MissingRouter,
                    router.to_string(),
                    None,
                    format!("routes to {resource}, which is missing"),
                ));
            }
        }
    }
    packets
}

fn assemble_bundle(read: &[ReadFile], excluded: &dyn Fn(&str) -> bool) -> Assembly {
    let mut diagnostics = Vec::new();
    let by_path: HashMap<&str, u32> = read
        .iter()
        .enumerate()
        .map(|(i, r)| (r.path.as_str(), i as u32))
        .collect();
    let records = document_records(read, &by_path, excluded, &mut diagnostics);
    let mut assembly = Assembly {
        source_backed: Vec::with_capacity(read.len()),
        titles: Vec::with_capacity(read.len()),
        record_titled: Vec::with_capacity(read.len()),
        ..Assembly::default()
    };
    // Relations: each page's own per-file graph is authoritative. (page, graph file) in path
    // order of the graph files.
    let owners = graph_owners(read, &mut diagnostics);
    for r in read {
        let record = records.get(r.path.as_str());
        let source_backed = is_source_page(r.class, record.is_some());
        if source_backed && record.is_none() {
            diagnostics.push(Diagnostic::new(
                Code::UnrecordedPage,
                r.path.clone(),
                None,
                "page is not in the _index document records; served as a source page".into(),
            ));
        }
        let record = record.copied().flatten();
        assembly.source_backed.push(source_backed);
        assembly.record_titled.push(record_title(record).is_some());
        assembly
            .titles
            .push(resolve_title(record, &r.path, &r.detail));
    }
    drop(records);
    let graphs = Graphs {
        read,
        by_path: &by_path,
        source_backed: &assembly.source_backed,
        excluded,
    };
    assembly.relations = graphs.relations(owners, &mut diagnostics);
    assembly.diagnostics = diagnostics;
    assembly.finish(read, &by_path);
    assembly
}

/// Path → title of every document record (the first record of a path wins), read from the
/// packets the routers reach and then any packet they missed; a page a record lists but the
/// bundle lacks is reported.
fn document_records<'r>(
    read: &'r [ReadFile],
    by_path: &HashMap<&str, u32>,
    excluded: &dyn Fn(&str) -> bool,
    diagnostics: &mut Vec<Diagnostic>,
) -> HashMap<&'r str, Option<&'r str>> {
    let mut packet_paths = routed_packets(read, by_path, excluded, diagnostics);
    let routed: HashSet<&str> = packet_paths.iter().copied().collect();
    for r in read {
        if r.class == PathClass::DocumentPacket && !routed.contains(r.path.as_str()) {
            diagnostics.push(Diagnostic::new(
                Code::UnroutedPacket,
                r.path.clone(),
                None,
                "document packet is not reached from _index/pages/index.json; read anyway".into(),
            ));
            packet_paths.push(&r.path);
        }
    }
    drop(routed);
    packet_paths.sort_unstable();
    packet_paths.dedup();
    let mut records: HashMap<&str, Option<&str>> = HashMap::new();
    for packet in &packet_paths {
        let Some(record) = by_path
            .get(packet)
            .and_then(|&i| read[i as usize].detail.record.as_ref())
        else {
            continue;
        };
        let Some((good, bad)) = &record.documents else {
            diagnostics.push(Diagnostic::new(
                Code::RecordShape,
                packet.to_string(),
                None,
                "`documents` is missing".into(),
            ));
            continue;
        };
        for message in bad {
            diagnostics.push(Diagnostic::new(
                Code::RecordShape,
                packet.to_string(),
                None,
                message.clone(),
            ));
        }
        for (path, title) in good {
            records.entry(path.as_str()).or_insert(title.as_deref());
        }
    }
    let mut missing: Vec<&str> = records
        .keys()
        .copied()
        .filter(|path| !by_path.contains_key(path) && !excluded(path))
        .collect();
    missing.sort_unstable();
    for path in missing {
        diagnostics.push(Diagnostic::new(
            Code::MissingPage,
            path.to_string(),
            None,
            "listed in the _index document records but missing from pages/".into(),
        ));
    }
    records
}

/// (page, graph file) of every per-file graph that names its page, in path order of the graph
/// files; the shape problems of each reported.
fn graph_owners<'r>(
    read: &'r [ReadFile],
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<(&'r str, u32)> {
    let mut owners = Vec::new();
    for (i, r) in read.iter().enumerate() {
        if r.class != PathClass::PerFileGraph {
            continue;
        }
        let Some(record) = &r.detail.record else {
            continue;
        };
        let Some(page) = record.page.as_deref() else {
            diagnostics.push(Diagnostic::new(
                Code::RecordShape,
                r.path.clone(),
                None,
                "`path` is missing".into(),
            ));
            continue;
        };
        for message in &record.relationship_problems {
            diagnostics.push(Diagnostic::new(
                Code::RecordShape,
                r.path.clone(),
                None,
                message.clone(),
            ));
        }
        owners.push((page, i as u32));
    }
    owners
}

/// What a bundle's relations are read against: its files, and which are source pages.
struct Graphs<'a> {
    read: &'a [ReadFile],
    by_path: &'a HashMap<&'a str, u32>,
    source_backed: &'a [bool],
    /// The paths the walk left out: not reported as missing.
    excluded: &'a dyn Fn(&str) -> bool,
}

impl Graphs<'_> {
    fn source_page(&self, path: &str) -> Option<u32> {
        self.by_path
            .get(path)
            .copied()
            .filter(|&i| self.source_backed[i as usize])
    }

    /// The relations of every page's own graph files (`owners`), and mirrored to each target
    /// without a graph of its own; a graph of no readable page, or a relation to none, is
    /// reported and skipped.
    fn relations(
        &self,
        mut owners: Vec<(&str, u32)>,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> Vec<RelationRef> {
        let read = self.read;
        // A page with a per-file graph of its own.
        let mut has_own = vec![false; read.len()];
        for (page, _) in &owners {
            if let Some(&i) = self.by_path.get(page) {
                has_own[i as usize] = true;
            }
        }
        // By page (stable: a page's graph files stay in path order).
        owners.sort_by(|a, b| a.0.cmp(b.0));
        let mut relations = Vec::new();
        for group in owners.chunk_by(|a, b| a.0 == b.0) {
            let page = group[0].0;
            // The last graph file of the page names it in diagnostics.
            let graph_path = &read[group[group.len() - 1].1 as usize].path;
            let Some(from) = self.source_page(page) else {
                if (self.excluded)(page) {
                    continue;
                }
                diagnostics.push(Diagnostic::new(
                    Code::OrphanGraph,
                    graph_path.clone(),
                    None,
                    format!("relation records for {page}, which is not a readable page; skipped"),
                ));
                continue;
            };
            for &(_, graph) in group {
                let Some(record) = &read[graph as usize].detail.record else {
                    continue;
                };
                for (item, rel) in record.relationships.iter().enumerate() {
                    let Some(to) = self.source_page(&rel.target) else {
                        if (self.excluded)(&rel.target) {
                            continue;
                        }
                        diagnostics.push(Diagnostic::new(
                            Code::DanglingRelation,
                            graph_path.clone(),
                            None,
                            format!(
                                "relation to {}, which is not a readable page; skipped",
                                rel.target
                            ),
                        ));
                        continue;
                    };
                    relations.push(RelationRef {
                        from,
                        to,
                        source: graph,
                        item: item as u32,
                    });
                }
            }
        }
        // A page without its own per-file graph still gets the relations others record with
        // it.
        let mirrored: Vec<RelationRef> = relations
            .iter()
            .filter(|rel| !has_own[rel.to as usize])
            .map(|rel| RelationRef {
                from: rel.to,
                to: rel.from,
                source: rel.source,
                item: rel.item | FLIPPED,
            })
            .collect();
        relations.extend(mirrored);
        relations
    }
}

fn assemble_plain(read: &[ReadFile], excluded: &dyn Fn(&str) -> bool) -> Assembly {
    let by_path: HashMap<&str, u32> = read
        .iter()
        .enumerate()
        .map(|(i, r)| (r.path.as_str(), i as u32))
        .collect();
    let titles: Vec<String> = read
        .iter()
        .map(|r| resolve_title(None, &r.path, &r.detail))
        .collect();
    let pages: Vec<plain::PlainPage<'_>> = read
        .iter()
        .zip(&titles)
        .map(|(r, title)| plain::PlainPage {
            path: &r.path,
            title,
            frontmatter: if r.detail.frontmatter.is_empty() {
                Map::new()
            } else {
                serde_json::from_str(&r.detail.frontmatter).unwrap_or_default()
            },
            links: &r.detail.links,
        })
        .collect();
    let mut diagnostics = Vec::new();
    let derived = plain::derive_relations_excluding(&pages, excluded, &mut diagnostics);
    drop(pages);
    let mut assembly = Assembly {
        source_backed: vec![true; read.len()],
        record_titled: vec![false; read.len()],
        titles,
        diagnostics,
        ..Assembly::default()
    };
    for rel in derived {
        let (Some(&from), Some(&to)) =
            (by_path.get(rel.from.as_str()), by_path.get(rel.to.as_str()))
        else {
            continue;
        };
        assembly.relations.push(RelationRef {
            from,
            to,
            source: PLAIN,
            item: assembly.plain.len() as u32,
        });
        assembly
            .plain
            .push((rel.relation_type, rel.direction, rel.reason));
    }
    assembly.finish(read, &by_path);
    assembly
}

/// One relation of a page as its per-file graph record shows it.
pub struct RelationView<'a> {
    pub to: &'a str,
    pub to_title: &'a str,
    pub relation_type: &'a str,
    pub direction: Direction,
    pub reason: Option<&'a str>,
}

/// The per-file graph record kbtools renders for a source page without one on disk, in the
/// bundle format. Ingest hashes it; the catalog renders it again when
/// it is read. `indexPath` and `directoryGraphPath` are null where `exists` says the bundle has
/// no such file (a plain folder has neither): a record never points at a file that does not
/// open.
pub fn render_per_file_graph(
    page: &str,
    page_title: &str,
    rels: &[RelationView<'_>],
    exists: &dyn Fn(&str) -> bool,
) -> String {
    let dir = paths::parent_of(page);
    let scope = dir.strip_prefix("pages").unwrap_or(dir);
    let relationships: Vec<Value> = rels
        .iter()
        .map(|rel| {
            let mut item = Map::new();
            item.insert("targetPath".into(), Value::from(rel.to));
            item.insert("targetTitle".into(), Value::from(rel.to_title));
            item.insert("direction".into(), Value::from(rel.direction.as_str()));
            item.insert("relationType".into(), Value::from(rel.relation_type));
            item.insert("weight".into(), Value::from(1));
            item.insert("reason".into(), rel.reason.map_or(Value::Null, Value::from));
            let evidence_path = if rel.direction == Direction::Incoming {
                rel.to
            } else {
                page
            };
            item.insert(
                "evidence".into(),
                serde_json::json!([{ "path": evidence_path }]),
            );
            Value::Object(item)
        })
        .collect();
    let existing = |path: String| {
        if exists(&path) {
            Value::from(path)
        } else {
            Value::Null
        }
    };
    let value = serde_json::json!({
        "formatVersion": 2,
        "title": format!("{page_title} relationships"),
        "path": page,
        "indexPath": existing(format!("_index/pages{scope}/index.json")),
        "directoryGraphPath": existing(format!("_graph/by-directory{scope}/index.json")),
        "relationships": relationships,
    });
    let mut text = serde_json::to_string(&value).unwrap_or_default();
    text.push('\n');
    text
}
