use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::bank::BankName;
use crate::error::ValidationError;
use crate::limits::Limits;
use crate::memory::{Kind, Memory, Status};
use crate::time::Timestamp;
use crate::write::{check_count, check_len};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RecallFilters {
    /// Only these kinds (all when empty).
    pub kinds: Vec<Kind>,
    /// Only memories carrying every one of these tags.
    pub tags: Vec<String>,
    /// Only memories whose `occurred_at` lies in `[from, to)`.
    pub occurred_from: Option<Timestamp>,
    pub occurred_to: Option<Timestamp>,
    /// Overrides the bank's minimum confidence.
    pub min_confidence: Option<f32>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Consistency {
    /// Read-your-writes: the node confirms it leads before answering.
    #[default]
    Linearizable,
    /// Any replica's current view.
    Eventual,
}

/// What the caller wants the memories for; it selects the memory kinds and arms that count most
/// (see [`crate::intent`]). `Any` ranks as if no intent were given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RecallIntent {
    #[default]
    Any,
    /// What is known: facts and preferences, by meaning and by words.
    Facts,
    /// How to do something: procedures, lessons and rules, matched by task type and tags too.
    HowTo,
    /// What happened before: episodes, by time and entities.
    PastCases,
    /// What someone likes or wants.
    Preferences,
}
string_enum!(RecallIntent, "intent", {
    Any => "any", Facts => "facts", HowTo => "how_to", PastCases => "past_cases",
    Preferences => "preferences"
});

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecallRequest {
    pub banks: Vec<BankName>,
    pub query: String,
    pub top_k: u32,
    /// Stop adding results once their contents reach this many tokens.
    pub max_tokens: Option<u32>,
    /// Point in time: relative time expressions, freshness, expiry and statuses are computed as of it.
    pub as_of: Option<Timestamp>,
    pub filters: RecallFilters,
    /// Also return superseded, falsified, expired and archived memories.
    pub include_history: bool,
    /// Also return archived memories, whatever their confidence; each one returned is restored
    /// to the live set (forgetting is reversible until the archive is purged).
    pub include_archived: bool,
    pub consistency: Consistency,
    /// Who is asking ("support agent", "coding assistant"): memories written for that role
    /// (metadata `agent_role`) count more.
    pub agent_role: Option<String>,
    pub intent: RecallIntent,
    /// Key-values about the case at hand (`user_id`, `order_id`, `task_type` …): a memory whose
    /// metadata has the same value for a key counts more, one with another value is left out.
    pub context: BTreeMap<String, String>,
}

impl RecallRequest {
    pub fn new(banks: Vec<BankName>, query: impl Into<String>, top_k: u32) -> Self {
        RecallRequest {
            banks,
            query: query.into(),
            top_k,
            max_tokens: None,
            as_of: None,
            filters: RecallFilters::default(),
            include_history: false,
            include_archived: false,
            consistency: Consistency::default(),
            agent_role: None,
            intent: RecallIntent::Any,
            context: BTreeMap::new(),
        }
    }

    pub fn validate(&mut self, limits: &Limits) -> Result<(), ValidationError> {
        if self.banks.is_empty() {
            return Err(ValidationError::Invalid(
                "recall needs at least one bank".into(),
            ));
        }
        self.banks.sort();
        self.banks.dedup();
        check_count("banks", self.banks.len(), limits.max_banks_per_recall)?;
        self.query = self.query.trim().to_string();
        if self.query.is_empty() {
            return Err(ValidationError::Invalid("query must not be empty".into()));
        }
        check_len("query", &self.query, limits.max_query_bytes)?;
        if self.top_k == 0 || self.top_k > limits.max_top_k {
            return Err(ValidationError::OutOfRange {
                field: "top_k",
                value: self.top_k.to_string(),
                min: "1".into(),
                max: limits.max_top_k.to_string(),
            });
        }
        if self.max_tokens == Some(0) {
            return Err(ValidationError::OutOfRange {
                field: "max_tokens",
                value: "0".into(),
                min: "1".into(),
                max: "unbounded (omit for no budget)".into(),
            });
        }
        if let Some(min) = self.filters.min_confidence {
            if !(0.0..=1.0).contains(&min) {
                return Err(ValidationError::OutOfRange {
                    field: "min_confidence",
                    value: min.to_string(),
                    min: "0".into(),
                    max: "1".into(),
                });
            }
        }
        if let Some(role) = &mut self.agent_role {
            *role = role.trim().to_string();
            check_len("agent_role", role, MAX_CONTEXT_TEXT_BYTES)?;
            if role.is_empty() {
                self.agent_role = None;
            }
        }
        check_count("context", self.context.len(), MAX_CONTEXT_KEYS)?;
        for (key, value) in &self.context {
            if key.trim().is_empty() {
                return Err(ValidationError::Invalid(
                    "context keys must not be empty".into(),
                ));
            }
            check_len("context key", key, MAX_CONTEXT_TEXT_BYTES)?;
            check_len("context value", value, MAX_CONTEXT_TEXT_BYTES)?;
        }
        if let (Some(from), Some(to)) = (self.filters.occurred_from, self.filters.occurred_to) {
            if from >= to {
                return Err(ValidationError::Invalid(format!(
                    "time range is empty: from {from} is not before to {to}"
                )));
            }
        }
        Ok(())
    }
}

/// Most context key-values one recall may carry, and the longest key, value or role.
const MAX_CONTEXT_KEYS: usize = 32;
const MAX_CONTEXT_TEXT_BYTES: usize = 256;

/// One arm's view of a result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArmHit {
    pub arm: String,
    /// 1-based rank within the arm.
    pub rank: u32,
    pub score: f32,
}

/// Why a result was returned and how its score was made.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Explain {
    pub arms: Vec<ArmHit>,
    /// Fused (RRF) relevance, normalised to 0..1 within the query.
    pub relevance: f32,
    pub confidence: f32,
    pub freshness: f32,
    pub score: f32,
    pub status: String,
    /// e.g. `disputed`, `pending_review`, `collapsed:<id>`, `time_window`.
    pub flags: Vec<String>,
    /// Ids of near-identical results folded into this one.
    pub collapsed: Vec<String>,
    /// How intent, role and context moved the score ("intent how_to: lesson ×1.60").
    pub adjustments: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecallHit {
    pub memory: Memory,
    /// The status as of the request's `as_of` (the record's current one otherwise).
    pub status: Status,
    pub score: f32,
    pub explain: Explain,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RecallResponse {
    pub hits: Vec<RecallHit>,
    /// Present when the query held a time expression.
    pub time_window: Option<(Timestamp, Timestamp)>,
    pub tokens_used: u32,
    pub took_micros: u64,
    /// The recall's entry in the retrieval log, for feedback (none when the log is off).
    pub recall_id: Option<crate::retrieval::RecallId>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_bounds_and_empty_query_are_refused() {
        let limits = Limits::default();
        let bank: BankName = "a/b".parse().unwrap();
        assert!(RecallRequest::new(vec![bank.clone()], "q", 0)
            .validate(&limits)
            .is_err());
        assert!(RecallRequest::new(vec![bank.clone()], "q", 100_000)
            .validate(&limits)
            .is_err());
        assert!(RecallRequest::new(vec![bank.clone()], "  ", 5)
            .validate(&limits)
            .is_err());
        assert!(RecallRequest::new(vec![], "q", 5)
            .validate(&limits)
            .is_err());
        let mut ok = RecallRequest::new(vec![bank.clone(), bank], "q", 5);
        ok.validate(&limits).unwrap();
        assert_eq!(ok.banks.len(), 1);
    }
}
