//! Eight-bit copies of the stored vectors, which let an exact scan pass over most of a bank
//! without computing its float dot products.
//!
//! Each stored vector `v` is kept a second time as integers `V = round(s·v)` with
//! `|V_i| ≤ 63`, and each query `q` is encoded as `Q = round(t·q)` with `|Q_i| ≤ 127`. The
//! integer product `Q·V` is exact, and the float product is within a bound known from the
//! codes alone:
//!
//! ```text
//! s·t·(q·v) = Σ (Q_i + e_i)(V_i + f_i),  |e_i|, |f_i| ≤ ½
//! |q·v − Q·V / (s·t)| ≤ (½‖Q‖₁ + ½‖V‖₁ + ¼·dim) / (s·t)
//! ```
//!
//! A scan compares `Q·V / (s·t)` plus that bound with the worst score its top k still holds,
//! and computes the float product only for the vectors that could make the cut. The scores it
//! reports are the float ones, so results are the same as without the codes; only the work
//! differs. A chunk of codes is a quarter of the bytes of its floats, and the integer kernel
//! scores 32 dimensions per multiply where the float one scores 8.
//!
//! Vector codes are stored with 64 added (`1 ..= 127`), as the multiply-add of unsigned by
//! signed bytes wants; `Q·V = Σ (V_i + 64)·Q_i − 64·ΣQ`. Two products of at most 127 × 127
//! never saturate its 16-bit pair sums.

use crate::heap::{nested_vec_bytes, vec_bytes};

/// Bytes per code: the dimension rounded up to whole 32-byte lanes, padded with zeros (`64`
/// in a stored code, `0` in a query's), which add nothing to a product.
fn stride(dim: usize) -> usize {
    dim.next_multiple_of(32).max(32)
}

/// Largest magnitude of a stored vector's codes (before the offset).
const VECTOR_RANGE: f32 = 63.0;
/// Added to a stored vector's codes so that they are unsigned.
const VECTOR_OFFSET: i32 = 64;
/// Largest magnitude of a query's codes.
const QUERY_RANGE: f32 = 127.0;
/// Added to every bound to cover the float product's own rounding (dot products of unit
/// vectors, a few hundred terms, err by well under 1e-5).
const FLOAT_SLACK: f32 = 1e-4;

/// Codes by slot, next to the float arena; chunked the same way.
pub(crate) struct CodeArena {
    stride: usize,
    chunk: usize,
    chunks: Vec<Vec<u8>>,
    /// Per slot: the scale `s` and `‖V‖₁`.
    meta: Vec<CodeMeta>,
}

#[derive(Clone, Copy)]
struct CodeMeta {
    scale: f32,
    /// `½‖V‖₁`, this vector's part of the bound.
    half_l1: f32,
}

/// One stored vector's codes, as a scan reads them.
#[derive(Clone, Copy)]
pub(crate) struct Coded<'a> {
    bytes: &'a [u8],
    meta: CodeMeta,
}

impl CodeArena {
    pub(crate) fn new(dim: usize, chunk: usize) -> Self {
        CodeArena {
            stride: stride(dim),
            chunk,
            chunks: Vec::new(),
            meta: Vec::new(),
        }
    }

    /// Heap bytes of the codes and their scales.
    pub(crate) fn heap_bytes(&self) -> u64 {
        nested_vec_bytes(&self.chunks) + vec_bytes(&self.meta)
    }

    pub(crate) fn push(&mut self, v: &[f32]) {
        let len = self.meta.len();
        if len.is_multiple_of(self.chunk) {
            let full = self.chunk * self.stride;
            self.chunks
                .push(Vec::with_capacity(crate::vector::first_chunk_grows(
                    &self.chunks,
                    full,
                )));
        }
        let out = self.chunks.last_mut().expect("chunk allocated above");
        if out.len() == out.capacity() {
            // Doubling in whole strides keeps a growing first chunk within a full one.
            out.reserve_exact(out.capacity().max(self.stride));
        }
        let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
        let scale = if max > 0.0 && max.is_finite() {
            VECTOR_RANGE / max
        } else {
            0.0
        };
        let mut l1 = 0i64;
        for &x in v {
            let code = (x * scale).round().clamp(-VECTOR_RANGE, VECTOR_RANGE) as i32;
            l1 += i64::from(code.abs());
            out.push((code + VECTOR_OFFSET) as u8);
        }
        out.resize(out.len() + self.stride - v.len(), VECTOR_OFFSET as u8);
        self.meta.push(CodeMeta {
            scale,
            half_l1: 0.5 * l1 as f32,
        });
    }

    pub(crate) fn get(&self, slot: usize) -> Coded<'_> {
        let off = (slot % self.chunk) * self.stride;
        Coded {
            bytes: &self.chunks[slot / self.chunk][off..off + self.stride],
            meta: self.meta[slot],
        }
    }
}

/// A query's codes; see the module documentation.
struct QueryCode {
    bytes: Vec<i8>,
    scale: f32,
    /// `½‖Q‖₁ + ¼·dim − 64·ΣQ`: the query's part of the bound, less what the stored codes'
    /// offset adds to each product.
    base: f32,
}

impl QueryCode {
    fn new(q: &[f32]) -> Self {
        let max = q.iter().fold(0f32, |m, x| m.max(x.abs()));
        let scale = if max > 0.0 && max.is_finite() {
            QUERY_RANGE / max
        } else {
            0.0
        };
        let mut bytes = vec![0i8; stride(q.len())];
        let (mut l1, mut sum) = (0i32, 0i32);
        for (code, &x) in bytes.iter_mut().zip(q) {
            let c = (x * scale).round().clamp(-QUERY_RANGE, QUERY_RANGE) as i32;
            l1 += c.abs();
            sum += c;
            *code = c as i8;
        }
        QueryCode {
            scale,
            base: 0.5 * l1 as f32 + 0.25 * bytes.len() as f32 - (VECTOR_OFFSET * sum) as f32,
            bytes,
        }
    }

    /// `floor` in the units of the codes' products (before the vector's own scale), less the
    /// float slack; `-∞` when every score makes the top k, or nothing is known of the query.
    fn limit(&self, floor: f32) -> f32 {
        if floor > -1.0 && self.scale > 0.0 {
            (floor - FLOAT_SLACK) * self.scale
        } else {
            f32::NEG_INFINITY
        }
    }
}

/// The codes of a scan's queries, and for each the floor of its top k in the codes' units.
pub(crate) struct QueryCodes {
    codes: Vec<QueryCode>,
    bases: Vec<f32>,
    limits: Vec<f32>,
}

impl QueryCodes {
    /// Every query's floor starts open (`-∞`).
    pub(crate) fn new(qs: &[&[f32]]) -> Self {
        let codes: Vec<QueryCode> = qs.iter().map(|q| QueryCode::new(q)).collect();
        QueryCodes {
            bases: codes.iter().map(|c| c.base).collect(),
            limits: vec![f32::NEG_INFINITY; codes.len()],
            codes,
        }
    }

    /// Query `i`'s top k now admits nothing below `floor`.
    pub(crate) fn set_floor(&mut self, i: usize, floor: f32) {
        self.limits[i] = self.codes[i].limit(floor);
    }

    /// Whether the float product of query `i` with `v` could reach its floor, given
    /// `Q·(V + 64)` from [`products`]: not when `(Q·V + bound) / (s·t) + slack < floor`,
    /// multiplied through by `s·t`. Always for a zero vector (`s = 0`), whose product says
    /// nothing.
    #[inline]
    pub(crate) fn reaches(&self, i: usize, v: Coded<'_>, offset_product: i32) -> bool {
        let upper = offset_product as f32 + self.bases[i] + v.meta.half_l1;
        !(v.meta.scale > 0.0 && upper < self.limits[i] * v.meta.scale)
    }

    /// Whether any query could reach its floor with `v`; `row` holds their products with it.
    /// Written as one pass without early exit, which compiles to vector compares: most rows
    /// of a scan reach nothing.
    pub(crate) fn any_reaches(&self, v: Coded<'_>, row: &[i32]) -> bool {
        if v.meta.scale <= 0.0 {
            return true;
        }
        let (scale, half_l1) = (v.meta.scale, v.meta.half_l1);
        row.iter().zip(&self.bases).zip(&self.limits).fold(
            false,
            |any, ((&product, &base), &limit)| {
                any | (product as f32 + base + half_l1 >= limit * scale)
            },
        )
    }
}

/// Queries and codes per block of the kernel, as in the float kernel: nine accumulators.
const BLOCK: usize = 3;

/// `out[v * qs.len() + q] = Q·(V + 64)` for every query and stored code: exact integers, the
/// same from every kernel.
///
/// A bulk load leaves tens of thousands of vectors for the linker, and each write's duplicate
/// check scans them all, for every item of its batch: at 100,000 writes this was 30 % of the
/// CPU. The scan reuses each block of codes across queries, so it is bound by arithmetic, and
/// VNNI's `vpdpbusd` multiplies unsigned by signed bytes and sums them into 32 bits in one
/// instruction where AVX2 takes three.
pub(crate) fn products(qs: &QueryCodes, vs: &[Coded<'_>], out: &mut [i32]) {
    let qs = &qs.codes;
    assert_eq!(out.len(), qs.len() * vs.len(), "one product per pair");
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avxvnni") {
            // SAFETY: the CPU supports the features the kernel is compiled for.
            unsafe { x86::products_avx_vnni(qs, vs, out) };
            return;
        }
        if std::is_x86_feature_detected!("avx512vnni") && std::is_x86_feature_detected!("avx512vl")
        {
            // SAFETY: the CPU supports the features the kernel is compiled for.
            unsafe { x86::products_avx512_vnni(qs, vs, out) };
            return;
        }
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports the feature the kernel is compiled for.
            unsafe { x86::products_avx2(qs, vs, out) };
            return;
        }
    }
    products_portable(qs, vs, out);
}

fn product_portable(q: &QueryCode, v: Coded<'_>) -> i32 {
    q.bytes
        .iter()
        .zip(v.bytes)
        .map(|(&a, &b)| i32::from(a) * i32::from(b))
        .sum()
}

fn products_portable(qs: &[QueryCode], vs: &[Coded<'_>], out: &mut [i32]) {
    for (v, row) in vs.iter().zip(out.chunks_exact_mut(qs.len().max(1))) {
        for (q, product) in qs.iter().zip(row) {
            *product = product_portable(q, *v);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{
        __m256i, _mm256_add_epi32, _mm256_castsi256_si128, _mm256_dpbusd_avx_epi32,
        _mm256_dpbusd_epi32, _mm256_extracti128_si256, _mm256_loadu_si256, _mm256_madd_epi16,
        _mm256_maddubs_epi16, _mm256_set1_epi16, _mm256_setzero_si256, _mm_add_epi32,
        _mm_cvtsi128_si32, _mm_shuffle_epi32,
    };

    use super::{Coded, QueryCode, BLOCK};

    #[inline]
    #[target_feature(enable = "avx2")]
    fn load(bytes: &[u8], at: usize) -> __m256i {
        assert!(at + 32 <= bytes.len());
        // SAFETY: 32 bytes from `at` are in bounds (asserted); the load is unaligned.
        unsafe { _mm256_loadu_si256(bytes.as_ptr().add(at).cast()) }
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn load_signed(bytes: &[i8], at: usize) -> __m256i {
        assert!(at + 32 <= bytes.len());
        // SAFETY: as in `load`.
        unsafe { _mm256_loadu_si256(bytes.as_ptr().add(at).cast()) }
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn sum_lanes(v: __m256i) -> i32 {
        let v = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
        let v = _mm_add_epi32(v, _mm_shuffle_epi32::<0b01_00_11_10>(v));
        let v = _mm_add_epi32(v, _mm_shuffle_epi32::<0b10_11_00_01>(v));
        _mm_cvtsi128_si32(v)
    }

    /// Products of up to three queries with up to three codes (the missing ones repeat the
    /// last and are not written), with `$step` adding one 32-byte stretch of a code times a
    /// query to a sum of 32-bit lanes.
    macro_rules! block {
        ($name:ident, $features:literal, $step:expr) => {
            #[inline]
            #[target_feature(enable = $features)]
            fn $name(qs: [&QueryCode; BLOCK], vs: [Coded<'_>; BLOCK]) -> [[i32; BLOCK]; BLOCK] {
                let len = vs[0].bytes.len();
                assert!(
                    qs.iter().all(|q| q.bytes.len() == len)
                        && vs.iter().all(|v| v.bytes.len() == len)
                );
                let mut acc = [[_mm256_setzero_si256(); BLOCK]; BLOCK];
                for at in (0..len).step_by(32) {
                    let mut v = [_mm256_setzero_si256(); BLOCK];
                    for (v, coded) in v.iter_mut().zip(&vs) {
                        *v = load(coded.bytes, at);
                    }
                    for (q, acc) in qs.iter().zip(acc.iter_mut()) {
                        let q = load_signed(&q.bytes, at);
                        for (v, acc) in v.iter().zip(acc.iter_mut()) {
                            *acc = $step(*acc, *v, q);
                        }
                    }
                }
                let mut products = [[0; BLOCK]; BLOCK];
                for (products, acc) in products.iter_mut().zip(acc) {
                    for (product, acc) in products.iter_mut().zip(acc) {
                        *product = sum_lanes(acc);
                    }
                }
                products
            }
        };
    }

    // Unsigned codes times signed ones, adjacent pairs summed to 16 bits (at most 2 × 127 ×
    // 127), then pairs of those to 32 bits.
    block!(block_avx2, "avx2", |acc, v, q| _mm256_add_epi32(
        acc,
        _mm256_madd_epi16(_mm256_maddubs_epi16(v, q), _mm256_set1_epi16(1))
    ));
    // The same in one instruction, in its VEX (AVX-VNNI) and EVEX (AVX-512 VNNI) encodings: a
    // CPU may have either.
    block!(block_avx_vnni, "avx2,avxvnni", _mm256_dpbusd_avx_epi32);
    block!(
        block_avx512_vnni,
        "avx2,avx512f,avx512vl,avx512vnni",
        _mm256_dpbusd_epi32
    );

    /// Every product of `qs` and `vs`, in blocks of three by three, by `block`. Inlined into
    /// each kernel's entry point below, whose target features the closure then shares.
    #[inline(always)]
    fn products_by(
        qs: &[QueryCode],
        vs: &[Coded<'_>],
        out: &mut [i32],
        block: impl Fn([&QueryCode; BLOCK], [Coded<'_>; BLOCK]) -> [[i32; BLOCK]; BLOCK],
    ) {
        let nq = qs.len();
        if nq == 0 || vs.is_empty() {
            return;
        }
        for (vb, vectors) in vs.chunks(BLOCK).enumerate() {
            let block_v: [Coded<'_>; BLOCK] =
                std::array::from_fn(|j| vectors[j.min(vectors.len() - 1)]);
            for qb in (0..nq).step_by(BLOCK) {
                let block_q: [&QueryCode; BLOCK] =
                    std::array::from_fn(|i| &qs[(qb + i).min(nq - 1)]);
                // Rows are queries, columns codes.
                let products = block(block_q, block_v);
                for (i, row) in products.iter().enumerate().take(nq - qb) {
                    for (j, &product) in row.iter().enumerate().take(vectors.len()) {
                        out[(vb * BLOCK + j) * nq + qb + i] = product;
                    }
                }
            }
        }
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn products_avx2(qs: &[QueryCode], vs: &[Coded<'_>], out: &mut [i32]) {
        products_by(qs, vs, out, |q, v| block_avx2(q, v));
    }

    #[target_feature(enable = "avx2,avxvnni")]
    pub(super) fn products_avx_vnni(qs: &[QueryCode], vs: &[Coded<'_>], out: &mut [i32]) {
        products_by(qs, vs, out, |q, v| block_avx_vnni(q, v));
    }

    #[target_feature(enable = "avx2,avx512f,avx512vl,avx512vnni")]
    pub(super) fn products_avx512_vnni(qs: &[QueryCode], vs: &[Coded<'_>], out: &mut [i32]) {
        products_by(qs, vs, out, |q, v| block_avx512_vnni(q, v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distance::dot;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    fn unit(rng: &mut StdRng, dim: usize, sparse: bool) -> Vec<f32> {
        let mut v: Vec<f32> = (0..dim)
            .map(|_| {
                if sparse && rng.gen_bool(0.9) {
                    0.0
                } else {
                    rng.gen_range(-1.0f32..1.0)
                }
            })
            .collect();
        if v.iter().all(|x| *x == 0.0) {
            v[0] = 1.0;
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= norm);
        v
    }

    #[test]
    fn the_kernel_gives_the_portable_products_for_any_shape() {
        let mut rng = StdRng::seed_from_u64(3);
        for dim in [1, 7, 32, 33, 100, 256, 384] {
            let mut arena = CodeArena::new(dim, 4);
            let vectors: Vec<Vec<f32>> = (0..11).map(|_| unit(&mut rng, dim, false)).collect();
            vectors.iter().for_each(|v| arena.push(v));
            let coded: Vec<Coded<'_>> = (0..vectors.len()).map(|i| arena.get(i)).collect();
            for nq in [1, 2, 3, 4, 8] {
                let queries: Vec<Vec<f32>> = (0..nq).map(|_| unit(&mut rng, dim, false)).collect();
                let refs: Vec<&[f32]> = queries.iter().map(Vec::as_slice).collect();
                let qs = QueryCodes::new(&refs);
                let mut fast = vec![0; nq * coded.len()];
                let mut slow = vec![0; nq * coded.len()];
                products(&qs, &coded, &mut fast);
                products_portable(&qs.codes, &coded, &mut slow);
                assert_eq!(fast, slow, "dim {dim}, {nq} queries");
                #[cfg(target_arch = "x86_64")]
                {
                    type Kernel = unsafe fn(&[QueryCode], &[Coded<'_>], &mut [i32]);
                    let kernels: [(bool, Kernel); 3] = [
                        (std::is_x86_feature_detected!("avx2"), x86::products_avx2),
                        (
                            std::is_x86_feature_detected!("avxvnni"),
                            x86::products_avx_vnni,
                        ),
                        (
                            std::is_x86_feature_detected!("avx512vnni")
                                && std::is_x86_feature_detected!("avx512vl"),
                            x86::products_avx512_vnni,
                        ),
                    ];
                    for (i, (present, kernel)) in kernels.into_iter().enumerate() {
                        if present {
                            let mut out = vec![0; nq * coded.len()];
                            // SAFETY: the CPU has the kernel's features (checked above).
                            unsafe { kernel(&qs.codes, &coded, &mut out) };
                            assert_eq!(out, slow, "kernel {i}, dim {dim}, {nq} queries");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_vector_is_skipped_only_below_the_floor_and_mostly_when_well_below() {
        let mut rng = StdRng::seed_from_u64(5);
        for (dim, sparse) in [
            (256, false),
            (256, true),
            (512, false),
            (100, true),
            (3, false),
        ] {
            let mut arena = CodeArena::new(dim, 8);
            let vectors: Vec<Vec<f32>> = (0..200).map(|_| unit(&mut rng, dim, sparse)).collect();
            vectors.iter().for_each(|v| arena.push(v));
            let (mut far, mut far_skipped) = (0, 0);
            for _ in 0..20 {
                let q = unit(&mut rng, dim, sparse);
                let mut code = QueryCodes::new(&[&q]);
                let floor = rng.gen_range(-0.5f32..0.9);
                code.set_floor(0, floor);
                for (slot, v) in vectors.iter().enumerate() {
                    let coded = arena.get(slot);
                    let mut product = [0];
                    products(&code, &[coded], &mut product);
                    let exact = dot(&q, v);
                    let skipped = !code.reaches(0, coded, product[0]);
                    assert_eq!(code.any_reaches(coded, &product), !skipped);
                    assert!(
                        !skipped || exact < floor,
                        "dim {dim}: {exact} skipped under {floor}"
                    );
                    if exact < floor - 0.05 {
                        far += 1;
                        far_skipped += usize::from(skipped);
                    }
                }
            }
            // The bound is a few hundredths wide: what lies further below is skipped.
            assert_eq!(far_skipped, far, "dim {dim}, sparse {sparse}");
        }
    }

    #[test]
    fn nothing_is_skipped_for_a_zero_vector_or_an_open_top_k() {
        let mut arena = CodeArena::new(4, 2);
        arena.push(&[0.0; 4]);
        arena.push(&[0.0, 1.0, 0.0, 0.0]);
        let mut code = QueryCodes::new(&[&[1.0, 0.0, 0.0, 0.0]]);
        let mut product = [0; 2];
        products(&code, &[arena.get(0), arena.get(1)], &mut product);
        let reaches =
            |code: &QueryCodes, slot: usize| code.reaches(0, arena.get(slot), product[slot]);
        // Open: everything reaches.
        assert!(reaches(&code, 0) && reaches(&code, 1));
        code.set_floor(0, 0.5);
        assert!(reaches(&code, 0), "a zero vector is always scored");
        assert!(!reaches(&code, 1), "an orthogonal one is not, under 0.5");
        code.set_floor(0, -1.0);
        assert!(reaches(&code, 1), "-1 admits every score");
    }
}
