//! Who may do what: API keys and the principals they authenticate as, and per-principal rate
//! limits.

mod keys;
pub(crate) mod rate;

pub use keys::*;
