//! Eight-bit matrix products, for the layer that does most of a sentence's arithmetic.
//!
//! The second convolution of each branch is about 85 % of the multiply-adds of a short
//! sentence, and the single-precision kernel of `gemm.rs` already runs it near the FMA units'
//! peak. CPUs with VNNI multiply bytes four to a 32-bit lane (`vpdpbusd`: 32 products per
//! instruction against FMA's 8), so the layer runs on eight-bit codes there:
//!
//! - each weight column `c` as `W[k][c] ≈ sw[c] · Q[k][c]`, `|Q| ≤ 127`, fixed at load;
//! - each activation row `i` as `A[i][k] ≈ sa[i] · P[i][k]`, `|P| ≤ 127`, per call, stored as
//!   `P + 128` because the instruction multiplies unsigned by signed bytes;
//! - `A·W ≈ sa[i] · sw[c] · (Σ (P + 128)·Q − 128 · Σ_k Q[k][c])`.
//!
//! The integer sums are exact, so a row's result depends on that row alone and is the same
//! with any kernel (VNNI or the portable loop) and any batch; embeddings stay independent of
//! batching. Against the single-precision layer the sentence vectors move by a cosine of
//! about 1e-4 (the parity test bounds it).

use super::gemm::assert_product_fits;

/// Columns per weight panel: two 8-lane registers of 32-bit sums.
const NR: usize = 16;
/// Rows per kernel call: 6 rows x 2 registers = 12 accumulators, plus the two weight
/// registers and a broadcast, within the 16 AVX registers.
const MR: usize = 6;
/// Depth values per 32-bit lane.
const GROUP: usize = 4;
/// Largest magnitude of a code.
const RANGE: f32 = 127.0;
/// Added to activation codes to make them unsigned.
const ACTIVATION_OFFSET: i32 = 128;

/// The instruction set the products run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// Plain Rust: the reference the VNNI kernels are tested against, bit for bit. Never
    /// chosen at run time, where the single-precision kernel is faster.
    #[cfg_attr(not(test), allow(dead_code))]
    Portable,
    #[cfg(target_arch = "x86_64")]
    AvxVnni,
    #[cfg(target_arch = "x86_64")]
    Avx512Vnni,
}

impl Kernel {
    /// The VNNI kernel this CPU has, if any. Without one, eight-bit products are slower than
    /// the single-precision kernel, and callers keep that.
    pub(crate) fn fast() -> Option<Self> {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avxvnni") {
                return Some(Kernel::AvxVnni);
            }
            if std::is_x86_feature_detected!("avx512vnni")
                && std::is_x86_feature_detected!("avx512vl")
            {
                return Some(Kernel::Avx512Vnni);
            }
        }
        None
    }
}

/// A `k x n` weight matrix as eight-bit codes, for `A (m x k) * W`.
#[derive(Debug, Clone)]
pub(crate) struct QuantizedMatrix {
    k: usize,
    n: usize,
    /// Depth in groups of four; the last group is padded with zero codes.
    groups: usize,
    /// Panel `p` holds columns `p*NR .. p*NR+NR`: per depth group, for each column its four
    /// codes. Columns past `n` are zero.
    panels: Vec<i8>,
    /// Per column (padded to whole panels): the scale `sw`.
    scales: Vec<f32>,
    /// Per column: `128 · Σ_k Q[k][c]`, which the activation offset adds to every sum.
    offsets: Vec<i32>,
    kernel: Kernel,
}

/// Activation rows as codes; working memory a caller keeps across calls.
#[derive(Debug, Default)]
pub(crate) struct RowCodes {
    codes: Vec<u8>,
    scales: Vec<f32>,
}

impl QuantizedMatrix {
    /// Quantises a row-major `k x n` matrix, column by column.
    pub(crate) fn from_row_major(w: &[f32], k: usize, n: usize, kernel: Kernel) -> Self {
        assert_eq!(w.len(), k * n, "weight matrix has the wrong size");
        let groups = k.div_ceil(GROUP);
        let panel_count = n.div_ceil(NR);
        let mut scales = vec![0.0f32; panel_count * NR];
        let mut offsets = vec![0i32; panel_count * NR];
        let mut panels = vec![0i8; panel_count * groups * NR * GROUP];
        for c in 0..n {
            let max = (0..k).fold(0f32, |m, row| m.max(w[row * n + c].abs()));
            let (scale, inverse) = if max > 0.0 && max.is_finite() {
                (max / RANGE, RANGE / max)
            } else {
                (0.0, 0.0)
            };
            scales[c] = scale;
            let (p, j) = (c / NR, c % NR);
            let mut sum = 0i32;
            for row in 0..k {
                let code = nearest(w[row * n + c] * inverse) as i8;
                sum += i32::from(code);
                let (g, t) = (row / GROUP, row % GROUP);
                panels[((p * groups + g) * NR + j) * GROUP + t] = code;
            }
            offsets[c] = ACTIVATION_OFFSET * sum;
        }
        QuantizedMatrix {
            k,
            n,
            groups,
            panels,
            scales,
            offsets,
            kernel,
        }
    }

    /// `out[i][..n] += a[i][..k] * W` for `m` rows, where row `i` of `a` starts at `i * lda`
    /// and row `i` of `out` at `i * ldo`.
    pub(crate) fn matmul_add(
        &self,
        a: &[f32],
        lda: usize,
        m: usize,
        out: &mut [f32],
        ldo: usize,
        rows: &mut RowCodes,
    ) {
        if m == 0 {
            return;
        }
        assert_product_fits(self.k, self.n, a.len(), lda, m, out.len(), ldo);
        let stride = self.groups * GROUP;
        rows.quantize(a, lda, m, self.k, stride);
        let panel_len = self.groups * NR * GROUP;
        let mut sums = [[0i32; NR]; MR];
        for r0 in (0..m).step_by(MR) {
            let count = MR.min(m - r0);
            let codes = &rows.codes[r0 * stride..(r0 + count) * stride];
            for p in 0..self.n.div_ceil(NR) {
                let panel = &self.panels[p * panel_len..(p + 1) * panel_len];
                self.tile(count, codes, stride, panel, &mut sums);
                let cols = NR.min(self.n - p * NR);
                let offsets = &self.offsets[p * NR..][..cols];
                let scales = &self.scales[p * NR..][..cols];
                for (r, row_sums) in sums.iter().enumerate().take(count) {
                    let row_scale = rows.scales[r0 + r];
                    let dst = &mut out[(r0 + r) * ldo + p * NR..][..cols];
                    for (((value, &sum), &offset), &scale) in
                        dst.iter_mut().zip(row_sums).zip(offsets).zip(scales)
                    {
                        *value += (sum - offset) as f32 * (row_scale * scale);
                    }
                }
            }
        }
    }

    /// Integer sums of `rows` code rows (at most `MR`) against one panel.
    fn tile(
        &self,
        rows: usize,
        codes: &[u8],
        stride: usize,
        panel: &[i8],
        sums: &mut [[i32; NR]; MR],
    ) {
        assert!((1..=MR).contains(&rows));
        assert!(codes.len() >= rows * stride && stride >= self.groups * GROUP);
        assert_eq!(panel.len(), self.groups * NR * GROUP);
        match self.kernel {
            Kernel::Portable => portable_tile(rows, self.groups, codes, stride, panel, sums),
            #[cfg(target_arch = "x86_64")]
            Kernel::AvxVnni | Kernel::Avx512Vnni => {
                let (a, p, g) = (codes.as_ptr(), panel.as_ptr(), self.groups);
                // SAFETY: `Kernel::fast` checked the CPU for the instructions of the variant
                // chosen, and the assertions above cover every read the kernel makes: `rows`
                // rows of `groups * 4` codes at `stride`, and `groups * 64` panel bytes.
                unsafe {
                    if self.kernel == Kernel::AvxVnni {
                        match rows {
                            6 => vnni::tile_vex::<6>(g, a, stride, p, sums),
                            5 => vnni::tile_vex::<5>(g, a, stride, p, sums),
                            4 => vnni::tile_vex::<4>(g, a, stride, p, sums),
                            3 => vnni::tile_vex::<3>(g, a, stride, p, sums),
                            2 => vnni::tile_vex::<2>(g, a, stride, p, sums),
                            _ => vnni::tile_vex::<1>(g, a, stride, p, sums),
                        }
                    } else {
                        match rows {
                            6 => vnni::tile_evex::<6>(g, a, stride, p, sums),
                            5 => vnni::tile_evex::<5>(g, a, stride, p, sums),
                            4 => vnni::tile_evex::<4>(g, a, stride, p, sums),
                            3 => vnni::tile_evex::<3>(g, a, stride, p, sums),
                            2 => vnni::tile_evex::<2>(g, a, stride, p, sums),
                            _ => vnni::tile_evex::<1>(g, a, stride, p, sums),
                        }
                    }
                }
            }
        }
    }
}

impl RowCodes {
    /// Codes of `m` rows of `k` values, each row padded with zero codes to `stride`.
    fn quantize(&mut self, a: &[f32], lda: usize, m: usize, k: usize, stride: usize) {
        self.codes.clear();
        self.codes.resize(m * stride, ACTIVATION_OFFSET as u8);
        self.scales.clear();
        for i in 0..m {
            let row = &a[i * lda..i * lda + k];
            let max = largest_magnitude(row);
            let (scale, inverse) = if max > 0.0 && max.is_finite() {
                (max / RANGE, RANGE / max)
            } else {
                (0.0, 0.0)
            };
            self.scales.push(scale);
            for (code, &x) in self.codes[i * stride..][..k].iter_mut().zip(row) {
                *code = (nearest(x * inverse) + ACTIVATION_OFFSET) as u8;
            }
        }
    }
}

/// The largest `|x|`, in eight independent lanes so that the loop vectorises.
fn largest_magnitude(row: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let mut chunks = row.chunks_exact(8);
    for chunk in &mut chunks {
        for (lane, &x) in lanes.iter_mut().zip(chunk) {
            let x = x.abs();
            *lane = if x > *lane { x } else { *lane };
        }
    }
    let tail = chunks.remainder().iter().map(|x| x.abs());
    lanes.into_iter().chain(tail).fold(0f32, f32::max)
}

/// `v` rounded to the nearest integer (ties to even) and clamped to the code range. Adding
/// 1.5 · 2^23 leaves that integer in the low bits of the sum, which vectorises; `f32::round`
/// is a library call per value on baseline x86-64 and `as i32` checks every value for NaN.
#[inline]
fn nearest(v: f32) -> i32 {
    const MAGIC: f32 = 12_582_912.0;
    let clamped = v.clamp(-RANGE, RANGE);
    (clamped + MAGIC).to_bits() as i32 - MAGIC.to_bits() as i32
}

fn portable_tile(
    rows: usize,
    groups: usize,
    codes: &[u8],
    stride: usize,
    panel: &[i8],
    sums: &mut [[i32; NR]; MR],
) {
    for (r, row_sums) in sums.iter_mut().enumerate().take(rows) {
        *row_sums = [0; NR];
        let row = &codes[r * stride..][..groups * GROUP];
        for (g, quad) in row.chunks_exact(GROUP).enumerate() {
            let block = &panel[g * NR * GROUP..][..NR * GROUP];
            for (j, weights) in block.chunks_exact(GROUP).enumerate() {
                let dot: i32 = quad
                    .iter()
                    .zip(weights)
                    .map(|(&x, &w)| i32::from(x) * i32::from(w))
                    .sum();
                row_sums[j] += dot;
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod vnni {
    use std::arch::x86_64::*;

    use super::{GROUP, MR, NR};

    /// The same kernel for the VEX (AVX-VNNI) and EVEX (AVX-512 VNNI) encodings of the one
    /// instruction; a CPU may have either.
    macro_rules! tile {
        ($name:ident, $features:literal, $dpbusd:ident) => {
            /// # Safety
            /// Requires the target features named. `a` must be readable for `R` rows of
            /// `groups * 4` bytes at `stride`; `p` for `groups * 64` bytes.
            // Index loops over the const bound unroll fully, keeping every accumulator in a
            // register; the weight loads are shared across rows.
            #[allow(clippy::needless_range_loop)]
            #[target_feature(enable = $features)]
            pub(super) unsafe fn $name<const R: usize>(
                groups: usize,
                a: *const u8,
                stride: usize,
                p: *const i8,
                sums: &mut [[i32; NR]; MR],
            ) {
                let mut acc = [[_mm256_setzero_si256(); 2]; R];
                for g in 0..groups {
                    let w = p.add(g * NR * GROUP);
                    let w0 = _mm256_loadu_si256(w.cast());
                    let w1 = _mm256_loadu_si256(w.add(32).cast());
                    for r in 0..R {
                        let quad = a.add(r * stride + g * GROUP).cast::<i32>().read_unaligned();
                        let av = _mm256_set1_epi32(quad);
                        acc[r][0] = $dpbusd(acc[r][0], av, w0);
                        acc[r][1] = $dpbusd(acc[r][1], av, w1);
                    }
                }
                for r in 0..R {
                    let out = sums[r].as_mut_ptr();
                    _mm256_storeu_si256(out.cast(), acc[r][0]);
                    _mm256_storeu_si256(out.add(8).cast(), acc[r][1]);
                }
            }
        };
    }

    tile!(tile_vex, "avx2,avxvnni", _mm256_dpbusd_avx_epi32);
    tile!(
        tile_evex,
        "avx2,avx512f,avx512vl,avx512vnni",
        _mm256_dpbusd_epi32
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::use_m3::gemm::tests::pseudo_random;

    fn kernels() -> Vec<Kernel> {
        let mut all = vec![Kernel::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avxvnni") {
                all.push(Kernel::AvxVnni);
            }
            if std::is_x86_feature_detected!("avx512vnni")
                && std::is_x86_feature_detected!("avx512vl")
            {
                all.push(Kernel::Avx512Vnni);
            }
        }
        all
    }

    fn product(m: usize, k: usize, n: usize, kernel: Kernel, lda: usize, ldo: usize) -> Vec<f32> {
        let a = pseudo_random(m * lda, 3 + m as u32);
        let w = pseudo_random(k * n, 7 + n as u32);
        let q = QuantizedMatrix::from_row_major(&w, k, n, kernel);
        let mut out = vec![1.0f32; m * ldo];
        q.matmul_add(&a, lda, m, &mut out, ldo, &mut RowCodes::default());
        out
    }

    #[test]
    fn is_close_to_the_float_product_and_writes_only_its_columns() {
        for kernel in kernels() {
            for &(m, k, n) in &[(1, 1, 1), (1, 300, 80), (7, 33, 40), (13, 1280, 256)] {
                let (lda, ldo) = (k + 3, n + 5);
                let a = pseudo_random(m * lda, 3 + m as u32);
                let w = pseudo_random(k * n, 7 + n as u32);
                let got = product(m, k, n, kernel, lda, ldo);
                for i in 0..m {
                    for j in 0..n {
                        let exact: f32 = (0..k).map(|kk| a[i * lda + kk] * w[kk * n + j]).sum();
                        // Uniform values in [-1, 1]: each code errs by at most half a step
                        // (1/254 of the largest value), so the sum errs by about
                        // 0.003 sqrt(k) typically; a wrong kernel errs by far more.
                        let bound = 0.02 * (k as f32).sqrt().max(1.0);
                        let value = got[i * ldo + j] - 1.0;
                        assert!(
                            (value - exact).abs() <= bound,
                            "{kernel:?} m={m} k={k} n={n} [{i},{j}]: {value} vs {exact}"
                        );
                    }
                    for j in n..ldo {
                        assert_eq!(got[i * ldo + j], 1.0, "wrote past the row end");
                    }
                }
            }
        }
    }

    #[test]
    fn every_kernel_and_batch_gives_the_same_bits() {
        let (k, n) = (640, 96);
        let w = pseudo_random(k * n, 11);
        let a = pseudo_random(20 * k, 5);
        let reference = {
            let q = QuantizedMatrix::from_row_major(&w, k, n, Kernel::Portable);
            let mut out = vec![0.0f32; 20 * n];
            q.matmul_add(&a, k, 20, &mut out, n, &mut RowCodes::default());
            out
        };
        for kernel in kernels() {
            let q = QuantizedMatrix::from_row_major(&w, k, n, kernel);
            let mut codes = RowCodes::default();
            for i in 0..20 {
                let mut one = vec![0.0f32; n];
                q.matmul_add(&a[i * k..], k, 1, &mut one, n, &mut codes);
                assert_eq!(one, &reference[i * n..(i + 1) * n], "{kernel:?} row {i}");
            }
        }
    }

    #[test]
    fn codes_round_to_nearest_and_stay_in_range() {
        let cases = [
            (0.0, 0),
            (0.49, 0),
            (0.5, 0),
            (1.5, 2),
            (-2.6, -3),
            (126.6, 127),
            (300.0, 127),
            (-1e9, -127),
        ];
        for (value, code) in cases {
            assert_eq!(nearest(value), code, "{value}");
        }
    }

    #[test]
    fn a_zero_row_or_column_adds_nothing() {
        let (k, n) = (8, 3);
        let mut w = pseudo_random(k * n, 2);
        for row in 0..k {
            w[row * n + 1] = 0.0;
        }
        let mut a = pseudo_random(2 * k, 9);
        a[k..].fill(0.0);
        for kernel in kernels() {
            let q = QuantizedMatrix::from_row_major(&w, k, n, kernel);
            let mut out = vec![0.5f32; 2 * n];
            q.matmul_add(&a, k, 2, &mut out, n, &mut RowCodes::default());
            assert_eq!(out[1], 0.5, "{kernel:?}: zero column");
            assert_eq!(&out[n..], &[0.5, 0.5, 0.5], "{kernel:?}: zero row");
        }
    }
}
