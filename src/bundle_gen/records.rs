//! The bundle-wide files of a generated bundle: directory navigation (`index.md` and its
//! leaves), the root `index.md` and `log.md`, `_index/pages/**` routers and document packets,
//! `_index/terms/**` term routes, and `_graph/**` (catalog, `by-directory` routers and
//! relationship packets, `by-file` records), in the shapes of bundle-format.md.

use super::*;

/// One entry of a directory listing.
struct NavEntry {
    is_dir: bool,
    sort_name: String,
    label: String,
    href: String,
}

impl NavEntry {
    fn dir(name: &str) -> NavEntry {
        NavEntry {
            is_dir: true,
            sort_name: name.to_lowercase(),
            label: name.to_string(),
            href: format!("{}/index.md", encode_segment(name)),
        }
    }

    /// An entry of a fixed list (kept in the order given).
    fn link(label: &str, href: &str) -> NavEntry {
        NavEntry {
            is_dir: false,
            sort_name: String::new(),
            label: label.to_string(),
            href: href.to_string(),
        }
    }

    fn file(name: &str, label: &str, sort_name: &str) -> NavEntry {
        NavEntry {
            is_dir: false,
            sort_name: sort_name.to_lowercase(),
            label: label.to_string(),
            href: encode_segment(name),
        }
    }
}

/// The title of a navigation directory.
fn directory_title(dir: &str) -> String {
    match dir {
        "pages" => "Documents".into(),
        "_index" => "Machine-readable indexes".into(),
        "_graph" => "Relationship graph".into(),
        "_index/terms" => "Navigation terms".into(),
        "_graph/by-file" => "Relationships by file".into(),
        _ if parent_of(dir) == "_index/terms" => format!("{} terms", name_of(dir)),
        _ => name_of(dir).to_string(),
    }
}

fn nav_line(dir: &str) -> String {
    format!(
        "[Knowledge base]({}) · [Documents]({}) · [Machine-readable indexes]({}) · [Relationship graph]({})",
        href(dir, "index.md"),
        href(dir, "pages/index.md"),
        href(dir, "_index/index.md"),
        href(dir, "_graph/index.md"),
    )
}

/// A stable leaf id shaped like a UUID.
fn leaf_id(kind: &str, kb_name: &str, dir: &str, sequence: usize) -> String {
    let digest = Sha256::digest(format!("{kind}\0{kb_name}\0{dir}\0{sequence}").as_bytes());
    let h = hex::encode(&digest[..16]);
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// `index.md` and the leaves of directory `dir`. `sorted`: directories first, then files, by
/// lower-cased name (else the entries keep their order).
fn navigation(
    plan: &Plan,
    dir: &str,
    extra: Option<&str>,
    mut entries: Vec<NavEntry>,
    sorted: bool,
) -> Vec<(String, Vec<u8>)> {
    if sorted {
        entries.sort_by(|a, b| {
            (!a.is_dir, &a.sort_name, &a.href).cmp(&(!b.is_dir, &b.sort_name, &b.href))
        });
    }
    let kind = if dir == "pages" || dir.starts_with("pages/") {
        "directory-leaf"
    } else {
        "extension-leaf"
    };
    let title = directory_title(dir);
    let line = nav_line(dir);
    let leaves = if entries.len() <= LEAF_MAX {
        usize::from(!entries.is_empty())
    } else {
        entries.len().div_ceil(LEAF_TARGET)
    };
    let names: Vec<String> = (0..leaves)
        .map(|s| format!("index-{kind}-{}.md", leaf_id(kind, &plan.kb_name, dir, s)))
        .collect();
    let mut out = Vec::new();
    let mut index = format!(
        "# {}\n\n[Parent directory](../index.md)\n\n{line}\n\n",
        label(&title)
    );
    if let Some(extra) = extra {
        index.push_str(extra);
        index.push_str("\n\n");
    }
    match names.first() {
        Some(first) => index.push_str(&format!("[Browse entries]({first})\n")),
        None => index.push_str("This directory has no published Markdown files.\n"),
    }
    out.push((format!("{dir}/index.md"), index.into_bytes()));
    let mut start = 0;
    for (s, name) in names.iter().enumerate() {
        let count = entries.len() / leaves + usize::from(s < entries.len() % leaves);
        let mut leaf = format!(
            "---\ntype: navigation\ntitle: {}\nnavigation_only: true\n---\n# {} entries\n\n[Directory index](index.md)",
            json_string(&format!("{title} entries")),
            label(&title)
        );
        if s > 0 {
            leaf.push_str(&format!(" · [Previous]({})", names[s - 1]));
        }
        if s + 1 < names.len() {
            leaf.push_str(&format!(" · [Next]({})", names[s + 1]));
        }
        leaf.push_str(&format!("\n\n{line}\n\n"));
        for e in &entries[start..start + count] {
            leaf.push_str(&format!("- [{}]({})\n", label(&e.label), e.href));
        }
        start += count;
        out.push((format!("{dir}/{name}"), leaf.into_bytes()));
    }
    out
}

pub(super) fn root_index(plan: &Plan) -> String {
    let top = plan.dirs[0].children.len() + plan.dirs[0].pages.len();
    let mut out = format!(
        "---\nokf_version: \"0.2\"\n---\n# {}\n\nSynthetic English and Chinese pages for benchmarks: {} pages in nested directories, linked to each other, deterministic from seed {}.\n\n## Explore\n\n- [Browse documents](pages/index.md) - {top} top-level entries.\n",
        label(&plan.kb_name),
        plan.pages.len(),
        plan.options.seed
    );
    out.push_str(&format!(
        "- [Relationship graph](_graph/index.md) - {} accepted relationships.\n",
        plan.relations.len()
    ));
    out.push_str("- [Update history](log.md)\n- [Machine-readable indexes](_index/index.md)\n");
    out
}

pub(super) fn log_md(plan: &Plan) -> String {
    let mut out = format!("# Directory Update Log\n\n## {LOG_DATE}\n\n");
    for &p in plan.path_order.iter().take(100) {
        let page = &plan.pages[p];
        let line = format!(
            "* **Updated page**: Updated {}. [{}]({})\n",
            page.path,
            label(&page.title),
            href("", &page.path)
        );
        if out.len() + line.len() > 65_536 {
            break;
        }
        out.push_str(&line);
    }
    out
}

pub(super) fn page_navigation(plan: &Plan) -> Vec<(String, Vec<u8>)> {
    plan.dirs
        .par_iter()
        .flat_map_iter(|d| {
            let mut entries: Vec<NavEntry> = d
                .children
                .iter()
                .map(|&c| NavEntry::dir(&plan.dirs[c].name))
                .collect();
            for &p in &d.pages {
                let page = &plan.pages[p];
                let name = name_of(&page.path);
                entries.push(NavEntry::file(name, &page.title, name));
            }
            navigation(plan, &d.path, None, entries, true)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// `_index/**`

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Part {
    path: String,
    record_count: usize,
    first_key: String,
    last_key: String,
    byte_count: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ChildDirectory<'a> {
    title: &'a str,
    scope_path: &'a str,
    path: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DirectoryRouter<'a> {
    format_version: u8,
    title: String,
    scope_path: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_path: Option<String>,
    child_directories: Vec<ChildDirectory<'a>>,
    resources: Vec<Part>,
    #[serde(skip_serializing_if = "Option::is_none")]
    document_count: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    relationship_count: Option<usize>,
}

/// Packs `(key, record JSON)` pairs into packet files of `dir`: greedily, at most
/// `SHARD_RECORDS` records and `SHARD_BYTES` bytes each; one part is `<stem>.json`, several
/// are `<stem>-part-NNNN.json` (or always numbered with `always_numbered`).
fn pack(
    dir: &str,
    stem: &str,
    prefix: &str,
    records: &[(String, String)],
    always_numbered: bool,
) -> (Vec<(String, Vec<u8>)>, Vec<Part>) {
    const SUFFIX: &str = "]}\n";
    let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
    let mut start = 0;
    let mut bytes = prefix.len() + SUFFIX.len();
    for (i, (_, record)) in records.iter().enumerate() {
        let add = record.len() + usize::from(i > start);
        // A term split into several records puts each in a part of its own.
        let same_key = i > start && records[i - 1].0 == records[i].0;
        if i > start && (i - start == SHARD_RECORDS || bytes + add > SHARD_BYTES || same_key) {
            groups.push(start..i);
            start = i;
            bytes = prefix.len() + SUFFIX.len() + record.len();
        } else {
            bytes += add;
        }
    }
    if start < records.len() {
        groups.push(start..records.len());
    }
    let numbered = always_numbered || groups.len() > 1;
    let mut files = Vec::new();
    let mut parts = Vec::new();
    for (n, range) in groups.into_iter().enumerate() {
        let name = if numbered {
            format!("{stem}-part-{:04}.json", n + 1)
        } else {
            format!("{stem}.json")
        };
        let mut text = String::from(prefix);
        for (i, (_, record)) in records[range.clone()].iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            text.push_str(record);
        }
        text.push_str(SUFFIX);
        let path = format!("{dir}/{name}");
        parts.push(Part {
            path: path.clone(),
            record_count: range.len(),
            first_key: records[range.start].0.clone(),
            last_key: records[range.end - 1].0.clone(),
            byte_count: text.len(),
        });
        files.push((path, text.into_bytes()));
    }
    (files, parts)
}

fn subject(pages_dir: &str) -> &str {
    if pages_dir == "pages" {
        "all"
    } else {
        name_of(pages_dir)
    }
}

pub(super) fn index_pages(plan: &Plan, rendered: &[Rendered]) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = plan
        .dirs
        .par_iter()
        .flat_map_iter(|d| {
            let ext = mirror("_index/pages", &d.path);
            let records: Vec<(String, String)> = d
                .pages
                .iter()
                .map(|&p| (plan.pages[p].path.clone(), rendered[p].record.clone()))
                .collect();
            let packet_title = if d.parent.is_none() {
                "All documents".to_string()
            } else {
                format!("{} documents", d.name)
            };
            let prefix = format!(
                "{{\"formatVersion\":2,\"title\":{},\"scopePath\":{},\"documents\":[",
                json_string(&packet_title),
                json_string(&d.path)
            );
            let (mut files, parts) = if records.is_empty() {
                (Vec::new(), Vec::new())
            } else {
                pack(
                    &ext,
                    &format!("{}-documents", subject(&d.path)),
                    &prefix,
                    &records,
                    false,
                )
            };
            let router = DirectoryRouter {
                format_version: 2,
                title: if d.parent.is_none() {
                    "Documents documents".into()
                } else {
                    format!("{} documents", d.name)
                },
                scope_path: &d.path,
                parent_path: d
                    .parent
                    .map(|p| format!("{}/index.json", mirror("_index/pages", &plan.dirs[p].path))),
                child_directories: d
                    .children
                    .iter()
                    .map(|&c| ChildDirectory {
                        title: &plan.dirs[c].name,
                        scope_path: &plan.dirs[c].path,
                        path: format!("{}/index.json", mirror("_index/pages", &plan.dirs[c].path)),
                    })
                    .collect(),
                resources: parts,
                document_count: Some(d.pages.len()),
                relationship_count: None,
            };
            let mut entries: Vec<NavEntry> = d
                .children
                .iter()
                .map(|&c| NavEntry::dir(&plan.dirs[c].name))
                .collect();
            entries.push(NavEntry::file("index.json", "index.json", "index.json"));
            for (path, _) in &files {
                let name = name_of(path);
                entries.push(NavEntry::file(name, name, name));
            }
            files.push((
                format!("{ext}/index.json"),
                to_json_line(&router).into_bytes(),
            ));
            files.extend(navigation(plan, &ext, None, entries, true));
            files
        })
        .collect();
    out.push((
        "_index/catalog.json".into(),
        format!("{INDEX_CATALOG}\n").into_bytes(),
    ));
    let mut entries = vec![NavEntry::link("Documents", "pages/index.md")];
    if plan.options.terms_per_page > 0 {
        entries.push(NavEntry::link("Navigation terms", "terms/index.md"));
    }
    entries.push(NavEntry::link("Index catalog", "catalog.json"));
    out.extend(navigation(
        plan,
        "_index",
        Some("[Index catalog](catalog.json)"),
        entries,
        false,
    ));
    out
}

#[derive(Serialize)]
struct Posting<'a> {
    path: &'a str,
    fields: Vec<&'static str>,
}

#[derive(Serialize)]
struct TermRecord<'a> {
    term: &'a str,
    postings: &'a [Posting<'a>],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TermBucketRouter {
    format_version: u8,
    title: String,
    bucket: &'static str,
    routes: Vec<TermRoute>,
}

#[derive(Serialize)]
struct BucketRef {
    bucket: &'static str,
    path: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TermNormalization {
    unicode_normalization: &'static str,
    case_folding: &'static str,
    tokenization: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TermCatalog {
    format_version: u8,
    title: &'static str,
    normalization: TermNormalization,
    buckets: Vec<BucketRef>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TermRoute {
    path: String,
    first_term: String,
    last_term: String,
    record_count: usize,
}

/// The bucket of a term: the class of its first character.
fn bucket_of(term: &str) -> &'static str {
    match term.chars().next() {
        Some(c) if c.is_ascii_digit() => "number",
        Some(c) if c.is_ascii_alphabetic() => "latin",
        Some(c) if crate::text::is_han(c) => "han",
        _ => "other",
    }
}

pub(super) fn index_terms(plan: &Plan, rendered: &[Rendered]) -> Vec<(String, Vec<u8>)> {
    if plan.options.terms_per_page == 0 {
        return Vec::new();
    }
    // term → postings (page, fields), pages in path order.
    let mut by_term: HashMap<&str, Vec<(usize, u8)>> = HashMap::new();
    for &p in &plan.path_order {
        for (term, mask) in &rendered[p].terms {
            by_term.entry(term.as_str()).or_default().push((p, *mask));
        }
    }
    type Postings = Vec<(usize, u8)>;
    let mut buckets: BTreeMap<&'static str, Vec<(&str, Postings)>> = BTreeMap::new();
    for (term, postings) in by_term {
        buckets
            .entry(bucket_of(term))
            .or_default()
            .push((term, postings));
    }
    let mut out = Vec::new();
    let mut catalog_buckets = Vec::new();
    let fields_of = |mask: u8| -> Vec<&'static str> {
        (0..8)
            .filter(|i| mask & (1 << i) != 0)
            .map(|i| TERM_FIELDS[i])
            .collect()
    };
    for (bucket, mut terms) in buckets {
        terms.sort_by(|a, b| a.0.cmp(b.0));
        let dir = format!("_index/terms/{bucket}");
        let prefix = format!(
            "{{\"formatVersion\":2,\"title\":\"{bucket} terms\",\"bucket\":\"{bucket}\",\"terms\":["
        );
        // A term whose postings alone pass the byte cap is split into several records.
        let budget = SHARD_BYTES - prefix.len() - 3;
        let records: Vec<(String, String)> = terms
            .par_iter()
            .flat_map_iter(|(term, postings)| {
                let postings: Vec<Posting> = postings
                    .iter()
                    .map(|&(p, mask)| Posting {
                        path: &plan.pages[p].path,
                        fields: fields_of(mask),
                    })
                    .collect();
                let mut records = Vec::new();
                let mut start = 0;
                while start < postings.len() {
                    let mut end = postings.len();
                    loop {
                        let record = serde_json::to_string(&TermRecord {
                            term,
                            postings: &postings[start..end],
                        })
                        .unwrap_or_default();
                        if record.len() <= budget || end - start == 1 {
                            records.push((term.to_string(), record));
                            break;
                        }
                        end = start + (end - start) / 2;
                    }
                    start = end;
                }
                records
            })
            .collect();
        let (files, parts) = pack(&dir, &format!("{bucket}-terms"), &prefix, &records, true);
        let routes: Vec<TermRoute> = parts
            .into_iter()
            .map(|part| TermRoute {
                path: part.path,
                first_term: part.first_key,
                last_term: part.last_key,
                record_count: part.record_count,
            })
            .collect();
        let router = TermBucketRouter {
            format_version: 2,
            title: format!("{bucket} term routes"),
            bucket,
            routes,
        };
        let mut entries = vec![NavEntry::file("index.json", "index.json", "index.json")];
        for (path, _) in &files {
            let name = name_of(path);
            entries.push(NavEntry::file(name, name, name));
        }
        out.extend(files);
        out.push((
            format!("{dir}/index.json"),
            to_json_line(&router).into_bytes(),
        ));
        out.extend(navigation(plan, &dir, None, entries, true));
        catalog_buckets.push(BucketRef {
            bucket,
            path: format!("{dir}/index.json"),
        });
    }
    let entries: Vec<NavEntry> = catalog_buckets
        .iter()
        .map(|b| NavEntry::dir(b.bucket))
        .chain([NavEntry::file("index.json", "index.json", "index.json")])
        .collect();
    let catalog = TermCatalog {
        format_version: 2,
        title: "Term routes",
        normalization: TermNormalization {
            unicode_normalization: "NFKC",
            case_folding: "unicode",
            tokenization: "nodejieba-search-v1",
        },
        buckets: catalog_buckets,
    };
    out.push((
        "_index/terms/index.json".into(),
        to_json_line(&catalog).into_bytes(),
    ));
    out.extend(navigation(plan, "_index/terms", None, entries, true));
    out
}

// ---------------------------------------------------------------------------------------------
// `_graph/**`

#[derive(Serialize)]
struct CatalogResource {
    kind: &'static str,
    title: &'static str,
    path: &'static str,
    description: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GraphCatalog {
    format_version: u8,
    title: &'static str,
    relationship_count: usize,
    resources: Vec<CatalogResource>,
}

#[derive(Serialize)]
pub(super) struct Evidence<'a> {
    pub(super) path: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) excerpt: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RelationshipRecord<'a> {
    from: &'a str,
    to: &'a str,
    from_title: &'a str,
    to_title: &'a str,
    direction: &'static str,
    relation_type: &'static str,
    weight: u8,
    reason: String,
    evidence: Vec<Evidence<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LocalRelationship<'a> {
    target_path: &'a str,
    target_title: &'a str,
    direction: &'static str,
    relation_type: &'static str,
    weight: u8,
    reason: String,
    evidence: [Evidence<'a>; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PerFileGraph<'a> {
    format_version: u8,
    title: String,
    path: &'a str,
    index_path: String,
    directory_graph_path: String,
    relationships: Vec<LocalRelationship<'a>>,
}

pub(super) fn graph_files(plan: &Plan) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let has_relations = !plan.relations.is_empty();
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
    if !has_relations {
        return out;
    }

    // Which directories have relations directly (a page inside has one) or below.
    let n_dirs = plan.dirs.len();
    let mut direct = vec![false; n_dirs];
    for (p, rels) in plan.page_relations.iter().enumerate() {
        if !rels.is_empty() {
            direct[plan.pages[p].dir] = true;
        }
    }
    let mut present = direct.clone();
    for d in (1..n_dirs).rev() {
        if present[d] {
            if let Some(parent) = plan.dirs[d].parent {
                present[parent] = true;
            }
        }
    }

    // Per-file records.
    let per_file: Vec<(String, Vec<u8>)> = (0..plan.pages.len())
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
        .collect();
    out.extend(per_file);

    // Directory routers, packets and navigation of by-directory and by-file.
    let dir_files: Vec<(String, Vec<u8>)> = (0..n_dirs)
        .into_par_iter()
        .filter(|&d| present[d])
        .flat_map_iter(|d| {
            let dp = &plan.dirs[d];
            let mut files = Vec::new();
            // A relation is filed in the directory of each endpoint, from that endpoint; once
            // when both are here, from the endpoint with the smaller path.
            let mut records: Vec<(String, String)> = Vec::new();
            for &p in &dp.pages {
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
            let router = DirectoryRouter {
                format_version: 2,
                title: if dp.parent.is_none() {
                    "Documents relationships".into()
                } else {
                    format!("{} relationships", dp.name)
                },
                scope_path: &dp.path,
                parent_path: dp.parent.map(|p| {
                    format!(
                        "{}/index.json",
                        mirror("_graph/by-directory", &plan.dirs[p].path)
                    )
                }),
                child_directories: children
                    .iter()
                    .map(|&c| ChildDirectory {
                        title: &plan.dirs[c].name,
                        scope_path: &plan.dirs[c].path,
                        path: format!(
                            "{}/index.json",
                            mirror("_graph/by-directory", &plan.dirs[c].path)
                        ),
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
        })
        .collect();
    out.extend(dir_files);
    out
}

#[cfg(test)]
mod tests;
