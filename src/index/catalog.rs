//! The document catalog: every file kbtools serves with its identity, title, frontmatter and
//! revision, the relations between source pages, and the lookup tables and directory tree built
//! from them when an index is opened.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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
    pub frontmatter: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_content: Option<String>,
    pub listed: bool,
    /// The revision in which this source page last changed; `None` for generated files.
    pub resource_revision: Option<u64>,
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

/// The catalog with its lookup tables.
#[derive(Debug)]
pub struct Catalog {
    pub data: CatalogData,
    by_path: HashMap<String, u32>,
    by_folded_path: HashMap<String, Vec<u32>>,
    by_id: HashMap<String, u32>,
    /// Directory path (`""` for the root) → children in byte order of path.
    children: HashMap<String, Vec<(String, TreeChild)>>,
    directories: HashMap<String, DirectoryInfo>,
    /// Catalog position → positions in `data.relations` of its relations.
    relations_of: HashMap<u32, Vec<u32>>,
    source_page_count: u64,
    /// Unordered page pairs with at least one relation (computed once: search reports it on
    /// every graph-mode query).
    distinct_relation_count: u64,
}

fn fold(path: &str) -> String {
    crate::text::nfc(path).to_lowercase()
}

impl Catalog {
    pub fn new(data: CatalogData) -> Self {
        let mut by_path = HashMap::with_capacity(data.files.len());
        let mut by_folded_path: HashMap<String, Vec<u32>> = HashMap::new();
        let mut by_id = HashMap::with_capacity(data.files.len());
        let mut children: HashMap<String, Vec<(String, TreeChild)>> = HashMap::new();
        let mut directories: HashMap<String, DirectoryInfo> = HashMap::new();
        directories.insert(String::new(), DirectoryInfo::default());
        let mut source_page_count = 0;
        for (i, file) in data.files.iter().enumerate() {
            let i = i as u32;
            by_path.insert(file.path.clone(), i);
            by_folded_path.entry(fold(&file.path)).or_default().push(i);
            by_id.entry(file.file_id.clone()).or_insert(i);
            if file.source_backed {
                source_page_count += 1;
            }
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
        let mut relations_of: HashMap<u32, Vec<u32>> = HashMap::new();
        let mut pairs = std::collections::HashSet::with_capacity(data.relations.len());
        for (i, rel) in data.relations.iter().enumerate() {
            relations_of.entry(rel.from).or_default().push(i as u32);
            pairs.insert((rel.from.min(rel.to), rel.from.max(rel.to)));
        }
        let distinct_relation_count = pairs.len() as u64;
        Catalog {
            data,
            by_path,
            by_folded_path,
            by_id,
            children,
            directories,
            relations_of,
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
        self.by_path.get(path).copied().or_else(|| {
            match self.by_folded_path.get(&fold(path)).map(Vec::as_slice) {
                Some([only]) => Some(*only),
                _ => None,
            }
        })
    }

    pub fn by_id(&self, id: &str) -> Option<u32> {
        self.by_id.get(id).copied()
    }

    /// A file by id, or by path when `id` is a path (DECISIONS 5: both accepted).
    pub fn by_id_or_path(&self, id: &str) -> Option<u32> {
        self.by_id(id).or_else(|| self.by_path.get(id).copied())
    }

    pub fn children(&self, dir: &str) -> &[(String, TreeChild)] {
        self.children
            .get(dir)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    pub fn directory(&self, dir: &str) -> Option<&DirectoryInfo> {
        self.directories.get(dir)
    }

    /// The relations recorded for a source page, in catalog order (target path order).
    pub fn relations_of(&self, page: u32) -> Vec<&CatalogRelation> {
        self.relations_of
            .get(&page)
            .map(|list| {
                list.iter()
                    .map(|&r| &self.data.relations[r as usize])
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn source_page_count(&self) -> u64 {
        self.source_page_count
    }

    /// Distinct relations: unordered page pairs with at least one relation.
    pub fn distinct_relation_count(&self) -> u64 {
        self.distinct_relation_count
    }
}
