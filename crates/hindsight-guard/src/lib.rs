//! Hindsight's defence against memory poisoning. Everything here is pure: the caller hands in text,
//! provenance and records, and gets back verdicts, trust levels and signatures.
//!
//! - [`Screener`] checks text at write time for instructions aimed at the agent (injection), attempts
//!   to send secrets somewhere (exfiltration) and attempts to weaken a safety rule, and names the
//!   sensitive topics a text touches. A flagged write is meant to be quarantined, not dropped.
//! - [`TrustTiers`] turn provenance into an initial confidence and an influence weight.
//! - [`RecordSigner`] signs and verifies records with HMAC-SHA256 over [`canonical_bytes`].
//!
//! - [`Screener::relaxes`] and [`Screener::speaks_for_principal`] tell when a text of a lesser
//!   voice (a tool, the agent, a forwarded message) grants leave against a standing rule of the
//!   principal; the caller finds the close rules and holds such a write.
//!
//! - [`RecentWrites`] judges consecutive writes of one bank, source and principal together, for an
//!   instruction split over two writes.
//!
//! # What a text is screened as
//!
//! The rules run on the text as written and normalised (invisible and control characters removed,
//! full-width letters folded), then on every other reading of it, each decoded again up to three
//! levels (`reveal.rs`):
//!
//! - control characters read as spaces, when a NUL or other control character stands between words;
//! - HTML entities and percent-escapes decoded;
//! - leetspeak read as letters (`1gn0r3` → `ignore`), leaving numbers, ordinals, amounts with a unit,
//!   addresses and long tokens alone;
//! - base64 (either alphabet, padding optional, line-wrapped) and hex blobs decoded, kept only when
//!   they decode to valid UTF-8 that is mostly letters (a hash or a session id is not);
//! - the text of HTML comments, markdown comments (`[//]: # (…)`), hidden elements (`hidden`,
//!   `aria-hidden`, `display:none`, invisible font sizes and colours), alt text, titles and link
//!   titles. Nobody reads those, so they are screened as untrusted content whatever the source,
//!   and the `order_to_agent` rule flags an address to the agent followed by an order there.
//!
//! A flag found only in another reading names it ([`Flag::found_in`]), and so does the quarantine
//! reason: `injection: "ignore previous instructions" (in base64-decoded text)`.
//!
//! Control characters are stripped for screening only; the screener never rewrites content. (The
//! node's write requests refuse them outright; imported and stored records still reach the screen
//! as they are.) A word broken by one (`ig\0nore`) is flagged by itself, as a word
//! broken by a zero-width space is: no natural-language memory needs a control character inside a
//! word. Terminal colour escapes in tool output stay unflagged.
//!
//! Two consecutive writes are joined with and without a space, and only a match that starts in the
//! first and ends in the second counts, so a context word in one half never makes the other half
//! suspicious. A write flagged as a second half is not kept as a first half; one flagged alone is,
//! since the next write may complete the instruction it began, and is joined with it by a space
//! only.
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
mod rule_relaxing;
mod screener;
mod screening;
mod sequence;
mod signer;
mod trust;

pub use canonical::{canonical_bytes, CANONICAL_VERSION};
pub use config::GuardConfig;
pub use error::{GuardError, IntegrityError};
pub use pattern_rule::PatternRule;
pub use rule_relaxing::Relaxation;
pub use screener::Screener;
pub use screening::{Category, Flag, Screening};
pub use sequence::{RecentWrites, SequenceScreening, SplitWrite, WriteKey};
pub use signer::RecordSigner;
pub use trust::{Tier, TierSetting, Trust, TrustTiers};

/// The signature type [`RecordSigner`] produces, as stored on `Memory::signature`.
pub use hindsight_core::memory::Signature;
