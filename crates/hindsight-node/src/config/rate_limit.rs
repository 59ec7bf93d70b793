//! `[rate_limit]`.

use serde::{Deserialize, Serialize};

/// `[rate_limit]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RateLimitSection {
    /// Requests per second each key may make on average; 0 turns the limit off.
    pub per_key_per_sec: f64,
    /// Requests a key may make at once after a quiet spell.
    pub burst: f64,
    /// Memories this node may be writing at once (admitted, not yet answered); a write past it is
    /// refused with RESOURCE_EXHAUSTED instead of queueing (see `admission`). 0: no limit.
    pub max_pending_writes: usize,
}

impl Default for RateLimitSection {
    fn default() -> Self {
        RateLimitSection {
            per_key_per_sec: 1000.0,
            burst: 2000.0,
            max_pending_writes: 4096,
        }
    }
}
