//! Per-key rate limits: a token bucket for each API key (one shared by every caller of a node
//! without authentication), refilled continuously. A request over its key's rate is refused
//! before it does any work, and other keys are served as before.

use std::collections::HashMap;
use std::time::Instant;

use parking_lot::Mutex;

use crate::error::NodeError;

pub use crate::config::RateLimitSection;

struct Bucket {
    tokens: f64,
    at: Instant,
}

pub struct RateLimiter {
    settings: RateLimitSection,
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl RateLimiter {
    pub fn new(settings: RateLimitSection) -> Self {
        RateLimiter {
            settings,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one request from `key`'s bucket, or says how long to wait.
    pub fn admit(&self, key: &str) -> Result<(), NodeError> {
        self.admit_at(key, Instant::now())
    }

    /// Takes `requests` more from `key`'s bucket: a batch of n memories costs what n writes
    /// do, so batching is no way round the limit. A batch larger than the burst costs the whole
    /// burst (it could never be admitted otherwise).
    pub fn admit_more(&self, key: &str, requests: usize) -> Result<(), NodeError> {
        self.take_at(key, requests as f64, Instant::now())
    }

    fn admit_at(&self, key: &str, now: Instant) -> Result<(), NodeError> {
        self.take_at(key, 1.0, now)
    }

    fn take_at(&self, key: &str, cost: f64, now: Instant) -> Result<(), NodeError> {
        let RateLimitSection {
            per_key_per_sec: rate,
            burst,
            ..
        } = self.settings;
        if rate <= 0.0 {
            return Ok(());
        }
        let burst = burst.max(1.0);
        let cost = cost.min(burst);
        if cost <= 0.0 {
            return Ok(());
        }
        let mut buckets = self.buckets.lock();
        let bucket = buckets.entry(key.to_string()).or_insert(Bucket {
            tokens: burst,
            at: now,
        });
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * rate).min(burst);
        bucket.at = now;
        if bucket.tokens >= cost {
            bucket.tokens -= cost;
            return Ok(());
        }
        let wait_ms = ((cost - bucket.tokens) / rate * 1000.0).ceil() as u64;
        metrics::counter!("hindsight_rate_limited_total").increment(1);
        Err(NodeError::exhausted_for(
            format!(
                "rate limit of {rate} requests/s (burst {burst}) for key {key} exceeded; retry in {wait_ms} ms"
            ),
            std::time::Duration::from_millis(wait_ms),
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_batch_costs_one_token_a_memory_up_to_the_burst() {
        let limiter = RateLimiter::new(RateLimitSection {
            per_key_per_sec: 10.0,
            burst: 20.0,
            max_pending_writes: 0,
        });
        let t = Instant::now();
        limiter.take_at("a", 15.0, t).unwrap();
        let refused = limiter.take_at("a", 10.0, t).unwrap_err().to_string();
        assert!(refused.contains("retry in 500 ms"), "{refused}");
        limiter.take_at("a", 5.0, t).unwrap();
        limiter.take_at("b", 1_000.0, t).unwrap();
        assert!(limiter.take_at("b", 1.0, t).is_err());
    }

    #[test]
    fn a_bucket_allows_its_burst_then_its_rate_and_keys_are_apart() {
        let limiter = RateLimiter::new(RateLimitSection {
            per_key_per_sec: 10.0,
            burst: 3.0,
            max_pending_writes: 0,
        });
        let t = Instant::now();
        for _ in 0..3 {
            limiter.admit_at("a", t).unwrap();
        }
        let refused = limiter.admit_at("a", t).unwrap_err().to_string();
        assert!(refused.contains("retry in 100 ms"), "{refused}");
        limiter.admit_at("b", t).unwrap();
        limiter
            .admit_at("a", t + Duration::from_millis(100))
            .unwrap();
        assert!(limiter
            .admit_at("a", t + Duration::from_millis(100))
            .is_err());
        let off = RateLimiter::new(RateLimitSection {
            per_key_per_sec: 0.0,
            burst: 0.0,
            max_pending_writes: 0,
        });
        for _ in 0..10_000 {
            off.admit_at("a", t).unwrap();
        }
    }
}
