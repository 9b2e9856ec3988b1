//! Walking a bundle directory: every regular file below the root, in byte order of path, never
//! following a link out of the root. The same walk feeds ingest and the cheap stat fingerprint
//! that tells whether an index is stale.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use sha2::{Digest, Sha256};
use walkdir::WalkDir;

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

/// Walks `root`. Hidden entries (`.git`, `.obsidian`, …) are skipped silently; links to
/// directories are not followed; links to files are read only when they resolve inside the root.
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
    let walker = WalkDir::new(&canonical_root)
        .follow_links(false)
        .max_depth(MAX_DEPTH)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !is_hidden(e.file_name()));
    for entry in walker {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                let path = e
                    .path()
                    .map(|p| display_relative(&canonical_root, p))
                    .unwrap_or_default();
                out.diagnostics
                    .push(Diagnostic::new(path, None, format!("cannot read: {e}")));
                continue;
            }
        };
        if entry.depth() == 0 {
            continue;
        }
        let relative_os = entry
            .path()
            .strip_prefix(&canonical_root)
            .unwrap_or(entry.path());
        let Some(relative) = relative_os.to_str().map(|s| s.replace('\\', "/")) else {
            out.diagnostics.push(Diagnostic::new(
                relative_os.to_string_lossy().into_owned(),
                None,
                "the file name is not valid UTF-8; skipped".into(),
            ));
            continue;
        };
        let file_type = entry.file_type();
        if entry.depth() == MAX_DEPTH && file_type.is_dir() {
            out.diagnostics.push(Diagnostic::new(
                relative,
                None,
                format!("directories nest deeper than {MAX_DEPTH} levels; the rest is skipped"),
            ));
            continue;
        }
        if file_type.is_dir() {
            continue;
        }
        let mut disk_path = entry.path().to_path_buf();
        if file_type.is_symlink() {
            match entry.path().canonicalize() {
                Ok(target) if target.starts_with(&canonical_root) && target.is_file() => {
                    disk_path = target;
                }
                Ok(target) if target.starts_with(&canonical_root) => {
                    out.diagnostics.push(Diagnostic::new(
                        relative,
                        None,
                        "symbolic link to a directory is not followed".into(),
                    ));
                    continue;
                }
                Ok(_) => {
                    out.diagnostics.push(Diagnostic::new(
                        relative,
                        None,
                        "symbolic link points outside the bundle; skipped".into(),
                    ));
                    continue;
                }
                Err(e) => {
                    out.diagnostics.push(Diagnostic::new(
                        relative,
                        None,
                        format!("broken symbolic link; skipped ({e})"),
                    ));
                    continue;
                }
            }
        } else if !file_type.is_file() {
            out.diagnostics.push(Diagnostic::new(
                relative,
                None,
                "not a regular file; skipped".into(),
            ));
            continue;
        }
        let metadata = match std::fs::metadata(&disk_path) {
            Ok(m) => m,
            Err(e) => {
                out.diagnostics
                    .push(Diagnostic::new(relative, None, format!("cannot stat: {e}")));
                continue;
            }
        };
        let mtime_ns = metadata
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i128);
        out.files.push(WalkedFile {
            disk_path,
            relative,
            size: metadata.len(),
            mtime_ns,
        });
    }
    out
}

fn display_relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// A cheap fingerprint of what the walk sees: every file's relative path, size and mtime.
pub fn stat_fingerprint(walk: &Walk) -> String {
    let mut hasher = Sha256::new();
    for file in &walk.files {
        hasher.update(file.relative.as_bytes());
        hasher.update([0]);
        hasher.update(file.size.to_le_bytes());
        hasher.update(file.mtime_ns.to_le_bytes());
    }
    hex(&hasher.finalize())
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
