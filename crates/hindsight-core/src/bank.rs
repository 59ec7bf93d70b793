use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::ValidationError;
use crate::memory::Kind;
use crate::strategy::Strategies;
use crate::time::Timestamp;

pub const MAX_BANK_NAME_LEN: usize = 128;

/// A bank name: one to four `/`-separated segments of lowercase ASCII letters, digits, `-`, `_`, `.`,
/// each starting with a letter or digit (`acme/agent-7`, `acme/team-sales`).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct BankName(String);

impl BankName {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A name read back from storage, taken as it was written (as a derived `Deserialize` would).
    pub(crate) fn stored(name: String) -> Self {
        BankName(name)
    }
}

impl FromStr for BankName {
    type Err = ValidationError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        let invalid = |reason| ValidationError::InvalidBankName {
            name: name.to_string(),
            reason,
        };
        if name.is_empty() {
            return Err(invalid("must not be empty"));
        }
        if name.len() > MAX_BANK_NAME_LEN {
            return Err(invalid("longer than 128 bytes"));
        }
        let segments: Vec<&str> = name.split('/').collect();
        if segments.len() > 4 {
            return Err(invalid("at most 4 '/'-separated segments"));
        }
        for segment in segments {
            let mut chars = segment.chars();
            match chars.next() {
                None => return Err(invalid("empty segment (leading, trailing or double '/')")),
                Some(c) if !(c.is_ascii_lowercase() || c.is_ascii_digit()) => {
                    return Err(invalid(
                        "each segment must start with a lowercase letter or digit",
                    ))
                }
                _ => {}
            }
            if !segment
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.".contains(c))
            {
                return Err(invalid(
                    "only lowercase letters, digits, '-', '_', '.' and '/' are allowed",
                ));
            }
        }
        Ok(BankName(name.to_string()))
    }
}

impl fmt::Display for BankName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for BankName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BankName({})", self.0)
    }
}

/// Recall's lifecycle score weights: `relevance·w_r + confidence·w_c + freshness·w_f`.
///
/// A config file may give some weights only; the others keep their defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ScoringWeights {
    pub relevance: f32,
    pub confidence: f32,
    pub freshness: f32,
    /// Freshness of events (episodic and working memory) is `exp(-age_days / freshness_days)`.
    pub freshness_days: f32,
    /// Freshness of semantic memory (facts, preferences, procedures, lessons, rules) decays over
    /// this many days instead: a fact stays true until it is superseded or its validity ends, so
    /// age alone should barely move it.
    pub fact_freshness_days: f32,
}

impl ScoringWeights {
    /// The time scale of freshness for a memory of `kind`.
    pub fn freshness_days_for(&self, kind: Kind) -> f32 {
        match kind {
            Kind::Semantic => self.fact_freshness_days,
            Kind::Episodic | Kind::Working => self.freshness_days,
        }
    }
}

impl Default for ScoringWeights {
    fn default() -> Self {
        ScoringWeights {
            relevance: 0.6,
            confidence: 0.3,
            freshness: 0.1,
            freshness_days: 30.0,
            fact_freshness_days: 365.0,
        }
    }
}

/// Per-bank settings. Everything a bank does differently from the node defaults lives here so that it
/// replicates with the bank.
///
/// Stored and replicated with a versioned binary layout (see `bank_codec`): settings added after
/// the first release do not change how older log entries and records read.
#[derive(Clone, Debug, PartialEq)]
pub struct BankConfig {
    pub name: BankName,
    pub description: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub weights: ScoringWeights,
    /// Recall hides memories below this confidence unless asked otherwise.
    pub min_confidence: f32,
    /// Cosine similarity at or above which a write merges into an existing memory.
    pub dedup_threshold: f32,
    /// Default time to live of `working` memories, in seconds.
    pub working_ttl_secs: u64,
    /// Recall collapses results whose embeddings are at least this similar.
    pub collapse_threshold: f32,
    /// Live memories the bank may hold; past it, review archives the least useful. 0: no quota.
    pub max_memories: u64,
    /// Conflict strategies for this bank; `None` follows the node's `[review.strategies]`.
    pub strategies: Option<Strategies>,
    /// Recall leaves out memories from low-trust sources that no other write corroborates, instead
    /// of returning them flagged `uncorroborated`. They stay stored, in trace and in the listing.
    pub require_corroboration: bool,
    /// Content bytes the bank may hold (see
    /// [`Memory::quota_bytes`](crate::memory::Memory::quota_bytes)); a write that would pass it
    /// is refused. 0: no quota.
    pub max_bytes: u64,
}

impl BankConfig {
    pub fn new(name: BankName, now: Timestamp) -> Self {
        BankConfig {
            name,
            description: String::new(),
            created_at: now,
            updated_at: now,
            weights: ScoringWeights::default(),
            min_confidence: 0.3,
            dedup_threshold: 0.92,
            working_ttl_secs: 24 * 3600,
            collapse_threshold: 0.97,
            max_memories: 0,
            strategies: None,
            require_corroboration: false,
            max_bytes: 0,
        }
    }

    pub fn validate(&self) -> Result<(), ValidationError> {
        let unit = |field: &'static str, v: f32| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err(ValidationError::OutOfRange {
                    field,
                    value: v.to_string(),
                    min: "0".into(),
                    max: "1".into(),
                })
            }
        };
        unit("min_confidence", self.min_confidence)?;
        unit("dedup_threshold", self.dedup_threshold)?;
        unit("collapse_threshold", self.collapse_threshold)?;
        unit("weights.relevance", self.weights.relevance)?;
        unit("weights.confidence", self.weights.confidence)?;
        unit("weights.freshness", self.weights.freshness)?;
        for (field, days) in [
            ("weights.freshness_days", self.weights.freshness_days),
            (
                "weights.fact_freshness_days",
                self.weights.fact_freshness_days,
            ),
        ] {
            if days.is_nan() || days <= 0.0 {
                return Err(ValidationError::OutOfRange {
                    field,
                    value: days.to_string(),
                    min: "0 (exclusive)".into(),
                    max: "unbounded".into(),
                });
            }
        }
        if self.description.len() > 4096 {
            return Err(ValidationError::FieldTooLong {
                field: "description",
                len: self.description.len(),
                max: 4096,
            });
        }
        if let Some(strategies) = &self.strategies {
            strategies
                .validate()
                .map_err(|e| ValidationError::Invalid(e.to_string()))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_namespaced_names() {
        for ok in ["acme", "acme/agent-7", "bench/u0007", "a/b/c/d", "team_1.x"] {
            assert!(ok.parse::<BankName>().is_ok(), "{ok}");
        }
    }

    #[test]
    fn rejects_bad_names_with_reasons() {
        for bad in [
            "",
            "/x",
            "x/",
            "a//b",
            "Acme",
            "a b",
            "a/b/c/d/e",
            "-x",
            "ä",
        ] {
            assert!(bad.parse::<BankName>().is_err(), "{bad}");
        }
        let long = "a".repeat(129);
        assert!(long.parse::<BankName>().is_err());
    }

    #[test]
    fn a_stored_config_without_fact_freshness_reads_with_the_default() {
        let mut json = serde_json::to_value(ScoringWeights::default()).unwrap();
        json.as_object_mut().unwrap().remove("fact_freshness_days");
        let weights: ScoringWeights = serde_json::from_value(json).unwrap();
        assert_eq!(weights.fact_freshness_days, 365.0);
    }
}
