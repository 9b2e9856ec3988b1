//! Walking a bundle directory: every regular file below the root, in byte order of path, never
//! following a link out of the root. The same walk feeds ingest and the cheap stat fingerprint
//! that tells whether an index is stale.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use rayon::prelude::*;
use sha2::{Digest, Sha256};
use walkdir::{DirEntry, WalkDir};

use super::Diagnostic;

/// Deepest directory nesting walked; deeper entries are reported and skipped.
pub const MAX_DEPTH: usize = 256;

/// One regular file found under the root.
#[derive(Debug, Clone)]
pub struct WalkedFile {
    /// Where to read it (a link inside the root resolves to its target).
    pub disk_path: PathBuf,
    /// The path relative to the root, `/`-separated, as the file system spells it.
    pub relative: String,
    pub size: u64,
    pub mtime_ns: i128,
}

/// The result of a walk.
#[derive(Debug, Default)]
pub struct Walk {
    pub files: Vec<WalkedFile>,
    pub diagnostics: Vec<Diagnostic>,
}

fn is_hidden(name: &std::ffi::OsStr) -> bool {
    name.to_str().is_some_and(|n| n.starts_with('.'))
}

/// Directories this shallow are listed on their own and their subdirectories walked in
/// parallel; deeper ones are walked in one pass each.
const PARALLEL_DEPTH: usize = 3;

/// What one entry of the walk gives.
enum Item {
    File(WalkedFile),
    Diagnostic(Diagnostic),
}

/// Walks `root`. Hidden entries (`.git`, `.obsidian`, …) are skipped silently; links to
/// directories are not followed; links to files are read only when they resolve inside the root.
/// Subdirectories are walked in parallel; the result is in walk order all the same (each
/// directory's entries by file name, a directory's subtree right after it).
pub fn walk(root: &Path) -> Walk {
    let mut out = Walk::default();
    let canonical_root = match root.canonicalize() {
        Ok(p) => p,
        Err(e) => {
            out.diagnostics.push(Diagnostic::new(
                root.display().to_string(),
                None,
                format!("cannot open the bundle root: {e}"),
            ));
            return out;
        }
    };
    for item in walk_dir(&canonical_root, &canonical_root, 0) {
        match item {
            Item::File(file) => out.files.push(file),
            Item::Diagnostic(d) => out.diagnostics.push(d),
        }
    }
    out
}

fn walker(dir: &Path, max_depth: usize) -> impl Iterator<Item = walkdir::Result<DirEntry>> {
    WalkDir::new(dir)
        .follow_links(false)
        .max_depth(max_depth)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !is_hidden(e.file_name()))
}

/// The items of the subtree of `dir`, a directory `depth` levels below `root` (not `dir`
/// itself).
fn walk_dir(root: &Path, dir: &Path, depth: usize) -> Vec<Item> {
    if depth >= PARALLEL_DEPTH {
        return walker(dir, MAX_DEPTH - depth)
            .filter_map(|entry| visit(root, entry, depth))
            .collect();
    }
    // The entries of `dir`, then the subtree of each subdirectory, in parallel.
    let mut items: Vec<Option<Item>> = Vec::new();
    let mut subdirectories: Vec<(usize, PathBuf)> = Vec::new();
    for entry in walker(dir, 1) {
        if let Ok(e) = &entry {
            if e.depth() > 0 && e.file_type().is_dir() && depth + 1 < MAX_DEPTH {
                subdirectories.push((items.len(), e.path().to_path_buf()));
            }
        }
        items.push(visit(root, entry, depth));
    }
    let subtrees: Vec<Vec<Item>> = subdirectories
        .par_iter()
        .map(|(_, subdirectory)| walk_dir(root, subdirectory, depth + 1))
        .collect();
    let mut out = Vec::with_capacity(items.len());
    let mut subtrees = subdirectories
        .iter()
        .map(|(at, _)| *at)
        .zip(subtrees)
        .peekable();
    for (i, item) in items.into_iter().enumerate() {
        out.extend(item);
        if let Some((_, subtree)) = subtrees.next_if(|(at, _)| *at == i) {
            out.extend(subtree);
        }
    }
    out
}

/// What the walk makes of `entry`, found by a walker started `base` levels below the root.
fn visit(root: &Path, entry: walkdir::Result<DirEntry>, base: usize) -> Option<Item> {
    let entry = match entry {
        Ok(entry) => entry,
        Err(e) => {
            let path = e
                .path()
                .map(|p| display_relative(root, p))
                .unwrap_or_default();
            return Some(Item::Diagnostic(Diagnostic::new(
                path,
                None,
                format!("cannot read: {e}"),
            )));
        }
    };
    if entry.depth() == 0 {
        return None;
    }
    let depth = base + entry.depth();
    let diagnostic = |path: String, message: String| {
        Some(Item::Diagnostic(Diagnostic::new(path, None, message)))
    };
    let relative_os = entry.path().strip_prefix(root).unwrap_or(entry.path());
    let Some(relative) = relative_os.to_str().map(|s| s.replace('\\', "/")) else {
        return diagnostic(
            relative_os.to_string_lossy().into_owned(),
            "the file name is not valid UTF-8; skipped".into(),
        );
    };
    let file_type = entry.file_type();
    if depth == MAX_DEPTH && file_type.is_dir() {
        return diagnostic(
            relative,
            format!("directories nest deeper than {MAX_DEPTH} levels; the rest is skipped"),
        );
    }
    if file_type.is_dir() {
        return None;
    }
    let mut disk_path = entry.path().to_path_buf();
    if file_type.is_symlink() {
        match entry.path().canonicalize() {
            Ok(target) if target.starts_with(root) && target.is_file() => {
                disk_path = target;
            }
            Ok(target) if target.starts_with(root) => {
                return diagnostic(
                    relative,
                    "symbolic link to a directory is not followed".into(),
                );
            }
            Ok(_) => {
                return diagnostic(
                    relative,
                    "symbolic link points outside the bundle; skipped".into(),
                );
            }
            Err(e) => {
                return diagnostic(relative, format!("broken symbolic link; skipped ({e})"));
            }
        }
    } else if !file_type.is_file() {
        return diagnostic(relative, "not a regular file; skipped".into());
    }
    let metadata = match std::fs::metadata(&disk_path) {
        Ok(m) => m,
        Err(e) => return diagnostic(relative, format!("cannot stat: {e}")),
    };
    let mtime_ns = metadata
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i128);
    Some(Item::File(WalkedFile {
        disk_path,
        relative,
        size: metadata.len(),
        mtime_ns,
    }))
}

fn display_relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// A cheap fingerprint of what the walk sees: every file's relative path, size and mtime.
pub fn stat_fingerprint(walk: &Walk) -> String {
    let mut hasher = BufferedSha256::new();
    for file in &walk.files {
        hasher.update(file.relative.as_bytes());
        hasher.update(&[0]);
        hasher.update(&file.size.to_le_bytes());
        hasher.update(&file.mtime_ns.to_le_bytes());
    }
    hex(&hasher.finalize())
}

/// SHA-256 of many small pieces, handed to the hasher in runs of 64 KiB (a call per piece costs
/// more than hashing it). The digest is that of the pieces one after the other.
pub struct BufferedSha256 {
    hasher: Sha256,
    buffer: Vec<u8>,
}

impl BufferedSha256 {
    const RUN: usize = 64 * 1024;

    pub fn new() -> Self {
        BufferedSha256 {
            hasher: Sha256::new(),
            buffer: Vec::with_capacity(Self::RUN),
        }
    }

    pub fn update(&mut self, bytes: &[u8]) {
        if self.buffer.len() + bytes.len() > Self::RUN {
            self.hasher.update(&self.buffer);
            self.buffer.clear();
        }
        if bytes.len() > Self::RUN {
            self.hasher.update(bytes);
        } else {
            self.buffer.extend_from_slice(bytes);
        }
    }

    pub fn finalize(mut self) -> [u8; 32] {
        self.hasher.update(&self.buffer);
        self.hasher.finalize().into()
    }
}

impl Default for BufferedSha256 {
    fn default() -> Self {
        Self::new()
    }
}

pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
    out
}

/// Now, in ns since the Unix epoch (0 if the clock is before it).
pub fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}
