//! Half-precision (IEEE binary16) copies of unit vectors, which is how an index stores them.
//!
//! A bank's float vectors were its largest part: 2 KiB of about 7 per memory at 512 dimensions.
//! The components of a unit vector lie in `[-1, 1]`, where a half keeps 11 significant bits, so
//! storing one moves its dot product with a query by at most `2^-11 · Σ|q_i·v_i| ≤ 4.9e-4`
//! (Cauchy–Schwarz), far below the gaps between the thresholds that decide anything.
//!
//! Conversions round to nearest, ties to even, like the F16C instructions, which are used where
//! the CPU has them; the portable code gives the same bits (tested on every half and on ties).

/// The half nearest to `x`, as bits.
#[inline]
pub(crate) fn to_f16(x: f32) -> u16 {
    const F32_INFINITY: u32 = 0xff << 23;
    /// 65536: from here on every value rounds to infinity.
    const F16_OVERFLOW: u32 = (127 + 16) << 23;
    /// Below 2^-14 a half is subnormal.
    const F16_NORMAL: u32 = 113 << 23;
    /// 0.5: added to a value below 2^-14, float addition itself rounds it to a multiple of
    /// 2^-24, the subnormal step, and leaves that multiple in the low mantissa bits.
    const SUBNORMAL_MAGIC: u32 = ((127 - 15) + (23 - 10) + 1) << 23;
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let magnitude = bits & 0x7fff_ffff;
    let half = if magnitude >= F16_OVERFLOW {
        if magnitude > F32_INFINITY {
            0x7e00
        } else {
            0x7c00
        }
    } else if magnitude < F16_NORMAL {
        let sum = f32::from_bits(magnitude) + f32::from_bits(SUBNORMAL_MAGIC);
        (sum.to_bits() - SUBNORMAL_MAGIC) as u16
    } else {
        // Rebias the exponent, then round the 13 bits that go: add just under half of the
        // last kept bit, plus one when that bit is odd, so that ties go to even.
        let odd = (magnitude >> 13) & 1;
        let rebiased = magnitude.wrapping_sub((127 - 15) << 23);
        ((rebiased + 0xfff + odd) >> 13) as u16
    };
    sign | half
}

/// The value of a half, exactly.
#[inline]
pub(crate) fn to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exponent = u32::from((h >> 10) & 0x1f);
    let mantissa = u32::from(h & 0x3ff);
    match exponent {
        0 => {
            // Zero or subnormal: mantissa · 2^-24, exact in a float.
            let value = mantissa as f32 * (1.0 / 16_777_216.0);
            f32::from_bits(value.to_bits() | sign)
        }
        0x1f => f32::from_bits(sign | 0x7f80_0000 | (mantissa << 13)),
        _ => f32::from_bits(sign | ((exponent + 112) << 23) | (mantissa << 13)),
    }
}

/// Appends the halves of `v` to `out`.
pub(crate) fn encode_into(v: &[f32], out: &mut Vec<u16>) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("f16c") && std::is_x86_feature_detected!("avx") {
        // SAFETY: the CPU supports the features the kernel is compiled for.
        unsafe { x86::encode_f16c(v, out) };
        return;
    }
    out.extend(v.iter().map(|&x| to_f16(x)));
}

/// Writes the values of `halves` into `out`, which must be as long.
pub(crate) fn decode_into(halves: &[u16], out: &mut [f32]) {
    assert_eq!(
        halves.len(),
        out.len(),
        "decoding into a slice of another length"
    );
    for (x, &h) in out.iter_mut().zip(halves) {
        *x = to_f32(h);
    }
}

/// The values of `halves`.
pub(crate) fn decode(halves: &[u16]) -> Vec<f32> {
    let mut out = vec![0f32; halves.len()];
    decode_into(halves, &mut out);
    out
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{__m128i, _mm256_cvtps_ph, _mm256_loadu_ps, _mm_storeu_si128};

    /// Eight values per instruction, rounded to nearest even (the immediate 0).
    #[target_feature(enable = "avx,f16c")]
    pub(super) fn encode_f16c(v: &[f32], out: &mut Vec<u16>) {
        let chunks = v.chunks_exact(8);
        let rest = chunks.remainder();
        for chunk in chunks {
            let mut halves = [0u16; 8];
            // SAFETY: `chunk` holds 8 floats and `halves` 8 halves (16 bytes); both accesses
            // are unaligned.
            unsafe {
                let packed = _mm256_cvtps_ph::<0>(_mm256_loadu_ps(chunk.as_ptr()));
                _mm_storeu_si128(halves.as_mut_ptr().cast::<__m128i>(), packed);
            }
            out.extend_from_slice(&halves);
        }
        out.extend(rest.iter().map(|&x| super::to_f16(x)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_half_widens_and_narrows_back_to_itself() {
        for h in 0..=u16::MAX {
            let x = to_f32(h);
            if x.is_nan() {
                assert!(
                    to_f16(x) & 0x7c00 == 0x7c00 && to_f16(x) & 0x3ff != 0,
                    "{h:#x}"
                );
                continue;
            }
            assert_eq!(to_f16(x), h, "{h:#x} = {x}");
        }
    }

    #[test]
    fn rounds_to_nearest_with_ties_to_even() {
        // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: even is 1.
        assert_eq!(to_f16(1.0 + 1.0 / 2048.0), 0x3c00);
        // 1 + 3·2^-11 lies halfway between 1 + 2^-10 and 1 + 2^-9: even is the upper.
        assert_eq!(to_f16(1.0 + 3.0 / 2048.0), 0x3c02);
        assert_eq!(to_f16(1.0 + 1.5 / 2048.0), 0x3c01);
        assert_eq!(to_f16(-0.0), 0x8000);
        assert_eq!(to_f16(65504.0), 0x7bff);
        assert_eq!(to_f16(65520.0), 0x7c00, "rounds up to infinity");
        assert_eq!(to_f16(1e-8), 0, "below half the smallest subnormal");
        assert_eq!(to_f16(3.0 / 16_777_216.0), 3, "a subnormal");
        assert_eq!(to_f16(2.5 / 16_777_216.0), 2, "a subnormal tie, to even");
    }

    #[test]
    fn the_instructions_and_the_portable_code_agree() {
        let mut state = 0x2545_f491_u32;
        let mut values: Vec<f32> = (0..200_000)
            .map(|i| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                // Magnitudes from 2^-30 to 2^17, both signs, and every tie the mantissa has.
                let scale = 2f32.powi((i % 48) - 30);
                (state as f32 / u32::MAX as f32 - 0.5) * scale
            })
            .collect();
        values.extend((0..1024).map(|m| 1.0 + (2 * m + 1) as f32 / 2048.0));
        let mut fast = Vec::new();
        encode_into(&values, &mut fast);
        for (x, h) in values.iter().zip(&fast) {
            assert_eq!(*h, to_f16(*x), "{x}");
        }
    }
}
