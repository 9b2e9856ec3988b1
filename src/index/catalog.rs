//! The document catalog: every file kbtools serves with its identity, title, frontmatter and
//! revision, the relations between source pages, and the lookup tables and directory tree built
//! from them when an index is opened.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::bundle::paths::{self, PathClass};
use crate::bundle::BundleKind;

/// One served file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CatalogFile {
    pub path: String,
    /// Path relative to the bundle root on disk; `None` for a virtual file.
    pub disk: Option<String>,
    pub class: PathClass,
    pub source_backed: bool,
    pub file_id: String,
    pub size: u64,
    pub sha256: String,
    pub title: Option<String>,
    /// Parsed on first use.
    pub frontmatter: crate::json_text::LazyObject,
    /// For a per-file graph record kbtools renders itself (no file on disk): the catalog
    /// position of its page. Its content is rendered from the catalog when read.
    pub graph_of: Option<u32>,
    pub listed: bool,
    /// The revision in which this source page last changed; `None` for generated files.
    pub resource_revision: Option<u64>,
    /// The page's key in the full-text index; `None` when it is not indexed.
    pub index_key: Option<u64>,
}

impl CatalogFile {
    /// `fileKind` in tree entries.
    pub fn tree_file_kind(&self) -> &'static str {
        self.class.tree_file_kind(self.source_backed)
    }

    /// `fileKind` in file detail (`log.md` is `index` there).
    pub fn detail_file_kind(&self) -> &'static str {
        match self.tree_file_kind() {
            "log" => "index",
            other => other,
        }
    }

    pub fn content_type(&self) -> &'static str {
        if self.path.ends_with(".json") {
            "application/json; charset=utf-8"
        } else if self.path.ends_with(".jsonl") {
            "application/x-ndjson; charset=utf-8"
        } else {
            "text/markdown; charset=utf-8"
        }
    }

    pub fn source_file_id(&self) -> Option<&str> {
        self.source_backed.then_some(self.file_id.as_str())
    }

    /// True for a relation record kbtools renders itself.
    pub fn is_virtual(&self) -> bool {
        self.graph_of.is_some()
    }
}

/// A relation between two source pages, by catalog position, from `from`'s point of view.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct CatalogRelation {
    pub from: u32,
    pub to: u32,
    pub relation_type: String,
    pub direction: String,
    pub reason: Option<String>,
}

/// What is written to disk.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogData {
    pub knowledge_base_id: String,
    pub knowledge_base_name: String,
    pub kind: BundleKind,
    /// Sorted by path (byte order).
    pub files: Vec<CatalogFile>,
    pub relations: Vec<CatalogRelation>,
    /// Unordered page pairs with at least one relation (counted when built).
    pub distinct_relations: Option<u64>,
}

/// Unordered page pairs with at least one relation.
pub fn distinct_pairs(relations: &[CatalogRelation]) -> u64 {
    let pairs: std::collections::HashSet<(u32, u32)> = relations
        .iter()
        .map(|r| (r.from.min(r.to), r.from.max(r.to)))
        .collect();
    pairs.len() as u64
}

/// A child of a directory in the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TreeChild {
    File(u32),
    Directory(String),
}

/// Counts of a directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DirectoryInfo {
    /// Set once the directory is attached to its parent.
    registered: bool,
    pub direct_directories: u64,
    pub direct_files: u64,
    pub descendant_source_files: u64,
}

/// The catalog with its lookup tables. Only what every call needs is built when an index is
/// opened; the tree, the id table and the case-folded paths are built on first use, so that a
/// one-shot call on a large knowledge base does not pay for them.
#[derive(Debug)]
pub struct Catalog {
    pub data: CatalogData,
    by_folded_path: OnceLock<HashMap<String, Vec<u32>>>,
    by_id: OnceLock<HashMap<String, u32>>,
    tree: OnceLock<Tree>,
    /// Position in `data.relations` of the first relation of each page: relations are sorted
    /// by `from` (checked when opened), so a page's relations are one range.
    relation_order: Vec<u32>,
    source_page_count: u64,
    /// Unordered page pairs with at least one relation (computed once: search reports it on
    /// every graph-mode query).
    distinct_relation_count: u64,
}

/// The directory tree of the listed files.
#[derive(Debug, Default)]
struct Tree {
    /// Directory path (`""` for the root) → children in byte order of path.
    children: HashMap<String, Vec<(String, TreeChild)>>,
    directories: HashMap<String, DirectoryInfo>,
}

fn fold(path: &str) -> String {
    crate::text::nfc(path).to_lowercase()
}

impl Tree {
    fn new(files: &[CatalogFile]) -> Self {
        let mut children: HashMap<String, Vec<(String, TreeChild)>> = HashMap::new();
        let mut directories: HashMap<String, DirectoryInfo> = HashMap::new();
        directories.insert(String::new(), DirectoryInfo::default());
        for (i, file) in files.iter().enumerate() {
            let i = i as u32;
            if !file.listed {
                continue;
            }
            // The file under its parent, then any ancestor directory not seen yet.
            let parent = paths::parent_of(&file.path).to_string();
            children
                .entry(parent.clone())
                .or_default()
                .push((file.path.clone(), TreeChild::File(i)));
            directories.entry(parent.clone()).or_default().direct_files += 1;
            let mut dir = parent.clone();
            while !dir.is_empty() && !directories.get(&dir).is_some_and(|d| d.registered) {
                directories.entry(dir.clone()).or_default().registered = true;
                let up = paths::parent_of(&dir).to_string();
                children
                    .entry(up.clone())
                    .or_default()
                    .push((dir.clone(), TreeChild::Directory(dir.clone())));
                directories
                    .entry(up.clone())
                    .or_default()
                    .direct_directories += 1;
                dir = up;
            }
            if file.source_backed {
                let mut dir = parent;
                loop {
                    directories
                        .entry(dir.clone())
                        .or_default()
                        .descendant_source_files += 1;
                    if dir.is_empty() {
                        break;
                    }
                    dir = paths::parent_of(&dir).to_string();
                }
            }
        }
        for list in children.values_mut() {
            list.sort_by(|a, b| a.0.cmp(&b.0));
        }
        Tree {
            children,
            directories,
        }
    }
}

impl Catalog {
    pub fn new(mut data: CatalogData) -> Self {
        // Files sorted by path make `by_path` a binary search; relations sorted by `from` make a
        // page's relations a range. Both hold for what `index::build` writes.
        if !data.files.is_sorted_by(|a, b| a.path < b.path) {
            let mut order: Vec<u32> = (0..data.files.len() as u32).collect();
            order.sort_by(|a, b| {
                data.files[*a as usize]
                    .path
                    .cmp(&data.files[*b as usize].path)
            });
            let mut new_position = vec![0u32; order.len()];
            for (new, old) in order.iter().enumerate() {
                new_position[*old as usize] = new as u32;
            }
            let mut files: Vec<Option<CatalogFile>> = data.files.drain(..).map(Some).collect();
            data.files = order
                .iter()
                .filter_map(|old| files[*old as usize].take())
                .collect();
            for f in &mut data.files {
                f.graph_of = f
                    .graph_of
                    .and_then(|p| new_position.get(p as usize).copied());
            }
            data.relations.retain(|r| {
                (r.from as usize) < new_position.len() && (r.to as usize) < new_position.len()
            });
            for r in &mut data.relations {
                r.from = new_position[r.from as usize];
                r.to = new_position[r.to as usize];
            }
        }
        if !data.relations.is_sorted_by_key(|r| r.from) {
            data.relations.sort_by_key(|r| r.from);
        }
        let mut relation_order = Vec::with_capacity(data.files.len() + 1);
        let mut next = 0usize;
        for i in 0..data.files.len() as u32 {
            relation_order.push(next as u32);
            while next < data.relations.len() && data.relations[next].from == i {
                next += 1;
            }
        }
        relation_order.push(data.relations.len() as u32);
        let source_page_count = data.files.iter().filter(|f| f.source_backed).count() as u64;
        let distinct_relation_count = match data.distinct_relations {
            Some(count) => count,
            None => distinct_pairs(&data.relations),
        };
        Catalog {
            data,
            by_folded_path: OnceLock::new(),
            by_id: OnceLock::new(),
            tree: OnceLock::new(),
            relation_order,
            source_page_count,
            distinct_relation_count,
        }
    }

    pub fn kb_id(&self) -> &str {
        &self.data.knowledge_base_id
    }

    pub fn file(&self, i: u32) -> &CatalogFile {
        &self.data.files[i as usize]
    }

    pub fn files(&self) -> &[CatalogFile] {
        &self.data.files
    }

    /// A file by exact path, else by NFC + lower-case when that is unambiguous.
    pub fn by_path(&self, path: &str) -> Option<u32> {
        self.exact_path(path).or_else(|| {
            let folded = self.by_folded_path.get_or_init(|| {
                let mut map: HashMap<String, Vec<u32>> = HashMap::new();
                for (i, file) in self.data.files.iter().enumerate() {
                    map.entry(fold(&file.path)).or_default().push(i as u32);
                }
                map
            });
            match folded.get(&fold(path)).map(Vec::as_slice) {
                Some([only]) => Some(*only),
                _ => None,
            }
        })
    }

    /// A file by exact path (files are sorted by path).
    fn exact_path(&self, path: &str) -> Option<u32> {
        self.data
            .files
            .binary_search_by(|f| f.path.as_str().cmp(path))
            .ok()
            .map(|i| i as u32)
    }

    pub fn by_id(&self, id: &str) -> Option<u32> {
        self.by_id
            .get_or_init(|| {
                let mut map = HashMap::with_capacity(self.data.files.len());
                for (i, file) in self.data.files.iter().enumerate() {
                    map.entry(file.file_id.clone()).or_insert(i as u32);
                }
                map
            })
            .get(id)
            .copied()
    }

    /// A file by id, or by path when `id` is a path (DECISIONS 5: both accepted).
    pub fn by_id_or_path(&self, id: &str) -> Option<u32> {
        self.by_id(id).or_else(|| self.exact_path(id))
    }

    fn tree(&self) -> &Tree {
        self.tree.get_or_init(|| Tree::new(&self.data.files))
    }

    pub fn children(&self, dir: &str) -> &[(String, TreeChild)] {
        self.tree()
            .children
            .get(dir)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    pub fn directory(&self, dir: &str) -> Option<&DirectoryInfo> {
        self.tree().directories.get(dir)
    }

    /// The content of a per-file graph record kbtools renders itself (`None` for other files):
    /// rendered from the page's relations, byte for byte what ingest hashed.
    pub fn virtual_content(&self, file: &CatalogFile) -> Option<String> {
        let page = self.file(file.graph_of?);
        let relations = self.relations_of(file.graph_of?);
        let views: Vec<crate::bundle::RelationView<'_>> = relations
            .iter()
            .map(|rel| crate::bundle::RelationView {
                to: &self.file(rel.to).path,
                to_title: self.file(rel.to).title.as_deref().unwrap_or(""),
                relation_type: &rel.relation_type,
                direction: &rel.direction,
                reason: rel.reason.as_deref(),
            })
            .collect();
        Some(crate::bundle::render_per_file_graph(
            &page.path,
            page.title.as_deref().unwrap_or(""),
            &views,
        ))
    }

    /// The relations recorded for a source page, in catalog order (target path order).
    pub fn relations_of(&self, page: u32) -> Vec<&CatalogRelation> {
        let range = |i: usize| self.relation_order.get(i).map(|r| *r as usize);
        match (range(page as usize), range(page as usize + 1)) {
            (Some(start), Some(end)) => self.data.relations[start..end].iter().collect(),
            _ => Vec::new(),
        }
    }

    pub fn source_page_count(&self) -> u64 {
        self.source_page_count
    }

    /// Distinct relations: unordered page pairs with at least one relation.
    pub fn distinct_relation_count(&self) -> u64 {
        self.distinct_relation_count
    }
}
