//! The encoder: a 12-layer BERT (post-norm, GELU, mean pooling). Its four weight matrices a
//! layer run in one of two [`Precision`]s: as 8-bit integer products over the 4-bit weights as
//! the file holds them ([`super::int8`], on any x86-64 CPU with AVX2 in an optimized build), or
//! in f32 over the weights dequantized once at load, through the `gemm` crate (elsewhere, and in
//! test builds, whose unoptimized intrinsics would be a call each). The tokens of a whole batch
//! of passages are one matrix, so each weight matrix is one product per layer (Q, K and V
//! fused into one); attention is two f32 GEMMs per passage and head over strided views, with no
//! copies. Batches run on `threads` scoped threads, each its own products (no pool, no
//! spinning: a thread with nothing left ends); a batch too small to share runs its products on
//! the rayon pool instead (one short query).

use gemm::Parallelism;

use super::format::{self, FormatError, ModelFile, Shape, Q4_BLOCK, Q4_BLOCK_BYTES};
use super::int8::{self, Kernel, Q4Matrix, Q8Rows};
use super::{activations, attention};

/// How the encoder multiplies by its weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// 8-bit products from the 4-bit weights, on this kernel ([`super::int8`]).
    Int8(Kernel),
    /// f32 GEMMs over the dequantized weights.
    F32,
}

impl Precision {
    /// What this build on this CPU runs best: the integer products where a SIMD kernel runs
    /// them (AVX-512 VNNI or AVX2) in an optimized build; f32 GEMMs elsewhere (their kernels
    /// use the SIMD of every CPU `gemm` knows) and in test builds.
    pub fn detect() -> Precision {
        match Kernel::detect() {
            Kernel::Portable => Precision::F32,
            _ if cfg!(debug_assertions) => Precision::F32,
            kernel => Precision::Int8(kernel),
        }
    }
}

/// One weight matrix (rows of `[out][in]`) in the encoder's precision.
enum Weights {
    Int8(Q4Matrix, Kernel),
    F32(Vec<f32>),
}

struct Layer {
    /// Q, K and V stacked: `[3H][H]`, and their biases.
    qkv: Weights,
    qkv_bias: Vec<f32>,
    out: Weights,
    out_bias: Vec<f32>,
    attention_norm: (Vec<f32>, Vec<f32>),
    up: Weights,
    up_bias: Vec<f32>,
    down: Weights,
    down_bias: Vec<f32>,
    output_norm: (Vec<f32>, Vec<f32>),
}

pub(crate) struct Encoder {
    pub shape: Shape,
    pub precision: Precision,
    /// Which code runs softmax and GELU ([`activations`]).
    activations: Kernel,
    /// The word embeddings, still Q4_0 (a row dequantized per token): `[vocab][H / 32]` blocks.
    words: WordTable,
    positions: Vec<f32>,
    token_type: Vec<f32>,
    embedding_norm: (Vec<f32>, Vec<f32>),
    layers: Vec<Layer>,
}

/// The word embeddings' bytes: a copy, or a range of the model file mapped into memory.
/// Measured reason for the map: the table is 54 MB of the file's 72 and a question reads a few
/// of its rows; reading and copying it was a third of a one-shot search's time.
pub(crate) enum WordTable {
    Owned(Vec<u8>),
    Mapped {
        map: std::sync::Arc<memmap2::Mmap>,
        start: usize,
        len: usize,
    },
}

impl std::ops::Deref for WordTable {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            WordTable::Owned(v) => v,
            WordTable::Mapped { map, start, len } => &map[*start..*start + *len],
        }
    }
}

/// Working memory of one thread, grown to the largest batch it runs.
#[derive(Default)]
pub(crate) struct Scratch {
    x: Vec<f32>,
    qkv: Vec<f32>,
    context: Vec<f32>,
    projected: Vec<f32>,
    mid: Vec<f32>,
    scores: Vec<f32>,
    /// A product's input rows, quantized ([`Precision::Int8`]).
    q8: Q8Rows,
}

fn grow(v: &mut Vec<f32>, n: usize) -> &mut [f32] {
    if v.len() < n {
        v.resize(n, 0.0);
    }
    &mut v[..n]
}

impl Encoder {
    /// The encoder of `file`, parsed from `bytes`; its word table a range of `map` when
    /// `bytes` is that map, else copied.
    pub fn load(
        file: &ModelFile,
        bytes: &[u8],
        map: Option<&std::sync::Arc<memmap2::Mmap>>,
        precision: Precision,
    ) -> Result<Encoder, FormatError> {
        let s = file.shape;
        let (h, ff) = (s.hidden, s.ffn);
        let f32s = |name: &str, n: usize| -> Result<Vec<f32>, FormatError> {
            match file.tensor(bytes, name, n)? {
                (raw, 0) => Ok(format::f32s(raw)),
                _ => Err(FormatError::Bad("tensor type")),
            }
        };
        let raw = |name: &str, n: usize| -> Result<&[u8], FormatError> {
            match file.tensor(bytes, name, n)? {
                (_, 0) => Err(FormatError::Bad("tensor type")),
                (raw, _) => Ok(raw),
            }
        };
        // Weight matrices of `rows × cols`, from the Q4_0 tensors `names` stacked.
        let weights = |names: &[String],
                       rows: usize,
                       cols: usize|
         -> Result<Weights, FormatError> {
            let mut q4 = Vec::with_capacity(names.len() * rows * cols / Q4_BLOCK * Q4_BLOCK_BYTES);
            for name in names {
                q4.extend_from_slice(raw(name, rows * cols)?);
            }
            let rows = rows * names.len();
            Ok(match precision {
                Precision::Int8(kernel) => Weights::Int8(Q4Matrix::pack(&q4, rows, cols), kernel),
                Precision::F32 => {
                    let mut out = vec![0.0; rows * cols];
                    format::dequantize(&q4, &mut out);
                    Weights::F32(out)
                }
            })
        };
        let table = raw("emb.word", s.vocab * h)?;
        let words = match map {
            Some(map) if std::ptr::eq(map.as_ptr(), bytes.as_ptr()) => WordTable::Mapped {
                map: map.clone(),
                start: table.as_ptr() as usize - bytes.as_ptr() as usize,
                len: table.len(),
            },
            _ => WordTable::Owned(table.to_vec()),
        };
        let mut layers = Vec::with_capacity(s.layers);
        for l in 0..s.layers {
            let name = |part: &str| format!("l{l}.{part}");
            let mut qkv_bias = f32s(&name("q.b"), h)?;
            qkv_bias.extend(f32s(&name("k.b"), h)?);
            qkv_bias.extend(f32s(&name("v.b"), h)?);
            layers.push(Layer {
                qkv: weights(&[name("q.w"), name("k.w"), name("v.w")], h, h)?,
                qkv_bias,
                out: weights(&[name("ao.w")], h, h)?,
                out_bias: f32s(&name("ao.b"), h)?,
                attention_norm: (f32s(&name("aln.w"), h)?, f32s(&name("aln.b"), h)?),
                up: weights(&[name("fi.w")], ff, h)?,
                up_bias: f32s(&name("fi.b"), ff)?,
                down: weights(&[name("fo.w")], h, ff)?,
                down_bias: f32s(&name("fo.b"), h)?,
                output_norm: (f32s(&name("oln.w"), h)?, f32s(&name("oln.b"), h)?),
            });
        }
        let mut token_type = f32s("emb.type", s.token_types * h)?;
        token_type.truncate(h);
        Ok(Encoder {
            shape: s,
            precision,
            activations: activations::detect(),
            words,
            positions: f32s("emb.pos", s.positions * h)?,
            token_type,
            embedding_norm: (f32s("emb.ln.w", h)?, f32s("emb.ln.b", h)?),
            layers,
        })
    }

    /// The mean of the last hidden states of each segment (a segment: token ids with bos and
    /// eos, at most the model's positions long), `segments.len() × H` values.
    pub(crate) fn forward(
        &self,
        segments: &[&[u32]],
        scratch: &mut Scratch,
        parallelism: Parallelism,
    ) -> Vec<f32> {
        let s = &self.shape;
        let (h, ff) = (s.hidden, s.ffn);
        let t: usize = segments.iter().map(|seg| seg.len()).sum();
        let longest = segments.iter().map(|seg| seg.len()).max().unwrap_or(0);
        let Scratch {
            x,
            qkv,
            context,
            projected,
            mid,
            scores,
            q8,
        } = scratch;
        let x = grow(x, t * h);
        let qkv = grow(qkv, t * 3 * h);
        let context = grow(context, t * h);
        let projected = grow(projected, t * h);
        let mid = grow(mid, t * ff);
        let scores = grow(scores, attention::scratch(longest, h / s.heads));

        // Embeddings: word + position + token type 0, then layer norm.
        self.embed_tokens(segments, x);
        layer_norm(x, None, &self.embedding_norm, h, s.eps);

        let parallel = matches!(parallelism, Parallelism::Rayon(n) if n > 1);
        let mut linear = |x: &[f32], nin: usize, w: &Weights, bias: &[f32], y: &mut [f32]| match w {
            Weights::Int8(w, kernel) => {
                q8.quantize(x, nin);
                int8::linear(q8, w, bias, y, *kernel, parallel);
            }
            Weights::F32(w) => linear(x, nin, w, bias, y, parallelism),
        };
        for layer in &self.layers {
            linear(x, h, &layer.qkv, &layer.qkv_bias, qkv);
            attention::attention(
                segments,
                qkv,
                scores,
                context,
                (h, s.heads),
                self.activations,
            );
            linear(context, h, &layer.out, &layer.out_bias, projected);
            layer_norm(x, Some(projected), &layer.attention_norm, h, s.eps);
            linear(x, h, &layer.up, &layer.up_bias, mid);
            activations::gelu_all(mid, self.activations);
            linear(mid, ff, &layer.down, &layer.down_bias, projected);
            layer_norm(x, Some(projected), &layer.output_norm, h, s.eps);
        }

        mean_pool(segments, x, h)
    }

    /// Each token's embedding in `x` (a row of H per token, segments one after the other):
    /// word + position + token type 0.
    fn embed_tokens(&self, segments: &[&[u32]], x: &mut [f32]) {
        let s = &self.shape;
        let h = s.hidden;
        let blocks = h / Q4_BLOCK * Q4_BLOCK_BYTES;
        let mut row = 0;
        for seg in segments {
            for (position, &id) in seg.iter().enumerate() {
                let out = &mut x[row * h..(row + 1) * h];
                let id = (id as usize).min(s.vocab - 1);
                format::dequantize(&self.words[id * blocks..(id + 1) * blocks], out);
                let p = &self.positions[position * h..(position + 1) * h];
                for ((o, p), t) in out.iter_mut().zip(p).zip(&self.token_type) {
                    *o += p + t;
                }
                row += 1;
            }
        }
    }
}

/// The mean of each segment's rows of `x` (H values a row), `segments.len() × H` values.
fn mean_pool(segments: &[&[u32]], x: &[f32], h: usize) -> Vec<f32> {
    let mut out = vec![0.0; segments.len() * h];
    let mut start = 0;
    for (seg, o) in segments.iter().zip(out.chunks_exact_mut(h)) {
        for row in x[start * h..(start + seg.len()) * h].chunks_exact(h) {
            for (o, v) in o.iter_mut().zip(row) {
                *o += v;
            }
        }
        let inv = 1.0 / seg.len().max(1) as f32;
        o.iter_mut().for_each(|v| *v *= inv);
        start += seg.len();
    }
    out
}

/// `y[t][out] = x[t][in] · W[out][in]ᵀ + b[out]` for every row of `x`.
fn linear(x: &[f32], nin: usize, w: &[f32], bias: &[f32], y: &mut [f32], par: Parallelism) {
    let nout = bias.len();
    let t = x.len() / nin;
    let y = &mut y[..t * nout];
    for row in y.chunks_exact_mut(nout) {
        row.copy_from_slice(bias);
    }
    debug_assert_eq!(w.len(), nout * nin);
    // SAFETY: x is t × nin, w nout × nin (read as its transpose), y t × nout, all row-major
    // and of those lengths.
    unsafe {
        gemm::gemm(
            t,
            nout,
            nin,
            y.as_mut_ptr(),
            1,
            nout as isize,
            true,
            x.as_ptr(),
            1,
            nin as isize,
            w.as_ptr(),
            nin as isize,
            1,
            1.0,
            1.0,
            false,
            false,
            false,
            par,
        );
    }
}

/// Runs `f` compiled for AVX2 and FMA when the CPU has them (checked once, cached by std):
/// the build targets baseline x86-64, whose loops vectorize four lanes wide at most. `f` and
/// what it calls must inline into it (`#[inline(always)]`) to be compiled that way.
/// Measured reason: the layer norms were part of the 22% of the encoder's time they took with
/// softmax and GELU (now [`activations`]).
#[inline(always)]
pub(super) fn wide<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        #[target_feature(enable = "avx2,fma")]
        fn avx2<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
        // SAFETY: the CPU has the features `avx2` is compiled for (checked just above).
        return unsafe { avx2(f) };
    }
    f()
}

/// Folds `xs` by `f` in eight running values (the lanes of a vector), then the eight into one
/// by `join`: a single running value keeps the operations in order and does not vectorize.
#[inline(always)]
fn fold8(
    xs: &[f32],
    start: f32,
    f: impl Fn(f32, f32) -> f32,
    join: impl Fn(f32, f32) -> f32,
) -> f32 {
    let mut acc = [start; 8];
    let chunks = xs.chunks_exact(8);
    let tail = chunks.remainder().iter().fold(start, |a, &x| f(a, x));
    for c in chunks {
        for i in 0..8 {
            acc[i] = f(acc[i], c[i]);
        }
    }
    acc.iter().fold(tail, |a, &x| join(a, x))
}

/// `x = LayerNorm(x + y)` row by row.
fn layer_norm(x: &mut [f32], y: Option<&[f32]>, (w, b): &(Vec<f32>, Vec<f32>), h: usize, eps: f32) {
    wide(|| {
        for (i, row) in x.chunks_exact_mut(h).enumerate() {
            if let Some(y) = y {
                for (r, v) in row.iter_mut().zip(&y[i * h..(i + 1) * h]) {
                    *r += v;
                }
            }
            let mean = fold8(row, 0.0, |a, v| a + v, |a, b| a + b) / h as f32;
            let var = fold8(row, 0.0, |a, v| a + (v - mean) * (v - mean), |a, b| a + b) / h as f32;
            let inv = 1.0 / (var + eps).sqrt();
            for ((r, w), b) in row.iter_mut().zip(w).zip(b) {
                *r = (*r - mean) * inv * w + b;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fold8_folds_every_value_once_and_joins_the_lanes() {
        for n in [0usize, 1, 7, 8, 9, 19, 384] {
            let xs: Vec<f32> = (1..=n).map(|i| i as f32).collect();
            let sum = fold8(&xs, 0.0, |a, v| a + v, |a, b| a + b);
            assert_eq!(sum, (n * (n + 1) / 2) as f32, "sum of 1..={n}");
            let squares = fold8(&xs, 0.0, |a, v| a + v * v, |a, b| a + b);
            assert_eq!(
                squares,
                (n * (n + 1) * (2 * n + 1) / 6) as f32,
                "squares to {n}"
            );
            let max = fold8(&xs, f32::NEG_INFINITY, f32::max, f32::max);
            assert_eq!(max, if n == 0 { f32::NEG_INFINITY } else { n as f32 });
        }
    }
}
