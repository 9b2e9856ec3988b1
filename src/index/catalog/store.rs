//! The on-disk form of the catalog (`catalog.bin`), read in place: a checksummed header, tables
//! read where they lie (memory-mapped), and blocks of files and relations, LZ4-compressed
//! postcard, decoded only when a call touches them. Opening costs the checksum and the header,
//! not the size of the knowledge base in allocations.
//!
//! Layout (integers little-endian):
//!
//! ```text
//! magic "KBCAT06\n"                                   8 bytes
//! CRC-32 of every byte after these 12                 4
//! header length H                                     4   (u32)
//! header (postcard)                                   H
//! data area; the header names each section's range in it:
//!   file blocks        (blocks + 1) × u64   start of each block of files, then the end
//!   relation blocks    (blocks + 1) × u64   start of each block of relations, then the end
//!   relation starts    (files + 1) × u32    number of each page's first relation, then the count
//!   keys               indexed pages × (u64 key, u32 position), ascending by key
//!   flags              files × u8           1: source page; 2: history
//!   the blocks themselves
//! ```
//!
//! Files are in path order, `BLOCK` to a block; relations are numbered in `from` order and the
//! relation block `b` holds the relations of the pages of file block `b`.

use std::ops::Range;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{CatalogData, CatalogFile, CatalogRelation};
use crate::ingest::bundle::BundleKind;

/// Files per block.
pub(crate) const BLOCK: usize = 64;
const MAGIC: &[u8; 8] = b"KBCAT06\n";
/// Magic, checksum and header length.
const PREAMBLE: usize = 16;
/// Flag bit of a source page.
const SOURCE: u8 = 1;
const HISTORY: u8 = 2;

/// The bytes of a catalog: its file mapped into memory, or a buffer.
pub enum Bytes {
    Owned(Vec<u8>),
    /// Generation files are written once and never modified in place (a build writes a new
    /// generation), so the mapping stays what was checked.
    Mapped(memmap2::Mmap),
}

impl Bytes {
    /// Maps `path` into memory.
    pub fn map(path: &std::path::Path) -> std::io::Result<Self> {
        let file = std::fs::File::open(path)?;
        // SAFETY: kbtools never writes to a generation file after renaming its generation into
        // place, and removing an old generation unlinks the file without changing the mapping.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        Ok(Bytes::Mapped(map))
    }
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Owned(v) => v,
            Bytes::Mapped(m) => m,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
struct Section {
    offset: u64,
    len: u64,
}

/// What a catalog says about itself, decoded when it is opened.
#[derive(Debug, Serialize, Deserialize)]
pub struct Header {
    pub knowledge_base_id: String,
    pub knowledge_base_name: String,
    pub kind: BundleKind,
    pub file_count: u32,
    pub relation_count: u32,
    pub source_page_count: u64,
    /// Unordered page pairs with at least one relation.
    pub distinct_relations: u64,
    /// The path of the first file of each block.
    first_paths: Vec<String>,
    file_blocks: Section,
    relation_blocks: Section,
    relation_starts: Section,
    keys: Section,
    flags: Section,
}

/// An opened, checked catalog file.
pub struct Store {
    bytes: Arc<Bytes>,
    header: Header,
    data: usize,
}

fn corrupt(what: impl std::fmt::Display) -> String {
    format!("damaged catalog: {what}")
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(b)
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(b)
}

impl Store {
    /// Checks `bytes` (magic, checksum, header, every table's bounds and order) and opens them.
    pub fn open(bytes: Bytes) -> Result<Self, String> {
        if bytes.len() < PREAMBLE || &bytes[..8] != MAGIC {
            return Err(corrupt(
                "not a kbtools catalog of this format (bad magic or too short)",
            ));
        }
        let stored = u32_at(&bytes, 8);
        if crc32fast::hash(&bytes[12..]) != stored {
            return Err(corrupt("checksum mismatch"));
        }
        let header_len = u32_at(&bytes, 12) as usize;
        let data = PREAMBLE
            .checked_add(header_len)
            .filter(|&end| end <= bytes.len())
            .ok_or_else(|| corrupt("header runs past the end"))?;
        let header: Header = postcard::from_bytes(&bytes[PREAMBLE..data])
            .map_err(|e| corrupt(format!("header: {e}")))?;
        let store = Store {
            bytes: Arc::new(bytes),
            header,
            data,
        };
        store.check()?;
        Ok(store)
    }

    /// Bounds and order of every table, so that reading them later cannot go wrong.
    fn check(&self) -> Result<(), String> {
        let h = &self.header;
        let files = h.file_count as usize;
        let blocks = files.div_ceil(BLOCK);
        if h.first_paths.len() != blocks {
            return Err(corrupt("block paths do not match the file count"));
        }
        let area = self.bytes.len() - self.data;
        let fits = |s: Section, len: usize, name: &str| -> Result<(), String> {
            let end = s.offset.checked_add(s.len);
            if s.len != len as u64 || end.is_none_or(|end| end > area as u64) {
                return Err(corrupt(format!("table {name} out of bounds")));
            }
            Ok(())
        };
        fits(h.file_blocks, (blocks + 1) * 8, "file blocks")?;
        fits(h.relation_blocks, (blocks + 1) * 8, "relation blocks")?;
        fits(h.relation_starts, (files + 1) * 4, "relation starts")?;
        if !h.keys.len.is_multiple_of(12) {
            return Err(corrupt("key table length"));
        }
        fits(h.keys, h.keys.len as usize, "keys")?;
        fits(h.flags, files, "flags")?;
        for section in [h.file_blocks, h.relation_blocks] {
            let mut last = 0;
            for b in 0..=blocks {
                let offset = self.table_u64(section, b);
                if offset < last || offset > area as u64 {
                    return Err(corrupt("block offsets out of order"));
                }
                last = offset;
            }
        }
        let mut last = 0;
        for i in 0..=files {
            let start = self.relation_start(i);
            if start < last {
                return Err(corrupt("relation starts out of order"));
            }
            last = start;
        }
        if last != h.relation_count {
            return Err(corrupt("relation count"));
        }
        let mut previous: Option<u64> = None;
        for k in 0..self.key_count() {
            let (key, position) = self.key_entry(k);
            if previous.is_some_and(|p| p >= key) || position as usize >= files {
                return Err(corrupt("key table out of order"));
            }
            previous = Some(key);
        }
        Ok(())
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    pub(crate) fn block_count(&self) -> usize {
        self.header.first_paths.len()
    }

    fn area(&self) -> &[u8] {
        &self.bytes[self.data..]
    }

    fn table_u64(&self, section: Section, i: usize) -> u64 {
        u64_at(self.area(), section.offset as usize + i * 8)
    }

    fn relation_start(&self, page: usize) -> u32 {
        u32_at(
            self.area(),
            self.header.relation_starts.offset as usize + page * 4,
        )
    }

    fn key_count(&self) -> usize {
        self.header.keys.len as usize / 12
    }

    fn key_entry(&self, k: usize) -> (u64, u32) {
        let at = self.header.keys.offset as usize + k * 12;
        (u64_at(self.area(), at), u32_at(self.area(), at + 8))
    }

    /// The compressed bytes of block `b` of `section`.
    fn block_bytes(&self, section: Section, b: usize) -> &[u8] {
        let (start, end) = (self.table_u64(section, b), self.table_u64(section, b + 1));
        &self.area()[start as usize..end as usize]
    }

    /// Decodes block `b` of `section`, which must hold `count` items. The checksum held when
    /// the file was opened, so a failure here means a file crafted to pass it.
    fn decode<T: for<'de> Deserialize<'de>>(
        &self,
        section: Section,
        b: usize,
        count: usize,
    ) -> Box<[T]> {
        let items: Vec<T> = crate::compact::decode(self.block_bytes(section, b))
            .unwrap_or_else(|e| panic!("{}", corrupt(format!("block {b}: {e}"))));
        assert_eq!(
            items.len(),
            count,
            "{}",
            corrupt(format!("block {b} holds {} items", items.len()))
        );
        items.into_boxed_slice()
    }

    fn pages_of_block(&self, b: usize) -> Range<usize> {
        let files = self.header.file_count as usize;
        (b * BLOCK).min(files)..((b + 1) * BLOCK).min(files)
    }

    pub(crate) fn file_block(&self, b: usize) -> Box<[CatalogFile]> {
        self.decode(self.header.file_blocks, b, self.pages_of_block(b).len())
    }

    pub(crate) fn relation_block(&self, b: usize) -> Box<[CatalogRelation]> {
        let pages = self.pages_of_block(b);
        let count = self.relation_start(pages.end) - self.relation_start(pages.start);
        self.decode(self.header.relation_blocks, b, count as usize)
    }

    /// The block that holds `path` if any file does: the last block whose first path is not
    /// after it.
    pub(crate) fn block_of_path(&self, path: &str) -> Option<usize> {
        self.header
            .first_paths
            .partition_point(|first| first.as_str() <= path)
            .checked_sub(1)
    }

    pub(crate) fn relation_range(&self, page: u32) -> Option<Range<u32>> {
        let page = page as usize;
        (page < self.header.file_count as usize)
            .then(|| self.relation_start(page)..self.relation_start(page + 1))
    }

    /// The block of relation `r` and its place in the block.
    pub(crate) fn relation_place(&self, r: u32) -> (usize, usize) {
        let block_start = |b: usize| self.relation_start(b * BLOCK);
        let mut low = 0;
        let mut high = self.block_count();
        // The last block starting at or before `r` (blocks without relations share a start).
        while high - low > 1 {
            let mid = (low + high) / 2;
            if block_start(mid) <= r {
                low = mid;
            } else {
                high = mid;
            }
        }
        (low, (r - block_start(low)) as usize)
    }

    /// True when the file at `position` is a source page (false past the end).
    pub(crate) fn is_source(&self, position: u32) -> bool {
        (position as usize) < self.header.file_count as usize
            && self.area()[self.header.flags.offset as usize + position as usize] & SOURCE != 0
    }

    /// True when the file at `position` is a history: a changelog, release notes
    /// ([`crate::ingest::aggregate`]; false past the end).
    pub(crate) fn is_history(&self, position: u32) -> bool {
        (position as usize) < self.header.file_count as usize
            && self.area()[self.header.flags.offset as usize + position as usize] & HISTORY != 0
    }

    /// The compressed bytes of file block `b`, as stored.
    pub(crate) fn raw_file_block(&self, b: usize) -> &[u8] {
        self.block_bytes(self.header.file_blocks, b)
    }

    /// The compressed bytes of relation block `b`, as stored.
    pub(crate) fn raw_relation_block(&self, b: usize) -> &[u8] {
        self.block_bytes(self.header.relation_blocks, b)
    }

    /// The relation starts table (file count + 1 numbers).
    pub(crate) fn relation_starts(&self) -> Vec<u32> {
        (0..=self.header.file_count as usize)
            .map(|i| self.relation_start(i))
            .collect()
    }

    /// The key table: (key, position), ascending by key.
    pub fn keys(&self) -> Vec<(u64, u32)> {
        (0..self.key_count()).map(|k| self.key_entry(k)).collect()
    }

    /// The flag byte of every file.
    pub fn flags(&self) -> Vec<u8> {
        let start = self.header.flags.offset as usize;
        self.area()[start..start + self.header.file_count as usize].to_vec()
    }

    /// The path of the first file of each block.
    pub fn first_paths(&self) -> &[String] {
        &self.header.first_paths
    }

    pub(crate) fn key_table(&self) -> KeyTable {
        KeyTable {
            bytes: self.bytes.clone(),
            start: self.data + self.header.keys.offset as usize,
            count: self.key_count(),
        }
    }

    #[cfg(test)]
    pub(crate) fn position_of_key(&self, key: u64) -> Option<u32> {
        self.key_table().get(key)
    }

    #[cfg(test)]
    pub(crate) fn indexed_positions(&self) -> Vec<u32> {
        (0..self.key_count()).map(|k| self.key_entry(k).1).collect()
    }
}

/// Page key → catalog position, read in place (shared with the full-text index).
#[derive(Clone)]
pub struct KeyTable {
    bytes: Arc<Bytes>,
    start: usize,
    count: usize,
}

impl KeyTable {
    fn entry(&self, k: usize) -> (u64, u32) {
        let at = self.start + k * 12;
        (u64_at(&self.bytes, at), u32_at(&self.bytes, at + 8))
    }

    /// The position of the page indexed under `key`.
    pub fn get(&self, key: u64) -> Option<u32> {
        let (mut low, mut high) = (0, self.count);
        while low < high {
            let mid = (low + high) / 2;
            let (k, position) = self.entry(mid);
            match k.cmp(&key) {
                std::cmp::Ordering::Less => low = mid + 1,
                std::cmp::Ordering::Greater => high = mid,
                std::cmp::Ordering::Equal => return Some(position),
            }
        }
        None
    }

    /// Every indexed page's position, in key order.
    pub fn positions(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.count).map(|k| self.entry(k).1)
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// The pieces of a catalog file, its blocks already compressed (each block `compact`-encoded:
/// a block of files is a `[CatalogFile]`, a block of relations the `[CatalogRelation]` of the
/// pages of the file block). A build makes them block by block, or copies the unchanged blocks
/// of the previous catalog as they are.
pub struct Parts<'a> {
    pub knowledge_base_id: String,
    pub knowledge_base_name: String,
    pub kind: BundleKind,
    pub source_page_count: u64,
    /// Unordered page pairs with at least one relation.
    pub distinct_relations: u64,
    /// The path of the first file of each block.
    pub first_paths: Vec<String>,
    /// The number of each file's first relation, then the relation count (files + 1 numbers).
    pub relation_starts: Vec<u32>,
    /// (key, position) of every indexed page, ascending by key, each key once.
    pub keys: Vec<(u64, u32)>,
    /// One byte per file: `SOURCE_FLAG` for a source page, with `HISTORY_FLAG` for a history.
    pub flags: Vec<u8>,
    pub file_blocks: Vec<std::borrow::Cow<'a, [u8]>>,
    pub relation_blocks: Vec<std::borrow::Cow<'a, [u8]>>,
}

/// Flag byte of a source page in [`Parts::flags`].
pub(crate) const SOURCE_FLAG: u8 = SOURCE;

/// Flag bit of a history (a changelog, release notes), besides [`SOURCE_FLAG`].
pub(crate) const HISTORY_FLAG: u8 = HISTORY;

/// Compresses a block of items for [`Parts`].
pub(crate) fn encode_block<T: Serialize>(items: &[T]) -> Vec<u8> {
    crate::compact::encode(items).expect("a catalog block encodes")
}

/// Sorts `data` (files by path, relations by `from`) and encodes it.
pub fn encode(mut data: CatalogData) -> Vec<u8> {
    sort_files(&mut data);
    if !data.relations.is_sorted_by_key(|r| r.from) {
        data.relations.sort_by_key(|r| r.from);
    }
    let files = data.files.len();
    let relation_starts = relation_starts(files, data.relations.iter().map(|r| r.from));
    let mut keys: Vec<(u64, u32)> = data
        .files
        .iter()
        .enumerate()
        .filter_map(|(i, f)| Some((f.index_key?, i as u32)))
        .collect();
    keys.sort_unstable();
    keys.dedup_by_key(|(k, _)| *k);
    let blocks = files.div_ceil(BLOCK);
    let parts = Parts {
        source_page_count: data.files.iter().filter(|f| f.source_backed).count() as u64,
        distinct_relations: data
            .distinct_relations
            .unwrap_or_else(|| super::distinct_pairs(&data.relations)),
        first_paths: data
            .files
            .chunks(BLOCK)
            .map(|c| c[0].path.clone())
            .collect(),
        flags: data
            .files
            .iter()
            .map(|f| if f.source_backed { SOURCE } else { 0 })
            .collect(),
        keys,
        file_blocks: data
            .files
            .chunks(BLOCK)
            .map(|chunk| encode_block(chunk).into())
            .collect(),
        relation_blocks: (0..blocks)
            .map(|b| {
                let first = relation_starts[b * BLOCK] as usize;
                let end = relation_starts[((b + 1) * BLOCK).min(files)] as usize;
                encode_block(&data.relations[first..end]).into()
            })
            .collect(),
        relation_starts,
        knowledge_base_id: data.knowledge_base_id,
        knowledge_base_name: data.knowledge_base_name,
        kind: data.kind,
    };
    let mut out = Vec::new();
    write(&parts, &mut out).expect("writing to a buffer cannot fail");
    out
}

/// The relation starts of `files` files whose relations have the sources `from`, in order.
pub(crate) fn relation_starts(files: usize, from: impl Iterator<Item = u32>) -> Vec<u32> {
    let mut starts = vec![0u32; files + 1];
    let mut count = 0u32;
    for page in from {
        // Counted per page, then summed: starts[p + 1] - starts[p] is page p's count.
        if let Some(slot) = starts.get_mut(page as usize + 1) {
            *slot += 1;
        }
        count += 1;
    }
    for i in 1..=files {
        starts[i] += starts[i - 1];
    }
    debug_assert_eq!(starts[files], count);
    starts
}

/// Writes the catalog file of `parts` to `out` (its checksum computed first, so the file is
/// written in one pass with no copy of it in memory).
pub fn write(parts: &Parts<'_>, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let files = parts.flags.len();
    let blocks = files.div_ceil(BLOCK);
    assert_eq!(parts.first_paths.len(), blocks, "one first path per block");
    assert_eq!(parts.file_blocks.len(), blocks, "one file block per block");
    assert_eq!(
        parts.relation_blocks.len(),
        blocks,
        "one relation block per block"
    );
    assert_eq!(
        parts.relation_starts.len(),
        files + 1,
        "a relation start per file"
    );
    // The tables, then the blocks.
    let mut tables: Vec<u8> = Vec::new();
    let table = |tables: &mut Vec<u8>, len: usize| {
        let section = Section {
            offset: tables.len() as u64,
            len: len as u64,
        };
        tables.resize(tables.len() + len, 0);
        section
    };
    let file_blocks = table(&mut tables, (blocks + 1) * 8);
    let relation_blocks = table(&mut tables, (blocks + 1) * 8);
    let starts = table(&mut tables, (files + 1) * 4);
    let key_section = table(&mut tables, parts.keys.len() * 12);
    let flags = table(&mut tables, files);
    tables[flags.offset as usize..].copy_from_slice(&parts.flags);
    for (i, s) in parts.relation_starts.iter().enumerate() {
        let at = starts.offset as usize + i * 4;
        tables[at..at + 4].copy_from_slice(&s.to_le_bytes());
    }
    for (i, (key, position)) in parts.keys.iter().enumerate() {
        let at = key_section.offset as usize + i * 12;
        tables[at..at + 8].copy_from_slice(&key.to_le_bytes());
        tables[at + 8..at + 12].copy_from_slice(&position.to_le_bytes());
    }
    let mut offset = tables.len() as u64;
    for (section, list) in [
        (file_blocks, &parts.file_blocks),
        (relation_blocks, &parts.relation_blocks),
    ] {
        for b in 0..=blocks {
            let at = section.offset as usize + b * 8;
            tables[at..at + 8].copy_from_slice(&offset.to_le_bytes());
            if let Some(block) = list.get(b) {
                offset += block.len() as u64;
            }
        }
    }
    let header = Header {
        knowledge_base_id: parts.knowledge_base_id.clone(),
        knowledge_base_name: parts.knowledge_base_name.clone(),
        kind: parts.kind,
        file_count: files as u32,
        relation_count: parts.relation_starts[files],
        source_page_count: parts.source_page_count,
        distinct_relations: parts.distinct_relations,
        first_paths: parts.first_paths.clone(),
        file_blocks,
        relation_blocks,
        relation_starts: starts,
        keys: key_section,
        flags,
    };
    let header = postcard::to_stdvec(&header).expect("the catalog header encodes");
    let header_len = (header.len() as u32).to_le_bytes();
    let blocks_iter = || parts.file_blocks.iter().chain(&parts.relation_blocks);
    let mut crc = crc32fast::Hasher::new();
    crc.update(&header_len);
    crc.update(&header);
    crc.update(&tables);
    for block in blocks_iter() {
        crc.update(block);
    }
    out.write_all(MAGIC)?;
    out.write_all(&crc.finalize().to_le_bytes())?;
    out.write_all(&header_len)?;
    out.write_all(&header)?;
    out.write_all(&tables)?;
    for block in blocks_iter() {
        out.write_all(block)?;
    }
    Ok(())
}

/// Sorts files by path (byte order), renumbering relations and record owners.
fn sort_files(data: &mut CatalogData) {
    if data.files.is_sorted_by(|a, b| a.path < b.path) {
        return;
    }
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
    data.relations
        .retain(|r| (r.from as usize) < new_position.len() && (r.to as usize) < new_position.len());
    for r in &mut data.relations {
        r.from = new_position[r.from as usize];
        r.to = new_position[r.to as usize];
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Catalog, CatalogData, CatalogFile, CatalogRelation};
    use super::*;
    use crate::ingest::bundle::paths::PathClass;

    fn file(path: &str, source: bool, key: Option<u64>) -> CatalogFile {
        CatalogFile {
            path: path.to_string(),
            disk: Some(path.to_string()),
            class: PathClass::Page,
            source_backed: source,
            file_id: format!("id-{path}"),
            size: path.len() as u64,
            sha256: String::new(),
            title: Some(path.to_uppercase()),
            frontmatter: serde_json::Map::new().into(),
            graph_of: None,
            listed: true,
            resource_revision: source.then_some(1),
            index_key: key,
        }
    }

    fn relation(from: u32, to: u32, n: u32) -> CatalogRelation {
        CatalogRelation {
            from,
            to,
            relation_type: "related".into(),
            direction: crate::relation::Direction::Outgoing,
            reason: Some(format!("r{n}")),
        }
    }

    /// 200 pages (four blocks, the last partial), given out of path order; relations only from
    /// some pages, so that some blocks have none.
    fn data() -> CatalogData {
        let files: Vec<CatalogFile> = (0..200u32)
            .rev()
            .map(|i| {
                file(
                    &format!("pages/p{i:03}.md"),
                    i % 7 != 0,
                    Some(u64::from(i) * 31 + 5),
                )
            })
            .collect();
        // Positions here are of the unsorted order: 199 - i is page i.
        let mut relations = Vec::new();
        let mut n = 0;
        for i in (0..200u32).filter(|i| (70..130).contains(i) || *i == 3 || *i == 199) {
            for to in [(i + 1) % 200, (i + 5) % 200] {
                relations.push(relation(199 - i, 199 - to, n));
                n += 1;
            }
        }
        CatalogData {
            knowledge_base_id: "kb".into(),
            knowledge_base_name: "KB".into(),
            kind: BundleKind::Focowiki,
            files,
            relations,
            distinct_relations: None,
        }
    }

    #[test]
    fn reads_back_what_it_wrote_in_path_order() {
        let catalog = Catalog::new(data());
        assert_eq!(catalog.kb_id(), "kb");
        assert_eq!(catalog.file_count(), 200);
        for i in 0..200u32 {
            let f = catalog.file(i);
            assert_eq!(f.path, format!("pages/p{i:03}.md"));
            assert_eq!(catalog.is_source(i), i % 7 != 0);
            assert_eq!(catalog.by_path(&f.path), Some(i));
            assert_eq!(catalog.by_id(&f.file_id), Some(i));
            assert_eq!(catalog.by_index_key(u64::from(i) * 31 + 5), Some(i));
        }
        assert!(!catalog.is_source(200));
        assert_eq!(catalog.get(200), None);
        assert_eq!(catalog.by_path("pages/a.md"), None);
        assert_eq!(catalog.by_path("pages/p0000.md"), None);
        assert_eq!(catalog.by_path("zzz"), None);
        assert_eq!(catalog.by_index_key(6), None);
        assert_eq!(catalog.source_page_count(), 200 - 29);
        assert_eq!(catalog.indexed_positions().len(), 200);
        // Relations: renumbered to path order, numbered by `from`, one range per page.
        assert_eq!(catalog.relation_count(), 124);
        let mut seen = 0;
        for page in 0..200u32 {
            let range = catalog.relation_range(page).unwrap();
            let expected = usize::from((70..130).contains(&page) || page == 3 || page == 199) * 2;
            assert_eq!(range.len(), expected, "page {page}");
            for r in range {
                assert_eq!(r, seen);
                seen += 1;
                let rel = catalog.relation(r);
                assert_eq!(rel.from, page);
                assert!(rel.to == (page + 1) % 200 || rel.to == (page + 5) % 200);
            }
        }
        assert_eq!(catalog.relation_range(200), None);
        assert_eq!(catalog.into_data().relations.len(), 124);
    }

    #[test]
    fn an_empty_catalog_opens() {
        let mut empty = data();
        empty.files.clear();
        empty.relations.clear();
        let catalog = Catalog::new(empty);
        assert_eq!(catalog.file_count(), 0);
        assert_eq!(catalog.by_path("pages/p001.md"), None);
        assert_eq!(catalog.iter_files().count(), 0);
        assert!(!catalog.is_source(0));
    }

    #[test]
    fn damage_is_found_when_opened() {
        let bytes = encode(data());
        assert!(Store::open(Bytes::Owned(bytes.clone())).is_ok());
        // Every single flipped byte, every truncation: an error naming the damage, no panic.
        for at in (0..bytes.len()).step_by(7) {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x5a;
            let error = Store::open(Bytes::Owned(damaged))
                .err()
                .expect("damage found");
            assert!(error.starts_with("damaged catalog:"), "{error}");
        }
        for len in [0, 3, 12, 16, bytes.len() / 2, bytes.len() - 1] {
            assert!(Store::open(Bytes::Owned(bytes[..len].to_vec())).is_err());
        }
    }
}
