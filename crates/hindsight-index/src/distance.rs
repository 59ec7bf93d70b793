//! Cosine distance over unit vectors.

use hnsw_rs::anndists::dist::distances::Distance;

use crate::IndexError;

/// `1 - a·b` for L2-normalised vectors.
///
/// hnsw_rs's own `DistDot` asserts that `a·b <= 1`, which rounding breaks for
/// a vector compared with itself, and `DistCosine` recomputes both norms in
/// f64 on every call; vectors here are normalised once on insert, so a
/// clamped dot product is both safe and cheaper.
///
/// The graph links by codes ([`CodeCosine`]); this one is for the tests that build graphs over
/// floats and for the arithmetic every float score here repeats.
#[cfg(test)]
#[derive(Default, Clone, Copy, Debug)]
pub(crate) struct UnitCosine;

#[cfg(test)]
impl Distance<f32> for UnitCosine {
    fn eval(&self, va: &[f32], vb: &[f32]) -> f32 {
        // The graph code asserts non-negative distances.
        (1.0 - dot(va, vb)).clamp(0.0, 2.0)
    }
}

/// Cosine distance between the graph codes of two unit vectors (see [`graph_code`]).
///
/// hnsw_rs keeps its own copy of every vector it links. As floats that copy was the largest
/// thing a bank held (2 KiB of 3.8 per memory at 512 dimensions); as codes it is a quarter of
/// that, and the distances that linking computes by the million read a quarter of the bytes.
/// The codes err in a dot product by well under 0.01 (measured on the default embedder's
/// vectors: at most 0.0054, 0.0011 rms), which moves a link only between near-equal neighbours.
/// Searches never use these distances: they score candidates with the float vectors.
#[derive(Default, Clone, Copy, Debug)]
pub(crate) struct CodeCosine;

impl Distance<i8> for CodeCosine {
    fn eval(&self, va: &[i8], vb: &[i8]) -> f32 {
        let scale = code_scale(va.len());
        (1.0 - dot_i8(va, vb) as f32 / (scale * scale)).clamp(0.0, 2.0)
    }
}

/// How many code steps a unit of a component is worth at dimension `dim`: a code of 127 stands
/// for a component of `8/√dim`, eight times the typical size of a unit vector's component
/// (`1/√dim`). The default embedder's largest component is 0.14 at 512 dimensions, under half of
/// the 0.35 that fits; larger components are clipped, which only makes their links coarser.
fn code_scale(dim: usize) -> f32 {
    127.0 * (dim.max(1) as f32).sqrt() / 8.0
}

/// The eight-bit code of a unit vector that the graph links by.
pub(crate) fn graph_code(v: &[f32]) -> Vec<i8> {
    let scale = code_scale(v.len());
    v.iter()
        .map(|&x| (x * scale).round().clamp(-127.0, 127.0) as i8)
        .collect()
}

/// Integer dot product of two codes: the AVX2 kernel where the CPU has it, else the portable one.
#[inline]
pub(crate) fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports the feature the kernel is compiled for.
        return unsafe { x86::dot_i8_avx2(a, b) };
    }
    dot_i8_portable(a, b)
}

fn dot_i8_portable(a: &[i8], b: &[i8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| i32::from(x) * i32::from(y))
        .sum()
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

/// Dot product of a stored vector's halves with a float vector, equal bit for bit to `dot` of
/// the widened halves (see `half.rs`): the halves are widened exactly and multiplied and added
/// in `dot`'s order, so scores computed from the index and from a copy of its vectors agree.
#[inline]
pub(crate) fn dot_f16(halves: &[u16], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2")
        && std::is_x86_feature_detected!("fma")
        && std::is_x86_feature_detected!("f16c")
    {
        // SAFETY: the CPU supports the three features the kernel is compiled for.
        return unsafe { x86::dot_f16_avx2_fma(halves, b) };
    }
    let n = halves.len().min(b.len());
    let mut widened = [0f32; 1024];
    if n <= widened.len() {
        crate::half::decode_into(&halves[..n], &mut widened[..n]);
        dot(&widened[..n], &b[..n])
    } else {
        dot(&crate::half::decode(&halves[..n]), &b[..n])
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
        __m256, __m256i, _mm256_add_epi32, _mm256_add_ps, _mm256_castps256_ps128,
        _mm256_castsi256_si128, _mm256_cvtph_ps, _mm256_extractf128_ps, _mm256_extracti128_si256,
        _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_loadu_si256, _mm256_madd_epi16,
        _mm256_maddubs_epi16, _mm256_set1_epi16, _mm256_setzero_ps, _mm256_setzero_si256,
        _mm256_sign_epi8, _mm_add_epi32, _mm_add_ps, _mm_add_ss, _mm_cvtsi128_si32, _mm_cvtss_f32,
        _mm_loadu_si128, _mm_movehl_ps, _mm_shuffle_epi32, _mm_shuffle_ps,
    };

    /// Loads 32 codes from the start of `v`, which must hold at least 32.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn load32(v: &[i8]) -> __m256i {
        assert!(v.len() >= 32);
        // SAFETY: `v` holds at least 32 bytes (asserted); the load is unaligned.
        unsafe { _mm256_loadu_si256(v.as_ptr().cast()) }
    }

    /// 32 products per step: the unsigned-by-signed multiply-add wants one side unsigned, so
    /// `|a|` meets `b` with `a`'s sign moved onto it. Codes stay within ±127, so a pair of
    /// products (at most 2 · 127²) never saturates its 16-bit sum.
    #[target_feature(enable = "avx2")]
    pub(super) fn dot_i8_avx2(a: &[i8], b: &[i8]) -> i32 {
        let n = a.len().min(b.len());
        let (a, b) = (&a[..n], &b[..n]);
        let ones = _mm256_set1_epi16(1);
        let mut acc = _mm256_setzero_si256();
        let ca = a.chunks_exact(32);
        let cb = b.chunks_exact(32);
        let (ra, rb) = (ca.remainder(), cb.remainder());
        for (x, y) in ca.zip(cb) {
            let (x, y) = (load32(x), load32(y));
            let pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, ones));
        }
        let v = _mm_add_epi32(
            _mm256_castsi256_si128(acc),
            _mm256_extracti128_si256::<1>(acc),
        );
        let v = _mm_add_epi32(v, _mm_shuffle_epi32::<0b01_00_11_10>(v));
        let v = _mm_add_epi32(v, _mm_shuffle_epi32::<0b10_11_00_01>(v));
        _mm_cvtsi128_si32(v) + super::dot_i8_portable(ra, rb)
    }

    /// Loads 8 floats from the start of `v`, which must hold at least 8.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn load8(v: &[f32]) -> __m256 {
        assert!(v.len() >= 8);
        // SAFETY: `v` holds at least 8 floats (asserted); the load is unaligned.
        unsafe { _mm256_loadu_ps(v.as_ptr()) }
    }

    /// Loads 8 halves from the start of `v`, which must hold at least 8, as floats.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn load8_f16(v: &[u16]) -> __m256 {
        assert!(v.len() >= 8);
        // SAFETY: `v` holds at least 8 halves, 16 bytes (asserted); the load is unaligned.
        unsafe { _mm256_cvtph_ps(_mm_loadu_si128(v.as_ptr().cast())) }
    }

    /// One body for the float products, whatever `a` is stored as (read eight at a time by
    /// `$load`, one at a time by `$value`): the same blocks, accumulators and sums, so that a
    /// product over halves equals the product over their widened copy bit for bit.
    macro_rules! float_dot {
        ($name:ident, $features:literal, $a:ty, $load:ident, $value:expr) => {
            #[target_feature(enable = $features)]
            pub(super) fn $name(a: &[$a], b: &[f32]) -> f32 {
                let n = a.len().min(b.len());
                let (a, b) = (&a[..n], &b[..n]);
                let mut acc = [_mm256_setzero_ps(); 4];
                let ca = a.chunks_exact(32);
                let cb = b.chunks_exact(32);
                let (ra, rb) = (ca.remainder(), cb.remainder());
                for (x, y) in ca.zip(cb) {
                    for (j, acc) in acc.iter_mut().enumerate() {
                        *acc = _mm256_fmadd_ps($load(&x[8 * j..]), load8(&y[8 * j..]), *acc);
                    }
                }
                let ca = ra.chunks_exact(8);
                let cb = rb.chunks_exact(8);
                let (ra, rb) = (ca.remainder(), cb.remainder());
                for (x, y) in ca.zip(cb) {
                    acc[0] = _mm256_fmadd_ps($load(x), load8(y), acc[0]);
                }
                let mut s = sum_lanes(acc);
                for (x, y) in ra.iter().zip(rb) {
                    s += $value(x) * y;
                }
                s
            }
        };
    }

    float_dot!(dot_avx2_fma, "avx2,fma", f32, load8, |x: &f32| *x);
    float_dot!(
        dot_f16_avx2_fma,
        "avx2,fma,f16c",
        u16,
        load8_f16,
        |x: &u16| crate::half::to_f32(*x)
    );

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

    #[test]
    fn half_products_equal_float_products_of_the_widened_halves() {
        for n in [0usize, 1, 7, 8, 9, 31, 32, 33, 63, 64, 65, 512, 513, 1100] {
            let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin() * 0.1).collect();
            let b: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos() * 0.1).collect();
            let mut halves = Vec::new();
            crate::half::encode_into(&a, &mut halves);
            let widened = crate::half::decode(&halves);
            assert_eq!(
                dot_f16(&halves, &b).to_bits(),
                dot(&widened, &b).to_bits(),
                "n={n}"
            );
            // Each half errs by at most 2^-11 of its value.
            let bound = a.iter().zip(&b).map(|(x, y)| (x * y).abs()).sum::<f32>() / 2048.0;
            assert!(
                (dot(&widened, &b) - dot(&a, &b)).abs() <= bound + 1e-6,
                "n={n}"
            );
        }
    }

    #[test]
    fn distance_to_self_is_zero_not_negative() {
        let v = normalised(&[0.3, 0.4, 0.5, 0.1, 0.9, 0.2, 0.7, 0.6, 0.8], 9).unwrap();
        let d = UnitCosine.eval(&v, &v);
        assert!((0.0..1e-6).contains(&d));
    }

    #[test]
    fn code_products_match_naive_ones_at_every_length_and_the_extremes() {
        for n in [0usize, 1, 31, 32, 33, 64, 100, 512, 515] {
            let a: Vec<i8> = (0..n)
                .map(|i| ((i * 37 % 255) as i32 - 127) as i8)
                .collect();
            let b: Vec<i8> = (0..n)
                .map(|i| ((i * 91 % 255) as i32 - 127) as i8)
                .collect();
            let naive: i32 = a.iter().zip(&b).map(|(&x, &y)| x as i32 * y as i32).sum();
            assert_eq!(dot_i8(&a, &b), naive, "n={n}");
            let top = vec![127i8; n];
            let bottom = vec![-127i8; n];
            assert_eq!(dot_i8(&top, &top), 127 * 127 * n as i32, "n={n}");
            assert_eq!(dot_i8(&top, &bottom), -127 * 127 * n as i32, "n={n}");
        }
    }

    #[test]
    fn code_distances_stay_within_a_hundredth_of_float_ones() {
        let dim = 512;
        let vectors: Vec<Vec<f32>> = (0..40)
            .map(|k| {
                let raw: Vec<f32> = (0..dim)
                    .map(|i| ((i * (k + 3)) as f32 * 0.731).sin() + 0.2 * (i as f32 * 0.05).cos())
                    .collect();
                normalised(&raw, dim).unwrap()
            })
            .collect();
        let codes: Vec<Vec<i8>> = vectors.iter().map(|v| graph_code(v)).collect();
        for i in 0..vectors.len() {
            assert!(CodeCosine.eval(&codes[i], &codes[i]) < 0.01);
            for j in 0..vectors.len() {
                let float = UnitCosine.eval(&vectors[i], &vectors[j]);
                let code = CodeCosine.eval(&codes[i], &codes[j]);
                assert!((float - code).abs() < 0.01, "{i},{j}: {float} / {code}");
            }
        }
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
