//! The model's SentencePiece unigram tokenizer, as the wheel's engine runs it: each code point
//! through the normalization map, runs of spaces collapsed, a metaspace (`▁`) before the text
//! unless it starts with a space, every space a metaspace, then the most probable split into
//! vocabulary pieces (Viterbi over code points, pieces up to the longest piece's bytes), a code
//! point no piece covers becoming the unknown piece. The ids are tested against ones recorded
//! from the engine (`fixtures/embed/`).

use super::format::Vocabulary;

const METASPACE: char = '\u{2581}';

pub(crate) struct Tokenizer {
    vocabulary: Vocabulary,
    /// The score of an unknown code point: below every piece's.
    unknown_score: f32,
    longest_piece: usize,
}

impl Tokenizer {
    pub fn new(vocabulary: Vocabulary) -> Tokenizer {
        let lowest = vocabulary
            .scores
            .iter()
            .copied()
            .fold(f32::INFINITY, f32::min);
        let longest_piece = vocabulary.pieces.iter().map(|p| p.len()).max().unwrap_or(1);
        Tokenizer {
            unknown_score: if lowest.is_finite() {
                lowest - 10.0
            } else {
                -10.0
            },
            longest_piece: longest_piece.max(1),
            vocabulary,
        }
    }

    pub(crate) fn bos(&self) -> u32 {
        self.vocabulary.bos
    }

    pub(crate) fn eos(&self) -> u32 {
        self.vocabulary.eos
    }

    pub(crate) fn unk(&self) -> u32 {
        self.vocabulary.unk
    }

    /// The normalized text with metaspaces: what the pieces are matched against.
    fn normalize(&self, text: &str) -> String {
        let map = &self.vocabulary.normalization;
        let mut chars: Vec<char> = Vec::with_capacity(text.len());
        for c in text.chars() {
            match map.binary_search_by_key(&(c as u32), |(cp, _)| *cp) {
                Ok(i) => chars.extend(map[i].1.iter().filter_map(|&cp| char::from_u32(cp))),
                Err(_) => chars.push(c),
            }
        }
        chars.dedup_by(|b, a| *a == ' ' && *b == ' ');
        let mut out = String::with_capacity(chars.len() * 3 + 3);
        if chars.first() != Some(&' ') {
            out.push(METASPACE);
        }
        out.extend(chars.iter().map(|&c| if c == ' ' { METASPACE } else { c }));
        out
    }

    /// The content token ids of `text` (no bos or eos).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        self.split(&self.normalize(text))
    }

    /// The most probable split of a normalized text (metaspaces in place) into pieces.
    pub fn split(&self, normalized: &str) -> Vec<u32> {
        let bytes = normalized.as_bytes();
        // Byte offsets of the code points, and the end.
        let starts: Vec<usize> = normalized
            .char_indices()
            .map(|(i, _)| i)
            .chain([bytes.len()])
            .collect();
        let n = starts.len() - 1;
        // best[e]: the best score of a split of the first e code points; from[e]: where its
        // last piece starts and which piece it is (None: the unknown piece).
        let mut best = vec![f32::NEG_INFINITY; n + 1];
        let mut from: Vec<(u32, Option<u32>)> = vec![(0, None); n + 1];
        best[0] = 0.0;
        for i in 0..n {
            if best[i] == f32::NEG_INFINITY {
                continue;
            }
            let begin = starts[i];
            for e in i + 1..=n {
                let len = starts[e] - begin;
                if len > self.longest_piece {
                    break;
                }
                if let Some(&id) = self.vocabulary.ids.get(&bytes[begin..starts[e]]) {
                    if id == self.vocabulary.unk {
                        continue;
                    }
                    let score = best[i] + self.vocabulary.scores[id as usize];
                    if score > best[e] {
                        best[e] = score;
                        from[e] = (i as u32, Some(id));
                    }
                }
            }
            let unknown = best[i] + self.unknown_score;
            if unknown > best[i + 1] {
                best[i + 1] = unknown;
                from[i + 1] = (i as u32, None);
            }
        }
        let mut ids = Vec::new();
        let mut at = n;
        while at > 0 {
            let (start, id) = from[at];
            ids.push(id.unwrap_or(self.vocabulary.unk));
            at = start as usize;
        }
        ids.reverse();
        ids
    }
}
