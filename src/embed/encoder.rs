//! The encoder: a 12-layer BERT (post-norm, GELU, mean pooling) run in f32 over the 4-bit
//! weights dequantized once at load. Every matrix product goes through the `gemm` crate: the
//! tokens of a whole batch of passages are one matrix, so each weight matrix is one large GEMM
//! per layer (Q, K and V fused into one), and attention is two GEMMs per passage and head over
//! strided views, with no copies. Batches run on `threads` scoped threads, each its own GEMMs
//! (no pool, no spinning: a thread with nothing left ends); a batch too small to share runs its
//! GEMMs on the rayon pool instead (one short query).

use gemm::Parallelism;

use super::format::{self, FormatError, ModelFile, Shape, Q4_BLOCK, Q4_BLOCK_BYTES};

struct Layer {
    /// Q, K and V stacked: `[3H][H]`, and their biases.
    qkv: Vec<f32>,
    /// The same four weight matrices as the file holds them (Q4_0, rows of `[out][in]`), for
    /// [`linear_q4`]: `qkv`, `out`, `up`, `down`.
    q4: [Vec<u8>; 4],
    qkv_bias: Vec<f32>,
    out: Vec<f32>,
    out_bias: Vec<f32>,
    attention_norm: (Vec<f32>, Vec<f32>),
    up: Vec<f32>,
    up_bias: Vec<f32>,
    down: Vec<f32>,
    down_bias: Vec<f32>,
    output_norm: (Vec<f32>, Vec<f32>),
}

pub(crate) struct Encoder {
    pub shape: Shape,
    /// The word embeddings, still Q4_0 (a row dequantized per token): `[vocab][H / 32]` blocks.
    words: Vec<u8>,
    positions: Vec<f32>,
    token_type: Vec<f32>,
    embedding_norm: (Vec<f32>, Vec<f32>),
    layers: Vec<Layer>,
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
}

fn grow(v: &mut Vec<f32>, n: usize) -> &mut [f32] {
    if v.len() < n {
        v.resize(n, 0.0);
    }
    &mut v[..n]
}

impl Encoder {
    pub fn load(file: &ModelFile, bytes: &[u8]) -> Result<Encoder, FormatError> {
        let s = file.shape;
        let (h, ff) = (s.hidden, s.ffn);
        let f32s = |name: &str, n: usize| -> Result<Vec<f32>, FormatError> {
            match file.tensor(bytes, name, n)? {
                (raw, 0) => Ok(format::f32s(raw)),
                _ => Err(FormatError::Bad("tensor type")),
            }
        };
        let q4 = |name: &str, n: usize| -> Result<Vec<f32>, FormatError> {
            match file.tensor(bytes, name, n)? {
                (_, 0) => Err(FormatError::Bad("tensor type")),
                (raw, _) => {
                    let mut out = vec![0.0; n];
                    format::dequantize(raw, &mut out);
                    Ok(out)
                }
            }
        };
        let raw = |name: &str, n: usize| -> Result<Vec<u8>, FormatError> {
            match file.tensor(bytes, name, n)? {
                (_, 0) => Err(FormatError::Bad("tensor type")),
                (raw, _) => Ok(raw.to_vec()),
            }
        };
        let words = match file.tensor(bytes, "emb.word", s.vocab * h)? {
            (_, 0) => return Err(FormatError::Bad("tensor type")),
            (raw, _) => raw.to_vec(),
        };
        let mut layers = Vec::with_capacity(s.layers);
        for l in 0..s.layers {
            let name = |part: &str| format!("l{l}.{part}");
            let mut qkv = q4(&name("q.w"), h * h)?;
            qkv.extend(q4(&name("k.w"), h * h)?);
            qkv.extend(q4(&name("v.w"), h * h)?);
            let mut qkv_bias = f32s(&name("q.b"), h)?;
            qkv_bias.extend(f32s(&name("k.b"), h)?);
            qkv_bias.extend(f32s(&name("v.b"), h)?);
            let mut qkv_q4 = raw(&name("q.w"), h * h)?;
            qkv_q4.extend(raw(&name("k.w"), h * h)?);
            qkv_q4.extend(raw(&name("v.w"), h * h)?);
            layers.push(Layer {
                qkv,
                q4: [
                    qkv_q4,
                    raw(&name("ao.w"), h * h)?,
                    raw(&name("fi.w"), ff * h)?,
                    raw(&name("fo.w"), h * ff)?,
                ],
                qkv_bias,
                out: q4(&name("ao.w"), h * h)?,
                out_bias: f32s(&name("ao.b"), h)?,
                attention_norm: (f32s(&name("aln.w"), h)?, f32s(&name("aln.b"), h)?),
                up: q4(&name("fi.w"), ff * h)?,
                up_bias: f32s(&name("fi.b"), ff)?,
                down: q4(&name("fo.w"), h * ff)?,
                down_bias: f32s(&name("fo.b"), h)?,
                output_norm: (f32s(&name("oln.w"), h)?, f32s(&name("oln.b"), h)?),
            });
        }
        let mut token_type = f32s("emb.type", s.token_types * h)?;
        token_type.truncate(h);
        Ok(Encoder {
            shape: s,
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
        } = scratch;
        let x = grow(x, t * h);
        let qkv = grow(qkv, t * 3 * h);
        let context = grow(context, t * h);
        let projected = grow(projected, t * h);
        let mid = grow(mid, t * ff);
        let scores = grow(scores, longest * longest);

        // Embeddings: word + position + token type 0, then layer norm.
        self.embed_tokens(segments, x);
        layer_norm(x, None, &self.embedding_norm, h, s.eps);

        // A few rows (one short query) multiply straight from the 4-bit weights.
        let small = t <= SMALL_ROWS && small_products();
        let linear = |x: &[f32], nin: usize, w: &[f32], q4: &[u8], bias: &[f32], y: &mut [f32]| {
            if small {
                linear_q4(x, nin, q4, bias, y);
            } else {
                linear(x, nin, w, bias, y, parallelism);
            }
        };
        for layer in &self.layers {
            linear(x, h, &layer.qkv, &layer.q4[0], &layer.qkv_bias, qkv);
            attention(segments, qkv, scores, context, (h, s.heads));
            linear(
                context,
                h,
                &layer.out,
                &layer.q4[1],
                &layer.out_bias,
                projected,
            );
            layer_norm(x, Some(projected), &layer.attention_norm, h, s.eps);
            linear(x, h, &layer.up, &layer.q4[2], &layer.up_bias, mid);
            wide(|| mid.iter_mut().for_each(|v| *v = gelu(*v)));
            linear(
                mid,
                ff,
                &layer.down,
                &layer.q4[3],
                &layer.down_bias,
                projected,
            );
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

/// Self-attention of each segment on its own: for every head, `softmax(q kᵀ / √d) v` into
/// that head's columns of `context`. `qkv` holds each token's query, key and value (3H a row).
fn attention(
    segments: &[&[u32]],
    qkv: &[f32],
    scores: &mut [f32],
    context: &mut [f32],
    (h, heads): (usize, usize),
) {
    let head = h / heads;
    let scale = 1.0 / (head as f32).sqrt();
    let mut start = 0;
    for seg in segments {
        let len = seg.len();
        for hd in 0..heads {
            let q = qkv[start * 3 * h + hd * head..].as_ptr();
            let k = qkv[start * 3 * h + h + hd * head..].as_ptr();
            let v = qkv[start * 3 * h + 2 * h + hd * head..].as_ptr();
            let sc = &mut scores[..len * len];
            // SAFETY: every view lies inside its buffer: rows `start..start + len` of `qkv`
            // (stride 3H), columns `hd * head..` + head of each part; `sc` holds len × len; the
            // context rows `start..start + len`, columns of head `hd`.
            unsafe {
                gemm::gemm(
                    len,
                    len,
                    head,
                    sc.as_mut_ptr(),
                    1,
                    len as isize,
                    false,
                    q,
                    1,
                    (3 * h) as isize,
                    k,
                    (3 * h) as isize,
                    1,
                    0.0,
                    scale,
                    false,
                    false,
                    false,
                    Parallelism::None,
                );
            }
            wide(|| sc.chunks_exact_mut(len).for_each(softmax));
            let c = context[start * h + hd * head..].as_mut_ptr();
            // SAFETY: as above.
            unsafe {
                gemm::gemm(
                    len,
                    head,
                    len,
                    c,
                    1,
                    h as isize,
                    false,
                    sc.as_ptr(),
                    1,
                    len as isize,
                    v,
                    1,
                    (3 * h) as isize,
                    0.0,
                    1.0,
                    false,
                    false,
                    false,
                    Parallelism::None,
                );
            }
        }
        start += len;
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

/// Rows (tokens) of a product at most this many go through [`linear_q4`].
pub(crate) const SMALL_ROWS: usize = 64;

/// Whether this CPU runs [`linear_q4`]'s kernel (AVX2 and FMA); elsewhere every product is a GEMM.
/// Whether a few rows multiply straight from the 4-bit weights ([`linear_q4`]): in an optimized
/// build, on a CPU with AVX2 and FMA. Unoptimized (a test build) the kernel's intrinsics are
/// each a function call, far slower than the GEMM (an optimized dependency even there, see
/// Cargo.toml): a one-shot semantic search took 3.5 s, past the 3 s search deadline once CI's
/// tests ran side by side. `the_small_product_agrees_with_the_gemm` tests the kernel itself
/// in every build.
fn small_products() -> bool {
    !cfg!(debug_assertions) && fma_available()
}

fn fma_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// [`linear`] for a few rows of `x` (one short query), from the Q4_0 weights `w` (rows of
/// `[out][in]`): each pair of weight rows is dequantized into a buffer once and multiplied with
/// every row of `x`, two by two, the weight rows split among the rayon threads. A GEMM packs the
/// whole f32 weight matrix for every product, which for a dozen rows cost more than the product
/// itself (a short query ran 3–4 times slower per token than a batch), and reads eight times the
/// bytes. Needs AVX2 and FMA ([`fma_available`]); sums in another order than the GEMM, so the
/// two agree to rounding (a test compares them).
fn linear_q4(x: &[f32], nin: usize, w: &[u8], bias: &[f32], y: &mut [f32]) {
    use rayon::prelude::*;
    let nout = bias.len();
    let t = x.len() / nin;
    let row_bytes = nin / Q4_BLOCK * Q4_BLOCK_BYTES;
    debug_assert_eq!(w.len(), nout * row_bytes);
    debug_assert!(nin.is_multiple_of(LANES));
    /// Weight rows a task takes.
    const ROWS: usize = 32;
    // Output-major: each task writes its weight rows' outputs, contiguous.
    let mut by_row = vec![0.0f32; nout * t];
    by_row
        .par_chunks_mut(ROWS * t)
        .enumerate()
        .for_each(|(task, out)| {
            let first = task * ROWS;
            let rows = out.len() / t;
            let mut weights = vec![0.0f32; 2 * nin];
            let mut r = 0;
            while r < rows {
                let pair = (rows - r).min(2);
                for p in 0..pair {
                    let at = (first + r + p) * row_bytes;
                    let out = &mut weights[p * nin..(p + 1) * nin];
                    format::dequantize(&w[at..at + row_bytes], out);
                }
                let (w0, w1) = weights.split_at(nin);
                let mut k = 0;
                while k < t {
                    let x0 = &x[k * nin..(k + 1) * nin];
                    if k + 1 < t && pair == 2 {
                        let x1 = &x[(k + 1) * nin..(k + 2) * nin];
                        let [[a, b], [c, d]] = fused_dots::<2, 2>([w0, w1], [x0, x1]);
                        out[r * t + k] = a;
                        out[r * t + k + 1] = b;
                        out[(r + 1) * t + k] = c;
                        out[(r + 1) * t + k + 1] = d;
                        k += 2;
                    } else {
                        for p in 0..pair {
                            let row = &weights[p * nin..(p + 1) * nin];
                            out[(r + p) * t + k] = fused_dots::<1, 1>([row], [x0])[0][0];
                        }
                        k += 1;
                    }
                }
                r += pair;
            }
        });
    for (k, y) in y[..t * nout].chunks_exact_mut(nout).enumerate() {
        for (o, y) in y.iter_mut().enumerate() {
            *y = bias[o] + by_row[o * t + k];
        }
    }
}

/// The dot product of each of `rows` with each of `xs` (all of one length, a multiple of
/// [`LANES`]): fused multiply-adds into [`LANES`] running sums per product, then the lanes
/// added in order. Written with AVX2 intrinsics: LLVM left the plain loops of a 2 × 2 tile
/// scalar. Call only where [`fma_available`].
fn fused_dots<const R: usize, const T: usize>(rows: [&[f32]; R], xs: [&[f32]; T]) -> [[f32; T]; R] {
    #[cfg(target_arch = "x86_64")]
    {
        debug_assert!(fma_available());
        let n = rows[0].len();
        assert!(
            n.is_multiple_of(LANES)
                && rows.iter().all(|r| r.len() == n)
                && xs.iter().all(|x| x.len() == n)
        );
        // SAFETY: the caller checked the CPU has AVX2 and FMA; every load reads
        // `LANES` floats at `k < n`, `n` a multiple of `LANES`, of slices `n` long (asserted).
        unsafe { avx2_dots(rows, xs) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (rows, xs);
        unreachable!("linear_q4 runs only where fma_available()")
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn avx2_dots<const R: usize, const T: usize>(
    rows: [&[f32]; R],
    xs: [&[f32]; T],
) -> [[f32; T]; R] {
    use std::arch::x86_64::*;
    let n = rows[0].len();
    let mut sums = [[[_mm256_setzero_ps(); 2]; T]; R];
    let mut k = 0;
    while k < n {
        let mut x = [[_mm256_setzero_ps(); 2]; T];
        for i in 0..T {
            // SAFETY: `k + LANES <= n`, and every slice is `n` long (the caller's contract).
            x[i] = unsafe {
                [
                    _mm256_loadu_ps(xs[i].as_ptr().add(k)),
                    _mm256_loadu_ps(xs[i].as_ptr().add(k + 8)),
                ]
            };
        }
        for r in 0..R {
            // SAFETY: as above.
            let w = unsafe {
                [
                    _mm256_loadu_ps(rows[r].as_ptr().add(k)),
                    _mm256_loadu_ps(rows[r].as_ptr().add(k + 8)),
                ]
            };
            for i in 0..T {
                for half in 0..2 {
                    sums[r][i][half] = _mm256_fmadd_ps(w[half], x[i][half], sums[r][i][half]);
                }
            }
        }
        k += LANES;
    }
    let mut out = [[0.0f32; T]; R];
    for r in 0..R {
        for i in 0..T {
            let mut lanes = [0.0f32; LANES];
            // SAFETY: `lanes` holds `LANES` (16) floats: two stores of 8.
            unsafe {
                _mm256_storeu_ps(lanes.as_mut_ptr(), sums[r][i][0]);
                _mm256_storeu_ps(lanes.as_mut_ptr().add(8), sums[r][i][1]);
            }
            out[r][i] = lanes.iter().sum();
        }
    }
    out
}

/// Lanes of [`fused_dots`]' running sums per product: two AVX2 vectors, so that a 2 × 2 tile
/// keeps eight independent sums in flight (an FMA takes four cycles, two issue a cycle).
const LANES: usize = 16;

/// Runs `f` compiled for AVX2 and FMA when the CPU has them (checked once, cached by std):
/// the build targets baseline x86-64, whose loops vectorize four lanes wide at most. `f` and
/// what it calls must inline into it (`#[inline(always)]`) to be compiled that way.
/// Measured reason: the layer norms, softmax and GELU were 22% of the encoder's time.
#[inline(always)]
fn wide<R>(f: impl FnOnce() -> R) -> R {
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

#[inline(always)]
fn softmax(row: &mut [f32]) {
    let max = fold8(row, f32::NEG_INFINITY, f32::max, f32::max);
    for v in row.iter_mut() {
        *v = exp(*v - max);
    }
    let inv = 1.0 / fold8(row, 0.0, |a, v| a + v, |a, b| a + b);
    row.iter_mut().for_each(|v| *v *= inv);
}

/// `e^x` for `x ≤ 0` (softmax's exponents), without a call or a branch so that the loops
/// above vectorize: `2^(x·log2 e)` split into an integer power of two (the exponent bits) and
/// a degree-6 polynomial of the rest; relative error below 2e-7·(1 + |x|) (the rounding
/// of x·log2 e grows with |x|), and e^-87 for anything below it.
/// Measured reason for not calling `f32::exp`: libm's scalar `expf` in softmax was 12% of the
/// encoder's time (perf, 32 passages of 300 tokens).
#[inline(always)]
fn exp(x: f32) -> f32 {
    let t = (x * std::f32::consts::LOG2_E).max(-126.0);
    // Round to nearest by adding and taking away 1.5·2^23 (|t| ≤ 126), which vectorizes on any
    // x86-64 (`round` is a call to `roundf` there: 5% of the encoder's time).
    const ROUND: f32 = 12_582_912.0;
    let whole = (t + ROUND) - ROUND;
    let f = t - whole;
    // 2^f on [-1/2, 1/2]: Taylor terms of e^(f ln 2) (the first left out is below 1.2e-7).
    let p = 1.0
        + f * (std::f32::consts::LN_2
            + f * (0.240_226_5
                + f * (0.055_504_11
                    + f * (0.009_618_129 + f * (0.001_333_355_8 + f * 0.000_154_035_3)))));
    f32::from_bits((((whole as i32) + 127) as u32) << 23) * p
}

/// GELU with erf from Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7), branch-free
/// so that the loop over the FFN's activations vectorizes (libm's `erff` was 16% of the
/// encoder's time).
#[inline(always)]
fn gelu(x: f32) -> f32 {
    let z = (x * std::f32::consts::FRAC_1_SQRT_2).abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * z);
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_7 + t * (-1.453_152_1 + t * 1.061_405_4))));
    let erf_abs = 1.0 - poly * exp(-z * z);
    let erf = if x < 0.0 { -erf_abs } else { erf_abs };
    0.5 * x * (1.0 + erf)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-query product from the 4-bit weights gives the GEMM's over the dequantized
    /// weights, to rounding, for every shape of tile and remainder.
    #[test]
    #[allow(clippy::print_stderr)]
    fn the_small_product_agrees_with_the_gemm() {
        if !fma_available() {
            eprintln!("SKIPPED: this CPU has no AVX2 and FMA; the small product never runs here");
            return;
        }
        let mut next = crate::test_rng::xorshift(0x2545_f491_4f6c_dd1d);
        for (nin, nout) in [(64, 71), (384, 64), (96, 1), (32, 2)] {
            let blocks = nout * nin / Q4_BLOCK;
            let mut q4 = Vec::with_capacity(blocks * Q4_BLOCK_BYTES);
            for _ in 0..blocks {
                let scale = half::f16::from_f32(0.001 + (next() % 1000) as f32 / 10_000.0);
                q4.extend(scale.to_le_bytes());
                q4.extend((0..Q4_BLOCK_BYTES - 2).map(|_| next() as u8));
            }
            let mut w = vec![0.0; nout * nin];
            format::dequantize(&q4, &mut w);
            let bias: Vec<f32> = (0..nout)
                .map(|_| (next() % 200) as f32 / 100.0 - 1.0)
                .collect();
            for t in 1..=5 {
                let x: Vec<f32> = (0..t * nin)
                    .map(|_| (next() % 2000) as f32 / 1000.0 - 1.0)
                    .collect();
                let (mut want, mut got) = (vec![0.0; t * nout], vec![0.0; t * nout]);
                linear(&x, nin, &w, &bias, &mut want, Parallelism::None);
                linear_q4(&x, nin, &q4, &bias, &mut got);
                let largest = want.iter().fold(1.0f32, |m, v| m.max(v.abs()));
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (g - w).abs() <= 1e-5 * largest,
                        "{nin}x{nout}, {t} rows: output {i} is {g}, the GEMM's {w}"
                    );
                }
            }
        }
    }

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
        let mut row = [1.0f32, 2.0, 3.0];
        softmax(&mut row);
        let e: Vec<f64> = [1.0f64, 2.0, 3.0].iter().map(|x| x.exp()).collect();
        let total: f64 = e.iter().sum();
        for (got, want) in row.iter().zip(&e) {
            assert!((*got as f64 - want / total).abs() < 1e-6);
        }
    }

    #[test]
    fn exp_and_gelu_are_close_to_the_exact_ones() {
        for i in 0..2000 {
            let x = -40.0 + i as f32 * 0.02;
            let (got, want) = (exp(x), (x as f64).exp());
            assert!(
                ((got as f64 - want) / want).abs() < 2e-7 * (1.0 + x.abs() as f64),
                "exp({x}) = {got}, not {want}"
            );
        }
        assert_eq!(exp(-200.0), exp(-126.0 / std::f32::consts::LOG2_E));
        for i in 0..2000 {
            let x = -10.0 + i as f32 * 0.01;
            let want = 0.5 * x as f64 * (1.0 + libm::erf(x as f64 / std::f64::consts::SQRT_2));
            let got = gelu(x) as f64;
            assert!((got - want).abs() < 1e-5, "gelu({x}) = {got}, not {want}");
        }
    }
}
