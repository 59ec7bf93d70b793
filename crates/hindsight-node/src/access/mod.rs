//! Who may do what: API keys and the principals they authenticate as, and per-principal rate
//! limits.

mod keys;
pub(crate) mod rate;
#[cfg(test)]
mod service_tests;

pub use keys::*;

use hindsight_core::auth::Principal;
use hindsight_store::StateReader;

use crate::error::NodeError;
use rate::RateLimiter;

/// Who sent each request and whether its key may make one more: the node's keys, the bootstrap
/// admin key and each key's rate limit.
pub(crate) struct Access {
    authenticator: Authenticator,
    rate_limiter: RateLimiter,
}

impl Access {
    pub(crate) fn new(authenticator: Authenticator, rate_limiter: RateLimiter) -> Self {
        Access {
            authenticator,
            rate_limiter,
        }
    }

    /// Who sent `token` (every right when authentication is off), once its key's rate limit
    /// admits one more request. `keys` are the metadata group's records.
    pub(crate) fn authenticate(
        &self,
        keys: &StateReader,
        token: Option<&str>,
    ) -> Result<Principal, NodeError> {
        let principal = self.authenticator.authenticate(keys, token)?;
        let bucket = principal.key_id.as_deref().unwrap_or(&principal.name);
        self.rate_limiter.admit(bucket)?;
        Ok(principal)
    }

    /// Charges an API key's rate limit for the memories of a batch beyond the one request
    /// [`Access::authenticate`] took. Callers without a key share one bucket that guards the
    /// node, not a tenant, and keep paying per request.
    pub(crate) fn charge_batch(
        &self,
        principal: &Principal,
        memories: usize,
    ) -> Result<(), NodeError> {
        let Some(key_id) = principal.key_id.as_deref() else {
            return Ok(());
        };
        self.rate_limiter
            .admit_more(key_id, memories.saturating_sub(1))
    }
}
