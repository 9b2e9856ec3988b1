//! Directory navigation: each directory's `index.md` and its leaves, the root `index.md` and
//! `log.md`.

use super::*;

/// One entry of a directory listing.
pub(super) struct NavEntry {
    pub(super) is_dir: bool,
    pub(super) sort_name: String,
    pub(super) label: String,
    pub(super) href: String,
}

impl NavEntry {
    pub(super) fn dir(name: &str) -> NavEntry {
        NavEntry {
            is_dir: true,
            sort_name: name.to_lowercase(),
            label: name.to_string(),
            href: format!("{}/index.md", encode_segment(name)),
        }
    }

    /// An entry of a fixed list (kept in the order given).
    pub(super) fn link(label: &str, href: &str) -> NavEntry {
        NavEntry {
            is_dir: false,
            sort_name: String::new(),
            label: label.to_string(),
            href: href.to_string(),
        }
    }

    pub(super) fn file(name: &str, label: &str, sort_name: &str) -> NavEntry {
        NavEntry {
            is_dir: false,
            sort_name: sort_name.to_lowercase(),
            label: label.to_string(),
            href: encode_segment(name),
        }
    }
}

/// The title of a navigation directory.
pub(super) fn directory_title(dir: &str) -> String {
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

pub(super) fn nav_line(dir: &str) -> String {
    format!(
        "[Knowledge base]({}) · [Documents]({}) · [Machine-readable indexes]({}) · [Relationship graph]({})",
        href(dir, "index.md"),
        href(dir, "pages/index.md"),
        href(dir, "_index/index.md"),
        href(dir, "_graph/index.md"),
    )
}

/// A stable leaf id shaped like a UUID.
pub(super) fn leaf_id(kind: &str, kb_name: &str, dir: &str, sequence: usize) -> String {
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
pub(super) fn navigation(
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

pub(in crate::bundle_gen) fn root_index(plan: &Plan) -> String {
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

pub(in crate::bundle_gen) fn log_md(plan: &Plan) -> String {
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

pub(in crate::bundle_gen) fn page_navigation(plan: &Plan) -> Vec<(String, Vec<u8>)> {
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
