//! Opening a bundle file by its path inside the bundle so that what is opened is a regular file
//! inside the bundle at the moment it is opened. Checking a path and then opening it again by
//! name leaves a window: a directory of the bundle swapped for a link to another folder between
//! the two steps would have the other folder's file read. Here the check is made on what was
//! opened, never on the name again:
//!
//! - on Linux, `openat2` from a handle of the root directory with `RESOLVE_BENEATH`: the kernel
//!   refuses, atomically, any step of the resolution that leads outside the root (links inside
//!   the root are followed);
//! - where `openat2` is unavailable (old kernels, sandboxes that filter it) and for absolute
//!   links, which `RESOLVE_BENEATH` refuses even when they point inside: an ordinary open, then
//!   the path of the opened file as the kernel reports it (`/proc/self/fd`) must lie under the
//!   root's, reported the same way;
//! - elsewhere (not Linux): an ordinary open whose file must be the one its canonical path,
//!   under the root, names (device and inode compared), a weaker check.
//!
//! Files are opened non-blocking (a FIFO swapped in cannot hang a reader) and must be regular
//! files.
//!
//! A root opened linkless (`BundleRoot::open_linkless`: a published generation's copy of the
//! bundle, `index::replica`) follows no link at all, inside or out: each step of a path is
//! opened from the one before with `O_NOFOLLOW`, so a copy whose folder or file was swapped for
//! a link leads nowhere, whatever it points at.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// The error of a path that leads outside the bundle (or to something other than a file).
fn outside(relative: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "{} does not lead to a regular file inside the bundle",
            relative.display()
        ),
    )
}

/// The root directory of a bundle, held open: files are opened relative to it.
#[derive(Debug)]
pub struct BundleRoot {
    dir: File,
    /// The root as given (for messages and the non-Linux check).
    path: PathBuf,
    /// Whether links are followed (inside the root) or refused at every step.
    follow_links: bool,
}

impl BundleRoot {
    /// Opens the directory `root`.
    pub fn open(root: &Path) -> io::Result<BundleRoot> {
        let dir = open_dir(root)?;
        Ok(BundleRoot {
            dir,
            path: root.to_path_buf(),
            follow_links: true,
        })
    }

    /// Opens the folder `relative` beneath `base` following no link at any step (each one a
    /// real folder), as a root whose files are opened the same way.
    pub(crate) fn open_linkless(base: &Path, relative: &Path) -> io::Result<BundleRoot> {
        let base_dir = open_dir(base)?;
        let dir = open_without_links(&base_dir, base, relative, true)?;
        Ok(BundleRoot {
            dir,
            path: base.join(relative),
            follow_links: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether `root` still names the directory held open.
    pub(crate) fn still_named(&self, root: &Path) -> bool {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            match (std::fs::metadata(root), self.dir.metadata()) {
                (Ok(named), Ok(held)) => named.dev() == held.dev() && named.ino() == held.ino(),
                _ => false,
            }
        }
        #[cfg(not(unix))]
        {
            let _ = root;
            false
        }
    }

    /// Opens the regular file at `relative` (relative to the root; links inside the root are
    /// followed) for reading, refusing anything that leads outside the root.
    pub(crate) fn open_file(&self, relative: impl AsRef<Path>) -> io::Result<File> {
        let relative = relative.as_ref();
        if relative.is_absolute() {
            return Err(outside(relative));
        }
        let file = if self.follow_links {
            self.open_inside(relative)?
        } else {
            open_without_links(&self.dir, &self.path, relative, false)?
        };
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(outside(relative));
        }
        Ok(file)
    }

    #[cfg(target_os = "linux")]
    fn open_inside(&self, relative: &Path) -> io::Result<File> {
        use rustix::fs::{Mode, OFlags, ResolveFlags};
        use rustix::io::Errno;
        let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK;
        match rustix::fs::openat2(
            &self.dir,
            relative,
            flags,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        ) {
            Ok(fd) => Ok(File::from(fd)),
            // EXDEV: a step led outside, or an absolute link (maybe pointing inside); the
            // others: no openat2 here.
            Err(Errno::XDEV | Errno::NOSYS | Errno::PERM | Errno::INVAL | Errno::AGAIN) => {
                let fd = rustix::fs::openat(&self.dir, relative, flags, Mode::empty())?;
                let file = File::from(fd);
                let opened = fd_path(&file)?;
                let root = fd_path(&self.dir)?;
                if opened.starts_with(&root) && opened != root {
                    Ok(file)
                } else {
                    Err(outside(relative))
                }
            }
            Err(e) => Err(e.into()),
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn open_inside(&self, relative: &Path) -> io::Result<File> {
        let path = self.path.join(relative);
        let file = open_nonblocking(&path)?;
        let canonical = path.canonicalize()?;
        let root = self.path.canonicalize()?;
        if !canonical.starts_with(&root) || !same_file(&file.metadata()?, &canonical)? {
            return Err(outside(relative));
        }
        Ok(file)
    }
}

/// Opens `relative` beneath the folder `dir` (named `base`) one step at a time, each step a
/// real folder (the last a folder when `folder`, else anything regular files are opened as),
/// following no link: any other step is [`outside`].
#[cfg(unix)]
fn open_without_links(dir: &File, _base: &Path, relative: &Path, folder: bool) -> io::Result<File> {
    use rustix::fs::{Mode, OFlags};
    use rustix::io::Errno;
    let steps: Vec<&std::ffi::OsStr> = relative
        .components()
        .map(|c| match c {
            std::path::Component::Normal(name) => Ok(name),
            _ => Err(outside(relative)),
        })
        .collect::<io::Result<_>>()?;
    let mut opened: Option<File> = None;
    for (i, name) in steps.iter().enumerate() {
        let last = i + 1 == steps.len();
        let kind = if last && !folder {
            OFlags::NONBLOCK | OFlags::NOCTTY
        } else {
            OFlags::DIRECTORY
        };
        let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW | kind;
        let from = opened.as_ref().unwrap_or(dir);
        let fd = rustix::fs::openat(from, *name, flags, Mode::empty()).map_err(|e| match e {
            // A link (ELOOP; EMLINK on the BSDs), or a file where a folder was expected.
            Errno::LOOP | Errno::MLINK | Errno::NOTDIR => outside(relative),
            other => other.into(),
        })?;
        opened = Some(File::from(fd));
    }
    opened.ok_or_else(|| outside(relative))
}

/// Without `O_NOFOLLOW` at hand: each step's metadata, not followed, must be a folder (or, last,
/// a file), then an ordinary open (a weaker check: a step swapped meanwhile is not seen).
#[cfg(not(unix))]
fn open_without_links(_: &File, base: &Path, relative: &Path, folder: bool) -> io::Result<File> {
    let mut path = base.to_path_buf();
    let mut steps = relative.components().peekable();
    while let Some(step) = steps.next() {
        let std::path::Component::Normal(name) = step else {
            return Err(outside(relative));
        };
        path.push(name);
        let meta = std::fs::symlink_metadata(&path)?;
        let last = steps.peek().is_none();
        let fits = if last && !folder {
            meta.is_file()
        } else {
            meta.is_dir()
        };
        if !fits {
            return Err(outside(relative));
        }
    }
    if path == base {
        return Err(outside(relative));
    }
    if folder {
        open_dir(&path)
    } else {
        File::open(&path)
    }
}

/// The path of an open file as the kernel reports it.
#[cfg(target_os = "linux")]
fn fd_path(file: &impl std::os::fd::AsRawFd) -> io::Result<PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

#[cfg(unix)]
fn open_dir(root: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(root)
}

#[cfg(not(unix))]
fn open_dir(root: &Path) -> io::Result<File> {
    File::open(root)
}

#[cfg(all(unix, not(target_os = "linux")))]
fn open_nonblocking(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> io::Result<File> {
    File::open(path)
}

#[cfg(all(unix, not(target_os = "linux")))]
fn same_file(opened: &std::fs::Metadata, canonical: &Path) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let named = std::fs::metadata(canonical)?;
    Ok(opened.dev() == named.dev() && opened.ino() == named.ino())
}

#[cfg(not(unix))]
fn same_file(_: &std::fs::Metadata, _: &Path) -> io::Result<bool> {
    Ok(true)
}

thread_local! {
    /// The last root a thread opened files under (a build reads thousands of files of one root).
    static LAST_ROOT: std::cell::RefCell<Option<BundleRoot>> = const { std::cell::RefCell::new(None) };
}

/// [`BundleRoot::open_file`] of `relative` under `root`, the root's handle kept per thread while
/// `root` still names that directory (a folder put in its place is opened anew).
pub(crate) fn open_under(root: &Path, relative: impl AsRef<Path>) -> io::Result<File> {
    LAST_ROOT.with(|last| {
        let mut last = last.borrow_mut();
        let current = last
            .as_ref()
            .is_some_and(|r| r.path == root && r.still_named(root));
        if !current {
            *last = Some(BundleRoot::open(root)?);
        }
        match last.as_ref() {
            Some(r) => r.open_file(relative),
            None => Err(io::Error::other("no bundle root")),
        }
    })
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn files_inside_open_and_links_out_do_not() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        let outside_dir = tmp.path().join("outside");
        std::fs::create_dir_all(root.join("pages/a")).unwrap();
        std::fs::create_dir_all(&outside_dir).unwrap();
        std::fs::write(root.join("pages/a/x.md"), "inside").unwrap();
        std::fs::write(outside_dir.join("x.md"), "outside").unwrap();
        symlink("a/x.md", root.join("pages/rel.md")).unwrap();
        symlink(root.join("pages/a/x.md"), root.join("pages/abs.md")).unwrap();
        symlink(&outside_dir, root.join("pages/out")).unwrap();
        symlink(outside_dir.join("x.md"), root.join("pages/out.md")).unwrap();
        symlink("../../outside/x.md", root.join("pages/up.md")).unwrap();
        let bundle = BundleRoot::open(&root).unwrap();
        let read = |p: &str| bundle.open_file(p).map(|f| io::read_to_string(f).unwrap());
        assert_eq!(read("pages/a/x.md").unwrap(), "inside");
        assert_eq!(read("pages/rel.md").unwrap(), "inside");
        // An absolute link inside the root: refused by openat2, opened by the fallback check.
        assert_eq!(read("pages/abs.md").unwrap(), "inside");
        for out in [
            "pages/out/x.md",
            "pages/out.md",
            "pages/up.md",
            "../outside/x.md",
        ] {
            assert!(read(out).is_err(), "{out} was opened");
        }
        assert!(read(root.join("pages/a/x.md").to_str().unwrap()).is_err());
        // Not a regular file.
        assert!(read("pages").is_err());
        assert!(read("pages/missing.md").is_err());
    }

    /// A root opened linkless follows no link, even one that stays inside it, and no folder
    /// of the path to it may be a link either.
    #[test]
    fn a_linkless_root_follows_no_link_inside_or_out() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("gen/bundle");
        std::fs::create_dir_all(root.join("pages/a")).unwrap();
        std::fs::write(root.join("pages/a/x.md"), "inside").unwrap();
        symlink("a/x.md", root.join("pages/rel.md")).unwrap();
        symlink("a", root.join("pages/dir")).unwrap();
        let bundle = BundleRoot::open_linkless(tmp.path(), Path::new("gen/bundle")).unwrap();
        let read = |p: &str| bundle.open_file(p).map(|f| io::read_to_string(f).unwrap());
        assert_eq!(read("pages/a/x.md").unwrap(), "inside");
        for refused in [
            "pages/rel.md",
            "pages/dir/x.md",
            "pages/../pages/a/x.md",
            "pages",
        ] {
            assert!(read(refused).is_err(), "{refused} was opened");
        }
        symlink(tmp.path().join("gen"), tmp.path().join("linked")).unwrap();
        assert!(BundleRoot::open_linkless(tmp.path(), Path::new("linked/bundle")).is_err());
        symlink(&root, tmp.path().join("gen/copy")).unwrap();
        assert!(BundleRoot::open_linkless(tmp.path(), Path::new("gen/copy")).is_err());
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("pipe.md");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads the NUL-terminated path, alive until the end of the test.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let bundle = BundleRoot::open(tmp.path()).unwrap();
        assert!(bundle.open_file("pipe.md").is_err());
    }
}
