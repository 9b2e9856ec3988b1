//! The ingest cache (`ingest-cache.bin`): what the last build found in each file, so that the
//! next one reads only the files whose size or modification time changed — and, when only
//! pages changed, patches the previous catalog instead of assembling the whole bundle again.
//!
//! It holds one [`Entry`] per file (identity, stat, checksum, problems, and what the catalog
//! made of it), read where it lies: fixed-size records and path tables, nothing decoded, so a
//! build over 200,000 files does not allocate for them; and the files' [`Detail`]s in chunks,
//! each compressed on its own, decoded only when a build assembles the bundle, copied as bytes
//! when their files did not change. Chunk boundaries depend on the files' paths, not their
//! count, so that a file added or removed changes one chunk, not every chunk after it.
//!
//! Layout (integers little-endian):
//!
//! ```text
//! magic "KBING09\n"
//! chunks           each compact-encoded [Detail] (see crate::compact)
//! records          one fixed-size record per entry (see RECORD)
//! disk paths       (entries + 1) × u32 offsets, then the paths
//! logical paths    likewise (empty when the same as the disk path)
//! side table       compact-encoded: the entries' problems and non-digest checksums
//! header           postcard: kind, when the cache was made, where each section lies, CRC-32s
//! header length    u32
//! header CRC-32    u32
//! magic "KBING09\n"
//! ```
//!
//! Every section has a CRC-32 in the header: the entries' are checked when the cache is opened,
//! a chunk's when it is read.

use std::io::Write;
use std::ops::Range;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::ingest::bundle::paths::PathClass;
use crate::ingest::bundle::{BundleKind, Code, Detail, Diagnostic, Problem};

const MAGIC: &[u8; 8] = b"KBING09\n";
/// A chunk ends after a file whose path hashes to 0 modulo this (about this many files a chunk)…
const CHUNK_SPREAD: u64 = 256;
/// …or after this many files.
const CHUNK_MAX: usize = 2048;

/// A file's SHA-256 as ingest records it: 64 lowercase hex digits (kept as the digest), or
/// another text (`unreadable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sha<'a> {
    Digest([u8; 32]),
    Text(&'a str),
}

impl<'a> Sha<'a> {
    pub fn of(text: &'a str) -> Self {
        let bytes = text.as_bytes();
        let digit = |b: u8| match b {
            b'0'..=b'9' => Some(b - b'0'),
            b'a'..=b'f' => Some(b - b'a' + 10),
            _ => None,
        };
        if bytes.len() == 64 {
            let mut digest = [0u8; 32];
            let parsed = digest.iter_mut().enumerate().all(|(i, out)| {
                match (digit(bytes[2 * i]), digit(bytes[2 * i + 1])) {
                    (Some(high), Some(low)) => {
                        *out = high << 4 | low;
                        true
                    }
                    _ => false,
                }
            });
            if parsed {
                return Sha::Digest(digest);
            }
        }
        Sha::Text(text)
    }

    /// `f` of the text.
    pub(crate) fn with_text<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        match self {
            Sha::Text(text) => f(text),
            Sha::Digest(digest) => {
                const DIGITS: &[u8; 16] = b"0123456789abcdef";
                let mut hex = [0u8; 64];
                for (i, b) in digest.iter().enumerate() {
                    hex[2 * i] = DIGITS[usize::from(b >> 4)];
                    hex[2 * i + 1] = DIGITS[usize::from(b & 15)];
                }
                f(std::str::from_utf8(&hex).unwrap_or_default())
            }
        }
    }

    pub fn text(self) -> String {
        self.with_text(str::to_string)
    }
}

/// One file of a build, as the cache records it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Entry<'a> {
    /// Path relative to the root on disk.
    pub disk: &'a str,
    /// The logical path when it differs from `disk`.
    pub logical: Option<&'a str>,
    pub class: PathClass,
    pub size: u64,
    pub mtime_ns: i128,
    pub sha256: Sha<'a>,
    /// A Markdown file that was parsed ([`Detail::parsed`]).
    pub parsed: bool,
    /// Its problems.
    pub problems: &'a [Problem],
    /// Its catalog position.
    pub position: u32,
    /// Its title comes from its document record.
    pub record_titled: bool,
    /// The catalog's resource revision of a source page.
    pub resource_revision: Option<u64>,
    /// An indexed page: its key and the fingerprint of what the search index holds of it.
    pub indexed: Option<(u64, [u8; 16])>,
}

impl Entry<'_> {
    /// The logical path.
    pub fn path(&self) -> &str {
        self.logical.unwrap_or(self.disk)
    }
}

/// Every class, by its code in the cache.
const CLASSES: [PathClass; 16] = [
    PathClass::RootIndex,
    PathClass::Log,
    PathClass::PageNavigation,
    PathClass::Page,
    PathClass::IndexNavigation,
    PathClass::IndexCatalog,
    PathClass::PageDirectoryRouter,
    PathClass::DocumentPacket,
    PathClass::TermCatalog,
    PathClass::TermBucketRouter,
    PathClass::TermPostings,
    PathClass::GraphCatalog,
    PathClass::GraphDirectoryRouter,
    PathClass::RelationshipPacket,
    PathClass::PerFileGraph,
    PathClass::GraphNavigation,
];

pub(crate) fn class_code(class: PathClass) -> u8 {
    // Exhaustive: a new class must be given a code here (and in CLASSES).
    match class {
        PathClass::RootIndex => 0,
        PathClass::Log => 1,
        PathClass::PageNavigation => 2,
        PathClass::Page => 3,
        PathClass::IndexNavigation => 4,
        PathClass::IndexCatalog => 5,
        PathClass::PageDirectoryRouter => 6,
        PathClass::DocumentPacket => 7,
        PathClass::TermCatalog => 8,
        PathClass::TermBucketRouter => 9,
        PathClass::TermPostings => 10,
        PathClass::GraphCatalog => 11,
        PathClass::GraphDirectoryRouter => 12,
        PathClass::RelationshipPacket => 13,
        PathClass::PerFileGraph => 14,
        PathClass::GraphNavigation => 15,
    }
}

/// The fixed part of an entry (integers little-endian):
///
/// ```text
///  0 class u8 | 1 flags u8 | 8 size u64 | 16 mtime i128 | 32 sha256 [32]
/// 64 position u32 | 72 resource revision u64 | 80 index key u64 | 88 fingerprint [16]
/// ```
const RECORD: usize = 104;
const PARSED: u8 = 1;
const RECORD_TITLED: u8 = 2;
const HAS_REVISION: u8 = 4;
const INDEXED: u8 = 8;
/// The sha256 is a digest (else its text is in the side table).
const DIGEST: u8 = 16;

/// A file's problems.
type Problems = Vec<Problem>;

/// The variable parts of the entries.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Side {
    /// (entry, its problems), ascending by entry.
    problems: Vec<(u32, Problems)>,
    /// (entry, its sha256 text) of the entries whose sha256 is not a digest.
    texts: Vec<(u32, String)>,
}

/// Where the entry tables lie in the file.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct Tables {
    count: u32,
    records: Section,
    /// (count + 1) × u32 offsets into `disks`, then the paths.
    disk_offsets: Section,
    disks: Section,
    /// Likewise for the logical paths (empty: the same as the disk path).
    logical_offsets: Section,
    logicals: Section,
    side: Section,
}

/// A diagnostic as the cache keeps it: (code, path, line, column, message).
pub(crate) type KeptDiagnostic = (Code, String, Option<usize>, Option<usize>, String);

/// What the last build derived from the whole bundle, valid while the files it depends on are
/// unchanged (see `index::assembly_key`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Derived {
    pub key: String,
    /// The diagnostics after the files' own problems (of the assembly and of the catalog), as
    /// (code, path, line, column, message): a tuple, since the cache's binary encoding does not
    /// take [`Diagnostic`]'s skipped fields.
    pub diagnostics: Vec<KeptDiagnostic>,
}

impl Derived {
    pub fn keep(diagnostics: &[Diagnostic]) -> Vec<KeptDiagnostic> {
        diagnostics
            .iter()
            .map(|d| (d.code, d.path.clone(), d.line, d.column, d.message.clone()))
            .collect()
    }

    pub fn diagnostics(&self) -> impl Iterator<Item = Diagnostic> + '_ {
        self.diagnostics
            .iter()
            .map(|(code, path, line, column, message)| {
                Diagnostic::new(*code, path.clone(), *line, message.clone()).at(*column)
            })
    }
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
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
    entries: Tables,
    chunks: Vec<Chunk>,
    derived: Option<Derived>,
}

/// An opened ingest cache: the entries read where they lie, the chunks decoded on demand.
pub(crate) struct Cache {
    bytes: memmap2::Mmap,
    header: Header,
    side: Side,
    /// The first entry of each chunk, then the entry count.
    chunk_starts: Vec<usize>,
}

fn damaged(what: impl std::fmt::Display) -> String {
    format!("damaged ingest cache: {what}")
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or_default())
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or_default())
}

impl Cache {
    /// Opens and checks the cache at `path` (the entries in full; each chunk when read).
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
        let header_len = u32_at(&bytes, footer);
        let header_crc = u32_at(&bytes, footer + 4);
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
        let t = header.entries;
        let sections = [
            t.records,
            t.disk_offsets,
            t.disks,
            t.logical_offsets,
            t.logicals,
            t.side,
        ];
        let within = |s: &Section| {
            s.offset
                .checked_add(s.len)
                .is_some_and(|end| s.offset >= MAGIC.len() as u64 && end <= header_start as u64)
        };
        if !sections.iter().all(within) || !header.chunks.iter().all(|c| within(&c.section)) {
            return Err(damaged("section out of bounds"));
        }
        for section in &sections {
            if crc32fast::hash(slice(&bytes, *section)) != section.crc {
                return Err(damaged("checksum mismatch"));
            }
        }
        let count = t.count as usize;
        if t.records.len != (count * RECORD) as u64
            || t.disk_offsets.len != ((count + 1) * 4) as u64
            || t.logical_offsets.len != ((count + 1) * 4) as u64
        {
            return Err(damaged("table sizes"));
        }
        for (offsets, strings) in [(t.disk_offsets, t.disks), (t.logical_offsets, t.logicals)] {
            let offsets = slice(&bytes, offsets);
            let text = std::str::from_utf8(slice(&bytes, strings)).map_err(|_| damaged("paths"))?;
            let mut last = 0;
            for i in 0..=count {
                let at = u32_at(offsets, i * 4) as usize;
                if at < last || at > text.len() || !text.is_char_boundary(at) {
                    return Err(damaged("path offsets"));
                }
                last = at;
            }
        }
        let records = slice(&bytes, t.records);
        if (0..count).any(|i| usize::from(records[i * RECORD]) >= CLASSES.len()) {
            return Err(damaged("file class"));
        }
        let side: Side = crate::compact::decode(slice(&bytes, t.side)).map_err(damaged)?;
        let ascending = |list: Vec<u32>| {
            list.last().is_none_or(|&i| (i as usize) < count)
                && list.windows(2).all(|w| w[0] < w[1])
        };
        if !ascending(side.problems.iter().map(|p| p.0).collect())
            || !ascending(side.texts.iter().map(|p| p.0).collect())
        {
            return Err(damaged("side table"));
        }
        let mut chunk_starts = Vec::with_capacity(header.chunks.len() + 1);
        let mut start = 0usize;
        for chunk in &header.chunks {
            chunk_starts.push(start);
            start += chunk.files as usize;
        }
        chunk_starts.push(start);
        if start != count {
            return Err(damaged("chunks do not cover the entries"));
        }
        Ok(Cache {
            bytes,
            header,
            side,
            chunk_starts,
        })
    }

    pub fn kind(&self) -> BundleKind {
        self.header.kind
    }

    /// When the cache was made (ns since the epoch).
    pub(crate) fn made_ns(&self) -> i128 {
        self.header.made_ns
    }

    pub fn derived(&self) -> Option<&Derived> {
        self.header.derived.as_ref()
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.header.entries.count as usize
    }

    fn path_at(&self, offsets: Section, strings: Section, i: usize) -> &str {
        let offsets = slice(&self.bytes, offsets);
        let text = slice(&self.bytes, strings);
        let (start, end) = (u32_at(offsets, i * 4), u32_at(offsets, i * 4 + 4));
        let Some(path) = text.get(start as usize..end as usize) else {
            return "";
        };
        // SAFETY: `open` checked that each strings section is UTF-8 and that every offset of
        // its table is a character boundary within it, so `path` is UTF-8; the mapping does not
        // change after that (see `open`). Checking again here was a tenth of an incremental
        // build of 100,000 pages: every pass over the entries decodes their paths.
        unsafe { std::str::from_utf8_unchecked(path) }
    }

    /// Entry `i` (`0..len()`, in logical path order).
    pub fn entry(&self, i: usize) -> Entry<'_> {
        let t = &self.header.entries;
        let record = &slice(&self.bytes, t.records)[i * RECORD..(i + 1) * RECORD];
        let flags = record[1];
        let logical = self.path_at(t.logical_offsets, t.logicals, i);
        let key = i as u32;
        let sha256 = if flags & DIGEST != 0 {
            let mut digest = [0u8; 32];
            digest.copy_from_slice(&record[32..64]);
            Sha::Digest(digest)
        } else {
            let texts = &self.side.texts;
            Sha::Text(
                texts
                    .binary_search_by_key(&key, |p| p.0)
                    .map_or("", |k| texts[k].1.as_str()),
            )
        };
        let mut fingerprint = [0u8; 16];
        fingerprint.copy_from_slice(&record[88..104]);
        Entry {
            disk: self.path_at(t.disk_offsets, t.disks, i),
            logical: (!logical.is_empty()).then_some(logical),
            class: CLASSES[usize::from(record[0])],
            size: u64_at(record, 8),
            mtime_ns: i128::from_le_bytes(record[16..32].try_into().unwrap_or_default()),
            sha256,
            parsed: flags & PARSED != 0,
            problems: {
                let problems = &self.side.problems;
                problems
                    .binary_search_by_key(&key, |p| p.0)
                    .map_or(&[][..], |k| problems[k].1.as_slice())
            },
            position: u32_at(record, 64),
            record_titled: flags & RECORD_TITLED != 0,
            resource_revision: (flags & HAS_REVISION != 0).then(|| u64_at(record, 72)),
            indexed: (flags & INDEXED != 0).then(|| (u64_at(record, 80), fingerprint)),
        }
    }

    /// Every entry, in order.
    pub fn entries(&self) -> impl ExactSizeIterator<Item = Entry<'_>> + '_ {
        (0..self.len()).map(|i| self.entry(i))
    }

    pub(crate) fn chunk_count(&self) -> usize {
        self.header.chunks.len()
    }

    /// The entries of chunk `c`.
    pub(crate) fn chunk_range(&self, c: usize) -> Range<usize> {
        self.chunk_starts[c]..self.chunk_starts[c + 1]
    }

    /// The chunk that holds entry `entry`.
    pub(crate) fn chunk_of(&self, entry: usize) -> usize {
        self.chunk_starts.partition_point(|&start| start <= entry) - 1
    }

    /// The details of chunk `c`, checked.
    pub fn chunk(&self, c: usize) -> Result<Vec<Detail>, String> {
        let chunk = self.header.chunks[c];
        let data = slice(&self.bytes, chunk.section);
        if crc32fast::hash(data) != chunk.section.crc {
            return Err(damaged(format!("chunk {c} checksum")));
        }
        let details: Vec<Detail> = crate::compact::decode(data).map_err(damaged)?;
        if details.len() != chunk.files as usize {
            return Err(damaged(format!("chunk {c} holds {} files", details.len())));
        }
        Ok(details)
    }
}

fn slice(bytes: &[u8], s: Section) -> &[u8] {
    &bytes[s.offset as usize..(s.offset + s.len) as usize]
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
pub(crate) fn chunk_ranges<'a>(disks: impl ExactSizeIterator<Item = &'a str>) -> Vec<Range<usize>> {
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
pub(crate) fn encode_chunk(details: &[&Detail]) -> Vec<u8> {
    crate::compact::encode(details).expect("details encode")
}

/// Writes a cache file: the chunks in entry order, then [`Writer::finish`].
pub struct Writer {
    /// The file, and the CRC-32 of every byte written to it (what the manifest records).
    out: std::io::BufWriter<super::CrcWriter<std::fs::File>>,
    offset: u64,
    chunks: Vec<Chunk>,
}

impl Writer {
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let file = super::CrcWriter::new(std::fs::File::create(path)?);
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
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

    /// A section written a piece at a time by `fill`, its checksum made as it goes.
    fn streamed(
        &mut self,
        fill: impl FnOnce(&mut Pieces<'_>) -> std::io::Result<()>,
    ) -> std::io::Result<Section> {
        let mut pieces = Pieces {
            out: &mut self.out,
            run: Vec::with_capacity(Pieces::RUN),
            crc: crc32fast::Hasher::new(),
            len: 0,
        };
        fill(&mut pieces)?;
        pieces.flush()?;
        let section = Section {
            offset: self.offset,
            len: pieces.len,
            crc: pieces.crc.finalize(),
        };
        self.offset += section.len;
        Ok(section)
    }

    /// Appends chunks `chunks` of `cache` as they are stored (written from its mapping, neither
    /// decoded nor checked again).
    pub(crate) fn copy_chunks(
        &mut self,
        cache: &Cache,
        chunks: Range<usize>,
    ) -> std::io::Result<()> {
        let Some(first) = cache.header.chunks.get(chunks.start) else {
            return Ok(());
        };
        let start = first.section.offset;
        let mut end = start;
        for c in chunks {
            let chunk = cache.header.chunks[c];
            // Stored one after the other.
            debug_assert_eq!(chunk.section.offset, end);
            self.chunks.push(Chunk {
                section: Section {
                    offset: self.offset + (chunk.section.offset - start),
                    ..chunk.section
                },
                files: chunk.files,
            });
            end = chunk.section.offset + chunk.section.len;
        }
        // Within the file: opening checked every chunk's section.
        let stored = cache
            .bytes
            .get(start as usize..end as usize)
            .ok_or_else(|| std::io::Error::other("the ingest cache was cut short"))?;
        self.out.write_all(stored)?;
        self.offset += end - start;
        Ok(())
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

    /// Writes the entries (in logical path order; `entries` gives them anew for each pass) and
    /// the header, and flushes the file to disk (the manifest records it: a generation whose
    /// cache a crash cut short would be damaged). Returns the file's CRC-32.
    ///
    /// The records and the paths (over 30 MB at 200,000 files) are written as they are made,
    /// in three passes over the entries, not built in memory first: fresh memory costs an
    /// update more than reading the entries again.
    pub fn finish<'a, I: ExactSizeIterator<Item = Entry<'a>>>(
        mut self,
        kind: BundleKind,
        made_ns: i128,
        entries: impl Fn() -> I,
        derived: Option<Derived>,
    ) -> std::io::Result<u32> {
        let count = entries().len();
        let covered: usize = self.chunks.iter().map(|c| c.files as usize).sum();
        assert_eq!(covered, count, "the chunks cover the entries");
        let too_large = || std::io::Error::other("ingest cache paths over 4 GiB");
        let offset = |at: usize| -> std::io::Result<[u8; 4]> {
            Ok(u32::try_from(at).map_err(|_| too_large())?.to_le_bytes())
        };
        let mut disk_offsets = Vec::with_capacity((count + 1) * 4);
        let mut disks_len = 0;
        let mut logical_offsets = Vec::with_capacity((count + 1) * 4);
        let mut logicals_len = 0;
        let mut side = Side::default();
        let records = self.streamed(|out| {
            for (i, e) in entries().enumerate() {
                disk_offsets.extend_from_slice(&offset(disks_len)?);
                disks_len += e.disk.len();
                logical_offsets.extend_from_slice(&offset(logicals_len)?);
                logicals_len += e.logical.filter(|l| *l != e.disk).map_or(0, str::len);
                let mut record = [0u8; RECORD];
                let mut flags = 0;
                record[0] = class_code(e.class);
                record[8..16].copy_from_slice(&e.size.to_le_bytes());
                record[16..32].copy_from_slice(&e.mtime_ns.to_le_bytes());
                match e.sha256 {
                    Sha::Digest(digest) => {
                        flags |= DIGEST;
                        record[32..64].copy_from_slice(&digest);
                    }
                    Sha::Text(text) => side.texts.push((i as u32, text.to_string())),
                }
                if e.parsed {
                    flags |= PARSED;
                }
                if e.record_titled {
                    flags |= RECORD_TITLED;
                }
                record[64..68].copy_from_slice(&e.position.to_le_bytes());
                if let Some(revision) = e.resource_revision {
                    flags |= HAS_REVISION;
                    record[72..80].copy_from_slice(&revision.to_le_bytes());
                }
                if let Some((key, fingerprint)) = e.indexed {
                    flags |= INDEXED;
                    record[80..88].copy_from_slice(&key.to_le_bytes());
                    record[88..104].copy_from_slice(&fingerprint);
                }
                record[1] = flags;
                if !e.problems.is_empty() {
                    side.problems.push((i as u32, e.problems.to_vec()));
                }
                out.put(&record)?;
            }
            Ok(())
        })?;
        disk_offsets.extend_from_slice(&offset(disks_len)?);
        logical_offsets.extend_from_slice(&offset(logicals_len)?);
        let disk_offsets = self.section(&disk_offsets)?;
        let disks = self.streamed(|out| entries().try_for_each(|e| out.put(e.disk.as_bytes())))?;
        let logical_offsets = self.section(&logical_offsets)?;
        let logicals = self.streamed(|out| {
            if logicals_len == 0 {
                return Ok(());
            }
            entries().try_for_each(|e| match e.logical.filter(|l| *l != e.disk) {
                Some(logical) => out.put(logical.as_bytes()),
                None => Ok(()),
            })
        })?;
        let side = crate::compact::encode(&side).expect("the side table encodes");
        let entries = Tables {
            count: count as u32,
            records,
            disk_offsets,
            disks,
            logical_offsets,
            logicals,
            side: self.section(&side)?,
        };
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
        let (file, crc) = self
            .out
            .into_inner()
            .map_err(|e| e.into_error())?
            .into_parts();
        file.sync_all()?;
        Ok(crc)
    }
}

/// The pieces of a [`Writer::streamed`] section, handed to the file and the checksum in runs
/// (a call per piece of a few bytes would cost more than the piece).
struct Pieces<'w> {
    out: &'w mut std::io::BufWriter<super::CrcWriter<std::fs::File>>,
    run: Vec<u8>,
    crc: crc32fast::Hasher,
    len: u64,
}

impl Pieces<'_> {
    const RUN: usize = 64 * 1024;

    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if self.run.len() + bytes.len() > Self::RUN {
            self.flush()?;
        }
        self.run.extend_from_slice(bytes);
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.write_all(&self.run)?;
        self.crc.update(&self.run);
        self.len += self.run.len() as u64;
        self.run.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests;
