//! Bank settings.

use hindsight_core::strategy::Strategies;
use hindsight_core::{BankConfig, BankInfo, BankPatch, ScoringWeights, ValidationError};

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
            max_memories: b.max_memories,
            strategies: b.strategies.as_ref().map(pb::ReviewStrategies::from),
            require_corroboration: b.require_corroboration,
            max_bytes: b.max_bytes,
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
            max_memories: b.max_memories,
            strategies: b.strategies.map(Strategies::try_from).transpose()?,
            require_corroboration: b.require_corroboration,
            max_bytes: b.max_bytes,
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

/// Range checks stay with the node, which validates the patched configuration as a whole; only
/// strategy names that do not exist are refused here.
impl TryFrom<pb::BankPatch> for BankPatch {
    type Error = ValidationError;

    fn try_from(p: pb::BankPatch) -> Result<Self, ValidationError> {
        Ok(BankPatch {
            description: p.description,
            min_confidence: p.min_confidence,
            dedup_threshold: p.dedup_threshold,
            working_ttl_secs: p.working_ttl_seconds,
            collapse_threshold: p.collapse_threshold,
            weights: p.weights.map(ScoringWeights::from),
            max_memories: p.max_memories,
            strategies: p.strategies.map(Strategies::try_from).transpose()?,
            require_corroboration: p.require_corroboration,
            max_bytes: p.max_bytes,
        })
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
            max_memories: p.max_memories,
            strategies: p.strategies.as_ref().map(pb::ReviewStrategies::from),
            require_corroboration: p.require_corroboration,
            max_bytes: p.max_bytes,
        }
    }
}

impl From<&Strategies> for pb::ReviewStrategies {
    fn from(s: &Strategies) -> Self {
        pb::ReviewStrategies {
            temporal: name_of(&s.temporal),
            source: name_of(&s.source),
            inference: name_of(&s.inference),
            undecidable: name_of(&s.undecidable),
            duplicate: name_of(&s.duplicate),
            supersede_boost: s.supersede_boost,
            superseded_confidence: s.superseded_confidence,
            dispute_factor: s.dispute_factor,
            pending_review_factor: s.pending_review_factor,
        }
    }
}

impl TryFrom<pb::ReviewStrategies> for Strategies {
    type Error = ValidationError;

    fn try_from(s: pb::ReviewStrategies) -> Result<Self, ValidationError> {
        let strategies = Strategies {
            temporal: parse_name("strategies.temporal", &s.temporal)?,
            source: parse_name("strategies.source", &s.source)?,
            inference: parse_name("strategies.inference", &s.inference)?,
            undecidable: parse_name("strategies.undecidable", &s.undecidable)?,
            duplicate: parse_name("strategies.duplicate", &s.duplicate)?,
            supersede_boost: s.supersede_boost,
            superseded_confidence: s.superseded_confidence,
            dispute_factor: s.dispute_factor,
            pending_review_factor: s.pending_review_factor,
        };
        strategies
            .validate()
            .map_err(|e| ValidationError::Invalid(e.to_string()))?;
        Ok(strategies)
    }
}

/// A strategy's configuration name (`keep_both`, `pending_review` …).
fn name_of<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        other => unreachable!("strategies serialise as names, got {other:?}"),
    }
}

fn parse_name<T: serde::de::DeserializeOwned>(
    field: &'static str,
    name: &str,
) -> Result<T, ValidationError> {
    serde_json::from_value(serde_json::Value::String(name.to_string())).map_err(|_| {
        ValidationError::Invalid(format!(
            "{field}: {name:?} is not a strategy this kind of conflict knows"
        ))
    })
}
