//! Single-precision matrix products against constant weight matrices.
//!
//! Weights are repacked once at load time into column panels of `NR` so the
//! inner kernel streams them contiguously; activations stay row-major. This
//! avoids the per-call packing that general GEMM libraries do, which would
//! cost as much as the arithmetic itself for the few rows a short sentence
//! has.

/// Width of a weight panel: two 8-lane AVX registers.
const NR: usize = 16;
/// Rows per kernel call; 6 rows x 2 registers keeps 12 accumulators plus the
/// operands within the 16 AVX registers.
const MR: usize = 6;
/// Depth of a block: a 256 x 16 weight panel slice (16 KiB) stays in L1.
const KC: usize = 256;
/// Rows per block: 72 rows x 256 columns of activations (72 KiB) stay in L2.
const MC: usize = 72;

/// A `k x n` weight matrix packed for `A (m x k) * W`.
#[derive(Debug, Clone)]
pub(crate) struct PackedMatrix {
    k: usize,
    n: usize,
    /// Panel `p` holds columns `p*NR .. p*NR+NR` as `k` rows of `NR` values;
    /// columns past `n` are zero.
    panels: Vec<f32>,
}

impl PackedMatrix {
    /// Packs a row-major `k x n` matrix.
    pub fn from_row_major(w: &[f32], k: usize, n: usize) -> Self {
        assert_eq!(w.len(), k * n, "weight matrix has the wrong size");
        let panel_count = n.div_ceil(NR);
        let mut panels = vec![0.0f32; panel_count * k * NR];
        for p in 0..panel_count {
            let cols = NR.min(n - p * NR);
            let panel = &mut panels[p * k * NR..(p + 1) * k * NR];
            for row in 0..k {
                let src = &w[row * n + p * NR..row * n + p * NR + cols];
                panel[row * NR..row * NR + cols].copy_from_slice(src);
            }
        }
        PackedMatrix { k, n, panels }
    }

    /// `out[i][..n] (+)= a[i][..k] * W` for `m` rows, where row `i` of `a`
    /// starts at `i * lda` and row `i` of `out` at `i * ldo`. With
    /// `accumulate` false the previous contents of `out` are ignored.
    pub fn matmul(
        &self,
        a: &[f32],
        lda: usize,
        m: usize,
        out: &mut [f32],
        ldo: usize,
        accumulate: bool,
    ) {
        self.matmul_with(Kernels::get(), a, lda, m, out, ldo, accumulate);
    }

    #[allow(clippy::too_many_arguments)]
    fn matmul_with(
        &self,
        kernels: Kernels,
        a: &[f32],
        lda: usize,
        m: usize,
        out: &mut [f32],
        ldo: usize,
        accumulate: bool,
    ) {
        if m == 0 {
            return;
        }
        assert_product_fits(self.k, self.n, a.len(), lda, m, out.len(), ldo);
        if self.k == 0 {
            if !accumulate {
                for i in 0..m {
                    out[i * ldo..i * ldo + self.n].fill(0.0);
                }
            }
            return;
        }
        let panel_count = self.n.div_ceil(NR);
        let full_panels = self.n / NR;
        let panel_stride = self.k * NR;
        let mut tile = [0.0f32; MR * NR];
        for k0 in (0..self.k).step_by(KC) {
            let kc = KC.min(self.k - k0);
            let acc = accumulate || k0 > 0;
            for m0 in (0..m).step_by(MC) {
                let mc = MC.min(m - m0);
                // Equal-sized row groups: 15 rows run as 5+5+5 rather than
                // 6+6+3, since a short tile reuses each weight load less.
                let groups = mc.div_ceil(MR);
                let per_group = mc.div_ceil(groups);
                let wide = span_for(per_group);
                let mut p = 0;
                while p < panel_count {
                    let span = if p + wide <= full_panels { wide } else { 1 };
                    let panels = &self.panels[p * panel_stride + k0 * NR..];
                    for r0 in (m0..m0 + mc).step_by(per_group) {
                        let rows = per_group.min(m0 + mc - r0);
                        let a_block = &a[r0 * lda + k0..];
                        if p < full_panels {
                            let c = &mut out[r0 * ldo + p * NR..];
                            kernels.run(
                                rows,
                                span,
                                kc,
                                a_block,
                                lda,
                                panels,
                                panel_stride,
                                c,
                                ldo,
                                acc,
                            );
                        } else {
                            // Ragged last panel: compute a full tile, then copy
                            // only the real columns so `out` is never overrun.
                            let cols = self.n - p * NR;
                            for r in 0..rows {
                                let src = &out[(r0 + r) * ldo + p * NR..][..cols];
                                tile[r * NR..r * NR + cols].copy_from_slice(src);
                            }
                            kernels.run(
                                rows,
                                1,
                                kc,
                                a_block,
                                lda,
                                panels,
                                panel_stride,
                                &mut tile,
                                NR,
                                acc,
                            );
                            for r in 0..rows {
                                let dst = &mut out[(r0 + r) * ldo + p * NR..][..cols];
                                dst.copy_from_slice(&tile[r * NR..r * NR + cols]);
                            }
                        }
                    }
                    p += span;
                }
            }
        }
    }
}

/// Panics unless `m ≥ 1` rows of `k` inputs at stride `lda` and of `n` outputs at stride `ldo`
/// fit in slices of `a_len` and `out_len` values: the bounds every kernel here relies on.
pub(super) fn assert_product_fits(
    k: usize,
    n: usize,
    a_len: usize,
    lda: usize,
    m: usize,
    out_len: usize,
    ldo: usize,
) {
    assert!(lda >= k && ldo >= n, "leading dimension too small");
    assert!(a_len >= (m - 1) * lda + k, "input too short");
    assert!(out_len >= (m - 1) * ldo + n, "output too short");
}

/// Panels handled per kernel call for tiles of `rows` rows. Each row and
/// panel is a separate chain of dependent FMAs; with too few chains the
/// kernel waits on FMA latency instead of issuing, so short tiles cover
/// several panels. Every output value is still summed in the same order.
fn span_for(rows: usize) -> usize {
    match rows {
        1 => 4,
        2 | 3 => 2,
        _ => 1,
    }
}

/// The kernel implementation chosen for this CPU.
#[derive(Clone, Copy)]
enum Kernels {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Avx2Fma,
}

impl Kernels {
    fn get() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                return Kernels::Avx2Fma;
            }
        }
        Kernels::Portable
    }

    /// One output tile of `rows` rows (at most `MR`) and `span` panels over
    /// depth `kc`. Panel `q` starts at `q * panel_stride` in `panels`.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn run(
        self,
        rows: usize,
        span: usize,
        kc: usize,
        a: &[f32],
        lda: usize,
        panels: &[f32],
        panel_stride: usize,
        c: &mut [f32],
        ldc: usize,
        accumulate: bool,
    ) {
        assert!((1..=MR).contains(&rows) && span >= 1);
        assert!(a.len() >= (rows - 1) * lda + kc);
        assert!(panels.len() >= (span - 1) * panel_stride + kc * NR);
        assert!(c.len() >= (rows - 1) * ldc + span * NR);
        match self {
            Kernels::Portable => {
                for q in 0..span {
                    let panel = &panels[q * panel_stride..];
                    let c = &mut c[q * NR..];
                    portable_tile(rows, kc, a, lda, panel, c, ldc, accumulate);
                }
            }
            #[cfg(target_arch = "x86_64")]
            Kernels::Avx2Fma => {
                // SAFETY: the CPU supports AVX2 and FMA (checked in `get`), and
                // the slice bounds asserted above cover every access the
                // kernel makes.
                unsafe {
                    let (a, p, c) = (a.as_ptr(), panels.as_ptr(), c.as_mut_ptr());
                    let (ps, acc) = (panel_stride, accumulate);
                    match (rows, span) {
                        (1, 4) => avx2::tile::<1, 4>(kc, a, lda, p, ps, c, ldc, acc),
                        (1, 2) => avx2::tile::<1, 2>(kc, a, lda, p, ps, c, ldc, acc),
                        (2, 2) => avx2::tile::<2, 2>(kc, a, lda, p, ps, c, ldc, acc),
                        (3, 2) => avx2::tile::<3, 2>(kc, a, lda, p, ps, c, ldc, acc),
                        _ => {
                            for q in 0..span {
                                let (p, c) = (p.add(q * ps), c.add(q * NR));
                                match rows {
                                    6 => avx2::tile::<6, 1>(kc, a, lda, p, ps, c, ldc, acc),
                                    5 => avx2::tile::<5, 1>(kc, a, lda, p, ps, c, ldc, acc),
                                    4 => avx2::tile::<4, 1>(kc, a, lda, p, ps, c, ldc, acc),
                                    3 => avx2::tile::<3, 1>(kc, a, lda, p, ps, c, ldc, acc),
                                    2 => avx2::tile::<2, 1>(kc, a, lda, p, ps, c, ldc, acc),
                                    _ => avx2::tile::<1, 1>(kc, a, lda, p, ps, c, ldc, acc),
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn portable_tile(
    rows: usize,
    kc: usize,
    a: &[f32],
    lda: usize,
    panel: &[f32],
    c: &mut [f32],
    ldc: usize,
    accumulate: bool,
) {
    for r in 0..rows {
        let mut acc = [0.0f32; NR];
        let a_row = &a[r * lda..r * lda + kc];
        for (kk, &av) in a_row.iter().enumerate() {
            let w = &panel[kk * NR..kk * NR + NR];
            for j in 0..NR {
                acc[j] = av.mul_add(w[j], acc[j]);
            }
        }
        let c_row = &mut c[r * ldc..r * ldc + NR];
        for j in 0..NR {
            c_row[j] = if accumulate {
                c_row[j] + acc[j]
            } else {
                acc[j]
            };
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// # Safety
    /// Requires AVX2 and FMA. `a` must be readable for `R` rows of `kc`
    /// values at stride `lda`; `p` for `P` panels of `kc * 16` values at
    /// stride `ps`; `c` read/writable for `R` rows of `16 * P` values at
    /// stride `ldc`.
    // Index loops over the const bounds unroll fully, keeping every
    // accumulator in a register; the weight loads are shared across rows.
    #[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn tile<const R: usize, const P: usize>(
        kc: usize,
        a: *const f32,
        lda: usize,
        p: *const f32,
        ps: usize,
        c: *mut f32,
        ldc: usize,
        accumulate: bool,
    ) {
        let mut acc = [[[_mm256_setzero_ps(); 2]; P]; R];
        for kk in 0..kc {
            for q in 0..P {
                let w0 = _mm256_loadu_ps(p.add(q * ps + kk * 16));
                let w1 = _mm256_loadu_ps(p.add(q * ps + kk * 16 + 8));
                for r in 0..R {
                    let av = _mm256_broadcast_ss(&*a.add(r * lda + kk));
                    acc[r][q][0] = _mm256_fmadd_ps(av, w0, acc[r][q][0]);
                    acc[r][q][1] = _mm256_fmadd_ps(av, w1, acc[r][q][1]);
                }
            }
        }
        for (r, row_acc) in acc.iter().enumerate() {
            for (q, pair) in row_acc.iter().enumerate() {
                let dst = c.add(r * ldc + q * 16);
                let (mut lo, mut hi) = (pair[0], pair[1]);
                if accumulate {
                    lo = _mm256_add_ps(lo, _mm256_loadu_ps(dst));
                    hi = _mm256_add_ps(hi, _mm256_loadu_ps(dst.add(8)));
                }
                _mm256_storeu_ps(dst, lo);
                _mm256_storeu_ps(dst.add(8), hi);
            }
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    fn naive(a: &[f32], w: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
        let mut out = vec![0.0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                let mut s = 0.0f64;
                for kk in 0..k {
                    s += a[i * k + kk] as f64 * w[kk * n + j] as f64;
                }
                out[i * n + j] = s as f32;
            }
        }
        out
    }

    /// Values in [-1, 1) from a fixed seed; shared with the eight-bit kernel's tests.
    pub(in crate::use_m3) fn pseudo_random(len: usize, seed: u32) -> Vec<f32> {
        let mut state = seed.wrapping_mul(2_654_435_761).max(1);
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                (state % 2000) as f32 / 1000.0 - 1.0
            })
            .collect()
    }

    fn check(m: usize, k: usize, n: usize, kernels: Kernels) {
        let a = pseudo_random(m * k, 1 + m as u32);
        let w = pseudo_random(k * n, 7 + n as u32);
        let packed = PackedMatrix::from_row_major(&w, k, n);
        let expected = naive(&a, &w, m, k, n);

        // Padded leading dimensions check the strided paths too.
        let (lda, ldo) = (k + 3, n + 5);
        let mut a_strided = vec![9.0f32; m * lda];
        for i in 0..m {
            a_strided[i * lda..i * lda + k].copy_from_slice(&a[i * k..i * k + k]);
        }
        let mut out = vec![1.0f32; m * ldo];
        packed.matmul_with(kernels, &a_strided, lda, m, &mut out, ldo, true);
        for i in 0..m {
            for j in 0..n {
                let got = out[i * ldo + j];
                let want = expected[i * n + j] + 1.0;
                assert!(
                    (got - want).abs() < 1e-3,
                    "m={m} k={k} n={n} [{i},{j}] {got} vs {want}"
                );
            }
            for j in n..ldo {
                assert_eq!(out[i * ldo + j], 1.0, "wrote past the row end");
            }
        }
        packed.matmul_with(kernels, &a_strided, lda, m, &mut out, ldo, false);
        for i in 0..m {
            for j in 0..n {
                assert!((out[i * ldo + j] - expected[i * n + j]).abs() < 1e-3);
            }
        }
    }

    #[test]
    fn matches_naive_product() {
        let shapes = [
            (1, 1, 1),
            (1, 300, 80),
            (2, 33, 64),
            (3, 40, 48),
            (5, 7, 16),
            (13, 300, 40),
            (80, 520, 48),
            (6, 256, 32),
        ];
        for &(m, k, n) in &shapes {
            check(m, k, n, Kernels::Portable);
            check(m, k, n, Kernels::get());
        }
    }

    #[test]
    fn rows_are_independent_and_kernels_agree_exactly() {
        // A row's result must not depend on how many rows share the call or
        // which kernel runs it: embeddings must not depend on batching.
        let (k, n) = (600, 96);
        let w = pseudo_random(k * n, 11);
        let packed = PackedMatrix::from_row_major(&w, k, n);
        let a = pseudo_random(20 * k, 5);
        let mut batch = vec![0.0f32; 20 * n];
        packed.matmul(&a, k, 20, &mut batch, n, false);
        for kernels in [Kernels::Portable, Kernels::get()] {
            for i in 0..20 {
                let mut one = vec![0.0f32; n];
                packed.matmul_with(kernels, &a[i * k..], k, 1, &mut one, n, false);
                assert_eq!(one, &batch[i * n..(i + 1) * n], "row {i}");
            }
        }
    }
}
