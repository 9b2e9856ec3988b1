//! The ingest cache (`ingest-cache.bin`): what the last build found in each file, so that the
//! next one reads only the files whose size or modification time changed — and, when only
//! pages changed, patches the previous catalog instead of assembling the whole bundle again.
//!
//! It holds one [`Entry`] per file (identity, stat, checksum, problems, and what the catalog
//! made of it) and the files' [`Detail`]s in chunks, each compressed on its own: a build decodes
//! the entries, and the chunks only when it has to assemble the bundle; the chunks of unchanged
//! files are copied as bytes. Chunk boundaries depend on the files' paths, not their count, so
//! that a file added or removed changes one chunk, not every chunk after it.
//!
//! Layout (integers little-endian):
//!
//! ```text
//! magic "KBING07\n"
//! chunks         each compact-encoded [Detail] (see crate::compact)
//! entries        compact-encoded [Entry]
//! header         postcard: kind, when the cache was made, where each section lies, CRC-32s
//! header length  u32
//! header CRC-32  u32
//! magic "KBING07\n"
//! ```
//!
//! The header holds the CRC-32 of the entries and of every chunk, checked when they are read.

use std::io::Write;
use std::ops::Range;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::bundle::paths::PathClass;
use crate::bundle::{BundleKind, Detail};

const MAGIC: &[u8; 8] = b"KBING07\n";
/// A chunk ends after a file whose path hashes to 0 modulo this (about this many files a chunk)…
const CHUNK_SPREAD: u64 = 256;
/// …or after this many files.
const CHUNK_MAX: usize = 2048;

/// One file of the last build.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Path relative to the root on disk.
    pub disk: String,
    /// The logical path when it differs from `disk`.
    pub logical: Option<String>,
    pub class: PathClass,
    pub size: u64,
    pub mtime_ns: i128,
    pub sha256: String,
    /// A Markdown file that was parsed ([`Detail::parsed`]).
    pub parsed: bool,
    /// Its problems: line and message.
    pub problems: Vec<(Option<usize>, String)>,
    /// Its catalog position.
    pub position: u32,
    /// Its title comes from its document record.
    pub record_titled: bool,
    /// The catalog's resource revision of a source page.
    pub resource_revision: Option<u64>,
    /// An indexed page: its key and [`super::index_fingerprint`].
    pub indexed: Option<(u64, [u8; 16])>,
}

impl Entry {
    /// The logical path.
    pub fn path(&self) -> &str {
        self.logical.as_deref().unwrap_or(&self.disk)
    }
}

/// What the last build derived from the whole bundle, valid while the files it depends on are
/// unchanged (see `index::assembly_key`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Derived {
    pub key: String,
    /// The diagnostics after the files' own problems (of the assembly and of the catalog), as
    /// (path, line, message).
    pub diagnostics: Vec<(String, Option<usize>, String)>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct Section {
    offset: u64,
    len: u64,
    crc: u32,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct Chunk {
    section: Section,
    files: u32,
}

#[derive(Debug, Serialize, Deserialize)]
struct Header {
    kind: BundleKind,
    made_ns: i128,
    entries: Section,
    chunks: Vec<Chunk>,
    derived: Option<Derived>,
}

/// An opened ingest cache: the entries decoded, the chunks read on demand.
pub struct Cache {
    bytes: memmap2::Mmap,
    header: Header,
    pub entries: Vec<Entry>,
    /// The first entry of each chunk, then the entry count.
    chunk_starts: Vec<usize>,
}

fn damaged(what: impl std::fmt::Display) -> String {
    format!("damaged ingest cache: {what}")
}

impl Cache {
    /// Opens and checks the cache at `path`.
    pub fn open(path: &Path) -> Result<Self, String> {
        let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
        // SAFETY: a generation's files are never written after the generation is renamed into
        // place; removing an old generation unlinks the file without changing the mapping.
        let bytes = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| e.to_string())?;
        let len = bytes.len();
        if len < 2 * MAGIC.len() + 8 || &bytes[..8] != MAGIC || &bytes[len - 8..] != MAGIC {
            return Err(damaged("not an ingest cache of this format"));
        }
        let footer = len - 16;
        let header_len =
            u32::from_le_bytes(bytes[footer..footer + 4].try_into().unwrap_or_default());
        let header_crc =
            u32::from_le_bytes(bytes[footer + 4..footer + 8].try_into().unwrap_or_default());
        let header_start = footer
            .checked_sub(header_len as usize)
            .filter(|&start| start >= MAGIC.len())
            .ok_or_else(|| damaged("header length"))?;
        let header_bytes = &bytes[header_start..footer];
        if crc32fast::hash(header_bytes) != header_crc {
            return Err(damaged("header checksum"));
        }
        let header: Header =
            postcard::from_bytes(header_bytes).map_err(|e| damaged(format!("header: {e}")))?;
        let within = |s: Section| {
            s.offset
                .checked_add(s.len)
                .is_some_and(|end| s.offset >= MAGIC.len() as u64 && end <= header_start as u64)
        };
        if !within(header.entries) || !header.chunks.iter().all(|c| within(c.section)) {
            return Err(damaged("section out of bounds"));
        }
        let entries: Vec<Entry> = decode_section(&bytes, header.entries)?;
        let mut chunk_starts = Vec::with_capacity(header.chunks.len() + 1);
        let mut start = 0usize;
        for chunk in &header.chunks {
            chunk_starts.push(start);
            start += chunk.files as usize;
        }
        chunk_starts.push(start);
        if start != entries.len() {
            return Err(damaged("chunks do not cover the entries"));
        }
        Ok(Cache {
            bytes,
            header,
            entries,
            chunk_starts,
        })
    }

    pub fn kind(&self) -> BundleKind {
        self.header.kind
    }

    /// When the cache was made (ns since the epoch).
    pub fn made_ns(&self) -> i128 {
        self.header.made_ns
    }

    pub fn derived(&self) -> Option<&Derived> {
        self.header.derived.as_ref()
    }

    pub fn chunk_count(&self) -> usize {
        self.header.chunks.len()
    }

    /// The entries of chunk `c`.
    pub fn chunk_range(&self, c: usize) -> Range<usize> {
        self.chunk_starts[c]..self.chunk_starts[c + 1]
    }

    /// The chunk that holds entry `entry`.
    pub fn chunk_of(&self, entry: usize) -> usize {
        self.chunk_starts.partition_point(|&start| start <= entry) - 1
    }

    /// The details of chunk `c`, checked.
    pub fn chunk(&self, c: usize) -> Result<Vec<Detail>, String> {
        let chunk = self.header.chunks[c];
        let details: Vec<Detail> = decode_section(&self.bytes, chunk.section)?;
        if details.len() != chunk.files as usize {
            return Err(damaged(format!("chunk {c} holds {} files", details.len())));
        }
        Ok(details)
    }

    /// The bytes of chunk `c` as stored.
    pub fn raw_chunk(&self, c: usize) -> &[u8] {
        let s = self.header.chunks[c].section;
        &self.bytes[s.offset as usize..(s.offset + s.len) as usize]
    }
}

fn decode_section<T: for<'de> Deserialize<'de>>(bytes: &[u8], s: Section) -> Result<T, String> {
    let data = &bytes[s.offset as usize..(s.offset + s.len) as usize];
    if crc32fast::hash(data) != s.crc {
        return Err(damaged("checksum mismatch"));
    }
    crate::compact::decode(data).map_err(damaged)
}

/// FNV-1a: a stable hash of a path for the chunk boundaries.
fn path_hash(path: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in path.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// The chunks of files with these disk paths (in entry order), as ranges of entries.
pub fn chunk_ranges<'a>(disks: impl ExactSizeIterator<Item = &'a str>) -> Vec<Range<usize>> {
    let total = disks.len();
    let mut ranges = Vec::new();
    let mut start = 0;
    for (i, disk) in disks.enumerate() {
        if (path_hash(disk).is_multiple_of(CHUNK_SPREAD) || i + 1 - start == CHUNK_MAX)
            && i + 1 < total
        {
            ranges.push(start..i + 1);
            start = i + 1;
        }
    }
    if start < total {
        ranges.push(start..total);
    }
    ranges
}

/// Compresses the details of one chunk.
pub fn encode_chunk(details: &[&Detail]) -> Vec<u8> {
    crate::compact::encode(details).expect("details encode")
}

/// Writes a cache file: the chunks in entry order, then [`Writer::finish`].
pub struct Writer {
    out: std::io::BufWriter<std::fs::File>,
    offset: u64,
    chunks: Vec<Chunk>,
}

impl Writer {
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
        out.write_all(MAGIC)?;
        Ok(Writer {
            out,
            offset: MAGIC.len() as u64,
            chunks: Vec::new(),
        })
    }

    fn section(&mut self, bytes: &[u8]) -> std::io::Result<Section> {
        self.out.write_all(bytes)?;
        let section = Section {
            offset: self.offset,
            len: bytes.len() as u64,
            crc: crc32fast::hash(bytes),
        };
        self.offset += bytes.len() as u64;
        Ok(section)
    }

    /// Appends the next chunk: `files` details, encoded ([`encode_chunk`] or a stored chunk).
    pub fn chunk(&mut self, files: usize, bytes: &[u8]) -> std::io::Result<()> {
        let section = self.section(bytes)?;
        self.chunks.push(Chunk {
            section,
            files: files as u32,
        });
        Ok(())
    }

    /// Writes the entries and the header, and flushes the file to disk.
    pub fn finish(
        mut self,
        kind: BundleKind,
        made_ns: i128,
        entries: &[Entry],
        derived: Option<Derived>,
    ) -> std::io::Result<()> {
        let covered: usize = self.chunks.iter().map(|c| c.files as usize).sum();
        assert_eq!(covered, entries.len(), "the chunks cover the entries");
        let encoded = crate::compact::encode(entries).expect("entries encode");
        let entries = self.section(&encoded)?;
        drop(encoded);
        let header = Header {
            kind,
            made_ns,
            entries,
            chunks: std::mem::take(&mut self.chunks),
            derived,
        };
        let header = postcard::to_stdvec(&header).expect("the cache header encodes");
        self.out.write_all(&header)?;
        self.out.write_all(&(header.len() as u32).to_le_bytes())?;
        self.out
            .write_all(&crc32fast::hash(&header).to_le_bytes())?;
        self.out.write_all(MAGIC)?;
        let file = self.out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(i: usize) -> Entry {
        Entry {
            disk: format!("pages/p{i:05}.md"),
            logical: None,
            class: PathClass::Page,
            size: i as u64,
            mtime_ns: 7,
            sha256: format!("{i:064}"),
            parsed: true,
            problems: if i.is_multiple_of(5) {
                vec![(Some(2), "bad".into())]
            } else {
                Vec::new()
            },
            position: i as u32,
            record_titled: false,
            resource_revision: Some(1),
            indexed: Some((i as u64, [3; 16])),
        }
    }

    fn detail(i: usize) -> Detail {
        Detail {
            own_title: Some(format!("Page {i}")),
            frontmatter: String::new(),
            parsed: true,
            links: Vec::new(),
            record: None,
        }
    }

    #[test]
    fn reads_back_what_it_wrote_and_finds_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.bin");
        let entries: Vec<Entry> = (0..3000).map(entry).collect();
        let details: Vec<Detail> = (0..3000).map(detail).collect();
        let ranges = chunk_ranges(entries.iter().map(|e| e.disk.as_str()));
        assert!(ranges.len() > 3, "{} chunks", ranges.len());
        let mut writer = Writer::create(&path).unwrap();
        for range in &ranges {
            let chunk: Vec<&Detail> = details[range.clone()].iter().collect();
            writer.chunk(range.len(), &encode_chunk(&chunk)).unwrap();
        }
        let derived = Derived {
            key: "k".into(),
            diagnostics: vec![("a".into(), None, "m".into())],
        };
        writer
            .finish(BundleKind::Focowiki, 42, &entries, Some(derived.clone()))
            .unwrap();

        let cache = Cache::open(&path).unwrap();
        assert_eq!(cache.entries, entries);
        assert_eq!(cache.made_ns(), 42);
        assert_eq!(cache.kind(), BundleKind::Focowiki);
        assert_eq!(cache.derived(), Some(&derived));
        assert_eq!(cache.chunk_count(), ranges.len());
        for (c, range) in ranges.iter().enumerate() {
            assert_eq!(cache.chunk_range(c), range.clone());
            assert_eq!(cache.chunk_of(range.start), c);
            assert_eq!(cache.chunk_of(range.end - 1), c);
            assert_eq!(cache.chunk(c).unwrap(), details[range.clone()]);
        }

        // Damage anywhere is refused, never a panic: when opened, or when a chunk is read.
        let bytes = std::fs::read(&path).unwrap();
        for at in (0..bytes.len()).step_by(bytes.len() / 97 + 1) {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x21;
            std::fs::write(&path, &damaged).unwrap();
            if let Ok(cache) = Cache::open(&path) {
                let bad = (0..cache.chunk_count()).filter(|&c| cache.chunk(c).is_err());
                assert_eq!(bad.count(), 1, "damage at {at} found");
            }
        }
        for len in [0, 8, 20, bytes.len() - 1] {
            std::fs::write(&path, &bytes[..len]).unwrap();
            assert!(Cache::open(&path).is_err());
        }
    }

    #[test]
    fn a_file_added_changes_one_chunk() {
        let paths: Vec<String> = (0..5000).map(|i| format!("pages/p{i:05}.md")).collect();
        let before = chunk_ranges(paths.iter().map(String::as_str));
        let mut with_one_more = paths.clone();
        with_one_more.insert(2500, "pages/p02500a.md".into());
        let after = chunk_ranges(with_one_more.iter().map(String::as_str));
        let firsts = |list: &[String], ranges: &[Range<usize>]| -> Vec<String> {
            ranges.iter().map(|r| list[r.start].clone()).collect()
        };
        let (a, b) = (firsts(&paths, &before), firsts(&with_one_more, &after));
        let common = a.iter().filter(|p| b.contains(p)).count();
        assert!(common + 1 >= a.len(), "{common} of {} chunks kept", a.len());
    }
}
