//! Bank settings.

use hindsight_core::{BankConfig, ScoringWeights, ValidationError};
use hindsight_node::{BankInfo, BankPatch};

use super::{parse_time, required, time};
use crate::pb;

impl From<&BankConfig> for pb::Bank {
    fn from(b: &BankConfig) -> Self {
        pb::Bank {
            name: b.name.to_string(),
            description: b.description.clone(),
            created_at: time(b.created_at),
            updated_at: time(b.updated_at),
            weights: Some(pb::ScoringWeights::from(&b.weights)),
            min_confidence: b.min_confidence,
            dedup_threshold: b.dedup_threshold,
            working_ttl_seconds: b.working_ttl_secs,
            collapse_threshold: b.collapse_threshold,
        }
    }
}

impl TryFrom<pb::Bank> for BankConfig {
    type Error = ValidationError;

    fn try_from(b: pb::Bank) -> Result<Self, ValidationError> {
        Ok(BankConfig {
            name: b.name.parse()?,
            description: b.description,
            created_at: parse_time(&b.created_at)?,
            updated_at: parse_time(&b.updated_at)?,
            weights: required(b.weights, "weights")?.into(),
            min_confidence: b.min_confidence,
            dedup_threshold: b.dedup_threshold,
            working_ttl_secs: b.working_ttl_seconds,
            collapse_threshold: b.collapse_threshold,
        })
    }
}

impl From<&BankInfo> for pb::BankInfo {
    fn from(i: &BankInfo) -> Self {
        pb::BankInfo {
            bank: Some(pb::Bank::from(&i.config)),
            memory_count: i.memory_count,
        }
    }
}

impl TryFrom<pb::BankInfo> for BankInfo {
    type Error = ValidationError;

    fn try_from(i: pb::BankInfo) -> Result<Self, ValidationError> {
        Ok(BankInfo {
            config: required(i.bank, "bank")?.try_into()?,
            memory_count: i.memory_count,
        })
    }
}

impl From<&ScoringWeights> for pb::ScoringWeights {
    fn from(w: &ScoringWeights) -> Self {
        pb::ScoringWeights {
            relevance: w.relevance,
            confidence: w.confidence,
            freshness: w.freshness,
            freshness_days: w.freshness_days,
            fact_freshness_days: w.fact_freshness_days,
        }
    }
}

impl From<pb::ScoringWeights> for ScoringWeights {
    fn from(w: pb::ScoringWeights) -> Self {
        ScoringWeights {
            relevance: w.relevance,
            confidence: w.confidence,
            freshness: w.freshness,
            freshness_days: w.freshness_days,
            // proto3 cannot tell an older client's missing field from zero.
            fact_freshness_days: if w.fact_freshness_days == 0.0 {
                ScoringWeights::default().fact_freshness_days
            } else {
                w.fact_freshness_days
            },
        }
    }
}

/// Range checks stay with the node, which validates the patched configuration as a whole.
impl From<pb::BankPatch> for BankPatch {
    fn from(p: pb::BankPatch) -> Self {
        BankPatch {
            description: p.description,
            min_confidence: p.min_confidence,
            dedup_threshold: p.dedup_threshold,
            working_ttl_secs: p.working_ttl_seconds,
            collapse_threshold: p.collapse_threshold,
            weights: p.weights.map(ScoringWeights::from),
        }
    }
}

impl From<&BankPatch> for pb::BankPatch {
    fn from(p: &BankPatch) -> Self {
        pb::BankPatch {
            description: p.description.clone(),
            min_confidence: p.min_confidence,
            dedup_threshold: p.dedup_threshold,
            working_ttl_seconds: p.working_ttl_secs,
            collapse_threshold: p.collapse_threshold,
            weights: p.weights.as_ref().map(pb::ScoringWeights::from),
        }
    }
}
