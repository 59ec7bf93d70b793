//! Cosine distance over unit vectors.

use hnsw_rs::anndists::dist::distances::Distance;

use crate::IndexError;

/// `1 - a·b` for L2-normalised vectors.
///
/// hnsw_rs's own `DistDot` asserts that `a·b <= 1`, which rounding breaks for
/// a vector compared with itself, and `DistCosine` recomputes both norms in
/// f64 on every call; vectors here are normalised once on insert, so a
/// clamped dot product is both safe and cheaper.
#[derive(Default, Clone, Copy, Debug)]
pub(crate) struct UnitCosine;

impl Distance<f32> for UnitCosine {
    fn eval(&self, va: &[f32], vb: &[f32]) -> f32 {
        // The graph code asserts non-negative distances.
        (1.0 - dot(va, vb)).clamp(0.0, 2.0)
    }
}

/// Dot product: the AVX2/FMA kernel where the CPU has it, else the portable one.
///
/// Graph searches read vectors at random, and at 512 dimensions the
/// distances dominate their time: the portable kernel, compiled for the
/// baseline x86-64 target, runs 4-lane SSE multiplies and adds, while the
/// AVX2/FMA one does 8-lane fused multiply-adds on four accumulators.
/// Exact scans, graph searches and the node's own comparisons (recall's
/// collapse and shadowing, the write path's duplicate check, the review's
/// pairing) all come here, so their scores agree bit for bit on any one
/// machine.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU supports both features the kernel is compiled for.
        return unsafe { x86::dot_avx2_fma(a, b) };
    }
    dot_portable(a, b)
}

/// Dot product written with independent lanes so the optimiser can
/// vectorise it (float addition is not associative, so a plain fold stays
/// scalar).
#[inline]
fn dot_portable(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; 8];
    let ca = a.chunks_exact(8);
    let cb = b.chunks_exact(8);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let mut s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{
        __m256, _mm256_add_ps, _mm256_castps256_ps128, _mm256_extractf128_ps, _mm256_fmadd_ps,
        _mm256_loadu_ps, _mm256_setzero_ps, _mm_add_ps, _mm_add_ss, _mm_cvtss_f32, _mm_movehl_ps,
        _mm_shuffle_ps,
    };

    /// Loads 8 floats from the start of `v`, which must hold at least 8.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn load8(v: &[f32]) -> __m256 {
        assert!(v.len() >= 8);
        // SAFETY: `v` holds at least 8 floats (asserted); the load is unaligned.
        unsafe { _mm256_loadu_ps(v.as_ptr()) }
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn dot_avx2_fma(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let (a, b) = (&a[..n], &b[..n]);
        let mut acc = [_mm256_setzero_ps(); 4];
        let ca = a.chunks_exact(32);
        let cb = b.chunks_exact(32);
        let (ra, rb) = (ca.remainder(), cb.remainder());
        for (x, y) in ca.zip(cb) {
            for (j, acc) in acc.iter_mut().enumerate() {
                *acc = _mm256_fmadd_ps(load8(&x[8 * j..]), load8(&y[8 * j..]), *acc);
            }
        }
        let ca = ra.chunks_exact(8);
        let cb = rb.chunks_exact(8);
        let (ra, rb) = (ca.remainder(), cb.remainder());
        for (x, y) in ca.zip(cb) {
            acc[0] = _mm256_fmadd_ps(load8(x), load8(y), acc[0]);
        }
        let mut s = sum_lanes(acc);
        for (x, y) in ra.iter().zip(rb) {
            s += x * y;
        }
        s
    }

    /// The sum of four accumulators' lanes, in the one order every kernel here uses.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn sum_lanes(acc: [__m256; 4]) -> f32 {
        let v = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        let v = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
        let v = _mm_add_ps(v, _mm_movehl_ps(v, v));
        let v = _mm_add_ss(v, _mm_shuffle_ps::<0b01>(v, v));
        _mm_cvtss_f32(v)
    }
}

/// Checks the dimension and returns a unit-length copy.
pub(crate) fn normalised(v: &[f32], dim: usize) -> Result<Vec<f32>, IndexError> {
    if v.len() != dim {
        return Err(IndexError::DimensionMismatch {
            expected: dim,
            got: v.len(),
        });
    }
    if v.iter().any(|x| !x.is_finite()) {
        return Err(IndexError::InvalidVector("non-finite component"));
    }
    // f64 keeps the norm exact enough that re-normalising an already unit
    // vector is (almost always) the identity, which makes re-inserts idempotent.
    let norm = v
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt();
    if norm == 0.0 || !norm.is_finite() {
        return Err(IndexError::InvalidVector("zero or overflowing norm"));
    }
    Ok(v.iter().map(|&x| (f64::from(x) / norm) as f32).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_matches_naive_for_odd_lengths() {
        for n in [0usize, 1, 7, 8, 9, 63, 64, 65, 513] {
            let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
            let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - naive).abs() < 1e-3, "n={n}");
            assert!((dot_portable(&a, &b) - naive).abs() < 1e-3, "n={n}");
        }
    }

    /// Every pair scored by the blocked kernel and by the pairwise one, bit for bit, for
    /// lengths the kernel blocks and lengths it leaves to `dot`, and for counts that leave
    /// partial blocks of queries and of vectors.
    #[test]
    fn distance_to_self_is_zero_not_negative() {
        let v = normalised(&[0.3, 0.4, 0.5, 0.1, 0.9, 0.2, 0.7, 0.6, 0.8], 9).unwrap();
        let d = UnitCosine.eval(&v, &v);
        assert!((0.0..1e-6).contains(&d));
    }

    #[test]
    fn rejects_bad_vectors() {
        assert!(matches!(
            normalised(&[1.0, 2.0], 3),
            Err(IndexError::DimensionMismatch {
                expected: 3,
                got: 2
            })
        ));
        assert!(normalised(&[0.0, 0.0], 2).is_err());
        assert!(normalised(&[f32::NAN, 1.0], 2).is_err());
    }
}
