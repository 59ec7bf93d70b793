//! Waits between attempts.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

/// Wait before retry number `retry` (1 for the first retry): `initial · 2^(retry-1)`, capped at
/// `max`, then shortened by up to a quarter at random so that several banks hitting the same
/// limit do not come back in lockstep.
pub(crate) fn backoff_delay(initial: Duration, max: Duration, retry: u32) -> Duration {
    let doubling = 2u32.saturating_pow(retry.saturating_sub(1).min(20));
    let full = initial.saturating_mul(doubling).min(max);
    full.mul_f64(1.0 - 0.25 * random_fraction())
}

/// The wait a server asked for, within our own limit.
pub(crate) fn retry_after_delay(asked: Duration, max: Duration) -> Duration {
    asked.min(max)
}

/// A number in [0, 1). `RandomState` is randomly keyed per instance, which is all the
/// randomness jitter needs.
fn random_fraction() -> f64 {
    let bits = RandomState::new().build_hasher().finish();
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_and_caps() {
        let initial = Duration::from_millis(100);
        let max = Duration::from_millis(350);
        for _ in 0..20 {
            let first = backoff_delay(initial, max, 1);
            assert!(
                first <= initial && first >= initial.mul_f64(0.75),
                "{first:?}"
            );
            let second = backoff_delay(initial, max, 2);
            assert!(second <= 2 * initial && second >= (2 * initial).mul_f64(0.75));
            assert!(backoff_delay(initial, max, 30) <= max);
        }
        assert_eq!(
            retry_after_delay(Duration::from_secs(120), max),
            Duration::from_millis(350)
        );
    }
}
