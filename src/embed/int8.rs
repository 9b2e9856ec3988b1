//! The encoder's integer matrix products: `y = x · Wᵀ + b` with the weights kept as their Q4_0
//! codes and each row of `x` quantized to 8 bits per block of 32 values, as llama.cpp's
//! `q4_0 × q8_0` products and ONNX Runtime's int8 kernels do. The f32 path dequantized the
//! weights once at load and multiplied in f32 near the AVX2 peak (16 multiply-adds a cycle a
//! core); a VNNI `vpdpbusd` does 64 multiply-adds of bytes in one instruction.
//!
//! The weights are repacked at load (`Q4Matrix::pack`): a tile of 16 output rows, a block of
//! 32 inputs, in groups of 4 inputs, each group 16 rows × 4 codes, so that one 512-bit register
//! holds a group and a token's 4 bytes broadcast to every lane multiply all 16 rows at once. A
//! weight is signed (`q − 8`, −8..7, times its block's scale), a token's value stored unsigned
//! (`x + 128`, as `vpdpbusd` and `vpmaddubsw` take it), and `Σ w·(x + 128) = Σ w·x + 128·Σ w`:
//! each block's integer sum starts from `−128·Σ w` (computed once at load), so the float
//! epilogue of a block is a conversion, a product and a fused multiply-add
//! (`acc = fma(f32(dot) · s_x, s_w, acc)`).
//!
//! Three kernels, one picked once at run time ([`Kernel::detect`]): AVX-512 VNNI, AVX2
//! (`vpmaddubsw` sums of pairs kept in 16 bits for a whole block — 8 groups of at most
//! 2·255·8 each stay below 2¹⁵ — then `vpmaddwd`), and a portable one. The integer sums are
//! exact, and every kernel adds the blocks in the same order with the same fused
//! multiply-add, so all three give the same bits (a test checks it).

use super::format::{Q4_BLOCK, Q4_BLOCK_BYTES};

/// Output rows of a tile: the 16 `i32` lanes of a 512-bit register.
const TILE: usize = 16;
/// Inputs of a group: the 4 bytes a `vpdpbusd` lane multiplies.
const GROUP: usize = 4;
/// Bytes of one tile's block: 8 groups of 16 rows × 4 codes.
const TILE_BLOCK_BYTES: usize = TILE * Q4_BLOCK;
/// Tokens a kernel call keeps in registers (two accumulators each).
const TOKENS: usize = 8;
/// Tokens the AVX-512 kernel keeps in registers when it takes two tiles at once (four
/// accumulators each: 24 of the 32 registers).
const PAIR_TOKENS: usize = 6;

/// A weight matrix of `rows × cols` (rows of `[out][in]`), as Q4_0 codes repacked in tiles.
pub(crate) struct Q4Matrix {
    rows: usize,
    cols: usize,
    /// `[tile][block][group][row of the tile][4 weights]`, each `q − 8` as an `i8`'s byte,
    /// rows past `rows` zero.
    codes: Vec<u8>,
    /// `[tile][block][row of the tile]`: `−128 · Σ (q − 8)`, where each block's sum starts.
    starts: Vec<i32>,
    /// `[tile][block][row of the tile]`, rows past `rows` zero.
    scales: Vec<f32>,
}

impl Q4Matrix {
    /// Repacks `q4`, the Q4_0 blocks of a `rows × cols` matrix (each row `cols / 32` blocks).
    pub(crate) fn pack(q4: &[u8], rows: usize, cols: usize) -> Q4Matrix {
        assert!(
            cols.is_multiple_of(Q4_BLOCK),
            "{cols} inputs: not whole blocks"
        );
        let blocks = cols / Q4_BLOCK;
        assert_eq!(
            q4.len(),
            rows * blocks * Q4_BLOCK_BYTES,
            "a {rows}×{cols} Q4_0 matrix"
        );
        let tiles = rows.div_ceil(TILE);
        let mut codes = vec![0u8; tiles * blocks * TILE_BLOCK_BYTES];
        let mut scales = vec![0.0f32; tiles * blocks * TILE];
        let mut starts = vec![0i32; tiles * blocks * TILE];
        let mut unpacked = [0i8; Q4_BLOCK];
        for row in 0..rows {
            let (tile, lane) = (row / TILE, row % TILE);
            for b in 0..blocks {
                let at = (row * blocks + b) * Q4_BLOCK_BYTES;
                let block = &q4[at..at + Q4_BLOCK_BYTES];
                scales[(tile * blocks + b) * TILE + lane] =
                    half::f16::from_le_bytes([block[0], block[1]]).to_f32();
                // Byte j holds weight j in its low nibble and weight j + 16 in its high one.
                for (j, &q) in block[2..].iter().enumerate() {
                    unpacked[j] = (q & 0x0f) as i8 - 8;
                    unpacked[j + Q4_BLOCK / 2] = (q >> 4) as i8 - 8;
                }
                starts[(tile * blocks + b) * TILE + lane] =
                    -128 * unpacked.iter().map(|&w| i32::from(w)).sum::<i32>();
                let base = (tile * blocks + b) * TILE_BLOCK_BYTES;
                for (g, four) in unpacked.chunks_exact(GROUP).enumerate() {
                    let at = base + (g * TILE + lane) * GROUP;
                    for (c, &w) in codes[at..at + GROUP].iter_mut().zip(four) {
                        *c = w as u8;
                    }
                }
            }
        }
        Q4Matrix {
            rows,
            cols,
            codes,
            starts,
            scales,
        }
    }

    fn blocks(&self) -> usize {
        self.cols / Q4_BLOCK
    }

    fn tiles(&self) -> usize {
        self.rows.div_ceil(TILE)
    }
}

/// Rows of f32 values quantized to 8 bits per block of 32: `x ≈ (code − 128) · scale`, with
/// `scale = max |x| / 127` per block (codes 1..255). Reused between products: it grows to the
/// largest one.
#[derive(Default)]
pub(crate) struct Q8Rows {
    cols: usize,
    codes: Vec<u8>,
    scales: Vec<f32>,
}

impl Q8Rows {
    /// Quantizes `x`, rows of `cols` values (a multiple of 32).
    pub(crate) fn quantize(&mut self, x: &[f32], cols: usize) {
        assert!(cols.is_multiple_of(Q4_BLOCK) && x.len().is_multiple_of(cols));
        let blocks = x.len() / Q4_BLOCK;
        self.cols = cols;
        self.codes.resize(x.len(), 0);
        self.scales.resize(blocks, 0.0);
        let avx2 = Kernel::detect() != Kernel::Portable;
        for ((values, codes), scale) in x
            .chunks_exact(Q4_BLOCK)
            .zip(self.codes.chunks_exact_mut(Q4_BLOCK))
            .zip(&mut self.scales)
        {
            let (values, codes) = (values.try_into().unwrap(), codes.try_into().unwrap());
            match avx2 {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: `detect()` finds a SIMD kernel only where the CPU has AVX2.
                true => unsafe { quantize_avx2(values, codes, scale) },
                _ => quantize_block(values, codes, scale),
            }
        }
    }

    fn rows(&self) -> usize {
        self.codes.len().checked_div(self.cols).unwrap_or(0)
    }
}

/// Rounds to the nearest integer (ties to even) a value of magnitude at most 2²², by adding and
/// taking away 1.5·2²³: exactly what the AVX2 path's `vcvtps2dq` does.
const ROUND: f32 = 12_582_912.0;

/// One block: `scale = max |x| / 127`, each code `x / scale` rounded to nearest (ties to
/// even), plus 128. [`quantize_avx2`] gives the same bits.
fn quantize_block(values: &[f32; Q4_BLOCK], codes: &mut [u8; Q4_BLOCK], scale: &mut f32) {
    let largest = values.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    *scale = largest / 127.0;
    let inverse = if largest > 0.0 { 127.0 / largest } else { 0.0 };
    for (c, v) in codes.iter_mut().zip(values) {
        // |v · inverse| ≤ 127: exact in f32 after rounding, and the casts never saturate.
        let r = ((v * inverse + ROUND) - ROUND) as i32;
        *c = (r + 128) as u8;
    }
}

/// [`quantize_block`] with AVX2: four registers of 8 values. Measured reason: the plain loop
/// did not vectorize (saturating casts, NaN-aware `max`) and was 13% of the encoder's time.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn quantize_avx2(values: &[f32; Q4_BLOCK], codes: &mut [u8; Q4_BLOCK], scale: &mut f32) {
    use std::arch::x86_64::*;
    let magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fff_ffff));
    // SAFETY: four loads of 8 floats from a block of 32.
    let v: [__m256; 4] =
        std::array::from_fn(|i| unsafe { _mm256_loadu_ps(values.as_ptr().add(i * 8)) });
    let mut largest = _mm256_and_ps(v[0], magnitude);
    for v in &v[1..] {
        largest = _mm256_max_ps(largest, _mm256_and_ps(*v, magnitude));
    }
    let mut lanes = [0.0f32; 8];
    // SAFETY: 8 floats into an array of 8.
    unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), largest) };
    let largest = lanes.iter().fold(0.0f32, |m, &v| m.max(v));
    *scale = largest / 127.0;
    let inverse = _mm256_set1_ps(if largest > 0.0 { 127.0 / largest } else { 0.0 });
    let round = _mm256_set1_ps(ROUND);
    let mut ints = [_mm256_setzero_si256(); 4];
    for (i, v) in v.iter().enumerate() {
        let r = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(*v, inverse), round), round);
        ints[i] = _mm256_cvtps_epi32(r);
    }
    // 32 → 16 → 8 bits, saturating (no value is out of range); packs work within 128-bit
    // halves, so the quadwords are put back in order.
    let words = [
        _mm256_packs_epi32(ints[0], ints[1]),
        _mm256_packs_epi32(ints[2], ints[3]),
    ];
    let bytes = _mm256_packs_epi16(words[0], words[1]);
    let ordered = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    // +128: flipping the sign bit of a byte in −127..127.
    let unsigned = _mm256_xor_si256(ordered, _mm256_set1_epi8(i8::MIN));
    // SAFETY: 32 bytes into a block of 32.
    unsafe { _mm256_storeu_si256(codes.as_mut_ptr().cast(), unsigned) };
}

/// Which kernel runs the products on this CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// AVX-512 F, BW and VNNI.
    Vnni512,
    /// AVX2 and FMA.
    Avx2,
    /// Plain Rust, any CPU.
    Portable,
}

impl Kernel {
    /// The fastest kernel this CPU runs (checked by std once, then cached).
    pub fn detect() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx512f") && has!("avx512bw") && has!("avx512vnni") {
                return Kernel::Vnni512;
            }
            if has!("avx2") && has!("fma") {
                return Kernel::Avx2;
            }
        }
        Kernel::Portable
    }

    /// This kernel, or the portable one where this CPU lacks its features.
    pub(super) fn supported(self) -> Kernel {
        match self {
            Kernel::Portable => Kernel::Portable,
            wanted => {
                let best = Kernel::detect();
                let ok = match wanted {
                    Kernel::Vnni512 => best == Kernel::Vnni512,
                    _ => best != Kernel::Portable,
                };
                if ok {
                    wanted
                } else {
                    Kernel::Portable
                }
            }
        }
    }
}

/// `y[t][o] = Σ_i x[t][i] · W[o][i] + bias[o]` for every row `t` of `x` (`y` holds
/// `x.rows() × w.rows()`), on `kernel` (the portable one where the CPU lacks its features).
/// With `parallel`, the tiles are shared among the rayon threads.
pub(crate) fn linear(
    x: &Q8Rows,
    w: &Q4Matrix,
    bias: &[f32],
    y: &mut [f32],
    kernel: Kernel,
    parallel: bool,
) {
    assert_eq!(x.cols, w.cols, "inputs of x and W");
    assert_eq!(bias.len(), w.rows, "one bias per output");
    let (t, nout) = (x.rows(), w.rows);
    let y = &mut y[..t * nout];
    let kernel = kernel.supported();
    // Tiles a call takes: two where the AVX-512 kernel runs (each token's bytes, loaded
    // once, then multiply 32 rows), one elsewhere.
    let step = if kernel == Kernel::Vnni512 { 2 } else { 1 };
    let firsts = (0..w.tiles()).step_by(step);
    let tiles_at = |first: usize| step.min(w.tiles() - first);
    if !parallel {
        let mut tile_out = vec![0.0f32; TOKENS * TILE * 2];
        for first in firsts {
            run_tiles(
                x,
                w,
                first,
                tiles_at(first),
                kernel,
                &mut tile_out,
                |token, tile, lanes| {
                    write_row(y, nout, token, tile, lanes, bias);
                },
            );
        }
        return;
    }
    use rayon::prelude::*;
    // Each task its tiles' outputs, `[token][tile][16]`, then copied into `y`.
    let by_tiles: Vec<(usize, Vec<f32>)> = firsts
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|first| {
            let n = tiles_at(first);
            let mut out = vec![0.0f32; t * TILE * n];
            let mut tile_out = vec![0.0f32; TOKENS * TILE * 2];
            run_tiles(
                x,
                w,
                first,
                n,
                kernel,
                &mut tile_out,
                |token, tile, lanes| {
                    let at = (token * n + tile - first) * TILE;
                    out[at..at + TILE].copy_from_slice(lanes);
                },
            );
            (first, out)
        })
        .collect();
    for (first, out) in &by_tiles {
        let n = tiles_at(*first);
        for (i, lanes) in out.chunks_exact(TILE).enumerate() {
            write_row(y, nout, i / n, first + i % n, lanes, bias);
        }
    }
}

/// Token `token`'s outputs of tile `tile` (`lanes`, 16 sums) plus their biases into `y`,
/// less the padding rows past the matrix's last.
fn write_row(y: &mut [f32], nout: usize, token: usize, tile: usize, lanes: &[f32], bias: &[f32]) {
    let first = tile * TILE;
    let n = TILE.min(nout - first);
    let row = &mut y[token * nout + first..token * nout + first + n];
    for ((o, s), b) in row.iter_mut().zip(lanes).zip(&bias[first..first + n]) {
        *o = s + b;
    }
}

/// The sums of tiles `first..first + count` (one, or two on the AVX-512 kernel) for every
/// token of `x`, [`TOKENS`] at a time (fewer for two tiles), each token's 16 of each tile handed
/// to `emit(token, tile, sums)`.
fn run_tiles(
    x: &Q8Rows,
    w: &Q4Matrix,
    first: usize,
    count: usize,
    kernel: Kernel,
    out: &mut [f32],
    mut emit: impl FnMut(usize, usize, &[f32]),
) {
    let blocks = w.blocks();
    let weights = |tile: usize| TileWeights {
        codes: &w.codes[tile * blocks * TILE_BLOCK_BYTES..(tile + 1) * blocks * TILE_BLOCK_BYTES],
        scales: &w.scales[tile * blocks * TILE..(tile + 1) * blocks * TILE],
        starts: &w.starts[tile * blocks * TILE..(tile + 1) * blocks * TILE],
    };
    let pair = count == 2 && kernel == Kernel::Vnni512;
    let at_once = if pair { PAIR_TOKENS } else { TOKENS };
    let t = x.rows();
    let mut start = 0;
    while start < t {
        let n = at_once.min(t - start);
        let tokens = Tokens {
            codes: &x.codes[start * x.cols..(start + n) * x.cols],
            scales: &x.scales[start * blocks..(start + n) * blocks],
            blocks,
        };
        if pair {
            let out = &mut out[..n * 2 * TILE];
            #[cfg(target_arch = "x86_64")]
            pair_vnni512(&[weights(first), weights(first + 1)], &tokens, out);
            for (i, lanes) in out.chunks_exact(TILE).enumerate() {
                emit(start + i / 2, first + i % 2, lanes);
            }
        } else {
            for tile in first..first + count {
                let out = &mut out[..n * TILE];
                one_tile(&weights(tile), &tokens, kernel, out);
                for (i, lanes) in out.chunks_exact(TILE).enumerate() {
                    emit(start + i, tile, lanes);
                }
            }
        }
        start += n;
    }
}

/// One tile's sums for `tokens` on `kernel`.
fn one_tile(weights: &TileWeights<'_>, tokens: &Tokens<'_>, kernel: Kernel, out: &mut [f32]) {
    let n = tokens.count();
    match kernel {
        #[cfg(target_arch = "x86_64")]
        Kernel::Vnni512 => {
            /// A token count as a constant: the accumulators then live in registers.
            macro_rules! call {
                ($($n:literal)*) => {
                    match n {
                        // SAFETY: `supported()` chose this kernel only where the CPU has
                        // AVX-512 F, BW and VNNI; the slices' lengths are those the
                        // kernel reads (asserted there).
                        $($n => unsafe { tile_vnni512::<$n, 1>(std::array::from_ref(weights), tokens, out) },)*
                        _ => unreachable!("1 to {TOKENS} tokens"),
                    }
                };
            }
            call!(1 2 3 4 5 6 7 8);
        }
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 => {
            macro_rules! call {
                ($($n:literal)*) => {
                    match n {
                        // SAFETY: as above, with AVX2 and FMA.
                        $($n => unsafe { tile_avx2::<$n>(weights, tokens, out) },)*
                        _ => unreachable!("1 to {TOKENS} tokens"),
                    }
                };
            }
            call!(1 2 3 4 5 6 7 8);
        }
        _ => tile_portable(weights, tokens, out),
    }
}

/// Two adjacent tiles' sums for `tokens` (at most [`PAIR_TOKENS`]) on the AVX-512 kernel:
/// `[token][tile][16]`.
#[cfg(target_arch = "x86_64")]
fn pair_vnni512(weights: &[TileWeights<'_>; 2], tokens: &Tokens<'_>, out: &mut [f32]) {
    let n = tokens.count();
    macro_rules! call {
        ($($n:literal)*) => {
            match n {
                // SAFETY: as in `one_tile`.
                $($n => unsafe { tile_vnni512::<$n, 2>(weights, tokens, out) },)*
                _ => unreachable!("1 to {PAIR_TOKENS} tokens"),
            }
        };
    }
    call!(1 2 3 4 5 6);
}

/// One tile of a [`Q4Matrix`]: its weights, scales and starts, block after block.
struct TileWeights<'a> {
    codes: &'a [u8],
    scales: &'a [f32],
    starts: &'a [i32],
}

/// Up to [`TOKENS`] quantized rows, for one kernel call.
struct Tokens<'a> {
    /// `[token][blocks × 32]`.
    codes: &'a [u8],
    /// `[token][block]`.
    scales: &'a [f32],
    blocks: usize,
}

impl Tokens<'_> {
    fn count(&self) -> usize {
        self.scales.len() / self.blocks
    }

    /// Asserts the lengths a kernel reads and writes: these tokens, the tiles `w`, and `out`
    /// of `[token][tile][16]`.
    fn check(&self, w: &[TileWeights<'_>], out: &[f32]) {
        let n = self.count();
        assert!(n <= TOKENS && n > 0);
        assert_eq!(self.codes.len(), n * self.blocks * Q4_BLOCK);
        for w in w {
            assert_eq!(w.codes.len(), self.blocks * TILE_BLOCK_BYTES);
            assert_eq!(w.scales.len(), self.blocks * TILE);
            assert_eq!(w.starts.len(), self.blocks * TILE);
        }
        assert_eq!(out.len(), n * TILE * w.len());
    }
}

/// The reference: what every kernel computes, lane by lane, in the same order.
fn tile_portable(w: &TileWeights<'_>, tokens: &Tokens<'_>, out: &mut [f32]) {
    tokens.check(std::slice::from_ref(w), out);
    let blocks = tokens.blocks;
    out.fill(0.0);
    for b in 0..blocks {
        let group = &w.codes[b * TILE_BLOCK_BYTES..(b + 1) * TILE_BLOCK_BYTES];
        for token in 0..tokens.count() {
            let x = &tokens.codes[(token * blocks + b) * Q4_BLOCK..][..Q4_BLOCK];
            let sx = tokens.scales[token * blocks + b];
            for lane in 0..TILE {
                let mut dot = w.starts[b * TILE + lane];
                for g in 0..Q4_BLOCK / GROUP {
                    let c = &group[(g * TILE + lane) * GROUP..][..GROUP];
                    for k in 0..GROUP {
                        dot += i32::from(c[k] as i8) * i32::from(x[g * GROUP + k]);
                    }
                }
                let acc = &mut out[token * TILE + lane];
                *acc = (dot as f32 * sx).mul_add(w.scales[b * TILE + lane], *acc);
            }
        }
    }
}

/// [`tile_portable`] with AVX-512 VNNI for `N` tokens: a group of 16 rows × 4 weights is one
/// register, each token's 4 bytes broadcast to every lane, `vpdpbusd` adds the 16 rows' 4
/// products to the block's sums, which start at the block's starts.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn tile_vnni512<const N: usize, const P: usize>(
    w: &[TileWeights<'_>; P],
    tokens: &Tokens<'_>,
    out: &mut [f32],
) {
    use std::arch::x86_64::*;
    tokens.check(w, out);
    assert_eq!(tokens.count(), N);
    let blocks = tokens.blocks;
    let x = tokens.codes.as_ptr();
    let mut acc = [[_mm512_setzero_ps(); P]; N];
    for b in 0..blocks {
        // SAFETY: the block's 16 starts of each tile lie inside `starts` (checked lengths).
        let starts: [__m512i; P] = std::array::from_fn(|p| unsafe {
            _mm512_loadu_si512(w[p].starts.as_ptr().add(b * TILE).cast())
        });
        let mut dots = [starts; N];
        for g in 0..Q4_BLOCK / GROUP {
            // SAFETY: group g of block b of each tile: 64 bytes inside `codes` (checked
            // lengths).
            let weights: [__m512i; P] = std::array::from_fn(|p| unsafe {
                _mm512_loadu_si512(
                    w[p].codes
                        .as_ptr()
                        .add(b * TILE_BLOCK_BYTES + g * 64)
                        .cast(),
                )
            });
            for (token, dots) in dots.iter_mut().enumerate() {
                let at = (token * blocks + b) * Q4_BLOCK + g * GROUP;
                // SAFETY: 4 bytes at `at < N · blocks · 32` (checked lengths).
                let four = _mm512_set1_epi32(unsafe { x.add(at).cast::<i32>().read_unaligned() });
                for (dot, weights) in dots.iter_mut().zip(&weights) {
                    *dot = _mm512_dpbusd_epi32(*dot, four, *weights);
                }
            }
        }
        // SAFETY: the block's 16 scales of each tile lie inside `scales` (checked lengths).
        let sw: [__m512; P] =
            std::array::from_fn(|p| unsafe { _mm512_loadu_ps(w[p].scales.as_ptr().add(b * TILE)) });
        for (token, acc) in acc.iter_mut().enumerate() {
            let sx = _mm512_set1_ps(tokens.scales[token * blocks + b]);
            for p in 0..P {
                let scaled = _mm512_mul_ps(_mm512_cvtepi32_ps(dots[token][p]), sx);
                acc[p] = _mm512_fmadd_ps(scaled, sw[p], acc[p]);
            }
        }
    }
    for (token, acc) in acc.iter().enumerate() {
        for (p, acc) in acc.iter().enumerate() {
            // SAFETY: 16 floats at `(token · P + p) · 16 < out.len()` (checked lengths).
            unsafe { _mm512_storeu_ps(out.as_mut_ptr().add((token * P + p) * TILE), *acc) };
        }
    }
}

/// [`tile_portable`] with AVX2 for `N` tokens: a group in two halves of 8 rows; `vpmaddubsw`
/// multiplies the token's bytes (unsigned) by the weights (signed) and adds pairs into 16 bits,
/// summed over the block's 8 groups (at most 8 · 2 · 255 · 8 = 32,640, below 2¹⁵), then
/// `vpmaddwd` adds the pairs into 32 bits, on top of the block's starts.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn tile_avx2<const N: usize>(w: &TileWeights<'_>, tokens: &Tokens<'_>, out: &mut [f32]) {
    use std::arch::x86_64::*;
    tokens.check(std::slice::from_ref(w), out);
    assert_eq!(tokens.count(), N);
    let blocks = tokens.blocks;
    let x = tokens.codes.as_ptr();
    let ones = _mm256_set1_epi16(1);
    let mut acc = [[_mm256_setzero_ps(); 2]; N];
    for b in 0..blocks {
        let mut pairs = [[_mm256_setzero_si256(); 2]; N];
        for g in 0..Q4_BLOCK / GROUP {
            let at = b * TILE_BLOCK_BYTES + g * 64;
            // SAFETY: group g of block b: 64 bytes inside `codes` (checked lengths).
            let weights = unsafe {
                [
                    _mm256_loadu_si256(w.codes.as_ptr().add(at).cast()),
                    _mm256_loadu_si256(w.codes.as_ptr().add(at + 32).cast()),
                ]
            };
            for (token, pair) in pairs.iter_mut().enumerate() {
                let at = (token * blocks + b) * Q4_BLOCK + g * GROUP;
                // SAFETY: 4 bytes at `at < N · blocks · 32` (checked lengths).
                let four = unsafe { x.add(at).cast::<i32>().read_unaligned() };
                let x = _mm256_set1_epi32(four);
                for half in 0..2 {
                    let products = _mm256_maddubs_epi16(x, weights[half]);
                    pair[half] = _mm256_add_epi16(pair[half], products);
                }
            }
        }
        for (token, acc) in acc.iter_mut().enumerate() {
            let sx = _mm256_set1_ps(tokens.scales[token * blocks + b]);
            for half in 0..2 {
                // SAFETY: the block's 16 starts and scales lie inside theirs (checked lengths).
                let (start, sw) = unsafe {
                    (
                        _mm256_loadu_si256(w.starts.as_ptr().add(b * TILE + half * 8).cast()),
                        _mm256_loadu_ps(w.scales.as_ptr().add(b * TILE + half * 8)),
                    )
                };
                let dot = _mm256_add_epi32(_mm256_madd_epi16(pairs[token][half], ones), start);
                let scaled = _mm256_mul_ps(_mm256_cvtepi32_ps(dot), sx);
                acc[half] = _mm256_fmadd_ps(scaled, sw, acc[half]);
            }
        }
    }
    for (token, acc) in acc.iter().enumerate() {
        for (half, acc) in acc.iter().enumerate() {
            // SAFETY: 8 floats at `token · 16 + half · 8`, inside `out` (checked lengths).
            unsafe { _mm256_storeu_ps(out.as_mut_ptr().add(token * TILE + half * 8), *acc) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::format;

    /// Random Q4_0 blocks of a `rows × cols` matrix.
    fn random_q4(next: &mut impl FnMut() -> u64, rows: usize, cols: usize) -> Vec<u8> {
        let blocks = rows * cols / Q4_BLOCK;
        let mut q4 = Vec::with_capacity(blocks * Q4_BLOCK_BYTES);
        for _ in 0..blocks {
            let scale = half::f16::from_f32(0.001 + (next() % 1000) as f32 / 10_000.0);
            q4.extend(scale.to_le_bytes());
            q4.extend((0..Q4_BLOCK_BYTES - 2).map(|_| next() as u8));
        }
        q4
    }

    /// Every kernel this CPU has gives the portable kernel's bits, and the products are those
    /// of the dequantized weights with the quantized rows, in f64, to rounding; over shapes
    /// with partial tiles and partial token groups.
    #[test]
    #[allow(clippy::print_stderr)]
    fn the_kernels_agree_with_each_other_and_with_the_exact_product() {
        let mut next = crate::test_rng::xorshift(0x9e37_79b9_7f4a_7c15);
        let kernels: Vec<Kernel> = [Kernel::Vnni512, Kernel::Avx2]
            .into_iter()
            .filter(|k| k.supported() == *k)
            .collect();
        if kernels.is_empty() {
            eprintln!("SKIPPED (in part): this CPU runs the portable kernel only");
        }
        for (rows, cols) in [(16, 32), (71, 64), (384, 384), (5, 96), (1536, 384)] {
            let q4 = random_q4(&mut next, rows, cols);
            let w = Q4Matrix::pack(&q4, rows, cols);
            let mut dense = vec![0.0f32; rows * cols];
            format::dequantize(&q4, &mut dense);
            let bias: Vec<f32> = (0..rows)
                .map(|_| (next() % 200) as f32 / 100.0 - 1.0)
                .collect();
            for t in [1usize, 3, 8, 13] {
                let x: Vec<f32> = (0..t * cols)
                    .map(|_| (next() % 2000) as f32 / 1000.0 - 1.0)
                    .collect();
                let mut q8 = Q8Rows::default();
                q8.quantize(&x, cols);
                let mut want = vec![0.0f32; t * rows];
                linear(&q8, &w, &bias, &mut want, Kernel::Portable, false);
                for &kernel in &kernels {
                    for parallel in [false, true] {
                        let mut got = vec![f32::NAN; t * rows];
                        linear(&q8, &w, &bias, &mut got, kernel, parallel);
                        assert_eq!(
                            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                            "{kernel:?} (parallel {parallel}), {rows}×{cols}, {t} rows"
                        );
                    }
                }
                // The exact product of what was quantized: the codes times the scales.
                for token in 0..t {
                    for o in 0..rows {
                        let mut exact = f64::from(bias[o]);
                        for i in 0..cols {
                            let b = token * cols / Q4_BLOCK + i / Q4_BLOCK;
                            let xi = (f64::from(q8.codes[token * cols + i]) - 128.0)
                                * f64::from(q8.scales[b]);
                            exact += xi * f64::from(dense[o * cols + i]);
                        }
                        let got = f64::from(want[token * rows + o]);
                        assert!(
                            (got - exact).abs() <= 1e-4 * (1.0 + exact.abs()),
                            "{rows}×{cols}, row {token}, output {o}: {got}, exactly {exact}"
                        );
                    }
                }
            }
        }
    }

    /// The AVX2 quantizer gives the plain one's bits: codes, scale and sum.
    #[test]
    #[allow(clippy::print_stderr)]
    fn the_quantizers_agree() {
        if Kernel::detect() == Kernel::Portable {
            eprintln!("SKIPPED: this CPU has no AVX2 quantizer");
            return;
        }
        let mut next = crate::test_rng::xorshift(0x0bad_cafe_dead_beef);
        for round in 0..200 {
            let spread = [0.0, 1e-6, 1.0, 300.0][round % 4];
            let values: [f32; Q4_BLOCK] =
                std::array::from_fn(|_| ((next() % 20_001) as f32 / 10_000.0 - 1.0) * spread);
            let (mut plain, mut simd) = ([0u8; Q4_BLOCK], [0u8; Q4_BLOCK]);
            let (mut plain_scale, mut simd_scale) = (0.0, 0.0);
            quantize_block(&values, &mut plain, &mut plain_scale);
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the CPU has AVX2 (checked above).
            unsafe {
                quantize_avx2(&values, &mut simd, &mut simd_scale);
            }
            #[cfg(not(target_arch = "x86_64"))]
            quantize_block(&values, &mut simd, &mut simd_scale);
            assert_eq!((plain, plain_scale.to_bits()), (simd, simd_scale.to_bits()));
        }
    }

    /// Quantizing a row loses at most half a step of its block's scale per value.
    #[test]
    fn quantized_rows_are_within_half_a_step() {
        let mut next = crate::test_rng::xorshift(0x1234_5678_9abc_def1);
        let x: Vec<f32> = (0..3 * 64)
            .map(|i| {
                if i % 40 == 0 {
                    0.0
                } else {
                    (next() % 20_000) as f32 / 1000.0 - 10.0
                }
            })
            .collect();
        let mut q8 = Q8Rows::default();
        q8.quantize(&x, 64);
        for (i, v) in x.iter().enumerate() {
            let scale = q8.scales[i / Q4_BLOCK];
            let back = (f32::from(q8.codes[i]) - 128.0) * scale;
            assert!(
                (back - v).abs() <= scale * 0.5 + 1e-6,
                "value {i}: {v} came back {back}"
            );
        }
        // A block of zeros: scale 0, every code 128 (the value 0).
        q8.quantize(&[0.0; 32], 32);
        assert_eq!(q8.scales[0], 0.0);
        assert!(q8.codes.iter().all(|&c| c == 128));
    }
}
