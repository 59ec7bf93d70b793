//! The retrieval log and feedback on what a recall returned (learning from use): every recall is
//! recorded under a recall id, and a caller says afterwards which of its results were used,
//! helpful, wrong or harmful. Feedback moves a memory's confidence through a Raft command, so
//! every replica agrees and the memory's history names the recall it came from.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::bank::BankName;
use crate::error::ValidationError;
use crate::id::MemoryId;
use crate::recall::{Explain, RecallRequest};
use crate::time::Timestamp;

/// A 128-bit, time-ordered recall id, shown as a ULID string like memory ids.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RecallId(pub u128);

impl RecallId {
    /// A new id whose high bits are `millis`, so the log sorts by time.
    pub fn new(millis: i64, random: u128) -> Self {
        RecallId(MemoryId::new(millis, random).0)
    }

    pub fn to_bytes(self) -> [u8; 16] {
        self.0.to_be_bytes()
    }

    pub fn from_bytes(bytes: [u8; 16]) -> Self {
        RecallId(u128::from_be_bytes(bytes))
    }

    /// The millisecond timestamp the id was made at.
    pub fn millis(self) -> i64 {
        (self.0 >> 80) as i64
    }
}

impl fmt::Display for RecallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        MemoryId(self.0).fmt(f)
    }
}

impl fmt::Debug for RecallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RecallId({self})")
    }
}

impl FromStr for RecallId {
    type Err = ValidationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse::<MemoryId>()
            .map(|id| RecallId(id.0))
            .map_err(|_| ValidationError::Invalid(format!("not a recall id: {s:?}")))
    }
}

/// What became of a recalled memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FeedbackOutcome {
    /// The caller used it; no judgement on whether it was right.
    Used,
    /// It was used and it helped.
    Helpful,
    /// It turned out to be wrong: evidence against it for the next review.
    Wrong,
    /// Acting on it did damage: the guard holds it as well.
    Harmful,
}
string_enum!(FeedbackOutcome, "outcome", {
    Used => "used", Helpful => "helpful", Wrong => "wrong", Harmful => "harmful"
});

/// One result as the log keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoggedHit {
    pub memory: MemoryId,
    pub bank: BankName,
    /// 1-based position in the response.
    pub rank: u32,
    pub score: f32,
    /// The memory's content when it was returned (the record may change or go later).
    pub content: String,
    pub explain: Explain,
}

/// Feedback given on one result of a logged recall.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FeedbackEvent {
    pub memory: MemoryId,
    pub outcome: FeedbackOutcome,
    pub at: Timestamp,
    pub principal: String,
    pub confidence_before: f32,
    pub confidence_after: f32,
}

/// One recall: who asked what, with which options, what came back and why, how long it took.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RetrievalRecord {
    pub id: RecallId,
    pub at: Timestamp,
    /// Who asked: the API key's principal, or `anonymous` where the node runs without auth.
    pub principal: String,
    /// The request as validated (banks, query, top-k, filters, intent, context, point in time).
    pub request: RecallRequest,
    pub hits: Vec<LoggedHit>,
    pub latency_micros: u64,
    pub feedback: Vec<FeedbackEvent>,
}

impl RetrievalRecord {
    /// The logged result for `memory`, if this recall returned it.
    pub fn hit(&self, memory: MemoryId) -> Option<&LoggedHit> {
        self.hits.iter().find(|h| h.memory == memory)
    }

    /// Takes in `part`, another part of the same recall served over other banks (a recall over
    /// banks of several partitions is served by a node per partition, each logging its part under
    /// the one id the caller got). Banks and hits are merged, hits ranked again by score; the
    /// slowest part's latency stands for the whole.
    pub fn absorb(&mut self, part: RetrievalRecord) {
        for bank in part.request.banks {
            if !self.request.banks.contains(&bank) {
                self.request.banks.push(bank);
            }
        }
        for hit in part.hits {
            if self.hit(hit.memory).is_none() {
                self.hits.push(hit);
            }
        }
        self.hits
            .sort_by(|a, b| b.score.total_cmp(&a.score).then(a.memory.cmp(&b.memory)));
        for (n, hit) in self.hits.iter_mut().enumerate() {
            hit.rank = n as u32 + 1;
        }
        self.latency_micros = self.latency_micros.max(part.latency_micros);
        self.feedback.extend(part.feedback);
    }
}

/// Which logged recalls to list, newest first.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RetrievalQuery {
    /// Only recalls over this bank (among others).
    pub bank: Option<BankName>,
    /// Only recalls whose query contains this text (case-insensitive).
    pub query_contains: Option<String>,
    /// Only recalls made in `[since, until)`.
    pub since: Option<Timestamp>,
    pub until: Option<Timestamp>,
    pub limit: usize,
}

impl RetrievalQuery {
    pub fn matches(&self, record: &RetrievalRecord) -> bool {
        self.bank
            .as_ref()
            .is_none_or(|b| record.request.banks.contains(b))
            && self.query_contains.as_ref().is_none_or(|q| {
                record
                    .request
                    .query
                    .to_lowercase()
                    .contains(&q.to_lowercase())
            })
            && self.since.is_none_or(|t| record.at >= t)
            && self.until.is_none_or(|t| record.at < t)
    }
}

/// How much one piece of feedback moves a memory's confidence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FeedbackSettings {
    pub used: f32,
    pub helpful: f32,
    /// Subtracted for `wrong`.
    pub wrong: f32,
    /// Subtracted for `harmful`, which also quarantines the memory.
    pub harmful: f32,
}

impl Default for FeedbackSettings {
    fn default() -> Self {
        FeedbackSettings {
            used: 0.02,
            helpful: 0.1,
            wrong: 0.2,
            harmful: 0.3,
        }
    }
}

impl FeedbackSettings {
    /// The memory's confidence after `outcome`, within 0..=1.
    pub fn confidence_after(&self, outcome: FeedbackOutcome, confidence: f32) -> f32 {
        (confidence + self.delta(outcome)).clamp(0.0, 1.0)
    }

    /// The signed step `outcome` moves confidence by, before clamping to 0..=1.
    pub fn delta(&self, outcome: FeedbackOutcome) -> f32 {
        match outcome {
            FeedbackOutcome::Used => self.used,
            FeedbackOutcome::Helpful => self.helpful,
            FeedbackOutcome::Wrong => -self.wrong,
            FeedbackOutcome::Harmful => -self.harmful,
        }
    }

    pub fn validate(&self) -> Result<(), ValidationError> {
        for (field, value) in [
            ("feedback.used", self.used),
            ("feedback.helpful", self.helpful),
            ("feedback.wrong", self.wrong),
            ("feedback.harmful", self.harmful),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(ValidationError::Invalid(format!(
                    "{field} must lie in 0..=1 (a step of confidence), got {value}"
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recall_ids_round_trip_and_carry_their_time() {
        let id = RecallId::new(1_700_000_000_000, 42);
        assert_eq!(id.to_string().parse::<RecallId>().unwrap(), id);
        assert_eq!(id.millis(), 1_700_000_000_000);
        assert!("not-an-id".parse::<RecallId>().is_err());
    }

    #[test]
    fn feedback_moves_confidence_within_bounds() {
        let s = FeedbackSettings::default();
        assert!((s.confidence_after(FeedbackOutcome::Helpful, 0.6) - 0.7).abs() < 1e-6);
        assert_eq!(s.confidence_after(FeedbackOutcome::Helpful, 0.95), 1.0);
        assert!((s.confidence_after(FeedbackOutcome::Wrong, 0.6) - 0.4).abs() < 1e-6);
        assert_eq!(s.confidence_after(FeedbackOutcome::Harmful, 0.2), 0.0);
        assert_eq!(
            "HELPFUL".parse::<FeedbackOutcome>().unwrap(),
            FeedbackOutcome::Helpful
        );
        assert!("great".parse::<FeedbackOutcome>().is_err());
    }
}
