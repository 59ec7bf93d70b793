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
/// Exact scans and graph searches both come here, so their scores agree
/// bit for bit on any one machine.
#[inline]
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU supports both features the kernel is compiled for.
        return unsafe { x86::dot_avx2_fma(a, b) };
    }
    dot_portable(a, b)
}

/// Queries and vectors per block of [`dot_many`]'s kernel: nine accumulators, three vectors'
/// lanes and a query's fit the sixteen AVX registers with room to spare. Four queries (twelve
/// accumulators) left the compiler one register short, and the accumulator it kept on the stack
/// made every step wait for a store and a load.
const BLOCK_QUERIES: usize = 3;
const BLOCK_VECTORS: usize = 3;

/// `out[v * qs.len() + q] = dot(qs[q], vs[v])` for every query and vector, bit for bit what
/// [`dot`] gives each pair.
///
/// [`dot`] is bound by loads, two per multiply-add, not by the multiply-adds: with three or more
/// queries the AVX2/FMA kernel scores blocks of three queries against three vectors, loading each
/// 8-float lane once per block, a tile of queries at a time. That is the shape of a batch of
/// writes' duplicate checks, one scan of a bank for all of them.
pub(crate) fn dot_many(qs: &[&[f32]], vs: &[&[f32]], out: &mut [f32]) {
    assert_eq!(out.len(), qs.len() * vs.len(), "one score per pair");
    if qs.is_empty() {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if qs.len() >= BLOCK_QUERIES
        && std::is_x86_feature_detected!("avx2")
        && std::is_x86_feature_detected!("fma")
    {
        // SAFETY: the CPU supports both features the kernel is compiled for.
        unsafe { x86::dot_many_avx2_fma(qs, vs, out) };
        return;
    }
    for (v, row) in vs.iter().zip(out.chunks_exact_mut(qs.len())) {
        for (q, score) in qs.iter().zip(row) {
            *score = dot(q, v);
        }
    }
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

    use super::{BLOCK_QUERIES, BLOCK_VECTORS};

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

    /// See [`super::dot_many`]. Blocks need every length to be one multiple of 32, where
    /// [`dot_avx2_fma`] has no remainder: each pair's four accumulators then take the same
    /// multiply-adds in the same order, and their lanes are summed as there. The vectors past
    /// the last full block, and every pair when the lengths do not allow blocks, are scored one
    /// pair at a time.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn dot_many_avx2_fma(qs: &[&[f32]], vs: &[&[f32]], out: &mut [f32]) {
        let nq = qs.len();
        let dim = qs.first().map_or(0, |q| q.len());
        let blockable = dim > 0
            && dim.is_multiple_of(32)
            && qs.iter().all(|q| q.len() == dim)
            && vs.iter().all(|v| v.len() == dim);
        let full_v = if blockable {
            vs.len() - vs.len() % BLOCK_VECTORS
        } else {
            0
        };
        // The queries past the last full block fill one more, the last of them repeated: its
        // copies' scores are dropped. A query scored pair by pair costs three times the loads of
        // one in a block, so two left over (a batch of 50) cost more than the padded block.
        let padded = nq.next_multiple_of(BLOCK_QUERIES);
        let tile = tile_queries(dim);
        for tile_start in (0..padded).step_by(tile) {
            let tile_end = (tile_start + tile).min(padded);
            for (vb, vectors) in vs[..full_v].chunks_exact(BLOCK_VECTORS).enumerate() {
                let vb = vb * BLOCK_VECTORS;
                let vectors: &[&[f32]; BLOCK_VECTORS] = vectors.try_into().expect("a full block");
                for qb in (tile_start..tile_end).step_by(BLOCK_QUERIES) {
                    let mut queries = [qs[0]; BLOCK_QUERIES];
                    for (i, query) in queries.iter_mut().enumerate() {
                        *query = qs[(qb + i).min(nq - 1)];
                    }
                    let scores = block(&queries, vectors, dim);
                    for (i, row) in scores.iter().enumerate().take(nq - qb) {
                        for (j, &score) in row.iter().enumerate() {
                            out[(vb + j) * nq + qb + i] = score;
                        }
                    }
                }
            }
        }
        for (j, v) in vs.iter().enumerate().skip(full_v) {
            for (i, q) in qs.iter().enumerate() {
                out[j * nq + i] = dot_avx2_fma(q, v);
            }
        }
    }

    /// How many queries (whole blocks) are scored against every vector before the next ones, so
    /// that they stay in the L1 cache while the vectors stream past: 12 KiB of queries, twelve of
    /// 256 dimensions.
    fn tile_queries(dim: usize) -> usize {
        const TILE_BYTES: usize = 12 * 1024;
        let fitting = TILE_BYTES / (dim * std::mem::size_of::<f32>());
        (fitting / BLOCK_QUERIES).max(1) * BLOCK_QUERIES
    }

    /// Dot products of three queries with three vectors, all `dim` long, a multiple of 32.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn block(
        qs: &[&[f32]; BLOCK_QUERIES],
        vs: &[&[f32]; BLOCK_VECTORS],
        dim: usize,
    ) -> [[f32; BLOCK_VECTORS]; BLOCK_QUERIES] {
        assert!(dim.is_multiple_of(32) && qs.iter().chain(vs).all(|x| x.len() == dim));
        // Per pair, the four accumulators of `dot_avx2_fma`: lane `l` sums the products of the
        // floats at 32·c + 8·l .. +8 over the chunks c, in chunk order.
        let mut lanes = [[[_mm256_setzero_ps(); 4]; BLOCK_VECTORS]; BLOCK_QUERIES];
        for lane in 0..4 {
            let mut acc = [[_mm256_setzero_ps(); BLOCK_VECTORS]; BLOCK_QUERIES];
            for at in (8 * lane..dim).step_by(32) {
                // SAFETY: `at + 8 <= dim` (a multiple of 32 above `at`), the length of every
                // query and vector (asserted); the loads are unaligned.
                let mut v = [_mm256_setzero_ps(); BLOCK_VECTORS];
                for (v, vector) in v.iter_mut().zip(vs) {
                    // SAFETY: as below.
                    *v = unsafe { _mm256_loadu_ps(vector.as_ptr().add(at)) };
                }
                for (q, acc) in qs.iter().zip(acc.iter_mut()) {
                    // SAFETY: as above.
                    let q = unsafe { _mm256_loadu_ps(q.as_ptr().add(at)) };
                    for (v, acc) in v.iter().zip(acc.iter_mut()) {
                        *acc = _mm256_fmadd_ps(q, *v, *acc);
                    }
                }
            }
            for (pair, acc) in lanes.iter_mut().zip(acc) {
                for (lanes, acc) in pair.iter_mut().zip(acc) {
                    lanes[lane] = acc;
                }
            }
        }
        let mut scores = [[0.0; BLOCK_VECTORS]; BLOCK_QUERIES];
        for (scores, pair) in scores.iter_mut().zip(lanes) {
            for (score, lanes) in scores.iter_mut().zip(pair) {
                *score = sum_lanes(lanes);
            }
        }
        scores
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
    fn dot_many_gives_each_pair_what_dot_gives_it() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        for dim in [32usize, 64, 256, 512, 40, 7] {
            for nq in [1usize, 2, 3, 4, 5, 8, 9, 14, 27] {
                for nv in [1usize, 2, 3, 4, 7, 10, 13] {
                    let qs: Vec<Vec<f32>> = (0..nq)
                        .map(|_| (0..dim).map(|_| next()).collect())
                        .collect();
                    let vs: Vec<Vec<f32>> = (0..nv)
                        .map(|_| (0..dim).map(|_| next()).collect())
                        .collect();
                    let q_refs: Vec<&[f32]> = qs.iter().map(Vec::as_slice).collect();
                    let v_refs: Vec<&[f32]> = vs.iter().map(Vec::as_slice).collect();
                    let mut out = vec![f32::NAN; nq * nv];
                    dot_many(&q_refs, &v_refs, &mut out);
                    for (j, v) in vs.iter().enumerate() {
                        for (i, q) in qs.iter().enumerate() {
                            assert_eq!(
                                out[j * nq + i].to_bits(),
                                dot(q, v).to_bits(),
                                "dim {dim}, {nq} queries, {nv} vectors: query {i}, vector {j}"
                            );
                        }
                    }
                }
            }
        }
    }

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
