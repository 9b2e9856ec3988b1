//! The embedding cache: the vectors of the passage windows builds embedded, kept in the index
//! folder beside the generations (`embedded/<model checksum prefix>.bin`), so that an embedding
//! cut short (Ctrl-C, SIGKILL, a full disk) keeps what it finished and the next build embeds
//! only the rest. A build looks a section up here (by its key, [`super::vectors::section_key`],
//! the hash of its title and text) before it embeds it, appends what it embeds after every
//! progress chunk, and syncs the file then.
//!
//! The file (little endian): magic `KBEMC001`, `u32` dimension, `u32` window size in tokens (the
//! windows a section is cut into depend on it); then records of `u64` section key, `u32` window
//! of the section, `u32` windows of the section, the vector (`f32` × dimension) and the CRC-32
//! of the record's bytes before it. A record that is cut short or whose CRC-32 does not match
//! ends the file: what follows is dropped at the next write. A file of another dimension or
//! window size is started again.
//!
//! Builds of one index folder run one at a time (the folder's write lock), so one writer at a
//! time appends. The file is capped: when it holds more than twice the live generation's
//! windows (plus [`SLACK`]), it is written again from those ([`EmbedCache::keep_within`]).

use std::collections::HashMap;
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::vectors::Vectors;

/// The cache's folder inside the index folder.
pub(crate) const CACHE_DIR: &str = "embedded";
const MAGIC: &[u8; 8] = b"KBEMC001";
const HEADER: usize = 16;
/// Records the cap allows beyond twice the live windows, so that a small index is not written
/// again after every build.
const SLACK: usize = 256;

/// A window's vector in the cache: `(section key, window of the section, windows of the
/// section, vector)`.
pub(crate) type Record<'a> = (u64, u32, u32, &'a [f32]);

/// The embedding cache of one model in one index folder.
pub(crate) struct EmbedCache {
    path: PathBuf,
    dim: usize,
    window_tokens: u32,
    /// (section key, window) → (windows of the section, the vector's index in `data`).
    found: HashMap<(u64, u32), (u32, usize)>,
    data: Vec<f32>,
    /// Records in the file, whole and checked.
    records: usize,
    /// The file's length up to its last good record; 0: (re)started at the next write.
    valid_len: u64,
    file: Option<File>,
    /// A write failed: the build goes on without the cache.
    broken: bool,
    /// Whether the file has been read ([`EmbedCache::load`]): a build that embeds nothing new
    /// never reads it.
    loaded: bool,
    /// The dimension asked for at open (`None`: the file's).
    wanted_dim: Option<usize>,
}

fn record_len(dim: usize) -> usize {
    16 + dim * 4 + 4
}

impl EmbedCache {
    /// The cache of the model whose checksum is `sha256` in `index_dir`, for windows of
    /// `window_tokens` tokens (0: a section is one window). `dim`: the model's dimension, or
    /// `None` to take the file's (a build that does not load the model). Nothing is read until
    /// [`Self::load`]; a missing, damaged or mismatched file is an empty cache.
    pub(crate) fn open(
        index_dir: &Path,
        sha256: &str,
        dim: Option<usize>,
        window_tokens: u32,
    ) -> EmbedCache {
        let prefix: String = sha256.chars().take(16).collect();
        let path = index_dir.join(CACHE_DIR).join(format!("{prefix}.bin"));
        EmbedCache {
            path,
            dim: dim.unwrap_or(0),
            window_tokens,
            found: HashMap::new(),
            data: Vec::new(),
            records: 0,
            valid_len: 0,
            file: None,
            broken: false,
            loaded: false,
            wanted_dim: dim,
        }
    }

    /// Reads the file, once.
    pub(crate) fn load(&mut self) {
        if std::mem::replace(&mut self.loaded, true) {
            return;
        }
        if let Ok(bytes) = std::fs::read(&self.path) {
            self.read_records(&bytes, self.wanted_dim);
        }
    }

    /// Reads the records of `bytes` up to the first that is cut short or damaged.
    fn read_records(&mut self, bytes: &[u8], dim: Option<usize>) {
        let Some(header) = bytes.get(..HEADER).filter(|h| h.starts_with(MAGIC)) else {
            return;
        };
        let u32_at =
            |i: usize| u32::from_le_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
        let (file_dim, window_tokens) = (u32_at(8) as usize, u32_at(12));
        if window_tokens != self.window_tokens
            || file_dim == 0
            || dim.is_some_and(|d| d != file_dim)
        {
            return;
        }
        self.dim = file_dim;
        let size = record_len(file_dim);
        let mut at = HEADER;
        while let Some(record) = bytes.get(at..at + size) {
            let (body, crc) = record.split_at(size - 4);
            if crc32fast::hash(body).to_le_bytes() != crc {
                break;
            }
            let key = u64::from_le_bytes(body[..8].try_into().unwrap_or_default());
            let window = u32::from_le_bytes(body[8..12].try_into().unwrap_or_default());
            let count = u32::from_le_bytes(body[12..16].try_into().unwrap_or_default());
            let index = self.data.len() / file_dim;
            self.data.extend(
                body[16..]
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            );
            self.found.insert((key, window), (count, index));
            self.records += 1;
            at += size;
        }
        self.valid_len = at as u64;
    }

    /// The dimension of its vectors (0: none known yet).
    pub(crate) fn dim(&self) -> usize {
        self.dim
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    /// Records in the file.
    #[cfg(test)]
    pub(crate) fn records(&self) -> usize {
        self.records
    }

    /// The vectors (indices for [`Self::vector`]) of every window of the section with `key`,
    /// when the cache has them all.
    pub(crate) fn section(&self, key: u64) -> Option<Vec<usize>> {
        let &(count, first) = self.found.get(&(key, 0))?;
        let mut out = vec![first];
        for window in 1..count {
            match self.found.get(&(key, window)) {
                Some(&(c, index)) if c == count => out.push(index),
                _ => return None,
            }
        }
        Some(out)
    }

    pub(crate) fn vector(&self, index: usize) -> &[f32] {
        &self.data[index * self.dim..(index + 1) * self.dim]
    }

    /// Appends `records` to the file and syncs it. A failure (a full disk) is returned once;
    /// the cache then stops writing, and the build goes on.
    pub(crate) fn append(&mut self, records: &[Record<'_>]) -> std::io::Result<()> {
        if self.broken || records.is_empty() {
            return Ok(());
        }
        self.load();
        let written = self.write_records(records);
        if written.is_err() {
            self.broken = true;
            self.file = None;
        }
        written
    }

    fn write_records(&mut self, records: &[Record<'_>]) -> std::io::Result<()> {
        let dim = records[0].3.len();
        if self.dim != dim {
            // Vectors of another dimension than the file's: the file starts again.
            self.dim = dim;
            self.found.clear();
            self.data.clear();
            self.records = 0;
            self.valid_len = 0;
            self.file = None;
        }
        if self.file.is_none() {
            self.file = Some(self.open_for_append()?);
        }
        let mut bytes = Vec::with_capacity(records.len() * record_len(dim));
        for (key, window, count, vector) in records {
            let start = bytes.len();
            bytes.extend_from_slice(&key.to_le_bytes());
            bytes.extend_from_slice(&window.to_le_bytes());
            bytes.extend_from_slice(&count.to_le_bytes());
            for x in *vector {
                bytes.extend_from_slice(&x.to_le_bytes());
            }
            let crc = crc32fast::hash(&bytes[start..]);
            bytes.extend_from_slice(&crc.to_le_bytes());
        }
        let file = self.file.as_mut().expect("opened above");
        file.write_all(&bytes)?;
        file.sync_data()?;
        for (key, window, count, vector) in records {
            let index = self.data.len() / dim;
            self.data.extend_from_slice(vector);
            self.found.insert((*key, *window), (*count, index));
        }
        self.records += records.len();
        self.valid_len += bytes.len() as u64;
        Ok(())
    }

    /// The file opened at the end of its last good record, or started with its header.
    fn open_for_append(&self) -> std::io::Result<File> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        if self.valid_len == 0 {
            return self.start_file(&self.path);
        }
        let mut file = std::fs::OpenOptions::new().write(true).open(&self.path)?;
        // A torn tail goes before anything is appended after it.
        file.set_len(self.valid_len)?;
        file.seek(SeekFrom::End(0))?;
        Ok(file)
    }

    /// A new file at `path` holding the header only.
    fn start_file(&self, path: &Path) -> std::io::Result<File> {
        let mut file = File::create(path)?;
        let mut header = MAGIC.to_vec();
        header.extend_from_slice(&(self.dim as u32).to_le_bytes());
        header.extend_from_slice(&self.window_tokens.to_le_bytes());
        file.write_all(&header)?;
        if let Some(dir) = path.parent() {
            super::sync_dir(dir);
        }
        Ok(file)
    }

    /// Caps the file: when it holds more than twice the windows of `live` (the generation
    /// being published) plus [`SLACK`], it is written again holding only those.
    pub(crate) fn keep_within(&mut self, live: &Vectors) -> std::io::Result<()> {
        // Unread, it has not grown since the last build that embedded.
        if self.broken || !self.loaded || self.records <= 2 * live.windows() + SLACK {
            return Ok(());
        }
        self.file = None;
        let kept = sections_of(live);
        let tmp = self.path.with_extension("bin.tmp");
        self.dim = live.dim;
        let rewritten = (|| {
            let file = self.start_file(&tmp)?;
            self.found.clear();
            self.data.clear();
            self.records = 0;
            self.valid_len = HEADER as u64;
            let records: Vec<Record<'_>> = kept
                .iter()
                .map(|&(key, window, count, w)| (key, window, count, live.window(w)))
                .collect();
            if !records.is_empty() {
                self.file = Some(file.try_clone()?);
                self.write_records(&records)?;
            }
            file.sync_all()?;
            std::fs::rename(&tmp, &self.path)
        })();
        self.file = None;
        if rewritten.is_err() {
            let _ = std::fs::remove_file(&tmp);
            self.broken = true;
        }
        rewritten
    }
}

/// Every window of `vectors` as a record: `(section key, window of the section, windows of
/// the section, window index)`. A page's windows are in section order, so a section's are
/// consecutive.
fn sections_of(vectors: &Vectors) -> Vec<(u64, u32, u32, usize)> {
    let mut out = Vec::with_capacity(vectors.windows());
    for page in &vectors.pages {
        let (first, end) = (page.first as usize, (page.first + page.count) as usize);
        let mut start = first;
        while start < end {
            let same = |w: usize| {
                vectors.sections[w] == vectors.sections[start]
                    && vectors.section_keys[w] == vectors.section_keys[start]
            };
            let mut stop = start + 1;
            while stop < end && same(stop) {
                stop += 1;
            }
            let count = (stop - start) as u32;
            for w in start..stop {
                out.push((vectors.section_keys[w], (w - start) as u32, count, w));
            }
            start = stop;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cache of a model in `dir`, read.
    fn cache_in(dir: &Path, dim: Option<usize>) -> EmbedCache {
        let mut cache = EmbedCache::open(dir, "0123456789abcdef0123", dim, 320);
        cache.load();
        cache
    }

    #[test]
    fn what_is_appended_is_found_by_the_next_build() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = cache_in(dir.path(), Some(2));
        assert!(cache.is_empty());
        cache
            .append(&[
                (7, 0, 2, &[1.0, 0.0]),
                (7, 1, 2, &[0.0, 1.0]),
                (9, 0, 2, &[0.5, 0.5]),
            ])
            .unwrap();
        let again = cache_in(dir.path(), None);
        assert_eq!(again.dim(), 2);
        assert_eq!(again.records(), 3);
        let windows = again.section(7).expect("both windows");
        assert_eq!(again.vector(windows[0]), &[1.0, 0.0]);
        assert_eq!(again.vector(windows[1]), &[0.0, 1.0]);
        // One window of two: the section is embedded again.
        assert!(again.section(9).is_none());
        assert!(again.section(8).is_none());
    }

    #[test]
    fn a_torn_or_damaged_tail_is_dropped_and_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = cache_in(dir.path(), Some(2));
        cache.append(&[(1, 0, 1, &[1.0, 0.0])]).unwrap();
        cache.append(&[(2, 0, 1, &[0.0, 1.0])]).unwrap();
        let path = cache.path.clone();
        let whole = std::fs::read(&path).unwrap();
        // Torn: the last record cut short.
        std::fs::write(&path, &whole[..whole.len() - 3]).unwrap();
        let mut torn = cache_in(dir.path(), Some(2));
        assert_eq!(torn.records(), 1);
        assert!(torn.section(1).is_some() && torn.section(2).is_none());
        torn.append(&[(3, 0, 1, &[0.6, 0.8])]).unwrap();
        let after = cache_in(dir.path(), Some(2));
        assert_eq!(after.records(), 2);
        assert!(after.section(3).is_some());
        // Damaged: a byte of the first record's vector flipped ends the file there.
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[HEADER + 17] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        assert!(cache_in(dir.path(), Some(2)).is_empty());
    }

    #[test]
    fn a_file_of_another_dimension_or_window_size_starts_again() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = cache_in(dir.path(), Some(2));
        cache.append(&[(1, 0, 1, &[1.0, 0.0])]).unwrap();
        assert!(cache_in(dir.path(), Some(3)).is_empty());
        let mut other_windows = EmbedCache::open(dir.path(), "0123456789abcdef0123", None, 0);
        other_windows.load();
        assert!(other_windows.is_empty());
        let mut other = cache_in(dir.path(), Some(3));
        other.append(&[(5, 0, 1, &[1.0, 0.0, 0.0])]).unwrap();
        let reread = cache_in(dir.path(), None);
        assert_eq!((reread.dim(), reread.records()), (3, 1));
        assert!(reread.section(1).is_none() && reread.section(5).is_some());
    }

    #[test]
    fn the_file_is_capped_to_the_live_windows() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = cache_in(dir.path(), Some(2));
        let many: Vec<(u64, [f32; 2])> = (0..600u64).map(|k| (100 + k, [1.0, 0.0])).collect();
        let records: Vec<Record<'_>> = many.iter().map(|(k, v)| (*k, 0, 1, &v[..])).collect();
        cache.append(&records).unwrap();
        let live = crate::index::vectors::tests::sample();
        // 600 records > 2 × 3 live windows + SLACK: written again with the live ones.
        cache.keep_within(&live).unwrap();
        let reread = cache_in(dir.path(), Some(2));
        assert_eq!(reread.records(), 3);
        let first = reread.section(10).expect("page 3's first section");
        assert_eq!(reread.vector(first[0]), &[1.0, 0.0]);
        assert_eq!(reread.vector(reread.section(11).unwrap()[0]), &[0.6, 0.8]);
        assert!(reread.section(12).is_some() && reread.section(100).is_none());
        // Under the cap: left as it is.
        let mut small = cache_in(dir.path(), Some(2));
        small.keep_within(&live).unwrap();
        assert_eq!(cache_in(dir.path(), Some(2)).records(), 3);
        let size = std::fs::metadata(&reread.path).unwrap().len() as usize;
        assert_eq!(size, HEADER + 3 * record_len(2));
    }
}
