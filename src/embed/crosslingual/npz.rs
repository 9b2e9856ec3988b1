//! The cross-language model's weights file (`weights.npz`): a zip of NumPy `.npy` arrays, each
//! a header (magic `\x93NUMPY`, version, header length, a Python dict literal with `descr`,
//! `fortran_order` and `shape`) and the array's bytes in C order. Only what the model holds is
//! read: little-endian `f4` and `f8`, `u1` and `i1`.

use std::collections::HashMap;
use std::io::Read;

use super::CrossFormatError;

/// An array's element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    F32,
    F64,
    U8,
    I8,
}

impl Dtype {
    fn size(self) -> usize {
        match self {
            Dtype::F32 => 4,
            Dtype::F64 => 8,
            Dtype::U8 | Dtype::I8 => 1,
        }
    }
}

/// One array of the file.
#[derive(Debug, Clone)]
pub struct Array {
    pub dtype: Dtype,
    pub shape: Vec<usize>,
    pub bytes: Vec<u8>,
}

impl Array {
    /// Its elements as `f32` (an `f8` array converted), or why not.
    pub(crate) fn to_f32(&self, name: &str) -> Result<Vec<f32>, CrossFormatError> {
        match self.dtype {
            Dtype::F32 => Ok(self
                .bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect()),
            Dtype::F64 => Ok(self
                .bytes
                .chunks_exact(8)
                .map(|b| {
                    f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as f32
                })
                .collect()),
            _ => Err(CrossFormatError(format!(
                "weights.npz: `{name}` holds integers where floats are expected"
            ))),
        }
    }
}

fn bad(name: &str, why: &str) -> CrossFormatError {
    CrossFormatError(format!("weights.npz: `{name}`: {why}"))
}

/// Parses one `.npy` file.
fn parse_npy(name: &str, data: &[u8]) -> Result<Array, CrossFormatError> {
    if data.get(..6) != Some(b"\x93NUMPY") {
        return Err(bad(name, "not a NumPy array (no \\x93NUMPY magic)"));
    }
    let major = *data
        .get(6)
        .ok_or_else(|| bad(name, "the header ends early"))?;
    let (len, start) = match major {
        1 => (
            data.get(8..10)
                .map(|b| usize::from(u16::from_le_bytes([b[0], b[1]]))),
            10,
        ),
        2 | 3 => (
            data.get(8..12)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize),
            12,
        ),
        v => return Err(bad(name, &format!("unknown .npy version {v}"))),
    };
    let len = len.ok_or_else(|| bad(name, "the header ends early"))?;
    let header = data
        .get(start..start + len)
        .and_then(|h| std::str::from_utf8(h).ok())
        .ok_or_else(|| bad(name, "the header ends early or is not text"))?;
    let field = |key: &str| -> Option<&str> {
        let at = header.find(&format!("'{key}'"))? + key.len() + 2;
        let rest = header[at..].trim_start().strip_prefix(':')?.trim_start();
        Some(rest)
    };
    let descr = field("descr")
        .and_then(|r| r.strip_prefix('\''))
        .and_then(|r| r.split('\'').next())
        .ok_or_else(|| bad(name, "the header has no descr"))?;
    let dtype = match descr {
        "<f4" => Dtype::F32,
        "<f8" => Dtype::F64,
        "|u1" | "<u1" => Dtype::U8,
        "|i1" | "<i1" => Dtype::I8,
        other => return Err(bad(name, &format!("element type {other} is not supported"))),
    };
    if field("fortran_order").is_some_and(|r| r.starts_with("True")) {
        return Err(bad(name, "Fortran order is not supported"));
    }
    let shape_text = field("shape")
        .and_then(|r| r.strip_prefix('('))
        .and_then(|r| r.split(')').next())
        .ok_or_else(|| bad(name, "the header has no shape"))?;
    let shape = shape_text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| bad(name, "the shape is not a tuple of integers"))?;
    let count = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .and_then(|n| n.checked_mul(dtype.size()))
        .ok_or_else(|| bad(name, "the shape is too large"))?;
    let bytes = data
        .get(start + len..start + len + count)
        .ok_or_else(|| bad(name, "the array ends early"))?;
    Ok(Array {
        dtype,
        shape,
        bytes: bytes.to_vec(),
    })
}

/// Every array of an `.npz` file, by name (without `.npy`), read from `npz` an entry at a time.
pub fn read(npz: impl Read + std::io::Seek) -> Result<HashMap<String, Array>, CrossFormatError> {
    let mut zip = zip::ZipArchive::new(npz)
        .map_err(|e| CrossFormatError(format!("weights.npz is not a readable zip: {e}")))?;
    let mut out = HashMap::new();
    for i in 0..zip.len() {
        let mut entry = zip
            .by_index(i)
            .map_err(|e| CrossFormatError(format!("weights.npz: entry {i}: {e}")))?;
        let Some(name) = entry.name().strip_suffix(".npy").map(str::to_string) else {
            continue;
        };
        let mut data = Vec::with_capacity(entry.size().min(1 << 28) as usize);
        entry
            .read_to_end(&mut data)
            .map_err(|e| bad(&name, &format!("cannot be inflated: {e}")))?;
        out.insert(name.clone(), parse_npy(&name, &data)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(header: &str, body: &[u8]) -> Vec<u8> {
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn reads_shapes_and_types_and_refuses_what_it_cannot_read() {
        let body: Vec<u8> = [1.5f32, -2.0]
            .iter()
            .flat_map(|f| f.to_le_bytes())
            .collect();
        let a = parse_npy(
            "a",
            &npy(
                "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                &body,
            ),
        )
        .unwrap();
        assert_eq!((a.dtype, a.shape.clone()), (Dtype::F32, vec![2]));
        assert_eq!(a.to_f32("a").unwrap(), vec![1.5, -2.0]);
        let s = parse_npy(
            "s",
            &npy(
                "{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
                &1e-12f64.to_le_bytes(),
            ),
        )
        .unwrap();
        assert!(s.shape.is_empty());
        assert_eq!(s.to_f32("s").unwrap(), vec![1e-12f32]);
        let short = parse_npy(
            "m",
            &npy(
                "{'descr': '|u1', 'fortran_order': False, 'shape': (3, 2), }",
                &[0; 5],
            ),
        )
        .unwrap_err();
        assert!(
            short.to_string().contains("`m`: the array ends early"),
            "{short}"
        );
        let other = parse_npy(
            "c",
            &npy(
                "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
                &[0; 8],
            ),
        )
        .unwrap_err();
        assert!(
            other.to_string().contains("<c8 is not supported"),
            "{other}"
        );
        assert!(parse_npy("x", b"PK\x03\x04").is_err());
    }
}
