//! An index generation's manifest (`manifest.json`): what the build wrote (every file's size,
//! modification time and CRC-32, counts, fingerprints), its checksum, and the check of a
//! generation's files against it at open (module docs of [`super`], "Checking what is
//! opened").

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{Previous, Verify, BUILD_LOCK, CATALOG_FILE, INDEX_FORMAT_VERSION, INGEST_CACHE_FILE};
use crate::error::IndexError;
use crate::ingest::bundle::BundleKind;

/// Counts recorded in the manifest.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    /// Files listed in the tree (bundle files plus listed virtual relation records).
    pub files: u64,
    /// Relation records kbtools renders itself (listed or not).
    #[serde(default)]
    pub virtual_files: u64,
    pub source_pages: u64,
    pub relations: u64,
    pub diagnostics: u64,
}

/// `manifest.json` of an index generation.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub format_version: u64,
    pub tool_version: String,
    /// The `super::DERIVATION_VERSION` the generation was built with (0 before there was
    /// one).
    #[serde(default)]
    pub derivation_version: u64,
    pub knowledge_base_id: String,
    pub knowledge_base_name: String,
    pub bundle_kind: BundleKind,
    pub bundle_root: String,
    pub active_content_revision: u64,
    pub content_fingerprint: String,
    pub stat_fingerprint: String,
    pub counts: Counts,
    /// The semantic lane's vectors, when the generation has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semantic: Option<super::vectors::SemanticManifest>,
    /// The cross-language lane's vectors, when the generation has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_language: Option<super::vectors::SemanticManifest>,
    /// Built `--no-semantic` (or refreshed since without `--semantic`): builds that embed when
    /// the model is installed ([`super::Semantic::Auto`]) leave this index without vectors.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub semantic_off: bool,
    /// The `--exclude` patterns the build applied ([`super::exclusions`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// Every other file of the generation as the build left it (see the module docs).
    pub files: Vec<FileRecord>,
}

/// A file of a generation as its build left it: what opening checks it against.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct FileRecord {
    /// The path inside the generation folder, `/`-separated.
    pub path: String,
    pub size: u64,
    /// Modification time, ns since the epoch.
    pub mtime_ns: i64,
    /// CRC-32 of the whole file.
    pub crc32: u32,
}

/// The key of the manifest's checksum, its last member.
const CHECKSUM_KEY: &[u8] = b",\"checksum\":\"";

/// The manifest as written: its JSON, with the CRC-32 of every byte before the checksum's value
/// as the last member.
pub(super) fn manifest_bytes(manifest: &Manifest) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(manifest).unwrap_or_default();
    bytes.pop(); // the closing brace
    bytes.extend_from_slice(CHECKSUM_KEY);
    let crc = crc32fast::hash(&bytes);
    bytes.extend_from_slice(format!("{crc:08x}\"}}\n").as_bytes());
    bytes
}

/// Whether `bytes` end with a checksum that holds.
fn manifest_checksum_holds(bytes: &[u8]) -> bool {
    let text = bytes.trim_ascii_end();
    let Some(body) = text.strip_suffix(b"\"}") else {
        return false;
    };
    if body.len() < 8 + CHECKSUM_KEY.len() {
        return false;
    }
    let (before, hex) = body.split_at(body.len() - 8);
    let stored = std::str::from_utf8(hex)
        .ok()
        .and_then(|h| u32::from_str_radix(h, 16).ok());
    before.ends_with(CHECKSUM_KEY) && stored == Some(crc32fast::hash(before))
}

/// The most bytes a manifest is read to (one records a generation's few dozen files; a file
/// beyond this is not one of ours).
const MANIFEST_MAX_BYTES: u64 = 16 << 20;

/// The manifest of `generation`: format version first (an index of another version is refused
/// as such), then the checksum, then the fields.
pub(crate) fn generation_manifest(
    index_dir: &Path,
    generation: &Path,
) -> Result<Manifest, IndexError> {
    let path = generation.join("manifest.json");
    let damaged = |reason: String| IndexError::Corrupt {
        path: path.display().to_string(),
        reason,
    };
    let bytes = match super::generations::read_small_file(&path, MANIFEST_MAX_BYTES) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(damaged("it is missing".into()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            return Err(damaged(e.to_string()))
        }
        Err(e) => return Err(IndexError::io(&path, e)),
    };
    let value: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| damaged(e.to_string()))?;
    let found = value
        .get("formatVersion")
        .and_then(|v| v.as_u64())
        .unwrap_or(0);
    if found != INDEX_FORMAT_VERSION {
        return Err(IndexError::FormatVersion {
            path: index_dir.display().to_string(),
            found,
            expected: INDEX_FORMAT_VERSION,
        });
    }
    if !manifest_checksum_holds(&bytes) {
        return Err(damaged("checksum mismatch".into()));
    }
    serde_json::from_value(value).map_err(|e| damaged(e.to_string()))
}

/// A writer that makes the CRC-32 of what passes through it.
pub(crate) struct CrcWriter<W> {
    inner: W,
    crc: crc32fast::Hasher,
}

impl<W: std::io::Write> CrcWriter<W> {
    pub(crate) fn new(inner: W) -> Self {
        CrcWriter {
            inner,
            crc: crc32fast::Hasher::new(),
        }
    }

    /// The writer, and the CRC-32 of everything written.
    pub(crate) fn into_parts(self) -> (W, u32) {
        (self.inner, self.crc.finalize())
    }
}

impl<W: std::io::Write> std::io::Write for CrcWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The CRC-32 of the file at `path`, read in 1 MiB pieces.
pub(super) fn file_crc32(path: &Path) -> std::io::Result<u32> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut hasher = crc32fast::Hasher::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            return Ok(hasher.finalize());
        }
        hasher.update(&buffer[..n]);
    }
}

fn mtime_ns(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Files every generation records (a manifest that lists none of them is not one of ours).
const RECORDED: [&str; 4] = [
    CATALOG_FILE,
    INGEST_CACHE_FILE,
    "diagnostics.json",
    "search/meta.json",
];

/// Checks the files of `generation` against its manifest's record at `level` (module docs):
/// the first problem, naming the file, as [`IndexError::Corrupt`].
pub fn verify_generation(
    generation: &Path,
    manifest: &Manifest,
    level: Verify,
) -> Result<(), IndexError> {
    let damaged = |path: &Path, reason: String| IndexError::Corrupt {
        path: path.display().to_string(),
        reason,
    };
    for name in RECORDED {
        if !manifest.files.iter().any(|f| f.path == name) {
            return Err(damaged(
                &generation.join("manifest.json"),
                format!("it does not record {name}"),
            ));
        }
    }
    for record in &manifest.files {
        let relative = Path::new(&record.path);
        if !relative
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
        {
            return Err(damaged(
                &generation.join("manifest.json"),
                format!("it records the path {:?}", record.path),
            ));
        }
        let path = generation.join(relative);
        let meta = match metadata_without_links(generation, relative) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(damaged(&path, "it is missing".into()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                return Err(damaged(&path, e.to_string()))
            }
            Err(e) => return Err(IndexError::io(&path, e)),
        };
        if meta.len() != record.size {
            return Err(damaged(
                &path,
                format!("{} bytes where {} were written", meta.len(), record.size),
            ));
        }
        if level == Verify::Full || mtime_ns(&meta) != record.mtime_ns {
            let crc = file_crc32(&path).map_err(|e| IndexError::io(&path, e))?;
            if crc != record.crc32 {
                return Err(damaged(&path, "checksum mismatch".into()));
            }
        }
    }
    Ok(())
}

/// The metadata of the regular file `relative` under `generation`, where no step is a link (a
/// build writes none: a link would read a file outside the generation as one of its own).
fn metadata_without_links(
    generation: &Path,
    relative: &Path,
) -> std::io::Result<std::fs::Metadata> {
    use std::io::{Error, ErrorKind};
    let mut path = generation.to_path_buf();
    let mut steps = relative.components().peekable();
    while let Some(step) = steps.next() {
        path.push(step);
        let meta = std::fs::symlink_metadata(&path)?;
        let last = steps.peek().is_none();
        if meta.file_type().is_symlink() {
            return Err(Error::new(
                ErrorKind::InvalidData,
                format!(
                    "{} is a symbolic link; a generation holds none",
                    path.display()
                ),
            ));
        }
        if last && !meta.is_file() {
            return Err(Error::new(
                ErrorKind::InvalidData,
                "it is not a regular file",
            ));
        }
        if last {
            return Ok(meta);
        }
    }
    Err(Error::new(ErrorKind::InvalidData, "an empty path"))
}

/// Records every file of the generation being built in `dir` (all but the manifest and lock
/// files) for its manifest. A file hard-linked from the previous generation, unchanged since,
/// keeps the previous record (its content was checked against it when the build began, and
/// computing its checksum again would bless damage); a file in `written` (name, CRC-32) has the
/// checksum made as it was written ([`CrcWriter`]); the others' CRC-32 is computed, which reads
/// back what the build wrote.
pub(super) fn record_files(
    dir: &Path,
    previous: Option<&Previous>,
    written: &[(&str, u32)],
) -> Result<Vec<FileRecord>, IndexError> {
    let mut records = Vec::new();
    // The generation and the search index inside it.
    for sub in ["", "search"] {
        let folder = dir.join(sub);
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&folder).map_err(|e| IndexError::io(&folder, e))? {
            let entry = entry.map_err(|e| IndexError::io(&folder, e))?;
            let file_type = entry
                .file_type()
                .map_err(|e| IndexError::io(entry.path(), e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let skip = name == "manifest.json"
                || name == BUILD_LOCK
                || (name.starts_with(".tantivy-") && name.ends_with(".lock"));
            if file_type.is_file() && !skip {
                names.push(name);
            }
        }
        names.sort();
        for name in names {
            let relative = if sub.is_empty() {
                name
            } else {
                format!("{sub}/{name}")
            };
            let path = dir.join(&relative);
            let meta = std::fs::metadata(&path).map_err(|e| IndexError::io(&path, e))?;
            let mtime_ns = mtime_ns(&meta);
            let made = written.iter().find(|(name, _)| *name == relative);
            let kept = made.map(|(_, crc)| *crc).or_else(|| {
                let p = previous.filter(|p| p.damage.is_none())?;
                let record = p.manifest.files.iter().find(|f| f.path == relative)?;
                let before = std::fs::metadata(p.generation.join(&relative)).ok()?;
                (same_file(&before, &meta)
                    && record.size == meta.len()
                    && record.mtime_ns == mtime_ns)
                    .then_some(record.crc32)
            });
            records.push((relative, path, meta.len(), mtime_ns, kept));
        }
    }
    // The other new files' checksums side by side.
    use rayon::prelude::*;
    records
        .into_par_iter()
        .map(|(relative, path, size, mtime_ns, kept)| {
            let crc32 = match kept {
                Some(crc) => crc,
                None => file_crc32(&path).map_err(|e| IndexError::io(&path, e))?,
            };
            Ok(FileRecord {
                path: relative,
                size,
                mtime_ns,
                crc32,
            })
        })
        .collect()
}

/// Whether two metadata are of one file (a hard link of it).
#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(_: &std::fs::Metadata, _: &std::fs::Metadata) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_checksum_holds_only_for_the_bytes_written() {
        let manifest = Manifest {
            format_version: INDEX_FORMAT_VERSION,
            tool_version: "0".into(),
            derivation_version: crate::index::DERIVATION_VERSION,
            knowledge_base_id: "knowledge-base-x".into(),
            knowledge_base_name: "X".into(),
            bundle_kind: BundleKind::PlainFolder,
            bundle_root: "/b".into(),
            active_content_revision: 12,
            content_fingerprint: "c".into(),
            stat_fingerprint: "s".into(),
            counts: Counts::default(),
            semantic: None,
            semantic_off: false,
            exclude: Vec::new(),
            cross_language: None,
            files: vec![FileRecord {
                path: "catalog.bin".into(),
                size: 3,
                mtime_ns: 4,
                crc32: 5,
            }],
        };
        let bytes = manifest_bytes(&manifest);
        assert!(manifest_checksum_holds(&bytes));
        let parsed: Manifest = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(parsed, manifest);
        for at in 0..bytes.len() - 1 {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x04;
            assert!(!manifest_checksum_holds(&damaged), "byte {at}");
        }
        assert!(!manifest_checksum_holds(&bytes[..bytes.len() / 2]));
        assert!(!manifest_checksum_holds(b""));
    }
}
