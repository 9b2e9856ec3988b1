//! The compact on-disk encoding of kbtools' own files (catalog, ingest cache): postcard,
//! LZ4-compressed with the uncompressed size first.

use serde::{Deserialize, Serialize};

/// Encodes `value` compactly.
pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, String> {
    let bytes = postcard::to_stdvec(value).map_err(|e| format!("cannot encode: {e}"))?;
    Ok(lz4_flex::compress_prepend_size(&bytes))
}

/// Decodes what [`encode`] wrote; a damaged file is an error, never a panic.
pub fn decode<T: for<'de> Deserialize<'de>>(compressed: &[u8]) -> Result<T, String> {
    let bytes = lz4_flex::decompress_size_prepended(compressed)
        .map_err(|e| format!("cannot decompress: {e}"))?;
    postcard::from_bytes(&bytes).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_damage() {
        let value = vec![("a".to_string(), 1u64), ("b".to_string(), 2)];
        let bytes = encode(&value).unwrap();
        assert_eq!(decode::<Vec<(String, u64)>>(&bytes).unwrap(), value);
        assert!(decode::<Vec<(String, u64)>>(&bytes[..bytes.len() / 2]).is_err());
        assert!(decode::<Vec<(String, u64)>>(b"").is_err());
        // A size prefix claiming gigabytes must not allocate them.
        assert!(decode::<Vec<(String, u64)>>(&[0xff, 0xff, 0xff, 0x7f, 0]).is_err());
    }
}
