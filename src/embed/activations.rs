//! The encoder's element-wise functions: softmax over attention rows and GELU over the FFN's
//! activations, in explicit SIMD (AVX-512 F, or AVX2 and FMA) picked at run time, with a scalar
//! fallback that computes the same polynomials.
//!
//! Measured reason for explicit intrinsics: left to the compiler, softmax's rows and GELU ran on
//! 4-lane SSE with a scalar float-to-integer conversion per value (Rust's saturating `as i32`),
//! 22% and 11% of the integer encoder's time (perf, `kbtools index` of stylelint-docs); a
//! closure handed to a `#[target_feature]` function is not reliably compiled with its features.

use super::int8::Kernel;

/// log2(e).
const LOG2_E: f32 = std::f32::consts::LOG2_E;
/// The exponent's floor: e^x for x below −126·ln 2 is taken as 2^-126.
const LOWEST: f32 = -126.0;
/// 2^f on [-1/2, 1/2], Horner coefficients from the highest power down to 1: Taylor terms of
/// e^(f ln 2) (the first left out is below 1.2e-7).
const EXP2: [f32; 7] = [
    0.000_154_035_3,
    0.001_333_355_8,
    0.009_618_129,
    0.055_504_11,
    0.240_226_5,
    std::f32::consts::LN_2,
    1.0,
];
/// erf by Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7): `1 − t·P(t)·e^(−z²)` with
/// `t = 1 / (1 + ERF_P·z)`; P's coefficients from the highest power down.
const ERF_P: f32 = 0.327_591_1;
const ERF: [f32; 5] = [
    1.061_405_4,
    -1.453_152_1,
    1.421_413_7,
    -0.284_496_74,
    0.254_829_6,
];

/// Which code runs the element-wise functions: the integer kernel's SIMD where the CPU has it,
/// scalar in test builds (their intrinsics are unoptimized calls) and elsewhere.
pub(super) fn detect() -> Kernel {
    if cfg!(debug_assertions) {
        Kernel::Portable
    } else {
        Kernel::detect()
    }
}

/// Softmax of the first `len` values of each row of `stride` values of `scores`, in place.
pub(super) fn softmax_rows(scores: &mut [f32], stride: usize, len: usize, kernel: Kernel) {
    if len == 0 || stride < len {
        return;
    }
    match kernel.supported() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the CPU has AVX-512 F (`supported` checked it).
        Kernel::Vnni512 => unsafe { x86::softmax_rows_512(scores, stride, len) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the CPU has AVX2 and FMA.
        Kernel::Avx2 => unsafe { x86::softmax_rows_avx2(scores, stride, len) },
        _ => scores
            .chunks_exact_mut(stride)
            .for_each(|row| softmax(&mut row[..len])),
    }
}

/// GELU of every value of `xs`, in place.
pub(super) fn gelu_all(xs: &mut [f32], kernel: Kernel) {
    match kernel.supported() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as in `softmax_rows`.
        Kernel::Vnni512 => unsafe { x86::gelu_512(xs) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as in `softmax_rows`.
        Kernel::Avx2 => unsafe { x86::gelu_avx2(xs) },
        _ => xs.iter_mut().for_each(|v| *v = gelu(*v)),
    }
}

fn softmax(row: &mut [f32]) {
    let max = row.iter().fold(f32::NEG_INFINITY, |a, &v| a.max(v));
    let mut sum = 0.0;
    for v in row.iter_mut() {
        *v = exp(*v - max);
        sum += *v;
    }
    let inv = 1.0 / sum;
    row.iter_mut().for_each(|v| *v *= inv);
}

/// `e^x` for `x ≤ 0`: `2^(x·log2 e)` split into an integer power of two (the exponent bits) and
/// [`EXP2`] of the rest; relative error below 2e-7·(1 + |x|), and 2^-126 for anything below
/// −126·ln 2.
pub(super) fn exp(x: f32) -> f32 {
    let t = (x * LOG2_E).max(LOWEST);
    // Round to nearest by adding and taking away 1.5·2^23 (|t| ≤ 126): the sum's low mantissa
    // bits are then the integer itself, read without a float-to-integer conversion.
    const ROUND: f32 = 12_582_912.0;
    let shifted = t + ROUND;
    let whole = shifted - ROUND;
    let k = shifted.to_bits().wrapping_sub(ROUND.to_bits()) as i32;
    let f = t - whole;
    let p = EXP2.iter().fold(0.0, |p, &c| p * f + c);
    f32::from_bits(((k + 127) as u32) << 23) * p
}

/// GELU, `x·(1 + erf(x/√2))/2`, with erf from [`ERF`].
pub(super) fn gelu(x: f32) -> f32 {
    let z = (x * std::f32::consts::FRAC_1_SQRT_2).abs();
    let t = 1.0 / (1.0 + ERF_P * z);
    let poly = t * ERF.iter().fold(0.0, |p, &c| p * t + c);
    let erf_abs = 1.0 - poly * exp(-z * z);
    let erf = if x < 0.0 { -erf_abs } else { erf_abs };
    0.5 * x * (1.0 + erf)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{ERF, ERF_P, EXP2, LOG2_E, LOWEST};

    const NEAREST: i32 = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

    #[target_feature(enable = "avx512f")]
    fn exp_512(x: __m512) -> __m512 {
        let t = _mm512_max_ps(
            _mm512_mul_ps(x, _mm512_set1_ps(LOG2_E)),
            _mm512_set1_ps(LOWEST),
        );
        let whole = _mm512_roundscale_ps::<NEAREST>(t);
        let f = _mm512_sub_ps(t, whole);
        let mut p = _mm512_set1_ps(EXP2[0]);
        for c in &EXP2[1..] {
            p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(*c));
        }
        _mm512_scalef_ps(p, whole)
    }

    /// The mask of the first `n < 16` lanes.
    fn first(n: usize) -> __mmask16 {
        ((1u32 << n) - 1) as __mmask16
    }

    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn softmax_rows_512(scores: &mut [f32], stride: usize, len: usize) {
        let (full, rest) = (len / 16, len % 16);
        let tail = first(rest);
        for row in scores.chunks_exact_mut(stride) {
            let row = &mut row[..len];
            let p = row.as_mut_ptr();
            // SAFETY (every access below): lanes `16·i..16·i + 16` for `i < full`, and the
            // masked tail's `rest` lanes after them, all inside the row's `len` values.
            let mut max = _mm512_set1_ps(f32::NEG_INFINITY);
            for i in 0..full {
                // SAFETY: inside the bounds the comment above this loop gives.
                max = _mm512_max_ps(max, unsafe { _mm512_loadu_ps(p.add(16 * i)) });
            }
            if rest > 0 {
                // SAFETY: inside the bounds the comment above this loop gives.
                let v = unsafe { _mm512_mask_loadu_ps(max, tail, p.add(16 * full)) };
                max = _mm512_max_ps(max, v);
            }
            let max = _mm512_set1_ps(_mm512_reduce_max_ps(max));
            let mut sum = _mm512_setzero_ps();
            for i in 0..full {
                let e = exp_512(_mm512_sub_ps(
                    // SAFETY: inside the bounds the comment above this loop gives.
                    unsafe { _mm512_loadu_ps(p.add(16 * i)) },
                    max,
                ));
                // SAFETY: inside the bounds the comment above this loop gives.
                unsafe { _mm512_storeu_ps(p.add(16 * i), e) };
                sum = _mm512_add_ps(sum, e);
            }
            if rest > 0 {
                // SAFETY: inside the bounds the comment above this loop gives.
                let v = unsafe { _mm512_maskz_loadu_ps(tail, p.add(16 * full)) };
                let e = exp_512(_mm512_sub_ps(v, max));
                // SAFETY: inside the bounds the comment above this loop gives.
                unsafe { _mm512_mask_storeu_ps(p.add(16 * full), tail, e) };
                sum = _mm512_mask_add_ps(sum, tail, sum, e);
            }
            let inv = _mm512_set1_ps(1.0 / _mm512_reduce_add_ps(sum));
            for i in 0..full {
                // SAFETY: inside the bounds the comment above this loop gives.
                let v = unsafe { _mm512_loadu_ps(p.add(16 * i)) };
                // SAFETY: inside the bounds the comment above this loop gives.
                unsafe { _mm512_storeu_ps(p.add(16 * i), _mm512_mul_ps(v, inv)) };
            }
            if rest > 0 {
                // SAFETY: inside the bounds the comment above this loop gives.
                let v = unsafe { _mm512_maskz_loadu_ps(tail, p.add(16 * full)) };
                // SAFETY: inside the bounds the comment above this loop gives.
                unsafe { _mm512_mask_storeu_ps(p.add(16 * full), tail, _mm512_mul_ps(v, inv)) };
            }
        }
    }

    #[target_feature(enable = "avx512f")]
    fn gelu_vec_512(x: __m512) -> __m512 {
        let z = _mm512_abs_ps(_mm512_mul_ps(
            x,
            _mm512_set1_ps(std::f32::consts::FRAC_1_SQRT_2),
        ));
        let one = _mm512_set1_ps(1.0);
        let t = _mm512_div_ps(one, _mm512_fmadd_ps(_mm512_set1_ps(ERF_P), z, one));
        let mut poly = _mm512_set1_ps(ERF[0]);
        for c in &ERF[1..] {
            poly = _mm512_fmadd_ps(poly, t, _mm512_set1_ps(*c));
        }
        let poly = _mm512_mul_ps(poly, t);
        let e = exp_512(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(z, z)));
        let erf_abs = _mm512_fnmadd_ps(poly, e, one);
        // erf takes x's sign.
        let sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(i32::MIN));
        let erf = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(erf_abs), sign));
        _mm512_mul_ps(
            _mm512_mul_ps(_mm512_set1_ps(0.5), x),
            _mm512_add_ps(one, erf),
        )
    }

    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn gelu_512(xs: &mut [f32]) {
        let mut chunks = xs.chunks_exact_mut(16);
        for c in &mut chunks {
            // SAFETY: 16 values.
            unsafe { _mm512_storeu_ps(c.as_mut_ptr(), gelu_vec_512(_mm512_loadu_ps(c.as_ptr()))) };
        }
        let rest = chunks.into_remainder();
        if !rest.is_empty() {
            let tail = first(rest.len());
            let p = rest.as_mut_ptr();
            // SAFETY: the mask covers the remainder's values only.
            unsafe {
                let v = _mm512_maskz_loadu_ps(tail, p);
                _mm512_mask_storeu_ps(p, tail, gelu_vec_512(v));
            }
        }
    }

    #[target_feature(enable = "avx2,fma")]
    fn exp_avx2(x: __m256) -> __m256 {
        let t = _mm256_max_ps(
            _mm256_mul_ps(x, _mm256_set1_ps(LOG2_E)),
            _mm256_set1_ps(LOWEST),
        );
        let whole = _mm256_round_ps::<NEAREST>(t);
        let f = _mm256_sub_ps(t, whole);
        let mut p = _mm256_set1_ps(EXP2[0]);
        for c in &EXP2[1..] {
            p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(*c));
        }
        let k = _mm256_add_epi32(_mm256_cvtps_epi32(whole), _mm256_set1_epi32(127));
        _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_slli_epi32::<23>(k)))
    }

    /// The sum of the 8 lanes.
    #[target_feature(enable = "avx2,fma")]
    fn sum_avx2(v: __m256) -> f32 {
        let four = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
        let two = _mm_add_ps(four, _mm_movehl_ps(four, four));
        let one = _mm_add_ss(two, _mm_shuffle_ps::<1>(two, two));
        _mm_cvtss_f32(one)
    }

    /// The largest of the 8 lanes.
    #[target_feature(enable = "avx2,fma")]
    fn max_avx2(v: __m256) -> f32 {
        let four = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
        let two = _mm_max_ps(four, _mm_movehl_ps(four, four));
        let one = _mm_max_ss(two, _mm_shuffle_ps::<1>(two, two));
        _mm_cvtss_f32(one)
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn softmax_rows_avx2(scores: &mut [f32], stride: usize, len: usize) {
        let full = len / 8;
        for row in scores.chunks_exact_mut(stride) {
            let row = &mut row[..len];
            let p = row.as_mut_ptr();
            // SAFETY (every access below): lanes `8·i..8·i + 8` for `i < full`, inside the row;
            // the rest of the row is scalar.
            let mut max = _mm256_set1_ps(f32::NEG_INFINITY);
            for i in 0..full {
                // SAFETY: inside the bounds the comment above this loop gives.
                max = _mm256_max_ps(max, unsafe { _mm256_loadu_ps(p.add(8 * i)) });
            }
            let largest = row[8 * full..].iter().fold(max_avx2(max), |a, &v| a.max(v));
            let max = _mm256_set1_ps(largest);
            let mut sum = _mm256_setzero_ps();
            for i in 0..full {
                // SAFETY: inside the bounds the comment above this loop gives.
                let e = exp_avx2(_mm256_sub_ps(unsafe { _mm256_loadu_ps(p.add(8 * i)) }, max));
                // SAFETY: inside the bounds the comment above this loop gives.
                unsafe { _mm256_storeu_ps(p.add(8 * i), e) };
                sum = _mm256_add_ps(sum, e);
            }
            let mut total = sum_avx2(sum);
            for v in &mut row[8 * full..] {
                *v = super::exp(*v - largest);
                total += *v;
            }
            let inv = 1.0 / total;
            let vinv = _mm256_set1_ps(inv);
            for i in 0..full {
                // SAFETY: inside the bounds the comment above this loop gives.
                let v = unsafe { _mm256_loadu_ps(p.add(8 * i)) };
                // SAFETY: inside the bounds the comment above this loop gives.
                unsafe { _mm256_storeu_ps(p.add(8 * i), _mm256_mul_ps(v, vinv)) };
            }
            row[8 * full..].iter_mut().for_each(|v| *v *= inv);
        }
    }

    #[target_feature(enable = "avx2,fma")]
    fn gelu_vec_avx2(x: __m256) -> __m256 {
        let sign_bit = _mm256_set1_ps(-0.0);
        let z = _mm256_andnot_ps(
            sign_bit,
            _mm256_mul_ps(x, _mm256_set1_ps(std::f32::consts::FRAC_1_SQRT_2)),
        );
        let one = _mm256_set1_ps(1.0);
        let t = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(ERF_P), z, one));
        let mut poly = _mm256_set1_ps(ERF[0]);
        for c in &ERF[1..] {
            poly = _mm256_fmadd_ps(poly, t, _mm256_set1_ps(*c));
        }
        let poly = _mm256_mul_ps(poly, t);
        let e = exp_avx2(_mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(z, z)));
        let erf_abs = _mm256_fnmadd_ps(poly, e, one);
        let erf = _mm256_xor_ps(erf_abs, _mm256_and_ps(x, sign_bit));
        _mm256_mul_ps(
            _mm256_mul_ps(_mm256_set1_ps(0.5), x),
            _mm256_add_ps(one, erf),
        )
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn gelu_avx2(xs: &mut [f32]) {
        let mut chunks = xs.chunks_exact_mut(8);
        for c in &mut chunks {
            // SAFETY: 8 values.
            unsafe { _mm256_storeu_ps(c.as_mut_ptr(), gelu_vec_avx2(_mm256_loadu_ps(c.as_ptr()))) };
        }
        chunks
            .into_remainder()
            .iter_mut()
            .for_each(|v| *v = super::gelu(*v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(exp(-200.0), exp(-126.0 / LOG2_E));
        for i in 0..2000 {
            let x = -10.0 + i as f32 * 0.01;
            let want = 0.5 * x as f64 * (1.0 + libm::erf(x as f64 / std::f64::consts::SQRT_2));
            let got = gelu(x) as f64;
            assert!((got - want).abs() < 1e-5, "gelu({x}) = {got}, not {want}");
        }
    }

    /// Every kernel this CPU runs gives what the scalar code gives, within a few units in the
    /// last place (fused multiply-adds round once), on rows whose lengths leave every tail.
    #[test]
    fn every_kernel_agrees_with_the_scalar_code() {
        let mut kernels = vec![Kernel::Portable];
        kernels.extend(
            [Kernel::Vnni512, Kernel::Avx2]
                .into_iter()
                .filter(|k| k.supported() == *k),
        );
        for len in [1usize, 7, 8, 15, 16, 17, 33, 322] {
            let values: Vec<f32> = (0..len * 3)
                .map(|i| ((i * 7919 % 1000) as f32 - 500.0) / 37.0)
                .collect();
            let mut want = values.clone();
            want.chunks_exact_mut(len).for_each(softmax);
            // Rows of `len` values one value apart: the value between stays as it was.
            let mut spaced = Vec::new();
            for row in values.chunks_exact(len) {
                spaced.extend_from_slice(row);
                spaced.push(7.0);
            }
            let mut want_gelu = values.clone();
            want_gelu.iter_mut().for_each(|v| *v = gelu(*v));
            for &kernel in &kernels {
                let mut got = values.clone();
                softmax_rows(&mut got, len, len, kernel);
                for (g, w) in got.iter().zip(&want) {
                    assert!(
                        (g - w).abs() <= 1e-6 * w.abs().max(1e-3),
                        "{kernel:?} {len}"
                    );
                }
                let mut got = spaced.clone();
                softmax_rows(&mut got, len + 1, len, kernel);
                for (row, w) in got.chunks_exact(len + 1).zip(want.chunks_exact(len)) {
                    assert_eq!(row[len], 7.0, "{kernel:?} {len}: the value between rows");
                    for (g, w) in row.iter().zip(w) {
                        assert!(
                            (g - w).abs() <= 1e-6 * w.abs().max(1e-3),
                            "{kernel:?} {len}"
                        );
                    }
                }
                let mut got = values.clone();
                gelu_all(&mut got, kernel);
                for (g, w) in got.iter().zip(&want_gelu) {
                    assert!((g - w).abs() <= 1e-5, "{kernel:?} gelu {len}: {g} vs {w}");
                }
            }
        }
    }
}
