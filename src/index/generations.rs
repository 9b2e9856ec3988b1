//! The generations of an index folder: `CURRENT` and the generation it names, the previous
//! generation a build reuses, the locks that keep concurrent builds and clean-ups apart, and the
//! removal of what killed builds left behind (the index module's docs tell the protocol).

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::catalog::{self, Catalog};
use super::manifest::{generation_manifest, verify_generation, Manifest};
use super::Verify;
use crate::error::IndexError;

/// The most bytes `CURRENT` is read to: a generation name and a newline, many times over.
pub(crate) const CURRENT_MAX_BYTES: u64 = 256;

/// The generation folder `CURRENT` names, if it names one (whether or not it exists); `None`
/// also when `CURRENT` is not a regular file of a generation name (links are not followed).
pub fn current_generation(index_dir: &Path) -> Option<PathBuf> {
    read_current(index_dir)
        .ok()
        .flatten()
        .map(|name| index_dir.join(name))
}

/// The generation name `CURRENT` holds: `None` when there is no `CURRENT` (no index yet), an
/// error naming `CURRENT` when it is not a regular file (a link is not followed, a FIFO or a
/// device not read), holds more than [`CURRENT_MAX_BYTES`], or holds no generation name.
pub(crate) fn read_current(index_dir: &Path) -> Result<Option<String>, IndexError> {
    let path = index_dir.join("CURRENT");
    let bytes = match read_small_file(&path, CURRENT_MAX_BYTES) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(IndexError::io(&path, e)),
    };
    let damaged = |reason: String| IndexError::Corrupt {
        path: path.display().to_string(),
        reason,
    };
    let name = std::str::from_utf8(&bytes)
        .map_err(|_| damaged("it is not UTF-8".into()))?
        .trim();
    if !valid_generation_name(name) {
        return Err(damaged(format!("it names no generation ({name:?})")));
    }
    Ok(Some(name.to_string()))
}

/// The bytes of the regular file at `path`, at most `max` of them: the last step of the path is
/// never followed when it is a link, and what is not a regular file (a FIFO, a device, a folder)
/// is refused before anything is read, so that neither can hang or flood the reader.
pub(crate) fn read_small_file(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Error, ErrorKind, Read};
    let file = open_no_follow(path)?;
    if !file.metadata()?.is_file() {
        return Err(Error::new(
            ErrorKind::InvalidData,
            "it is not a regular file (a folder, a FIFO or a device); it must be a file",
        ));
    }
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(Error::new(
            ErrorKind::InvalidData,
            format!("it holds more than {max} bytes"),
        ));
    }
    Ok(bytes)
}

/// Opens `path` for reading without following a link at its last step (without blocking on a
/// FIFO): a link is an error that says so.
#[cfg(unix)]
fn open_no_follow(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path);
    match opened {
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => Err(link_error()),
        other => other,
    }
}

#[cfg(not(unix))]
fn open_no_follow(path: &Path) -> std::io::Result<std::fs::File> {
    if std::fs::symlink_metadata(path)?.file_type().is_symlink() {
        return Err(link_error());
    }
    std::fs::File::open(path)
}

fn link_error() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        "it is a symbolic link, which is not followed; it must be a regular file",
    )
}

/// A generation name as `CURRENT` may hold it: `gen-…`, one path component.
pub(crate) fn valid_generation_name(name: &str) -> bool {
    name.starts_with("gen-")
        && !name.ends_with(".tmp")
        && !name.contains(['/', '\\', '\0'])
        && !name.contains("..")
        && !name.chars().any(char::is_control)
}

/// The live generation folder of an index: `None` when there is no `CURRENT` (no index yet), an
/// error naming `CURRENT` when it cannot be read or names no existing generation.
pub(crate) fn live_generation(index_dir: &Path) -> Result<Option<PathBuf>, IndexError> {
    let Some(name) = read_current(index_dir)? else {
        return Ok(None);
    };
    let generation = index_dir.join(&name);
    check_generation_folder(&generation)?;
    Ok(Some(generation))
}

/// A generation must be a folder of its index folder, not a link to one elsewhere (a build
/// never makes one): an error naming it otherwise. Its device and inode (where there are).
pub(crate) fn check_generation_folder(generation: &Path) -> Result<Option<(u64, u64)>, IndexError> {
    let damaged = |reason: &str| IndexError::Corrupt {
        path: generation.display().to_string(),
        reason: reason.into(),
    };
    match std::fs::symlink_metadata(generation) {
        Ok(meta) if meta.is_dir() => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::MetadataExt;
                Ok(Some((meta.dev(), meta.ino())))
            }
            #[cfg(not(unix))]
            {
                Ok(None)
            }
        }
        Ok(meta) if meta.file_type().is_symlink() => Err(damaged(
            "it is a symbolic link; a generation must be a folder inside the index folder",
        )),
        Ok(_) => Err(damaged("it is not a folder")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(damaged("CURRENT names it, and it is missing"))
        }
        Err(e) => Err(IndexError::io(generation, e)),
    }
}

/// Reads the manifest of the live generation, checking its format version and its checksum.
pub fn read_manifest(index_dir: &Path) -> Result<Option<Manifest>, IndexError> {
    let Some(generation) = live_generation(index_dir)? else {
        return Ok(None);
    };
    generation_manifest(index_dir, &generation).map(Some)
}

/// The highest `activeContentRevision` the index folder tells of, whatever the state of its
/// generations: the live manifest's (whatever its format version) and the revisions in the
/// generation folders' names, so that a rebuild after damage never reuses a revision.
pub(crate) fn last_revision(index_dir: &Path) -> Option<u64> {
    let from_manifest = current_generation(index_dir)
        .and_then(|g| std::fs::read(g.join("manifest.json")).ok())
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .and_then(|v| v.get("activeContentRevision")?.as_u64());
    let from_names = std::fs::read_dir(index_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            name.strip_prefix("gen-")?
                .split('-')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .max();
    from_manifest.max(from_names)
}

/// The default index folder of a bundle: `<cache>/kbtools/<folder name>-<hash of its path>`.
pub fn default_index_dir(bundle_root: &Path) -> PathBuf {
    let canonical = bundle_root
        .canonicalize()
        .unwrap_or_else(|_| bundle_root.to_path_buf());
    let mut hasher = Sha256::new();
    hasher.update(canonical.to_string_lossy().as_bytes());
    let hash = hex::encode(&hasher.finalize()[..8]);
    let name: String = canonical
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "bundle".into())
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    let base = dirs::cache_dir().unwrap_or_else(std::env::temp_dir);
    base.join("kbtools").join(format!("{name}-{hash}"))
}

/// What a build reuses of the live generation.
pub(crate) struct Previous {
    pub(crate) manifest: Manifest,
    pub(crate) generation: PathBuf,
    /// What is wrong with its files, if anything: then only its revision numbers are reused.
    pub(crate) damage: Option<IndexError>,
}

/// The live generation of `index_dir`, when it is of this format and its manifest is intact;
/// its files checked at `verify`.
pub(crate) fn load_previous(index_dir: &Path, verify: Verify) -> Option<Previous> {
    let generation = live_generation(index_dir).ok()??;
    let manifest = generation_manifest(index_dir, &generation).ok()?;
    let damage = verify_generation(&generation, &manifest, verify).err();
    Some(Previous {
        manifest,
        generation,
        damage,
    })
}

/// What a progress line says of a damaged index (the error's own text ends with the advice to
/// run `kbtools index`, which is what the caller is doing).
pub(crate) fn damage_line(error: &IndexError) -> String {
    match error {
        IndexError::Corrupt { path, reason } => format!("index at {path} is damaged ({reason})"),
        other => other.to_string(),
    }
}

/// The catalog of a generation folder, memory-mapped and checked.
pub(crate) fn open_catalog(generation: &Path) -> Result<Catalog, IndexError> {
    let path = generation.join(CATALOG_FILE);
    let bytes = catalog::store::Bytes::map(&path).map_err(|e| IndexError::io(&path, e))?;
    Catalog::open(bytes, &path.display().to_string()).map_err(|reason| IndexError::Corrupt {
        path: path.display().to_string(),
        reason,
    })
}

/// File names inside a generation folder.
pub(crate) const CATALOG_FILE: &str = "catalog.bin";
pub(crate) const INGEST_CACHE_FILE: &str = "ingest-cache.bin";
/// The lock a build holds on the generation it writes, until `CURRENT` names it.
pub(crate) const BUILD_LOCK: &str = ".build.lock";

/// What a reader is told when the index answers although its refresh failed with `error`.
pub(crate) fn stale_reason(error: &IndexError, revision: u64) -> String {
    let text = error.to_string();
    let read_only = match error {
        IndexError::Io { source, .. } => source.kind() == std::io::ErrorKind::ReadOnlyFilesystem,
        _ => false,
    } || text.contains("Read-only file system");
    let why = if read_only {
        format!("the index folder is read-only ({text})")
    } else {
        text
    };
    format!(
        "the bundle changed, but the index could not be rebuilt: {why}; answering from the index as built (revision {revision}), which is stale: fix that and run `kbtools index` again"
    )
}

/// An exclusive `flock` on a file: released when dropped, or by the kernel when the process
/// dies, however it dies.
pub(crate) struct FileLock {
    pub(crate) _file: std::fs::File,
}

/// The folder of a generation being built, with its lock: removed when dropped before
/// [`BuildingGeneration::published`] (a build that fails, on a full disk for one, leaves
/// nothing behind; one killed leaves what `remove_leftovers` takes next time).
pub(crate) struct BuildingGeneration {
    pub(crate) dir: PathBuf,
    pub(crate) published: bool,
    pub(crate) _lock: FileLock,
}

impl BuildingGeneration {
    /// The folder was renamed to `dir` (removed there should the build still fail).
    pub(crate) fn moved_to(&mut self, dir: &Path) {
        self.dir = dir.to_path_buf();
    }

    /// `CURRENT` names the folder: it stays.
    pub(crate) fn published(&mut self) {
        self.published = true;
    }
}

impl Drop for BuildingGeneration {
    fn drop(&mut self) {
        if !self.published {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

#[cfg(unix)]
pub(crate) mod flock {
    use rustix::fs::{flock, FlockOperation};

    /// Takes an exclusive lock on `file` without waiting; false when another holds it.
    pub(crate) fn try_exclusive(file: &std::fs::File) -> bool {
        flock(file, FlockOperation::NonBlockingLockExclusive).is_ok()
    }

    /// Takes an exclusive lock on `file`, waiting for it; false when it cannot be taken.
    pub(crate) fn exclusive(file: &std::fs::File) -> bool {
        flock(file, FlockOperation::LockExclusive).is_ok()
    }
}

/// The lock of an index folder taken around creating a generation folder and its
/// [`BUILD_LOCK`], and by [`remove_leftovers`] before it takes a `.tmp` folder without a lock
/// file for a leftover: holding it, such a folder is never one whose build is creating it, but
/// one whose build was killed between the two steps.
pub(crate) const CREATE_LOCK: &str = ".create.lock";

/// The lock a build holds on its index folder from before it reads the live generation until it
/// has published its own: builds of one index folder (a watching server's and a `kbtools index`
/// beside it, two shells) run one after the other, so each numbers its revision from the
/// generation the one before it published, and two generations never share a revision.
pub(crate) const WRITE_LOCK: &str = ".write.lock";

/// The lock file `name` of an index folder, made if missing and never truncated (its content
/// is nothing; its `flock` is the lock).
fn lock_file(index_dir: &Path, name: &str) -> Option<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(index_dir.join(name))
        .ok()
}

/// Takes the write lock of `index_dir` (which must exist), waiting for a build that holds it
/// (`waiting` is called once first, to say so). `None` when the folder cannot hold a lock file
/// (read-only): such a build cannot publish anything either, and an unchanged bundle still
/// answers from it.
pub(crate) fn lock_for_writing(index_dir: &Path, waiting: &mut dyn FnMut()) -> Option<FileLock> {
    let file = lock_file(index_dir, WRITE_LOCK)?;
    #[cfg(unix)]
    {
        if !flock::try_exclusive(&file) {
            waiting();
            if !flock::exclusive(&file) {
                return None;
            }
        }
    }
    #[cfg(not(unix))]
    let _ = waiting;
    Some(FileLock { _file: file })
}

/// Runs `f` holding the creation lock of `index_dir` (which must exist); `None`, without
/// running `f`, when the lock cannot be taken.
pub(crate) fn while_creating<R>(index_dir: &Path, f: impl FnOnce() -> R) -> Option<R> {
    let file = lock_file(index_dir, CREATE_LOCK)?;
    #[cfg(unix)]
    let locked = flock::exclusive(&file);
    #[cfg(not(unix))]
    let locked = false;
    if !locked {
        return None;
    }
    let out = f();
    drop(file);
    Some(out)
}

impl FileLock {
    /// Creates `path` and locks it.
    pub(crate) fn create(path: &Path) -> Result<FileLock, IndexError> {
        let file = std::fs::File::create(path).map_err(|e| IndexError::io(path, e))?;
        #[cfg(unix)]
        if !flock::try_exclusive(&file) {
            return Err(IndexError::io(
                path,
                std::io::Error::other("locked by another build"),
            ));
        }
        Ok(FileLock { _file: file })
    }
}

/// Whether the build that wrote the generation folder `dir` is gone: its lock file exists and
/// can be locked (a running build holds it). `None` when there is no lock file to tell.
pub(crate) fn build_gone(dir: &Path) -> Option<bool> {
    let file = std::fs::File::open(dir.join(BUILD_LOCK)).ok()?;
    #[cfg(unix)]
    {
        Some(flock::try_exclusive(&file))
    }
    #[cfg(not(unix))]
    {
        drop(file);
        None
    }
}

/// Flushes a directory's entries (renames and new files) to disk; best effort.
pub(crate) fn sync_dir(dir: &Path) {
    if let Ok(handle) = std::fs::File::open(dir) {
        let _ = handle.sync_all();
    }
}

/// Makes `to` a copy of the folder `from` and of its folders (hard links where the file
/// system allows, copies otherwise). Tantivy never modifies a file it has written, so linked
/// files stay valid for both generations.
pub(crate) fn link_dir(from: &Path, to: &Path) -> Result<(), IndexError> {
    std::fs::create_dir_all(to).map_err(|e| IndexError::io(to, e))?;
    for entry in std::fs::read_dir(from).map_err(|e| IndexError::io(from, e))? {
        let entry = entry.map_err(|e| IndexError::io(from, e))?;
        let name = entry.file_name();
        let lossy = name.to_string_lossy();
        if lossy.starts_with(".tantivy-") && lossy.ends_with(".lock") {
            continue;
        }
        let source = entry.path();
        let target = to.join(&name);
        let file_type = entry.file_type().map_err(|e| IndexError::io(&source, e))?;
        if file_type.is_dir() {
            link_dir(&source, &target)?;
            continue;
        }
        if !file_type.is_file() {
            continue;
        }
        if std::fs::hard_link(&source, &target).is_err() {
            std::fs::copy(&source, &target).map_err(|e| IndexError::io(&target, e))?;
        }
    }
    // A copy keeps the folder's mode (the files keep theirs: links share it, a copy copies it).
    let mode = std::fs::metadata(from).and_then(|m| super::replica::copy_folder_mode(&m, to));
    mode.map_err(|e| IndexError::io(to, e))
}

pub(crate) mod erased {
    pub trait Json {
        fn to_json(&self) -> Vec<u8>;
    }
    impl<T: serde::Serialize> Json for T {
        fn to_json(&self) -> Vec<u8> {
            let mut bytes = serde_json::to_vec(self).unwrap_or_default();
            bytes.push(b'\n');
            bytes
        }
    }
}

/// Removes what builds killed before they finished left in `index_dir` (module docs), and, when
/// `prune`, the finished generations older than the one `CURRENT` names, as long as it names it
/// (one published meanwhile leaves them to the next build), but `in_use` (the generation the
/// calling build reads from, which a build publishing meanwhile may have made an older one). A
/// folder or file of a build still running is left alone, and so is the generation `CURRENT`
/// names (a build killed just after naming it left its lock file there).
pub(crate) fn remove_leftovers(index_dir: &Path, prune: bool, in_use: Option<&Path>) {
    let Ok(entries) = std::fs::read_dir(index_dir) else {
        return;
    };
    let named = current_generation(index_dir)
        .and_then(|g| g.file_name().map(|n| n.to_string_lossy().into_owned()));
    let old = |entry: &std::fs::DirEntry| {
        entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age.as_secs() > 3600)
    };
    let mut generations: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if let Some(generation) = name
            .strip_prefix("CURRENT.")
            .and_then(|n| n.strip_suffix(".tmp"))
        {
            // Written by a build that holds the lock of the generation it names.
            let holder = [
                index_dir.join(generation),
                index_dir.join(format!("{generation}.tmp")),
            ];
            if holder.iter().all(|dir| build_gone(dir) != Some(false)) {
                let _ = std::fs::remove_file(&path);
            }
            continue;
        }
        if Some(&name) == named.as_ref() || !name.starts_with("gen-") {
            continue;
        }
        if name.ends_with(".tmp") {
            // A build being written, or a killed build's, told apart holding the creation
            // lock: a build makes its folder, then its lock file, then locks it, all under that
            // lock, so outside it a lock file that can be locked, or a folder without one, is
            // a killed build's (or an older kbtools'). Decided without the creation lock, a
            // lock file just made and not yet locked read as a dead build's, and a build lost
            // its folder as it began. When the creation lock cannot be taken, only an old
            // folder is taken for a leftover.
            let leftover = while_creating(index_dir, || match build_gone(&path) {
                Some(gone) => gone,
                None => path.is_dir(),
            })
            .unwrap_or_else(|| old(&entry));
            if leftover {
                let _ = std::fs::remove_dir_all(&path);
            }
            continue;
        }
        match build_gone(&path) {
            // Finished by a build killed before `CURRENT` named it, or after.
            Some(true) => {
                let _ = std::fs::remove_dir_all(&path);
            }
            // Being published right now.
            Some(false) => {}
            None => {
                let modified = entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .unwrap_or(std::time::UNIX_EPOCH);
                generations.push((modified, path));
            }
        }
    }
    if !prune {
        return;
    }
    let Some(live) = named.map(|name| index_dir.join(name)) else {
        return;
    };
    let Ok(published) = std::fs::metadata(&live).and_then(|m| m.modified()) else {
        return;
    };
    for (modified, path) in generations {
        if modified < published
            && Some(path.as_path()) != in_use
            && current_generation(index_dir).as_ref() == Some(&live)
        {
            let _ = std::fs::remove_dir_all(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `*.tmp` generation whose build still holds its lock is left alone; once the lock is
    /// released (the build died), the next clean-up removes it, and the `CURRENT.*.tmp` naming
    /// it.
    #[test]
    fn leftovers_of_a_running_build_stay_and_those_of_a_dead_one_go() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("gen-2-abcd.tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        let lock = FileLock::create(&tmp.join(BUILD_LOCK)).unwrap();
        let current_tmp = dir.path().join("CURRENT.gen-2-abcd.tmp");
        std::fs::write(&current_tmp, "gen-2-abcd").unwrap();
        // Another build's folder that has no lock file yet, or one not yet locked (being
        // created: the creation lock held meanwhile) stays too; one without a lock file that no
        // build is creating (killed between the two steps) goes.
        let fresh = dir.path().join("gen-3-ef01.tmp");
        let fresh_locking = dir.path().join("gen-3-ef02.tmp");
        let killed = dir.path().join("gen-3-dead.tmp");
        std::fs::create_dir_all(&killed).unwrap();
        let (created_tx, created_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let creator = {
            let index_dir = dir.path().to_path_buf();
            let (fresh, fresh_locking) = (fresh.clone(), fresh_locking.clone());
            std::thread::spawn(move || {
                // The two moments a clean-up must not judge: a folder without its lock file,
                // and one whose lock file is made but not yet locked.
                let locks = while_creating(&index_dir, || {
                    std::fs::create_dir_all(&fresh).unwrap();
                    std::fs::create_dir_all(&fresh_locking).unwrap();
                    let file = std::fs::File::create(fresh_locking.join(BUILD_LOCK)).unwrap();
                    created_tx.send(()).unwrap();
                    std::thread::sleep(std::time::Duration::from_millis(200));
                    assert!(flock::try_exclusive(&file), "the clean-up holds the lock");
                    let locking = FileLock { _file: file };
                    (FileLock::create(&fresh.join(BUILD_LOCK)).unwrap(), locking)
                })
                .unwrap();
                done_rx.recv().unwrap();
                drop(locks);
            })
        };
        created_rx.recv().unwrap();
        remove_leftovers(dir.path(), false, None);
        assert!(tmp.is_dir() && current_tmp.is_file());
        assert!(fresh.is_dir() && fresh_locking.is_dir());
        assert!(!killed.exists());
        drop(lock);
        remove_leftovers(dir.path(), false, None);
        assert!(!tmp.exists() && !current_tmp.exists());
        assert!(fresh.is_dir() && fresh_locking.is_dir());
        done_tx.send(()).unwrap();
        creator.join().unwrap();
        remove_leftovers(dir.path(), false, None);
        assert!(!fresh.exists() && !fresh_locking.exists());

        // A build killed after naming its generation in CURRENT left its lock file there: the
        // live generation stays; a finished generation CURRENT never named goes.
        let live = dir.path().join("gen-4-aaaa");
        let orphan = dir.path().join("gen-5-bbbb");
        for generation in [&live, &orphan] {
            std::fs::create_dir_all(generation).unwrap();
            drop(FileLock::create(&generation.join(BUILD_LOCK)).unwrap());
        }
        std::fs::write(dir.path().join("CURRENT"), "gen-4-aaaa").unwrap();
        remove_leftovers(dir.path(), false, None);
        assert!(live.is_dir() && !orphan.exists());
    }

    /// A build's pruning removes the finished generations older than the live one, and nothing
    /// newer (one published meanwhile) nor anything when there is no live generation.
    #[test]
    fn pruning_removes_the_generations_older_than_the_live_one() {
        let dir = tempfile::tempdir().unwrap();
        let now = std::time::SystemTime::now();
        let generation = |name: &str, age_s: u64| {
            let path = dir.path().join(name);
            std::fs::create_dir_all(&path).unwrap();
            std::fs::write(path.join("manifest.json"), "{}").unwrap();
            let time = now - std::time::Duration::from_secs(age_s);
            std::fs::File::open(&path)
                .unwrap()
                .set_modified(time)
                .unwrap();
            path
        };
        let oldest = generation("gen-1-aaaa", 300);
        let older = generation("gen-2-bbbb", 200);
        let live = generation("gen-3-cccc", 100);
        let newer = generation("gen-4-dddd", 0);
        remove_leftovers(dir.path(), true, None);
        assert!(
            oldest.is_dir() && older.is_dir(),
            "no CURRENT: nothing is pruned"
        );
        std::fs::write(dir.path().join("CURRENT"), "gen-3-cccc").unwrap();
        remove_leftovers(dir.path(), false, None);
        assert!(oldest.is_dir() && older.is_dir(), "no pruning asked for");
        // The generation a build reads from stays, even when it is no longer the live one.
        remove_leftovers(dir.path(), true, Some(&older));
        assert!(!oldest.exists() && older.is_dir());
        remove_leftovers(dir.path(), true, None);
        assert!(!older.exists());
        assert!(live.is_dir() && newer.is_dir());
    }
}
