//! The cross-language model's tokenizer, read from its SentencePiece model file (`sp.model`, a
//! `ModelProto` protobuf): the pieces with their scores and types, and the normalizer spec
//! (`nmt_nfkc`: a precompiled character map, a darts-clone double-array trie from byte strings
//! to replacement strings). A text is normalized as SentencePiece does (longest match in the
//! map at each byte, else the character itself; leading, trailing and repeated spaces dropped;
//! a metaspace before the text and for every space), then split by the unigram Viterbi of
//! `crate::embed::tokenizer::Tokenizer::split`. Checked against the reference's ids
//! (`fixtures/crosslingual/`).

use std::collections::HashMap;

use super::CrossFormatError;
use crate::embed::format::Vocabulary;
use crate::embed::tokenizer::Tokenizer;

const METASPACE: &str = "\u{2581}";

/// The fields of the protobuf messages this reads (`sentencepiece_model.proto`).
const MODEL_PIECES: u32 = 1;
const MODEL_NORMALIZER: u32 = 3;
const PIECE_TEXT: u32 = 1;
const PIECE_SCORE: u32 = 2;
const PIECE_TYPE: u32 = 3;
const NORMALIZER_CHARSMAP: u32 = 2;
const NORMALIZER_DUMMY_PREFIX: u32 = 3;
const NORMALIZER_EXTRA_SPACES: u32 = 4;
const NORMALIZER_ESCAPE_SPACES: u32 = 5;

/// Piece types (`SentencePiece.Type`) the Viterbi never matches in text.
const TYPE_UNKNOWN: u64 = 2;
const TYPE_CONTROL: u64 = 3;

/// A protobuf field's value.
enum Value<'a> {
    Varint(u64),
    Fixed32(u32),
    Bytes(&'a [u8]),
}

fn truncated(what: &'static str) -> CrossFormatError {
    CrossFormatError(format!("sp.model: {what} ends early: the file is damaged"))
}

fn varint(data: &[u8], at: &mut usize) -> Result<u64, CrossFormatError> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *data.get(*at).ok_or_else(|| truncated("a varint"))?;
        *at += 1;
        value |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(CrossFormatError("sp.model: a varint is too long".into()))
}

/// The fields of one message, in order.
fn fields(data: &[u8]) -> Result<Vec<(u32, Value<'_>)>, CrossFormatError> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let key = varint(data, &mut at)?;
        let field = (key >> 3) as u32;
        let value = match key & 7 {
            0 => Value::Varint(varint(data, &mut at)?),
            1 => {
                at = at
                    .checked_add(8)
                    .filter(|&e| e <= data.len())
                    .ok_or_else(|| truncated("a 64-bit field"))?;
                continue;
            }
            2 => {
                let len = varint(data, &mut at)? as usize;
                let end = at
                    .checked_add(len)
                    .filter(|&e| e <= data.len())
                    .ok_or_else(|| truncated("a length-delimited field"))?;
                let bytes = &data[at..end];
                at = end;
                Value::Bytes(bytes)
            }
            5 => {
                let bytes = data
                    .get(at..at + 4)
                    .ok_or_else(|| truncated("a 32-bit field"))?;
                at += 4;
                Value::Fixed32(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
            }
            wire => {
                return Err(CrossFormatError(format!(
                    "sp.model: unknown protobuf wire type {wire}: not a SentencePiece model"
                )))
            }
        };
        out.push((field, value));
    }
    Ok(out)
}

/// The precompiled character map: a darts-clone double array over byte strings, whose values
/// are offsets of NUL-terminated replacements in `replacements`.
struct CharsMap {
    units: Vec<u32>,
    replacements: Vec<u8>,
}

impl CharsMap {
    fn parse(blob: &[u8]) -> Result<CharsMap, CrossFormatError> {
        if blob.is_empty() {
            return Ok(CharsMap {
                units: Vec::new(),
                replacements: Vec::new(),
            });
        }
        let size = blob
            .get(..4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .ok_or_else(|| truncated("the character map"))?;
        let trie = blob
            .get(4..4 + size)
            .filter(|_| size % 4 == 0)
            .ok_or_else(|| truncated("the character map's trie"))?;
        Ok(CharsMap {
            units: trie
                .chunks_exact(4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            replacements: blob[4 + size..].to_vec(),
        })
    }

    /// Where a unit's children start, relative to its position.
    fn offset(unit: u32) -> usize {
        ((unit >> 10) << ((unit & 0x200) >> 6)) as usize
    }

    /// The longest key that `bytes` starts with: its length and replacement.
    fn longest(&self, bytes: &[u8]) -> Option<(usize, &[u8])> {
        let mut node = Self::offset(*self.units.first()?);
        let mut best = None;
        for (i, &c) in bytes.iter().enumerate() {
            node ^= usize::from(c);
            let Some(&unit) = self.units.get(node) else {
                break;
            };
            // A leaf's high bit never equals a label.
            if unit & 0x8000_00ff != u32::from(c) {
                break;
            }
            node ^= Self::offset(unit);
            if unit & 0x100 != 0 {
                let Some(&leaf) = self.units.get(node) else {
                    break;
                };
                best = Some((i + 1, (leaf & 0x7fff_ffff) as usize));
            }
        }
        let (len, value) = best?;
        let rest = self.replacements.get(value..)?;
        let end = rest.iter().position(|&b| b == 0)?;
        Some((len, &rest[..end]))
    }
}

/// The cross-language model's tokenizer.
pub(crate) struct SpmTokenizer {
    charsmap: CharsMap,
    dummy_prefix: bool,
    extra_spaces: bool,
    escape_spaces: bool,
    viterbi: Tokenizer,
}

impl SpmTokenizer {
    pub fn parse(model: &[u8]) -> Result<SpmTokenizer, CrossFormatError> {
        let mut pieces: Vec<Box<[u8]>> = Vec::new();
        let mut scores = Vec::new();
        let mut ids: HashMap<Box<[u8]>, u32, rustc_hash::FxBuildHasher> = HashMap::default();
        let mut unk = None;
        let mut normalizer: Option<&[u8]> = None;
        for (field, value) in fields(model)? {
            match (field, value) {
                (MODEL_PIECES, Value::Bytes(piece)) => {
                    let (mut text, mut score, mut kind) = (&[][..], 0.0f32, 1u64);
                    for (f, v) in fields(piece)? {
                        match (f, v) {
                            (PIECE_TEXT, Value::Bytes(b)) => text = b,
                            (PIECE_SCORE, Value::Fixed32(s)) => score = f32::from_bits(s),
                            (PIECE_TYPE, Value::Varint(t)) => kind = t,
                            _ => {}
                        }
                    }
                    let id = pieces.len() as u32;
                    if kind == TYPE_UNKNOWN && unk.is_none() {
                        unk = Some(id);
                    }
                    if kind != TYPE_UNKNOWN && kind != TYPE_CONTROL {
                        ids.entry(text.into()).or_insert(id);
                    }
                    pieces.push(text.into());
                    scores.push(score);
                }
                (MODEL_NORMALIZER, Value::Bytes(spec)) => normalizer = Some(spec),
                _ => {}
            }
        }
        if pieces.is_empty() {
            return Err(CrossFormatError(
                "sp.model has no pieces: not a SentencePiece model".into(),
            ));
        }
        let (mut charsmap, mut dummy_prefix, mut extra_spaces, mut escape_spaces) =
            (CharsMap::parse(&[])?, true, true, true);
        for (f, v) in fields(normalizer.unwrap_or_default())? {
            match (f, v) {
                (NORMALIZER_CHARSMAP, Value::Bytes(b)) => charsmap = CharsMap::parse(b)?,
                (NORMALIZER_DUMMY_PREFIX, Value::Varint(v)) => dummy_prefix = v != 0,
                (NORMALIZER_EXTRA_SPACES, Value::Varint(v)) => extra_spaces = v != 0,
                (NORMALIZER_ESCAPE_SPACES, Value::Varint(v)) => escape_spaces = v != 0,
                _ => {}
            }
        }
        let piece_id = |name: &[u8]| pieces.iter().position(|p| &**p == name).map(|i| i as u32);
        let vocabulary = Vocabulary {
            bos: piece_id(b"<s>").unwrap_or(1),
            eos: piece_id(b"</s>").unwrap_or(2),
            unk: unk.unwrap_or(0),
            normalization: Vec::new(),
            pieces,
            scores,
            ids,
        };
        Ok(SpmTokenizer {
            charsmap,
            dummy_prefix,
            extra_spaces,
            escape_spaces,
            viterbi: Tokenizer::new(vocabulary),
        })
    }

    /// `text` as the pieces are matched against: normalized, spaces as metaspaces.
    pub(crate) fn normalize(&self, text: &str) -> String {
        let bytes = text.as_bytes();
        // The replacement of what starts at `at`, and the bytes it takes.
        let next = |at: usize| -> (&[u8], usize) {
            if let Some((len, replacement)) = self.charsmap.longest(&bytes[at..]) {
                return (replacement, len);
            }
            let len = text[at..].chars().next().map_or(1, char::len_utf8);
            (&bytes[at..at + len], len)
        };
        let mut at = 0;
        if self.extra_spaces {
            while at < bytes.len() {
                let (piece, len) = next(at);
                if piece != b" " {
                    break;
                }
                at += len;
            }
        }
        let mut out: Vec<u8> = Vec::with_capacity(bytes.len() + 3);
        if at >= bytes.len() {
            return String::new();
        }
        let space: &[u8] = if self.escape_spaces {
            METASPACE.as_bytes()
        } else {
            b" "
        };
        if self.dummy_prefix {
            out.extend_from_slice(space);
        }
        let mut after_space = self.extra_spaces;
        while at < bytes.len() {
            let (mut piece, len) = next(at);
            at += len;
            if self.extra_spaces && after_space {
                while let [b' ', rest @ ..] = piece {
                    piece = rest;
                }
            }
            let Some(&last) = piece.last() else {
                continue;
            };
            for &b in piece {
                if b == b' ' {
                    out.extend_from_slice(space);
                } else {
                    out.push(b);
                }
            }
            after_space = last == b' ';
        }
        if self.extra_spaces {
            while out.ends_with(space) {
                out.truncate(out.len() - space.len());
            }
        }
        // The replacements are UTF-8 in a well-formed map; a damaged one loses only its bad
        // bytes.
        String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into())
    }

    /// The ids of `text`: bos, its pieces (the unknown piece for a text that normalizes to
    /// nothing), eos.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let normalized = self.normalize(text);
        let mut ids = vec![self.viterbi.bos()];
        if normalized.is_empty() {
            ids.push(self.unk());
        } else {
            ids.extend(self.viterbi.split(&normalized));
        }
        ids.push(self.viterbi.eos());
        ids
    }

    fn unk(&self) -> u32 {
        self.viterbi.unk()
    }
}
