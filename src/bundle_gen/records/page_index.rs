//! `_index/pages/**`: routers and document packets, split at the byte cap.

use super::*;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Part {
    pub(super) path: String,
    pub(super) record_count: usize,
    pub(super) first_key: String,
    pub(super) last_key: String,
    pub(super) byte_count: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ChildDirectory<'a> {
    pub(super) title: &'a str,
    pub(super) scope_path: &'a str,
    pub(super) path: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct DirectoryRouter<'a> {
    pub(super) format_version: u8,
    pub(super) title: String,
    pub(super) scope_path: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) parent_path: Option<String>,
    pub(super) child_directories: Vec<ChildDirectory<'a>>,
    pub(super) resources: Vec<Part>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) document_count: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) relationship_count: Option<usize>,
}

/// Packs `(key, record JSON)` pairs into packet files of `dir`: greedily, at most
/// `SHARD_RECORDS` records and `SHARD_BYTES` bytes each; one part is `<stem>.json`, several
/// are `<stem>-part-NNNN.json` (or always numbered with `always_numbered`).
pub(super) fn pack(
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

pub(super) fn subject(pages_dir: &str) -> &str {
    if pages_dir == "pages" {
        "all"
    } else {
        name_of(pages_dir)
    }
}

pub(in crate::bundle_gen) fn index_pages(
    plan: &Plan,
    rendered: &[Rendered],
) -> Vec<(String, Vec<u8>)> {
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
