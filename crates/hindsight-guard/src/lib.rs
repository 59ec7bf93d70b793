//! Hindsight's defence against memory poisoning. Everything here is pure: the caller hands in text,
//! provenance and records, and gets back verdicts, trust levels and signatures.
//!
//! - [`Screener`] checks text at write time for instructions aimed at the agent (injection), attempts
//!   to send secrets somewhere (exfiltration) and attempts to weaken a safety rule, and names the
//!   sensitive topics a text touches. A flagged write is meant to be quarantined, not dropped.
//! - [`TrustTiers`] turn provenance into an initial confidence and an influence weight.
//! - [`RecordSigner`] signs and verifies records with HMAC-SHA256 over [`canonical_bytes`].
//!
//! Every word list and pattern lives in [`GuardConfig`], so a deployment or a bank can change them
//! without a new build.

mod canonical;
mod config;
mod defaults;
mod error;
mod normalize;
mod pattern_rule;
mod reveal;
mod rule;
mod screener;
mod screening;
mod sequence;
mod signer;
mod trust;

pub use canonical::{canonical_bytes, CANONICAL_VERSION};
pub use config::GuardConfig;
pub use error::{GuardError, IntegrityError};
pub use pattern_rule::PatternRule;
pub use screener::Screener;
pub use screening::{Category, Flag, Screening};
pub use sequence::{RecentWrites, SequenceScreening, SplitWrite, WriteKey};
pub use signer::RecordSigner;
pub use trust::{Tier, TierSetting, Trust, TrustTiers};

/// The signature type [`RecordSigner`] produces, as stored on `Memory::signature`.
pub use hindsight_core::memory::Signature;
