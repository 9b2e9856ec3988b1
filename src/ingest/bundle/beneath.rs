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
}

impl BundleRoot {
    /// Opens the directory `root`.
    pub fn open(root: &Path) -> io::Result<BundleRoot> {
        let dir = open_dir(root)?;
        Ok(BundleRoot {
            dir,
            path: root.to_path_buf(),
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
        let file = self.open_inside(relative)?;
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
