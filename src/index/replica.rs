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
use crate::ingest::bundle::beneath::BundleRoot;

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

/// Whether `generation` is a published one: it has a `bundle/` entry (of any kind: one that is
/// not a plain folder is refused when it is opened, never read past).
pub fn is_published(generation: &Path) -> bool {
    std::fs::symlink_metadata(generation.join(BUNDLE_COPY)).is_ok()
}

/// The copy of the bundle a published generation carries, opened following no link at any
/// step, from the index folder down (a replica reads nothing outside its published folder):
/// `None` when `generation` is not a published one, an error when its `bundle/` or the
/// generation folder is not a plain folder.
pub fn open_copy(generation: &Path) -> Result<Option<BundleRoot>, IndexError> {
    if !is_published(generation) {
        return Ok(None);
    }
    let copy = generation.join(BUNDLE_COPY);
    let refused = |why: String| IndexError::Corrupt {
        path: copy.display().to_string(),
        reason: format!(
            "its copy of the bundle cannot be opened as a folder of the generation ({why}); \
             a published generation's bundle/ is a folder, never a link: publish it again"
        ),
    };
    let (Some(index_dir), Some(name)) = (generation.parent(), generation.file_name()) else {
        return Err(refused("no generation folder".into()));
    };
    BundleRoot::open_linkless(index_dir, &Path::new(name).join(BUNDLE_COPY))
        .map(Some)
        .map_err(|e| refused(e.to_string()))
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
    check_target(bundle_root, index_dir, target)?;
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

/// Refuses a folder to publish into that would take part in what is published: the bundle
/// itself or a folder inside it (each later build would index the published copies), a folder
/// that holds the bundle (generations and `CURRENT` written, and old generations removed, among
/// the folders beside it), or the index folder itself (which is the builder's).
pub fn check_target(bundle_root: &Path, index_dir: &Path, target: &Path) -> Result<(), IndexError> {
    let bundle = resolved(bundle_root);
    let folder = resolved(target);
    let shown = target.display();
    let beside = match (bundle.parent(), bundle.file_name()) {
        (Some(parent), Some(name)) => {
            let mut name = name.to_os_string();
            name.push("-published");
            format!(" (for example {})", parent.join(name).display())
        }
        _ => String::new(),
    };
    let why = if folder == bundle {
        format!(
            "the publish folder {shown} is the bundle itself: each later build would index the \
             published copies"
        )
    } else if folder.starts_with(&bundle) {
        format!(
            "the publish folder {shown} is inside the bundle {}: each later build would index \
             the published copies",
            bundle.display()
        )
    } else if bundle.starts_with(&folder) {
        format!(
            "the publish folder {shown} holds the bundle {}: a publish writes generations and \
             CURRENT there and removes old generations beside the bundle",
            bundle.display()
        )
    } else if folder == resolved(index_dir) {
        format!("the publish folder {shown} is the index folder itself, which is the builder's")
    } else {
        return Ok(());
    };
    Err(IndexError::Bundle(format!(
        "{why}: publish into a folder of its own, outside the bundle{beside}"
    )))
}

/// `path` made absolute with its links resolved as far as it exists (the rest, not yet made,
/// appended as written, `..` taken lexically).
fn resolved(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    let mut base = loop {
        if let Ok(canonical) = existing.canonicalize() {
            break canonical;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => break existing.to_path_buf(),
        }
    };
    for step in rest.iter().rev() {
        match step.to_str() {
            Some("..") => {
                base.pop();
            }
            Some(".") => {}
            _ => base.push(step),
        }
    }
    base
}

/// `tmp`: the generation's files (hard links where the file system allows: a generation's files
/// never change) and a copy of each bundle file its catalog reads, checked against the catalog
/// (a file changed since the build would not be what was indexed), each file and folder with the
/// mode of the bundle's (a page only its owner reads stays so on every replica `rsync -a`
/// copies it to). Everything flushed.
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
    // The copy's folders, relative to its root (the root itself is the empty path), made
    // owner-only and given the bundle's modes once filled.
    let mut folders = std::collections::BTreeSet::from([PathBuf::new()]);
    make_private_dir(&copy_root)?;
    let (mut files, mut bytes) = (0u64, 0u64);
    for file in catalog.iter_files() {
        let Some(relative) = &file.disk else {
            continue;
        };
        let (content, mode) = read_indexed(bundle_root, relative, file)?;
        let mut folder = PathBuf::new();
        for step in Path::new(relative)
            .parent()
            .into_iter()
            .flat_map(Path::components)
        {
            folder.push(step);
            if folders.insert(folder.clone()) {
                make_private_dir(&copy_root.join(&folder))?;
            }
        }
        let to = copy_root.join(relative);
        let mut out = create_private_file(&to).map_err(|e| IndexError::io(&to, e))?;
        out.write_all(&content)
            .and_then(|()| set_mode(&out, mode))
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
    // Deepest first: a folder whose mode takes away its owner's writing is filled already.
    for folder in folders.iter().rev() {
        let to = copy_root.join(folder);
        if let Ok(source) = std::fs::metadata(bundle_root.join(folder)) {
            copy_folder_mode(&source, &to).map_err(|e| IndexError::io(&to, e))?;
        }
    }
    flush(tmp, &copy_root)?;
    Ok((files, bytes))
}

/// A folder only its owner may enter, until its files are in and it takes its source's mode.
fn make_private_dir(path: &Path) -> Result<(), IndexError> {
    #[cfg(unix)]
    let builder = {
        let mut builder = std::fs::DirBuilder::new();
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder
    };
    #[cfg(not(unix))]
    let builder = std::fs::DirBuilder::new();
    builder.create(path).map_err(|e| IndexError::io(path, e))
}

/// A new file only its owner may read, until it takes its source's mode.
fn create_private_file(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// Gives `file` the permission bits `mode` (`None`: left as made).
fn set_mode(file: &std::fs::File, mode: Option<u32>) -> std::io::Result<()> {
    #[cfg(unix)]
    if let Some(mode) = mode {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(mode & 0o777))?;
    }
    #[cfg(not(unix))]
    let _ = (file, mode);
    Ok(())
}

/// Gives the folder `to` the permission bits of `source`'s metadata, its owner's kept (so that a
/// later publish can remove it).
pub(crate) fn copy_folder_mode(source: &std::fs::Metadata, to: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = (source.permissions().mode() & 0o777) | 0o700;
        std::fs::set_permissions(to, std::fs::Permissions::from_mode(mode))
    }
    #[cfg(not(unix))]
    {
        let _ = (source, to);
        Ok(())
    }
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
/// catalog recorded, and the file's permission bits (where there are).
fn read_indexed(
    bundle_root: &Path,
    relative: &str,
    file: &super::catalog::CatalogFile,
) -> Result<(Vec<u8>, Option<u32>), IndexError> {
    use std::io::Read;
    let path = bundle_root.join(relative);
    let mut handle =
        bundle::beneath::open_under(bundle_root, relative).map_err(|e| IndexError::io(&path, e))?;
    let meta = handle.metadata().map_err(|e| IndexError::io(&path, e))?;
    #[cfg(unix)]
    let mode = Some(std::os::unix::fs::PermissionsExt::mode(&meta.permissions()));
    #[cfg(not(unix))]
    let mode = {
        let _ = meta;
        None
    };
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
    Ok((content, mode))
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
