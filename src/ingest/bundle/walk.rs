//! Walking a bundle directory: every regular file below the root, in byte order of path, never
//! following a link out of the root. The same walk feeds ingest and the cheap stat fingerprint
//! that tells whether an index is stale.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::exclusions::{self, Exclusions, Used};
use super::{Code, Diagnostic};

/// Deepest directory nesting walked; deeper entries are reported and skipped.
pub const MAX_DEPTH: usize = 256;

/// One regular file found under the root.
#[derive(Debug, Clone)]
pub struct WalkedFile {
    /// The root walked (one allocation shared by every file of the walk).
    root: Arc<Path>,
    /// Where to read it when not at `root/relative`: the target of a link inside the root.
    target: Option<PathBuf>,
    /// The path relative to the root, `/`-separated, as the file system spells it.
    pub relative: String,
    pub size: u64,
    pub mtime_ns: i128,
}

impl WalkedFile {
    /// The file at `relative` under `root` (read through `target` when it is a link).
    pub fn new(
        root: Arc<Path>,
        target: Option<PathBuf>,
        relative: String,
        size: u64,
        mtime_ns: i128,
    ) -> Self {
        WalkedFile {
            root,
            target,
            relative,
            size,
            mtime_ns,
        }
    }

    /// The root the walk started from.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where to read it (a link inside the root resolves to its target). Made when asked for:
    /// a whole path per file, kept, was a seventh of an update's memory at 200,000 files.
    pub fn disk_path(&self) -> PathBuf {
        match &self.target {
            Some(target) => target.clone(),
            None => self.root.join(&self.relative),
        }
    }
}

/// A file's modification time in ns since the epoch, as the walk records it (0 when unknown).
pub(crate) fn mtime_ns(metadata: &std::fs::Metadata) -> i128 {
    metadata
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i128)
}

/// The result of a walk.
#[derive(Debug, Default)]
pub struct Walk {
    pub files: Vec<WalkedFile>,
    pub diagnostics: Vec<Diagnostic>,
    /// [`stat_fingerprint`], once made (a build needs it twice).
    fingerprint: std::sync::OnceLock<String>,
}

fn is_hidden(name: &std::ffi::OsStr) -> bool {
    name.to_str().is_some_and(|n| n.starts_with('.'))
}

/// A directory with this many entries has its files looked at in parallel, in runs of this
/// many (a stat is a system call; SciFact's pages are one directory of 5,183 files).
const PARALLEL_FILES: usize = 128;

/// What one entry of the walk gives.
enum Item {
    File(WalkedFile),
    Diagnostic(Diagnostic),
}

/// Walks `root`. Hidden entries (`.git`, `.obsidian`, …) are skipped silently; links to
/// directories are not followed; links to files are read only when they resolve inside the root,
/// and not when they resolve to a hidden entry.
///
/// The order is that of one `walkdir` walker over the whole tree (links not followed, each
/// directory's entries by file name, a directory's subtree right after its entry; a test
/// compares the two), but each directory is listed once, its files looked at relative to the
/// open directory, and subdirectories and the files of a large directory in parallel.
pub fn walk(root: &Path) -> Walk {
    walk_excluding(root, &[])
}

/// [`walk`], leaving out the files `exclude` matches (gitignore patterns, relative to the
/// root: `drafts/`, `*.tmp.md`, `/CHANGELOG.md`) besides those of the folder's own ignore
/// files, and a link whose target one of them leaves out ([`Exclusions`]); a pattern that
/// leaves out no file is reported.
pub(crate) fn walk_excluding(root: &Path, exclude: &[String]) -> Walk {
    let mut out = Walk::default();
    let canonical_root = match root.canonicalize() {
        Ok(p) => p,
        Err(e) => {
            out.diagnostics.push(Diagnostic::new(
                Code::Unreadable,
                root.display().to_string(),
                None,
                format!("cannot open the bundle root: {e}"),
            ));
            return out;
        }
    };
    let root: Arc<Path> = Arc::from(canonical_root.as_path());
    let rules = Exclusions::new(&canonical_root, exclude, &mut out.diagnostics);
    let runs = walk_dir(&root, &canonical_root, Some(""), 0);
    out.files.reserve(runs.iter().map(Vec::len).sum());
    let mut used = Used::new();
    let mut example = None;
    for item in runs.into_iter().flatten() {
        match item {
            Item::File(file) => {
                // A link is left out when its target is: an excluded (or hidden) file stays
                // out under another name.
                let target = file
                    .target
                    .as_ref()
                    .and_then(|target| exclusions::relative_to(&canonical_root, target));
                let hidden_target = target.as_deref().is_some_and(|target| {
                    target.split('/').any(|segment| segment.starts_with('.'))
                });
                let left_out = hidden_target
                    || rules.as_ref().is_some_and(|rules| {
                        rules.leaves_out(&file.relative, &mut used)
                            || target
                                .as_deref()
                                .is_some_and(|target| rules.leaves_out(target, &mut used))
                    });
                if !left_out {
                    if example.is_none() {
                        example = Some(file.relative.clone());
                    }
                    out.files.push(file);
                }
            }
            Item::Diagnostic(d) => out.diagnostics.push(d),
        }
    }
    if let Some(rules) = &rules {
        out.diagnostics
            .extend(rules.unused(&canonical_root, &used, example.as_deref()));
    }
    out
}

/// What the walk knows of one entry of a directory once the directory is closed.
enum Looked {
    /// A file or a diagnostic (or nothing: an entry the walk leaves out silently).
    Done(Option<Item>),
    /// A directory to walk: its path, its relative path (`None`: not UTF-8) and the diagnostic
    /// that goes before its subtree (a name that is not UTF-8).
    Directory(PathBuf, Option<String>, Option<Item>),
}

/// The items of the subtree of `dir`, a directory `depth` levels below `root` (not `dir`
/// itself) whose path relative to the root is `relative` (`None` when not UTF-8), in walk
/// order, as runs one after the other: the subtrees walked in parallel are concatenated once,
/// by [`walk`], not at every level.
///
/// The directory is listed and its files looked at first, then closed, then its
/// subdirectories walked: a walk holds one open directory per thread, however deep the tree.
fn walk_dir(root: &Arc<Path>, dir: &Path, relative: Option<&str>, depth: usize) -> Vec<Vec<Item>> {
    let cannot_read = |error: std::io::Error| {
        let message = format!(
            "cannot read: IO error for operation on {}: {error}",
            dir.display()
        );
        Item::Diagnostic(Diagnostic::new(
            Code::Unreadable,
            display_relative(root, dir),
            None,
            message,
        ))
    };
    let listing = match std::fs::read_dir(dir) {
        Ok(listing) => listing,
        Err(error) => return vec![vec![cannot_read(error)]],
    };
    let mut entries = Vec::new();
    let mut failed = None;
    for entry in listing {
        match entry {
            Ok(entry) => {
                let name = entry.file_name();
                if !is_hidden(&name) {
                    entries.push((name, entry));
                }
            }
            // As walkdir reports it: no path, before the directory's entries.
            Err(error) => {
                failed = Some(Item::Diagnostic(Diagnostic::new(
                    Code::Unreadable,
                    String::new(),
                    None,
                    format!("cannot read: {error}"),
                )));
                break;
            }
        }
    }
    entries.sort_unstable_by(|(a, _), (b, _)| a.as_encoded_bytes().cmp(b.as_encoded_bytes()));
    let look = |(name, entry): &(std::ffi::OsString, std::fs::DirEntry)| {
        look(root, entry, name, relative, depth + 1)
    };
    let looked: Vec<Looked> = if entries.len() >= 2 * PARALLEL_FILES {
        entries
            .par_iter()
            .with_min_len(PARALLEL_FILES)
            .map(look)
            .collect()
    } else {
        entries.iter().map(look).collect()
    };
    drop(entries); // closes the directory
    let subdirectories: Vec<(&Path, Option<&str>)> = looked
        .iter()
        .filter_map(|looked| match looked {
            Looked::Directory(path, relative, _) => Some((path.as_path(), relative.as_deref())),
            Looked::Done(_) => None,
        })
        .collect();
    let walk_one =
        |(path, relative): &(&Path, Option<&str>)| walk_dir(root, path, *relative, depth + 1);
    let subtrees: Vec<Vec<Vec<Item>>> = if subdirectories.len() > 1 {
        subdirectories.par_iter().map(walk_one).collect()
    } else {
        subdirectories.iter().map(walk_one).collect()
    };
    let mut subtrees = subtrees.into_iter();
    let mut runs = Vec::new();
    let mut run = Vec::with_capacity(looked.len() + 1);
    run.extend(failed);
    for looked in looked {
        match looked {
            Looked::Done(item) => run.extend(item),
            Looked::Directory(_, _, before) => {
                run.extend(before);
                runs.push(std::mem::take(&mut run));
                runs.extend(subtrees.next().into_iter().flatten());
            }
        }
    }
    runs.push(run);
    runs
}

/// What the walk makes of `entry`, named `name`, of the directory whose relative path is
/// `parent` (`None`: not UTF-8), `depth` levels below `root`.
fn look(
    root: &Arc<Path>,
    entry: &std::fs::DirEntry,
    name: &std::ffi::OsStr,
    parent: Option<&str>,
    depth: usize,
) -> Looked {
    let diagnostic = |code: Code, path: String, message: String| {
        Looked::Done(Some(Item::Diagnostic(Diagnostic::new(
            code, path, None, message,
        ))))
    };
    let relative = match (parent, name.to_str()) {
        (Some(""), Some(name)) => Some(name.to_owned()),
        (Some(parent), Some(name)) => Some(format!("{parent}/{name}")),
        _ => None,
    };
    let file_type = match entry.file_type() {
        Ok(file_type) => file_type,
        Err(e) => {
            let path = entry.path();
            let message = format!(
                "cannot read: IO error for operation on {}: {e}",
                path.display()
            );
            return diagnostic(Code::Unreadable, display_relative(root, &path), message);
        }
    };
    let Some(relative) = relative else {
        let path = entry.path();
        let not_utf8 = Item::Diagnostic(Diagnostic::new(
            Code::NotServed,
            path.strip_prefix(root)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned(),
            None,
            "the file name is not valid UTF-8; skipped".into(),
        ));
        if file_type.is_dir() && depth < MAX_DEPTH {
            return Looked::Directory(path, None, Some(not_utf8));
        }
        return Looked::Done(Some(not_utf8));
    };
    if file_type.is_dir() {
        if depth == MAX_DEPTH {
            let message =
                format!("directories nest deeper than {MAX_DEPTH} levels; the rest is skipped");
            return diagnostic(Code::NotServed, relative, message);
        }
        return Looked::Directory(entry.path(), Some(relative), None);
    }
    let metadata = if file_type.is_symlink() {
        let path = entry.path();
        let target = match path.canonicalize() {
            Ok(target) if target.starts_with(root) && target.is_file() => target,
            Ok(target) if target.starts_with(root) => {
                return diagnostic(
                    Code::NotServed,
                    relative,
                    "symbolic link to a directory is not followed".into(),
                );
            }
            Ok(_) => {
                return diagnostic(
                    Code::NotServed,
                    relative,
                    "symbolic link points outside the bundle; skipped".into(),
                );
            }
            Err(e) => {
                return diagnostic(
                    Code::NotServed,
                    relative,
                    format!("broken symbolic link; skipped ({e})"),
                );
            }
        };
        std::fs::metadata(&target).map(|m| (m, Some(target)))
    } else if !file_type.is_file() {
        return diagnostic(
            Code::NotServed,
            relative,
            "not a regular file; skipped".into(),
        );
    } else {
        // Relative to the open directory (`fstatat`/`statx` on Linux), not by the whole path.
        entry.metadata().map(|m| (m, None))
    };
    let (metadata, target) = match metadata {
        Ok(m) => m,
        Err(e) => return diagnostic(Code::Unreadable, relative, format!("cannot stat: {e}")),
    };
    Looked::Done(Some(Item::File(WalkedFile::new(
        root.clone(),
        target,
        relative,
        metadata.len(),
        mtime_ns(&metadata),
    ))))
}

fn display_relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// A cheap fingerprint of what the walk sees: every file's relative path, size and mtime.
pub(crate) fn stat_fingerprint(walk: &Walk) -> String {
    let made = || {
        let mut hasher = BufferedSha256::new();
        for file in &walk.files {
            hasher.update(file.relative.as_bytes());
            hasher.update(&[0]);
            hasher.update(&file.size.to_le_bytes());
            hasher.update(&file.mtime_ns.to_le_bytes());
        }
        hex::encode(hasher.finalize())
    };
    walk.fingerprint.get_or_init(made).clone()
}

/// SHA-256 of many small pieces, handed to the hasher in runs of 64 KiB (a call per piece costs
/// more than hashing it). The digest is that of the pieces one after the other.
pub(crate) struct BufferedSha256 {
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

/// Now, in ns since the Unix epoch (0 if the clock is before it).
pub(crate) fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;
    use walkdir::WalkDir;

    /// The walk as one `walkdir` walker over the whole tree makes it, which [`walk`], split
    /// among threads, reproduces.
    fn reference_walk(root: &Path) -> Walk {
        let mut out = Walk::default();
        let canonical_root = match root.canonicalize() {
            Ok(p) => p,
            Err(e) => {
                out.diagnostics.push(Diagnostic::new(
                    Code::Unreadable,
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
                    out.diagnostics.push(Diagnostic::new(
                        Code::Unreadable,
                        path,
                        None,
                        format!("cannot read: {e}"),
                    ));
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
                    Code::NotServed,
                    relative_os.to_string_lossy().into_owned(),
                    None,
                    "the file name is not valid UTF-8; skipped".into(),
                ));
                continue;
            };
            let file_type = entry.file_type();
            if entry.depth() == MAX_DEPTH && file_type.is_dir() {
                out.diagnostics.push(Diagnostic::new(
                    Code::NotServed,
                    relative,
                    None,
                    format!("directories nest deeper than {MAX_DEPTH} levels; the rest is skipped"),
                ));
                continue;
            }
            if file_type.is_dir() {
                continue;
            }
            let disk_path = match disk_path(&entry, &canonical_root) {
                Ok(path) => path,
                Err(why) => {
                    out.diagnostics
                        .push(Diagnostic::new(Code::NotServed, relative, None, why));
                    continue;
                }
            };
            let metadata = match std::fs::metadata(&disk_path) {
                Ok(m) => m,
                Err(e) => {
                    out.diagnostics.push(Diagnostic::new(
                        Code::Unreadable,
                        relative,
                        None,
                        format!("cannot stat: {e}"),
                    ));
                    continue;
                }
            };
            let mtime_ns = metadata
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as i128);
            let hidden_target = disk_path
                .strip_prefix(&canonical_root)
                .is_ok_and(|r| r.components().any(|c| is_hidden(c.as_os_str())));
            if disk_path != entry.path() && hidden_target {
                continue;
            }
            let target = (disk_path != entry.path()).then_some(disk_path);
            out.files.push(WalkedFile::new(
                Arc::from(canonical_root.as_path()),
                target,
                relative,
                metadata.len(),
                mtime_ns,
            ));
        }
        out
    }

    /// The file an entry serves: itself, or the target of a link to a file inside the root;
    /// else why it is skipped.
    fn disk_path(entry: &walkdir::DirEntry, canonical_root: &Path) -> Result<PathBuf, String> {
        let file_type = entry.file_type();
        if !file_type.is_symlink() {
            return match file_type.is_file() {
                true => Ok(entry.path().to_path_buf()),
                false => Err("not a regular file; skipped".into()),
            };
        }
        match entry.path().canonicalize() {
            Ok(target) if target.starts_with(canonical_root) && target.is_file() => Ok(target),
            Ok(target) if target.starts_with(canonical_root) => {
                Err("symbolic link to a directory is not followed".into())
            }
            Ok(_) => Err("symbolic link points outside the bundle; skipped".into()),
            Err(e) => Err(format!("broken symbolic link; skipped ({e})")),
        }
    }

    fn same(a: &Walk, b: &Walk) {
        let files = |w: &Walk| -> Vec<(PathBuf, String, u64, i128)> {
            w.files
                .iter()
                .map(|f| (f.disk_path(), f.relative.clone(), f.size, f.mtime_ns))
                .collect()
        };
        assert_eq!(files(a), files(b));
        assert_eq!(a.diagnostics, b.diagnostics);
    }

    #[test]
    fn walks_as_one_walker_does() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("bundle");
        let write = |path: &str, text: &str| {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        for path in [
            "index.md",
            "a/b/c.md",
            "a/B.md",
            "a/z.md",
            "a-b/x.md",
            "a.b/y.md",
            "a/.hidden/x.md",
            ".git/config",
            "pages/é/ü.md",
            "pages/e\u{301}.md",
            "_graph/by-file/x.json",
        ] {
            write(path, path);
        }
        // Names that are not UTF-8: a file, and a directory with a file in it.
        std::fs::write(root.join(std::ffi::OsStr::from_bytes(b"bad\xff.md")), "x").unwrap();
        let bad_dir = root.join(std::ffi::OsStr::from_bytes(b"dir\xfe"));
        std::fs::create_dir(&bad_dir).unwrap();
        std::fs::write(bad_dir.join("inner.md"), "x").unwrap();
        // Links: to a file inside, to a directory inside, outside, broken; a socket.
        let outside = tmp.path().join("outside.md");
        std::fs::write(&outside, "x").unwrap();
        std::os::unix::fs::symlink(root.join("a/z.md"), root.join("a/link.md")).unwrap();
        std::os::unix::fs::symlink(root.join("a/.hidden/x.md"), root.join("a/hidden-link.md"))
            .unwrap();
        std::os::unix::fs::symlink(root.join("a/b"), root.join("a/dirlink")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("out.md")).unwrap();
        std::os::unix::fs::symlink(root.join("gone.md"), root.join("broken.md")).unwrap();
        let _socket = std::os::unix::net::UnixListener::bind(root.join("a/socket")).unwrap();
        // Deeper than MAX_DEPTH.
        let mut deep = root.join("deep");
        for _ in 0..MAX_DEPTH + 2 {
            deep = deep.join("d");
        }
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(deep.join("bottom.md"), "x").unwrap();
        std::fs::write(deep.parent().unwrap().join("f.md"), "x").unwrap();
        let mut some = root.join("deep");
        for _ in 0..200 {
            some = some.join("d");
        }
        std::fs::write(some.join("middle.md"), "x").unwrap();
        // Many files and directories, for the parallel part.
        for i in 0..300 {
            write(&format!("pages/d{}/e{}/f{i}.md", i % 7, i % 3), "x");
        }
        // A directory large enough that its files are looked at in parallel, among them a
        // hidden one, a link and a subdirectory.
        for i in 0..3 * PARALLEL_FILES {
            write(&format!("flat/p{i}.md"), &"x".repeat(i));
        }
        write("flat/.hidden.md", "x");
        write("flat/p5/inside.md", "x");
        std::os::unix::fs::symlink(root.join("flat/p7.md"), root.join("flat/p70.link.md")).unwrap();

        let walked = walk(&root);
        same(&walked, &reference_walk(&root));
        assert!(walked.files.len() > 300 + 3 * PARALLEL_FILES);
        assert!(walked.diagnostics.len() >= 6, "{:?}", walked.diagnostics);
        same(&walk(&root.join("a")), &reference_walk(&root.join("a")));
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        same(&walk(&fixtures), &reference_walk(&fixtures));
        same(
            &walk(&root.join("missing")),
            &reference_walk(&root.join("missing")),
        );
    }
}
