//! Publishing an index for read replicas (`kbtools index --publish DIR`, docs/scaling.md).
//!
//! A published folder is an index folder that needs no bundle: each generation in it carries a
//! copy of the files its catalog reads (`<generation>/bundle/`), so a replica that only has the
//! folder (copied with `rsync`, or on shared storage) answers every tool, and what it reads is
//! exactly what was indexed. The order is the one replicas rely on: the generation folder is
//! written under a temporary name, flushed and renamed into place, and only then does `CURRENT`
//! name it (written aside and renamed over). A replica that reads `CURRENT` finds a complete
//! generation, and switches between requests (`serve::live` with the `server`
//! feature).
//!
//! The previous generations stay for replicas still answering from them (a request holds its
//! snapshot to its end, and a paged client holds a cursor of its revision); the oldest beyond
//! `keep` are removed.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::generations::{
    link_dir, live_generation, open_catalog, sync_dir, valid_generation_name,
};
use crate::error::IndexError;
use crate::ingest::bundle;

/// The folder, inside a published generation, that holds the files its catalog reads.
pub const BUNDLE_COPY: &str = "bundle";

/// What a publish did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Published {
    /// The folder published into.
    pub folder: String,
    /// The generation `CURRENT` names now.
    pub generation: String,
    /// True when it already did (nothing was written).
    pub unchanged: bool,
    /// Bundle files copied, and their bytes.
    pub files: u64,
    pub bytes: u64,
    /// Older generations removed (beyond `keep`).
    pub removed: Vec<String>,
}

/// The bundle folder of a published generation, when it is one.
pub fn published_bundle(generation: &Path) -> Option<PathBuf> {
    let copy = generation.join(BUNDLE_COPY);
    copy.is_dir().then_some(copy)
}

/// Publishes the live generation of `index_dir` (built from `bundle_root`) into `target`, with
/// the bundle files it reads, then names it in `target/CURRENT`; keeps the `keep` newest
/// generations there (at least 2: the new one and the one replicas may still answer from).
pub fn publish(
    index_dir: &Path,
    bundle_root: &Path,
    target: &Path,
    keep: usize,
) -> Result<Published, IndexError> {
    let generation = live_generation(index_dir)?.ok_or_else(|| IndexError::Corrupt {
        path: index_dir.display().to_string(),
        reason: "no index here to publish (CURRENT is missing)".into(),
    })?;
    let name = generation
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| valid_generation_name(n))
        .ok_or_else(|| IndexError::Corrupt {
            path: generation.display().to_string(),
            reason: "the live generation has no generation name".into(),
        })?
        .to_string();
    std::fs::create_dir_all(target).map_err(|e| IndexError::io(target, e))?;
    let mut published = Published {
        folder: target.display().to_string(),
        generation: name.clone(),
        unchanged: false,
        files: 0,
        bytes: 0,
        removed: Vec::new(),
    };
    let live = target.join(&name);
    published.unchanged =
        live.is_dir() && super::current_generation(target).as_deref() == Some(live.as_path());
    if !live.is_dir() {
        let tmp = target.join(format!("{name}.tmp"));
        let copied = copy_generation(&generation, bundle_root, &tmp);
        match copied {
            Ok((files, bytes)) => (published.files, published.bytes) = (files, bytes),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&tmp);
                return Err(e);
            }
        }
        std::fs::rename(&tmp, &live).map_err(|e| IndexError::io(&live, e))?;
        sync_dir(target);
    }
    if !published.unchanged {
        write_current(target, &name)?;
    }
    published.removed = remove_old(target, &name, keep.max(2));
    Ok(published)
}

/// `tmp`: the generation's files (hard links where the file system allows: a generation's files
/// never change) and a copy of each bundle file its catalog reads, checked against the catalog
/// (a file changed since the build would not be what was indexed). Everything flushed.
fn copy_generation(
    generation: &Path,
    bundle_root: &Path,
    tmp: &Path,
) -> Result<(u64, u64), IndexError> {
    if tmp.exists() {
        std::fs::remove_dir_all(tmp).map_err(|e| IndexError::io(tmp, e))?;
    }
    link_dir(generation, tmp)?;
    let catalog = open_catalog(generation)?;
    let copy_root = tmp.join(BUNDLE_COPY);
    let (mut files, mut bytes) = (0u64, 0u64);
    for file in catalog.iter_files() {
        let Some(relative) = &file.disk else {
            continue;
        };
        let content = read_indexed(bundle_root, relative, file)?;
        let to = copy_root.join(relative);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(|e| IndexError::io(parent, e))?;
        }
        let mut out = std::fs::File::create(&to).map_err(|e| IndexError::io(&to, e))?;
        out.write_all(&content)
            .and_then(|()| if ONE_FLUSH { Ok(()) } else { out.sync_all() })
            .map_err(|e| IndexError::io(&to, e))?;
        files += 1;
        bytes += content.len() as u64;
    }
    // The bundle's exclusions travel with it: a replica reads a generated file without what it
    // says of the pages they leave out (ingest::bundle::exclusions), as the bundle's server does.
    let rules = bundle_root.join(".kbignore");
    if rules.is_file() {
        std::fs::create_dir_all(&copy_root).map_err(|e| IndexError::io(&copy_root, e))?;
        let to = copy_root.join(".kbignore");
        std::fs::copy(&rules, &to).map_err(|e| IndexError::io(&to, e))?;
    }
    flush(tmp, &copy_root)?;
    Ok((files, bytes))
}

/// Whether one `syncfs` flushes a publish (Linux) instead of an `fsync` per file: 5,294 SciFact
/// files took 1.9–2.1 s to publish with one `fsync` each.
const ONE_FLUSH: bool = cfg!(target_os = "linux");

/// Everything written under `tmp` on disk before it is renamed into place: one `syncfs` of its
/// file system on Linux; elsewhere the files were flushed as written, and the folders are now.
fn flush(tmp: &Path, copy_root: &Path) -> Result<(), IndexError> {
    #[cfg(target_os = "linux")]
    {
        let _ = copy_root;
        let dir = std::fs::File::open(tmp).map_err(|e| IndexError::io(tmp, e))?;
        rustix::fs::syncfs(&dir).map_err(|e| IndexError::io(tmp, e.into()))
    }
    #[cfg(not(target_os = "linux"))]
    {
        sync_tree(copy_root);
        sync_dir(tmp);
        Ok(())
    }
}

/// The bytes of `relative` under `bundle_root`, opened beneath it, when they are what the
/// catalog recorded.
fn read_indexed(
    bundle_root: &Path,
    relative: &str,
    file: &super::catalog::CatalogFile,
) -> Result<Vec<u8>, IndexError> {
    use std::io::Read;
    let path = bundle_root.join(relative);
    let mut handle =
        bundle::beneath::open_under(bundle_root, relative).map_err(|e| IndexError::io(&path, e))?;
    let mut content = Vec::new();
    handle
        .read_to_end(&mut content)
        .map_err(|e| IndexError::io(&path, e))?;
    if !file.is_indexed(&content) {
        return Err(IndexError::Corrupt {
            path: path.display().to_string(),
            reason: "it changed after the index was built; run `kbtools index` again, then publish"
                .into(),
        });
    }
    Ok(content)
}

/// Flushes every folder under `dir` (their entries: the files were flushed as written).
#[cfg(not(target_os = "linux"))]
fn sync_tree(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                sync_tree(&entry.path());
            }
        }
    }
    sync_dir(dir);
}

/// `target/CURRENT` naming `name`: written aside, flushed, renamed over, the folder flushed.
fn write_current(target: &Path, name: &str) -> Result<(), IndexError> {
    let tmp = target.join(format!("CURRENT.{name}.tmp"));
    let current = target.join("CURRENT");
    let written = std::fs::File::create(&tmp)
        .and_then(|mut f| {
            f.write_all(name.as_bytes())?;
            f.sync_all()
        })
        .and_then(|()| std::fs::rename(&tmp, &current));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(IndexError::io(&current, e));
    }
    sync_dir(target);
    Ok(())
}

/// Removes the generations of `target` beyond the `keep` newest (by the time they were
/// published), never `live`; their names.
fn remove_old(target: &Path, live: &str, keep: usize) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(target) else {
        return Vec::new();
    };
    let mut others: Vec<(std::time::SystemTime, String)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let dir = e.file_type().ok()?.is_dir();
            (dir && name != live && valid_generation_name(&name)).then_some(())?;
            let at = e.metadata().and_then(|m| m.modified()).ok()?;
            Some((at, name))
        })
        .collect();
    others.sort_by(|a, b| b.cmp(a));
    others
        .into_iter()
        .skip(keep.saturating_sub(1))
        .filter(|(_, name)| std::fs::remove_dir_all(target.join(name)).is_ok())
        .map(|(_, name)| name)
        .collect()
}
