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
        assert!(lda >= self.k && ldo >= self.n, "leading dimension too small");
        assert!(a.len() >= (m - 1) * lda + self.k, "input too short");
        assert!(out.len() >= (m - 1) * ldo + self.n, "output too short");
        if self.k == 0 {
            if !accumulate {
                for i in 0..m {
                    out[i * ldo..i * ldo + self.n].fill(0.0);
                }
            }
            return;
        }
        let panel_count = self.n.div_ceil(NR);
        let mut tile = [0.0f32; MR * NR];
        for k0 in (0..self.k).step_by(KC) {
            let kc = KC.min(self.k - k0);
            let acc = accumulate || k0 > 0;
            for m0 in (0..m).step_by(MC) {
                let mc = MC.min(m - m0);
                for p in 0..panel_count {
                    let cols = NR.min(self.n - p * NR);
                    let panel = &self.panels[(p * self.k + k0) * NR..(p * self.k + k0 + kc) * NR];
                    for r0 in (m0..m0 + mc).step_by(MR) {
                        let rows = MR.min(m0 + mc - r0);
                        let a_block = &a[r0 * lda + k0..];
                        if cols == NR {
                            let c = &mut out[r0 * ldo + p * NR..];
                            kernels.run(rows, kc, a_block, lda, panel, c, ldo, acc);
                        } else {
                            // Ragged last panel: compute a full tile, then copy
                            // only the real columns so `out` is never overrun.
                            for r in 0..rows {
                                let src = &out[(r0 + r) * ldo + p * NR..][..cols];
                                tile[r * NR..r * NR + cols].copy_from_slice(src);
                            }
                            kernels.run(rows, kc, a_block, lda, panel, &mut tile, NR, acc);
                            for r in 0..rows {
                                let dst = &mut out[(r0 + r) * ldo + p * NR..][..cols];
                                dst.copy_from_slice(&tile[r * NR..r * NR + cols]);
                            }
                        }
                    }
                }
            }
        }
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

    /// One `rows x NR` output tile over depth `kc`; `rows <= MR`.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn run(
        self,
        rows: usize,
        kc: usize,
        a: &[f32],
        lda: usize,
        panel: &[f32],
        c: &mut [f32],
        ldc: usize,
        accumulate: bool,
    ) {
        debug_assert!(rows >= 1 && rows <= MR);
        debug_assert!(a.len() >= (rows - 1) * lda + kc);
        debug_assert!(panel.len() >= kc * NR);
        debug_assert!(c.len() >= (rows - 1) * ldc + NR);
        match self {
            Kernels::Portable => portable_tile(rows, kc, a, lda, panel, c, ldc, accumulate),
            #[cfg(target_arch = "x86_64")]
            Kernels::Avx2Fma => {
                // SAFETY: the CPU supports AVX2 and FMA (checked in `get`), and
                // the slice bounds asserted above cover every access the
                // kernel makes.
                unsafe {
                    let (a, p, c) = (a.as_ptr(), panel.as_ptr(), c.as_mut_ptr());
                    match rows {
                        6 => avx2::tile::<6>(kc, a, lda, p, c, ldc, accumulate),
                        5 => avx2::tile::<5>(kc, a, lda, p, c, ldc, accumulate),
                        4 => avx2::tile::<4>(kc, a, lda, p, c, ldc, accumulate),
                        3 => avx2::tile::<3>(kc, a, lda, p, c, ldc, accumulate),
                        2 => avx2::tile::<2>(kc, a, lda, p, c, ldc, accumulate),
                        _ => avx2::tile::<1>(kc, a, lda, p, c, ldc, accumulate),
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
            c_row[j] = if accumulate { c_row[j] + acc[j] } else { acc[j] };
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// # Safety
    /// Requires AVX2 and FMA. `a` must be readable for `R` rows of `kc`
    /// values at stride `lda`, `p` for `kc * 16` values and `c` read/writable
    /// for `R` rows of 16 values at stride `ldc`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn tile<const R: usize>(
        kc: usize,
        a: *const f32,
        lda: usize,
        p: *const f32,
        c: *mut f32,
        ldc: usize,
        accumulate: bool,
    ) {
        let mut lo = [_mm256_setzero_ps(); R];
        let mut hi = [_mm256_setzero_ps(); R];
        for kk in 0..kc {
            let w0 = _mm256_loadu_ps(p.add(kk * 16));
            let w1 = _mm256_loadu_ps(p.add(kk * 16 + 8));
            for r in 0..R {
                let av = _mm256_broadcast_ss(&*a.add(r * lda + kk));
                lo[r] = _mm256_fmadd_ps(av, w0, lo[r]);
                hi[r] = _mm256_fmadd_ps(av, w1, hi[r]);
            }
        }
        for r in 0..R {
            let row = c.add(r * ldc);
            if accumulate {
                lo[r] = _mm256_add_ps(lo[r], _mm256_loadu_ps(row));
                hi[r] = _mm256_add_ps(hi[r], _mm256_loadu_ps(row.add(8)));
            }
            _mm256_storeu_ps(row, lo[r]);
            _mm256_storeu_ps(row.add(8), hi[r]);
        }
    }
}

#[cfg(test)]
mod tests {
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

    fn pseudo_random(len: usize, seed: u32) -> Vec<f32> {
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
                assert!((got - want).abs() < 1e-3, "m={m} k={k} n={n} [{i},{j}] {got} vs {want}");
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
        for &(m, k, n) in &[(1, 1, 1), (5, 7, 16), (13, 300, 40), (80, 520, 48), (6, 256, 32)] {
            check(m, k, n, Kernels::Portable);
            check(m, k, n, Kernels::get());
            // `matmul` itself with tight leading dimensions.
            let a = pseudo_random(m * k, 3);
            let w = pseudo_random(k * n, 4);
            let packed = PackedMatrix::from_row_major(&w, k, n);
            let mut out = vec![0.0f32; m * n];
            packed.matmul(&a, k, m, &mut out, n, false);
            let expected = naive(&a, &w, m, k, n);
            for (g, e) in out.iter().zip(&expected) {
                assert!((g - e).abs() < 1e-3);
            }
        }
    }
}
