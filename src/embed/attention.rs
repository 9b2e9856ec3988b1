//! The encoder's self-attention: for each segment and head, `softmax(q kᵀ / √d) v` into that
//! head's columns of the context. With AVX-512 F and heads of 32 (multilingual-e5-small's), both
//! products run in this file's kernels; elsewhere they are two f32 GEMMs of the `gemm` crate
//! over strided views.
//!
//! Measured reason for own kernels: the `gemm` crate's AVX2 kernels (its AVX-512 ones need a
//! nightly compiler) were 20% of the integer encoder's time once softmax and GELU were
//! vectorized (perf, `kbtools index` of stylelint-docs); these run twice as wide.

use gemm::Parallelism;

use super::activations;
use super::int8::Kernel;

/// The head size the AVX-512 kernels are written for.
const HEAD: usize = 32;

/// The row stride of a segment's scores: its length rounded up to 16 keys (a register).
pub(super) fn stride(len: usize) -> usize {
    len.div_ceil(16) * 16
}

/// The scratch values attention needs for segments of up to `longest` tokens and heads of
/// `head`: the scores, `longest` rows of [`stride`], then the keys transposed, `head` rows.
pub(super) fn scratch(longest: usize, head: usize) -> usize {
    stride(longest) * (longest + head)
}

/// Self-attention of each segment on its own into `context` (H a row). `qkv` holds each token's
/// query, key and value (3H a row); `scratch` at least [`scratch`] values for the longest.
pub(super) fn attention(
    segments: &[&[u32]],
    qkv: &[f32],
    scratch: &mut [f32],
    context: &mut [f32],
    (h, heads): (usize, usize),
    kernel: Kernel,
) {
    let head = h / heads;
    let scale = 1.0 / (head as f32).sqrt();
    let wide = head == HEAD && kernel.supported() == Kernel::Vnni512;
    let mut start = 0;
    for seg in segments {
        let len = seg.len();
        let stride = stride(len);
        for hd in 0..heads {
            let view = View {
                qkv,
                h,
                start,
                len,
                column: hd * head,
            };
            let (scores, keys) = scratch.split_at_mut(len * stride);
            let out = &mut context[start * h + hd * head..];
            if wide {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: the CPU has AVX-512 F (checked above); the views' bounds are checked
                // in `View::check`.
                unsafe {
                    x86::head(&view, scores, keys, stride, scale, out);
                }
            } else {
                by_gemm(&view, &mut scores[..len * len], head, scale, out, kernel);
            }
        }
        start += len;
    }
}

/// One head of one segment in `qkv`: rows `start..start + len`, columns `column..+ head` of
/// the query part (then + H the keys, + 2H the values).
struct View<'a> {
    qkv: &'a [f32],
    h: usize,
    start: usize,
    len: usize,
    column: usize,
}

impl View<'_> {
    /// Where row `i`'s query starts (`part` 0), key (1) or value (2).
    fn at(&self, part: usize, i: usize) -> usize {
        (self.start + i) * 3 * self.h + part * self.h + self.column
    }
}

/// The head by two `gemm` products, with softmax between.
fn by_gemm(view: &View<'_>, sc: &mut [f32], head: usize, scale: f32, out: &mut [f32], k: Kernel) {
    let (len, h) = (view.len, view.h);
    if len == 0 {
        return;
    }
    assert!(view.qkv.len() >= view.at(2, len - 1) + head && sc.len() == len * len);
    assert!(out.len() >= (len - 1) * h + head);
    let q = view.qkv[view.at(0, 0)..].as_ptr();
    let kp = view.qkv[view.at(1, 0)..].as_ptr();
    let v = view.qkv[view.at(2, 0)..].as_ptr();
    // SAFETY: every view lies inside its buffer (asserted above): `len` rows of stride 3H, head
    // columns each; `sc` holds len × len; the context rows of stride H.
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
            kp,
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
    activations::softmax_rows(sc, len, len, k);
    // SAFETY: as above.
    unsafe {
        gemm::gemm(
            len,
            head,
            len,
            out.as_mut_ptr(),
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

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{View, HEAD};
    use crate::embed::activations;
    use crate::embed::int8::Kernel;

    /// Query rows a kernel call takes: 6 rows × 2 registers of keys (or of the value's 32
    /// columns) is 12 accumulators, and 8 loads for 12 multiply-adds.
    const ROWS: usize = 6;

    /// One head of one segment: scores, softmax, and the weighted values into `out` (stride H).
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn head(
        view: &View<'_>,
        scores: &mut [f32],
        keys: &mut [f32],
        stride: usize,
        scale: f32,
        out: &mut [f32],
    ) {
        let (len, h) = (view.len, view.h);
        if len == 0 {
            return;
        }
        assert!(view.qkv.len() >= view.at(2, len - 1) + HEAD);
        assert!(scores.len() >= len * stride && keys.len() >= HEAD * stride);
        assert!(out.len() >= (len - 1) * h + HEAD);
        // The keys transposed: `keys[d][j]`, zero past `len` (those scores are never read).
        for d in 0..HEAD {
            let row = &mut keys[d * stride..(d + 1) * stride];
            for (j, k) in row[..len].iter_mut().enumerate() {
                *k = view.qkv[view.at(1, j) + d];
            }
            row[len..].fill(0.0);
        }
        /// `kernel::<R>(view, i, args…)` over the query rows, [`ROWS`] at a time (the last
        /// block fewer), `R` a constant so that the accumulators live in registers.
        macro_rules! by_row_blocks {
            ($kernel:ident($($arg:expr),*)) => {
                let mut i = 0;
                while i < len {
                    let rows = ROWS.min(len - i);
                    // SAFETY: rows `i..i + rows` of the views, checked above.
                    unsafe {
                        match rows {
                            1 => $kernel::<1>(view, i, $($arg),*),
                            2 => $kernel::<2>(view, i, $($arg),*),
                            3 => $kernel::<3>(view, i, $($arg),*),
                            4 => $kernel::<4>(view, i, $($arg),*),
                            5 => $kernel::<5>(view, i, $($arg),*),
                            6 => $kernel::<6>(view, i, $($arg),*),
                            _ => unreachable!("1 to {ROWS} rows"),
                        }
                    }
                    i += rows;
                }
            };
        }
        by_row_blocks!(scores_block(keys, stride, scale, scores));
        activations::softmax_rows(&mut scores[..len * stride], stride, len, Kernel::Vnni512);
        by_row_blocks!(values_block(scores, stride, out));
    }

    /// Scores of query rows `i..i + R` against every key, 32 keys (two registers) at a time
    /// (16 for the last when the stride is odd in registers), scaled.
    #[target_feature(enable = "avx512f")]
    unsafe fn scores_block<const R: usize>(
        view: &View<'_>,
        i: usize,
        keys: &[f32],
        stride: usize,
        scale: f32,
        scores: &mut [f32],
    ) {
        let q: [usize; R] = std::array::from_fn(|r| view.at(0, i + r));
        let qp = view.qkv.as_ptr();
        let kp = keys.as_ptr();
        let sp = scores.as_mut_ptr();
        let scale = _mm512_set1_ps(scale);
        let mut j = 0;
        while j < stride {
            let two = j + 32 <= stride;
            let mut acc = [[_mm512_setzero_ps(); 2]; R];
            for d in 0..HEAD {
                // SAFETY: key columns `j..j + 32` (or 16) of row d, inside `keys` (stride
                // values a row); query values inside `qkv` (checked by the caller).
                let k0 = unsafe { _mm512_loadu_ps(kp.add(d * stride + j)) };
                let k1 = if two {
                    // SAFETY: inside the bounds the comment above this loop gives.
                    unsafe { _mm512_loadu_ps(kp.add(d * stride + j + 16)) }
                } else {
                    _mm512_setzero_ps()
                };
                for r in 0..R {
                    // SAFETY: inside the bounds the comment above this loop gives.
                    let qv = _mm512_set1_ps(unsafe { *qp.add(q[r] + d) });
                    acc[r][0] = _mm512_fmadd_ps(qv, k0, acc[r][0]);
                    acc[r][1] = _mm512_fmadd_ps(qv, k1, acc[r][1]);
                }
            }
            for (r, acc) in acc.iter().enumerate() {
                let row = sp.wrapping_add((i + r) * stride + j);
                // SAFETY: row i + r of the scores, columns `j..j + 32` (or 16) < stride.
                unsafe {
                    _mm512_storeu_ps(row, _mm512_mul_ps(acc[0], scale));
                    if two {
                        _mm512_storeu_ps(row.add(16), _mm512_mul_ps(acc[1], scale));
                    }
                }
            }
            j += if two { 32 } else { 16 };
        }
    }

    /// The context of query rows `i..i + R`: the softmaxed scores times the values (32 columns,
    /// two registers), summed over the `len` keys.
    #[target_feature(enable = "avx512f")]
    unsafe fn values_block<const R: usize>(
        view: &View<'_>,
        i: usize,
        scores: &[f32],
        stride: usize,
        out: &mut [f32],
    ) {
        let (qp, sp) = (view.qkv.as_ptr(), scores.as_ptr());
        let mut acc = [[_mm512_setzero_ps(); 2]; R];
        for j in 0..view.len {
            let at = view.at(2, j);
            // SAFETY: key j's value, 32 values inside `qkv`; scores of rows i + r, column j
            // (checked by the caller).
            let (v0, v1) = unsafe {
                (
                    _mm512_loadu_ps(qp.add(at)),
                    _mm512_loadu_ps(qp.add(at + 16)),
                )
            };
            for (r, acc) in acc.iter_mut().enumerate() {
                // SAFETY: row i + r of the scores, column j (checked by the caller).
                let p = _mm512_set1_ps(unsafe { *sp.add((i + r) * stride + j) });
                acc[0] = _mm512_fmadd_ps(p, v0, acc[0]);
                acc[1] = _mm512_fmadd_ps(p, v1, acc[1]);
            }
        }
        let op = out.as_mut_ptr();
        for (r, acc) in acc.iter().enumerate() {
            // SAFETY: row i + r of the context (stride H), the head's 32 columns.
            unsafe {
                _mm512_storeu_ps(op.add((i + r) * view.h), acc[0]);
                _mm512_storeu_ps(op.add((i + r) * view.h + 16), acc[1]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The AVX-512 kernels, where this CPU has them, give what the `gemm` path gives, on
    /// segments whose lengths leave every tail of rows and keys.
    #[test]
    #[allow(clippy::print_stderr)]
    fn the_wide_kernels_agree_with_the_gemm_path() {
        if Kernel::Vnni512.supported() != Kernel::Vnni512 {
            eprintln!("SKIPPED: this CPU has no AVX-512 VNNI, the wide kernels do not run");
            return;
        }
        let (h, heads) = (64, 2);
        let lens = [1usize, 5, 6, 7, 16, 17, 33, 40];
        let t: usize = lens.iter().sum();
        let qkv: Vec<f32> = (0..t * 3 * h)
            .map(|i| ((i * 7919 % 2003) as f32 - 1001.0) / 400.0)
            .collect();
        let ids: Vec<Vec<u32>> = lens.iter().map(|&n| vec![0; n]).collect();
        let segments: Vec<&[u32]> = ids.iter().map(|s| &s[..]).collect();
        let mut scratch = vec![0.0; scratch(40, 32)];
        let mut want = vec![0.0; t * h];
        attention(
            &segments,
            &qkv,
            &mut scratch,
            &mut want,
            (h, heads),
            Kernel::Portable,
        );
        let mut got = vec![0.0; t * h];
        attention(
            &segments,
            &qkv,
            &mut scratch,
            &mut got,
            (h, heads),
            Kernel::Vnni512,
        );
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!((g - w).abs() < 1e-4, "value {i}: {g} vs {w}");
        }
    }
}
