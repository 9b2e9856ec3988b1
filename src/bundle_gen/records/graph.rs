//! `_graph/**`: the catalog, `by-directory` routers and relationship packets, `by-file`
//! records.

use super::*;

#[derive(Serialize)]
pub(super) struct CatalogResource {
    pub(super) kind: &'static str,
    pub(super) title: &'static str,
    pub(super) path: &'static str,
    pub(super) description: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct GraphCatalog {
    pub(super) format_version: u8,
    pub(super) title: &'static str,
    pub(super) relationship_count: usize,
    pub(super) resources: Vec<CatalogResource>,
}

#[derive(Serialize)]
pub(in crate::bundle_gen) struct Evidence<'a> {
    pub(in crate::bundle_gen) path: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(in crate::bundle_gen) excerpt: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RelationshipRecord<'a> {
    pub(super) from: &'a str,
    pub(super) to: &'a str,
    pub(super) from_title: &'a str,
    pub(super) to_title: &'a str,
    pub(super) direction: &'static str,
    pub(super) relation_type: &'static str,
    pub(super) weight: u8,
    pub(super) reason: String,
    pub(super) evidence: Vec<Evidence<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct LocalRelationship<'a> {
    pub(super) target_path: &'a str,
    pub(super) target_title: &'a str,
    pub(super) direction: &'static str,
    pub(super) relation_type: &'static str,
    pub(super) weight: u8,
    pub(super) reason: String,
    pub(super) evidence: [Evidence<'a>; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PerFileGraph<'a> {
    pub(super) format_version: u8,
    pub(super) title: String,
    pub(super) path: &'a str,
    pub(super) index_path: String,
    pub(super) directory_graph_path: String,
    pub(super) relationships: Vec<LocalRelationship<'a>>,
}

pub(in crate::bundle_gen) fn graph_files(plan: &Plan) -> Vec<(String, Vec<u8>)> {
    let has_relations = !plan.relations.is_empty();
    let mut out = graph_catalog(plan, has_relations);
    if !has_relations {
        return out;
    }
    out.extend(per_file_records(plan));
    // Directory routers, packets and navigation of by-directory and by-file.
    let present = dirs_with_relations(plan);
    let dir_files: Vec<(String, Vec<u8>)> = (0..plan.dirs.len())
        .into_par_iter()
        .filter(|&d| present[d])
        .flat_map_iter(|d| directory_files(plan, d, &present))
        .collect();
    out.extend(dir_files);
    out
}

/// `_graph/catalog.json` and the navigation of `_graph`.
fn graph_catalog(plan: &Plan, has_relations: bool) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut resources = Vec::new();
    if has_relations {
        resources.push(CatalogResource {
            kind: "directory_relationships",
            title: "Relationships by directory",
            path: "_graph/by-directory/index.json",
            description: "Directory routes to relationships among original documents.",
        });
        resources.push(CatalogResource {
            kind: "file_relationships",
            title: "Relationships by file",
            path: "_graph/by-file/index.md",
            description: "Per-file relationship resources linked to original documents.",
        });
    }
    resources.push(CatalogResource {
        kind: "page_descriptions",
        title: "Document descriptions",
        path: "_index/pages/index.json",
        description: "Document records that also describe graph nodes.",
    });
    let catalog = GraphCatalog {
        format_version: 2,
        title: "Relationship graph",
        relationship_count: plan.relations.len(),
        resources,
    };
    out.push((
        "_graph/catalog.json".into(),
        to_json_line(&catalog).into_bytes(),
    ));
    let mut entries = Vec::new();
    if has_relations {
        entries.push(NavEntry::link(
            "Relationships by directory",
            "by-directory/index.md",
        ));
        entries.push(NavEntry::link("Relationships by file", "by-file/index.md"));
    }
    entries.push(NavEntry::link("Relationship catalog", "catalog.json"));
    out.extend(navigation(
        plan,
        "_graph",
        Some("[Relationship catalog](catalog.json)"),
        entries,
        false,
    ));
    out
}

/// Which directories have relations directly (a page inside has one) or below.
fn dirs_with_relations(plan: &Plan) -> Vec<bool> {
    let n_dirs = plan.dirs.len();
    let mut present = vec![false; n_dirs];
    for (p, rels) in plan.page_relations.iter().enumerate() {
        if !rels.is_empty() {
            present[plan.pages[p].dir] = true;
        }
    }
    for d in (1..n_dirs).rev() {
        if present[d] {
            if let Some(parent) = plan.dirs[d].parent {
                present[parent] = true;
            }
        }
    }
    present
}

/// The per-file graph record of every page with relations.
fn per_file_records(plan: &Plan) -> Vec<(String, Vec<u8>)> {
    (0..plan.pages.len())
        .into_par_iter()
        .filter(|&p| !plan.page_relations[p].is_empty())
        .map(|p| {
            let page = &plan.pages[p];
            let dir = &plan.dirs[page.dir].path;
            let relationships = plan.page_relations[p]
                .iter()
                .map(|&r| {
                    let rel = &plan.relations[r];
                    let other = &plan.pages[rel.other(p)];
                    LocalRelationship {
                        target_path: &other.path,
                        target_title: &other.title,
                        direction: rel.direction(p),
                        relation_type: rel.relation_type(),
                        weight: 1,
                        reason: rel.reason(plan),
                        evidence: [rel.evidence(plan, rel.holders(plan)[0])],
                    }
                })
                .collect();
            let record = PerFileGraph {
                format_version: 2,
                title: format!("{} relationships", page.title),
                path: &page.path,
                index_path: format!("{}/index.json", mirror("_index/pages", dir)),
                directory_graph_path: format!("{}/index.json", mirror("_graph/by-directory", dir)),
                relationships,
            };
            (by_file_path(&page.path), to_json_line(&record).into_bytes())
        })
        .collect()
}

/// The relationship records of directory `d`, sorted by (from, to, type): a relation is filed
/// in the directory of each endpoint, from that endpoint; once when both are here, from the
/// endpoint with the smaller path.
fn directory_records(plan: &Plan, d: usize) -> Vec<(String, String)> {
    let mut records: Vec<(String, String)> = Vec::new();
    for &p in &plan.dirs[d].pages {
        for &r in &plan.page_relations[p] {
            let rel = &plan.relations[r];
            let q = rel.other(p);
            if plan.pages[q].dir == d && plan.pages[q].path < plan.pages[p].path {
                continue;
            }
            let (from, to) = (&plan.pages[p], &plan.pages[q]);
            let record = RelationshipRecord {
                from: &from.path,
                to: &to.path,
                from_title: &from.title,
                to_title: &to.title,
                direction: rel.direction(p),
                relation_type: rel.relation_type(),
                weight: 1,
                reason: rel.reason(plan),
                evidence: rel
                    .holders(plan)
                    .into_iter()
                    .map(|h| rel.evidence(plan, h))
                    .collect(),
            };
            let key = format!("{}\0{}\0{}", from.path, to.path, rel.relation_type());
            records.push((key, serde_json::to_string(&record).unwrap_or_default()));
        }
    }
    records.sort_by(|a, b| a.0.cmp(&b.0));
    records
}

/// Directory `d`'s router, relationship packets and navigation under `_graph/by-directory`,
/// and its navigation under `_graph/by-file`.
fn directory_files(plan: &Plan, d: usize, present: &[bool]) -> Vec<(String, Vec<u8>)> {
    let dp = &plan.dirs[d];
    let mut files = Vec::new();
    let records = directory_records(plan, d);
    let ext = mirror("_graph/by-directory", &dp.path);
    let packet_title = if dp.parent.is_none() {
        "All relationships".to_string()
    } else {
        format!("{} relationships", dp.name)
    };
    let prefix = format!(
        "{{\"formatVersion\":2,\"title\":{},\"scopePath\":{},\"relationships\":[",
        json_string(&packet_title),
        json_string(&dp.path)
    );
    let (packets, parts) = if records.is_empty() {
        (Vec::new(), Vec::new())
    } else {
        pack(
            &ext,
            &format!("{}-relationships", subject(&dp.path)),
            &prefix,
            &records,
            false,
        )
    };
    let children: Vec<usize> = dp
        .children
        .iter()
        .copied()
        .filter(|&c| present[c])
        .collect();
    let by_directory = |dir: usize| {
        format!(
            "{}/index.json",
            mirror("_graph/by-directory", &plan.dirs[dir].path)
        )
    };
    let router = DirectoryRouter {
        format_version: 2,
        title: if dp.parent.is_none() {
            "Documents relationships".into()
        } else {
            format!("{} relationships", dp.name)
        },
        scope_path: &dp.path,
        parent_path: dp.parent.map(by_directory),
        child_directories: children
            .iter()
            .map(|&c| ChildDirectory {
                title: &plan.dirs[c].name,
                scope_path: &plan.dirs[c].path,
                path: by_directory(c),
            })
            .collect(),
        resources: parts,
        document_count: None,
        relationship_count: Some(records.len()),
    };
    let mut entries: Vec<NavEntry> = children
        .iter()
        .map(|&c| NavEntry::dir(&plan.dirs[c].name))
        .collect();
    entries.push(NavEntry::file("index.json", "index.json", "index.json"));
    for (path, _) in &packets {
        let name = name_of(path);
        entries.push(NavEntry::file(name, name, name));
    }
    files.extend(packets);
    files.push((
        format!("{ext}/index.json"),
        to_json_line(&router).into_bytes(),
    ));
    files.extend(navigation(plan, &ext, None, entries, true));

    // by-file navigation: child directories and the per-file records, by title.
    let ext = mirror("_graph/by-file", &dp.path);
    let mut entries: Vec<NavEntry> = children
        .iter()
        .map(|&c| NavEntry::dir(&plan.dirs[c].name))
        .collect();
    for &p in &dp.pages {
        if plan.page_relations[p].is_empty() {
            continue;
        }
        let page = &plan.pages[p];
        let record = by_file_path(&page.path);
        entries.push(NavEntry::file(name_of(&record), &page.title, &page.title));
    }
    files.extend(navigation(plan, &ext, None, entries, true));
    files
}
