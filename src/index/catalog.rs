//! The document catalog: every file kbtools serves with its identity, title, frontmatter and
//! revision, the relations between source pages, and the lookup tables and directory tree built
//! from them when an index is opened.

use crate::ingest::bundle::paths::ContractFileKind;
use crate::relation::Direction;
use std::collections::HashMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::ingest::bundle::paths::{self, PathClass};
use crate::ingest::bundle::BundleKind;

pub mod store;

/// The names of a page (lower case), indexed for the identifier lane: its file stem, and the
/// label its title starts with when that label is an identifier ([`is_identifier`]: `MD013` of
/// `MD013 - Line length`).
pub(crate) fn page_names(path: &str, title: Option<&str>) -> Vec<String> {
    let mut names = Vec::new();
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.rsplit_once('.').map_or(file, |(stem, _)| stem);
    if !stem.is_empty() {
        names.push(stem.to_lowercase());
    }
    if let Some(label) = title.and_then(title_label) {
        if is_identifier(label) && !names.iter().any(|n| n.eq_ignore_ascii_case(label)) {
            names.push(label.to_lowercase());
        }
    }
    names
}

/// The label a title gives its page: the whole title when it is one word, or the word before
/// a ` - `, ` – `, ` — ` or `: ` that starts it (`MD013 - Line length`, `E501: line too long`).
/// A title that merely begins with an identifier (`IL-6 trans-signaling in …`) has none.
fn title_label(title: &str) -> Option<&str> {
    let title = title.trim();
    if !title.contains(char::is_whitespace) {
        return Some(title);
    }
    let (first, rest) = title.split_once(char::is_whitespace)?;
    if let Some(label) = first.strip_suffix(':') {
        return Some(label);
    }
    let rest = rest.trim_start();
    ["- ", "– ", "— "]
        .iter()
        .any(|dash| rest.starts_with(dash))
        .then_some(first)
}

/// What a title says beside its identifier label (`title_label`): `Line length` of
/// `MD013 - Line length`, `line too long` of `E501: line too long`; the whole title when it
/// has no such label or nothing beside it.
pub(crate) fn title_words(title: &str) -> &str {
    let trimmed = title.trim();
    let Some((first, rest)) = trimmed.split_once(char::is_whitespace) else {
        return trimmed;
    };
    let rest = rest.trim_start();
    let words = match first.strip_suffix(':') {
        Some(label) if is_identifier(label) => rest,
        Some(_) => return trimmed,
        None if is_identifier(first) => match ["- ", "– ", "— "]
            .iter()
            .find_map(|dash| rest.strip_prefix(dash))
        {
            Some(words) => words,
            None => return trimmed,
        },
        None => return trimmed,
    };
    if words.trim().is_empty() {
        trimmed
    } else {
        words.trim()
    }
}

/// True for a word that reads as an identifier rather than a word of prose: letters with a
/// digit, a hyphen or an underscore in it (`md013`, `at-rule-no-unknown`, `v-model`,
/// `max_line_length`), two characters at least.
pub(crate) fn is_identifier(word: &str) -> bool {
    word.chars().count() >= 2
        && word.chars().any(|c| c.is_alphabetic())
        && word
            .chars()
            .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
        && !word.starts_with(['-', '_'])
        && !word.ends_with(['-', '_'])
        && word
            .chars()
            .any(|c| c.is_ascii_digit() || c == '-' || c == '_')
}

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
    /// Whether `bytes` are what the index was built from: the recorded size, and the SHA-256
    /// of what ingest parsed (the first `MAX_PARSE_BYTES`).
    pub(crate) fn is_indexed(&self, bytes: &[u8]) -> bool {
        let parsed = &bytes[..bytes
            .len()
            .min(crate::ingest::bundle::MAX_PARSE_BYTES as usize)];
        bytes.len() as u64 == self.size && crate::ingest::bundle::sha256_hex(parsed) == self.sha256
    }

    /// `fileKind` in tree entries.
    pub(crate) fn tree_file_kind(&self) -> ContractFileKind {
        self.class.tree_file_kind(self.source_backed)
    }

    /// `fileKind` in file detail (`log.md` is `index` there).
    pub(crate) fn detail_file_kind(&self) -> ContractFileKind {
        match self.tree_file_kind() {
            ContractFileKind::Log => ContractFileKind::Index,
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
    pub(crate) fn is_virtual(&self) -> bool {
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
    pub direction: Direction,
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
pub(crate) fn distinct_pairs(relations: &[CatalogRelation]) -> u64 {
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

/// The catalog as kbtools reads it: the on-disk form ([`store`]) kept as bytes (memory-mapped
/// when opened from an index), each block of files and of relations decoded on first use. A
/// one-shot call on a large knowledge base reads the header and the few blocks it touches; the
/// tree, the id table and the case-folded paths are built on first use.
pub struct Catalog {
    store: store::Store,
    /// Decoded blocks of files (`store::BLOCK` files each, in path order).
    file_blocks: Box<[OnceLock<Box<[CatalogFile]>>]>,
    /// Decoded blocks of relations: the relations of the pages of the file block.
    relation_blocks: Box<[OnceLock<Box<[CatalogRelation]>>]>,
    by_folded_path: OnceLock<HashMap<String, Vec<u32>>>,
    by_id: OnceLock<HashMap<String, u32>>,
    tree: OnceLock<Tree>,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("knowledge_base_id", &self.kb_id())
            .field("files", &self.file_count())
            .field("relations", &self.relation_count())
            .finish_non_exhaustive()
    }
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
    fn new<'a>(files: impl Iterator<Item = &'a CatalogFile>) -> Self {
        let mut children: HashMap<String, Vec<(String, TreeChild)>> = HashMap::new();
        let mut directories: HashMap<String, DirectoryInfo> = HashMap::new();
        directories.insert(String::new(), DirectoryInfo::default());
        for (i, file) in files.enumerate() {
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
    /// The translations of source page `page`: the source pages with its path under a sibling
    /// language root, and in a plain folder also its `translation` relations (which hold the
    /// translations its frontmatter names).
    pub fn translations(&self, page: u32) -> Vec<u32> {
        let mut out = Vec::new();
        for other in paths::translation_paths(&self.file(page).path) {
            if let Some(p) = self.by_exact_path(&other) {
                if self.is_source(p) && !out.contains(&p) {
                    out.push(p);
                }
            }
        }
        if self.kind() == BundleKind::PlainFolder {
            for r in self.relation_range(page).unwrap_or_default() {
                let rel = self.relation(r);
                if rel.relation_type == "translation"
                    && self.is_source(rel.to)
                    && !out.contains(&rel.to)
                {
                    out.push(rel.to);
                }
            }
        }
        out
    }

    /// The catalog of `data` (sorted and checked as [`store::encode`] does), kept in memory.
    pub fn new(data: CatalogData) -> Self {
        let bytes = store::encode(data);
        Self::open(store::Bytes::Owned(bytes), "catalog")
            .expect("a catalog kbtools encoded itself opens")
    }

    /// Opens the on-disk form; `name` names it in errors. The whole file is checked against its
    /// checksum, so damage is found here, not while answering.
    pub fn open(bytes: store::Bytes, name: &str) -> Result<Self, String> {
        let store = store::Store::open(bytes).map_err(|e| format!("{name}: {e}"))?;
        let blocks = store.block_count();
        Ok(Catalog {
            file_blocks: (0..blocks).map(|_| OnceLock::new()).collect(),
            relation_blocks: (0..blocks).map(|_| OnceLock::new()).collect(),
            store,
            by_folded_path: OnceLock::new(),
            by_id: OnceLock::new(),
            tree: OnceLock::new(),
        })
    }

    /// Everything, decoded (a build's previous catalog).
    #[cfg(test)]
    pub(crate) fn into_data(self) -> CatalogData {
        let files = self.iter_files().cloned().collect();
        let relations = (0..self.relation_count() as u32)
            .map(|r| self.relation(r).clone())
            .collect();
        let header = self.store.header();
        CatalogData {
            knowledge_base_id: header.knowledge_base_id.clone(),
            knowledge_base_name: header.knowledge_base_name.clone(),
            kind: header.kind,
            files,
            relations,
            distinct_relations: Some(header.distinct_relations),
        }
    }

    /// The on-disk form (a build copies the unchanged blocks of the previous catalog).
    pub fn store(&self) -> &store::Store {
        &self.store
    }

    fn file_block(&self, block: usize) -> &[CatalogFile] {
        self.file_blocks[block].get_or_init(|| self.store.file_block(block))
    }

    fn relation_block(&self, block: usize) -> &[CatalogRelation] {
        self.relation_blocks[block].get_or_init(|| self.store.relation_block(block))
    }

    pub fn kb_id(&self) -> &str {
        &self.store.header().knowledge_base_id
    }

    pub fn kind(&self) -> BundleKind {
        self.store.header().kind
    }

    /// The file at catalog position `i` (positions are `0..file_count()`, in path order).
    pub fn file(&self, i: u32) -> &CatalogFile {
        let i = i as usize;
        &self.file_block(i / store::BLOCK)[i % store::BLOCK]
    }

    /// The file at `i`, or `None` past the end.
    pub fn get(&self, i: u32) -> Option<&CatalogFile> {
        ((i as usize) < self.file_count()).then(|| self.file(i))
    }

    /// True when position `i` is a source page (read without decoding the file).
    pub(crate) fn is_source(&self, i: u32) -> bool {
        self.store.is_source(i)
    }

    /// Whether the file at `i` is a history: a changelog, release notes
    /// ([`crate::ingest::aggregate`]).
    pub fn is_history(&self, i: u32) -> bool {
        self.store.is_history(i)
    }

    pub fn file_count(&self) -> usize {
        self.store.header().file_count as usize
    }

    /// Every file in catalog order (decoding every block).
    pub fn iter_files(&self) -> impl Iterator<Item = &CatalogFile> + '_ {
        (0..self.store.block_count()).flat_map(|b| self.file_block(b).iter())
    }

    /// A file by exact path, else by NFC + lower-case when that is unambiguous.
    pub fn by_path(&self, path: &str) -> Option<u32> {
        self.exact_path(path).or_else(|| {
            let folded = self.by_folded_path.get_or_init(|| {
                let mut map: HashMap<String, Vec<u32>> = HashMap::new();
                for (i, file) in self.iter_files().enumerate() {
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

    /// A file by exact path only (no case-folded fallback, which builds a table of every path
    /// on first use).
    pub(crate) fn by_exact_path(&self, path: &str) -> Option<u32> {
        self.exact_path(path)
    }

    /// A file by exact path: the block by its first path, then the file within it.
    fn exact_path(&self, path: &str) -> Option<u32> {
        let block = self.store.block_of_path(path)?;
        let within = self
            .file_block(block)
            .binary_search_by(|f| f.path.as_str().cmp(path))
            .ok()?;
        Some((block * store::BLOCK + within) as u32)
    }

    pub fn by_id(&self, id: &str) -> Option<u32> {
        self.by_id
            .get_or_init(|| {
                let mut map = HashMap::with_capacity(self.file_count());
                for (i, file) in self.iter_files().enumerate() {
                    map.entry(file.file_id.clone()).or_insert(i as u32);
                }
                map
            })
            .get(id)
            .copied()
    }

    /// A file by id, or by path when `id` is a path (rules#file-ids: both accepted).
    pub(crate) fn by_id_or_path(&self, id: &str) -> Option<u32> {
        self.by_id(id).or_else(|| self.exact_path(id))
    }

    /// The catalog position of the page indexed under `key`.
    #[cfg(test)]
    pub(crate) fn by_index_key(&self, key: u64) -> Option<u32> {
        self.store.position_of_key(key)
    }

    /// The positions of every indexed page.
    #[cfg(test)]
    pub(crate) fn indexed_positions(&self) -> Vec<u32> {
        self.store.indexed_positions()
    }

    /// The key table as an owned handle ([`store::KeyTable`]) the full-text index keeps.
    pub(crate) fn key_table(&self) -> store::KeyTable {
        self.store.key_table()
    }

    fn tree(&self) -> &Tree {
        self.tree.get_or_init(|| Tree::new(self.iter_files()))
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
    pub(crate) fn virtual_content(&self, file: &CatalogFile) -> Option<String> {
        let page = self.file(file.graph_of?);
        let relations = self.relations_of(file.graph_of?);
        let views: Vec<crate::ingest::bundle::RelationView<'_>> = relations
            .iter()
            .map(|rel| crate::ingest::bundle::RelationView {
                to: &self.file(rel.to).path,
                to_title: self.file(rel.to).title.as_deref().unwrap_or(""),
                relation_type: &rel.relation_type,
                direction: rel.direction,
                reason: rel.reason.as_deref(),
            })
            .collect();
        Some(crate::ingest::bundle::render_per_file_graph(
            &page.path,
            page.title.as_deref().unwrap_or(""),
            &views,
            &|path| self.by_path(path).is_some(),
        ))
    }

    /// The relations recorded for a source page, in catalog order (target path order), with
    /// their relation numbers.
    pub(crate) fn relations_of(&self, page: u32) -> Vec<&CatalogRelation> {
        self.relation_range(page)
            .map(|range| range.map(|r| self.relation(r)).collect())
            .unwrap_or_default()
    }

    /// The relation numbers of `page`'s relations.
    pub(crate) fn relation_range(&self, page: u32) -> Option<std::ops::Range<u32>> {
        self.store.relation_range(page)
    }

    /// Relation number `r` (`0..relation_count()`; relations are numbered in `from` order).
    pub fn relation(&self, r: u32) -> &CatalogRelation {
        let (block, within) = self.store.relation_place(r);
        &self.relation_block(block)[within]
    }

    pub fn relation_count(&self) -> usize {
        self.store.header().relation_count as usize
    }

    pub fn source_page_count(&self) -> u64 {
        self.store.header().source_page_count
    }

    /// Distinct relations: unordered page pairs with at least one relation.
    pub(crate) fn distinct_relation_count(&self) -> u64 {
        self.store.header().distinct_relations
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_title_says_its_words_beside_an_identifier_label() {
        let cases = [
            ("MD013 - Line length", "Line length"),
            ("E501: line too long", "line too long"),
            ("MD013 – Line length", "Line length"),
            ("at-rule-no-unknown", "at-rule-no-unknown"),
            ("Note: read this first", "Note: read this first"),
            (
                "IL-6 trans-signaling in mice",
                "IL-6 trans-signaling in mice",
            ),
            ("Computed Properties", "Computed Properties"),
            ("MD013 - ", "MD013 -"),
        ];
        for (title, words) in cases {
            assert_eq!(super::title_words(title), words, "{title}");
        }
    }
}
