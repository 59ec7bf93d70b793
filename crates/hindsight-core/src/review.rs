//! What a review cycle decided, as replicated data: the changes it makes to memories, the conflicts
//! it leaves for a person, and the report of the cycle itself. The judging happens on the proposer;
//! apply only carries the decisions out, so every replica reaches the same state.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::bank::BankName;
use crate::error::ValidationError;
use crate::id::MemoryId;
use crate::memory::{Memory, Status};
use crate::time::Timestamp;

/// Why a review changes a memory; recorded in its history and counted in the cycle report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ChangeReason {
    /// A newer statement replaced this one (temporal conflict).
    Superseded,
    /// The statement that replaced an older one gains confidence.
    Confirmed,
    /// An inference the user's own statement contradicted.
    Falsified,
    /// Two sources disagree; both kept and down-weighted.
    Disputed,
    /// A contradiction no rule could decide; waits in the conflict queue.
    PendingReview,
    /// A near-duplicate folded into an older record.
    MergedAway,
    /// The older record that absorbed a near-duplicate.
    Absorbed,
    /// Unused for a cycle.
    Decayed,
    /// Confidence fell below the bank's archive threshold.
    Archived,
    /// A distilled rule gained the support of further episodes showing its pattern.
    Reinforced,
    /// A forgotten (archived) record recalled on purpose comes back.
    Restored,
}

impl ChangeReason {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeReason::Superseded => "superseded",
            ChangeReason::Confirmed => "confirmed",
            ChangeReason::Falsified => "falsified",
            ChangeReason::Disputed => "disputed",
            ChangeReason::PendingReview => "pending_review",
            ChangeReason::MergedAway => "merged_away",
            ChangeReason::Absorbed => "absorbed",
            ChangeReason::Decayed => "decayed",
            ChangeReason::Archived => "archived",
            ChangeReason::Reinforced => "reinforced",
            ChangeReason::Restored => "restored",
        }
    }
}

/// One change to one memory. Fields left `None` keep their value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryChange {
    pub id: MemoryId,
    pub reason: ChangeReason,
    pub status: Option<Status>,
    pub confidence: Option<f32>,
    pub valid_to: Option<Timestamp>,
    /// For [`ChangeReason::Absorbed`]: the record folded into this one.
    pub absorbed: Option<MemoryId>,
    /// For [`ChangeReason::Reinforced`]: episodes that now also support this rule.
    pub derived: Vec<MemoryId>,
    /// The other memory of the pair that led to the change.
    pub related: Option<MemoryId>,
    /// Event time the change holds from (the newer statement's time for a supersession).
    pub effective_at: Timestamp,
    /// `rules`, `llm:<model>`, `consensus`, `decay` …
    pub judge: String,
    /// Why, in words a person can check.
    pub explanation: String,
}

/// A memory a review cycle creates (a rule distilled from episodes), with who decided it and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DerivedMemory {
    pub memory: Memory,
    pub judge: String,
    pub explanation: String,
}

/// A contradiction left for a person (or a later, stronger judge) to resolve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Conflict {
    pub id: u64,
    pub bank: BankName,
    pub a: MemoryId,
    pub b: MemoryId,
    pub judge: String,
    pub explanation: String,
    pub opened_at: Timestamp,
    pub resolution: Option<ConflictResolution>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConflictResolution {
    pub outcome: ResolutionOutcome,
    pub resolved_at: Timestamp,
    pub note: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ResolutionOutcome {
    KeepA,
    KeepB,
    KeepBoth,
    DiscardBoth,
}

/// A resolution's name as the API, the CLI and the history write it.
pub fn outcome_name(outcome: ResolutionOutcome) -> &'static str {
    match outcome {
        ResolutionOutcome::KeepA => "keep_a",
        ResolutionOutcome::KeepB => "keep_b",
        ResolutionOutcome::KeepBoth => "keep_both",
        ResolutionOutcome::DiscardBoth => "discard_both",
    }
}

pub fn parse_outcome(name: &str) -> Result<ResolutionOutcome, ValidationError> {
    match name {
        "keep_a" => Ok(ResolutionOutcome::KeepA),
        "keep_b" => Ok(ResolutionOutcome::KeepB),
        "keep_both" => Ok(ResolutionOutcome::KeepBoth),
        "discard_both" => Ok(ResolutionOutcome::DiscardBoth),
        other => Err(ValidationError::UnknownEnumValue {
            field: "outcome",
            value: other.to_string(),
            expected: "keep_a, keep_b, keep_both, discard_both",
        }),
    }
}

/// Metadata key a quarantined memory gets once a model has looked at it (`confirmed by …` or
/// `released by …`), so that each one is checked once.
pub const QUARANTINE_CHECK: &str = "quarantine_check";

/// A model's answer about one quarantined memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum QuarantineRuling {
    /// It stays quarantined.
    Confirm,
    /// It was a false alarm and becomes active.
    Release,
}

impl QuarantineRuling {
    pub fn as_str(self) -> &'static str {
        match self {
            QuarantineRuling::Confirm => "confirmed",
            QuarantineRuling::Release => "released",
        }
    }
}

/// One quarantined memory's second look, as replicated data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuarantineCheck {
    pub id: MemoryId,
    pub ruling: QuarantineRuling,
    /// `llm:<model>`.
    pub judge: String,
    /// The model's reason, in words a person can check.
    pub reason: String,
}

/// What one review cycle looked at, spent and decided.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CycleReport {
    pub cycle: u64,
    pub as_of: Timestamp,
    pub started_at: Timestamp,
    pub took_micros: u64,
    /// Memories changed since the previous cycle's watermark.
    pub changed: u64,
    /// Candidate pairs the cheap signals produced, and every pair the bank could form.
    pub pairs_considered: u64,
    pub all_pairs: u64,
    pub pairs_judged: u64,
    /// Pairs left for the next cycle (budget exhausted or the judge deferred them).
    pub pairs_deferred: u64,
    pub tokens_used: u64,
    pub token_budget: u64,
    pub judge: String,
    /// Changes by reason (`superseded`, `merged_away`, …).
    pub decisions: BTreeMap<String, u64>,
    pub expired: u64,
}

/// A bank's review progress, replicated so that whichever node leads continues where the last left.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReviewState {
    /// Log index up to which every change has been reviewed.
    pub watermark: u64,
    pub cycles: u64,
    pub last: Option<CycleReport>,
    /// Pairs judged later because a budget ran out: memory ids, smaller first.
    pub deferred: Vec<(MemoryId, MemoryId)>,
    pub next_conflict: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_reads_back_from_its_name() {
        for outcome in [
            ResolutionOutcome::KeepA,
            ResolutionOutcome::KeepB,
            ResolutionOutcome::KeepBoth,
            ResolutionOutcome::DiscardBoth,
        ] {
            assert_eq!(parse_outcome(outcome_name(outcome)), Ok(outcome));
        }
        let refused = parse_outcome("keep_all").unwrap_err().to_string();
        assert!(refused.contains("keep_a, keep_b"), "{refused}");
    }
}
