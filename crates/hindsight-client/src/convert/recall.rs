//! Recall: requests, and ranked hits with their explanations.

use hindsight_core::recall::{ArmHit, Explain, RecallFilters, RecallHit};
use hindsight_core::{Consistency, RecallIntent, RecallRequest, RecallResponse, ValidationError};

use super::{convert_all, opt_time, parse_time, required, time};
use crate::pb;

/// What a recall returns when the caller does not say.
const DEFAULT_TOP_K: u32 = 10;

impl TryFrom<pb::RecallRequest> for RecallRequest {
    type Error = ValidationError;

    fn try_from(r: pb::RecallRequest) -> Result<Self, ValidationError> {
        Ok(RecallRequest {
            banks: r
                .banks
                .iter()
                .map(|b| b.parse())
                .collect::<Result<_, _>>()?,
            query: r.query,
            top_k: r.top_k.unwrap_or(DEFAULT_TOP_K),
            max_tokens: r.max_tokens,
            as_of: opt_time(r.as_of.as_deref())?,
            filters: r.filters.unwrap_or_default().try_into()?,
            include_history: r.include_history,
            include_archived: r.include_archived,
            consistency: consistency(r.consistency.as_deref())?,
            agent_role: r.agent_role.filter(|role| !role.trim().is_empty()),
            intent: match r.intent.as_deref().map(str::trim) {
                None | Some("") => RecallIntent::Any,
                Some(intent) => intent.parse()?,
            },
            context: r.context.into_iter().collect(),
        })
    }
}

impl From<&RecallRequest> for pb::RecallRequest {
    fn from(r: &RecallRequest) -> Self {
        pb::RecallRequest {
            banks: r.banks.iter().map(ToString::to_string).collect(),
            query: r.query.clone(),
            top_k: Some(r.top_k),
            max_tokens: r.max_tokens,
            as_of: r.as_of.map(time),
            filters: Some(pb::RecallFilters::from(&r.filters)),
            include_history: r.include_history,
            include_archived: r.include_archived,
            consistency: Some(
                match r.consistency {
                    Consistency::Linearizable => "linearizable",
                    Consistency::Eventual => "eventual",
                }
                .to_string(),
            ),
            agent_role: r.agent_role.clone(),
            intent: Some(r.intent.as_str().to_string()),
            context: r.context.clone().into_iter().collect(),
        }
    }
}

pub fn consistency(value: Option<&str>) -> Result<Consistency, ValidationError> {
    match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
        None | Some("") | Some("linearizable") => Ok(Consistency::Linearizable),
        Some("eventual") => Ok(Consistency::Eventual),
        Some(_) => Err(ValidationError::UnknownEnumValue {
            field: "consistency",
            value: value.unwrap_or_default().to_string(),
            expected: "linearizable eventual",
        }),
    }
}

impl TryFrom<pb::RecallFilters> for RecallFilters {
    type Error = ValidationError;

    fn try_from(f: pb::RecallFilters) -> Result<Self, ValidationError> {
        Ok(RecallFilters {
            kinds: f
                .kinds
                .iter()
                .map(|k| k.parse())
                .collect::<Result<_, _>>()?,
            tags: f.tags,
            occurred_from: opt_time(f.occurred_from.as_deref())?,
            occurred_to: opt_time(f.occurred_to.as_deref())?,
            min_confidence: f.min_confidence,
        })
    }
}

impl From<&RecallFilters> for pb::RecallFilters {
    fn from(f: &RecallFilters) -> Self {
        pb::RecallFilters {
            kinds: f.kinds.iter().map(|k| k.as_str().to_string()).collect(),
            tags: f.tags.clone(),
            occurred_from: f.occurred_from.map(time),
            occurred_to: f.occurred_to.map(time),
            min_confidence: f.min_confidence,
        }
    }
}

impl From<&RecallResponse> for pb::RecallResponse {
    fn from(r: &RecallResponse) -> Self {
        pb::RecallResponse {
            hits: r.hits.iter().map(pb::RecallHit::from).collect(),
            time_window: r.time_window.map(|(from, to)| pb::TimeWindow {
                from: time(from),
                to: time(to),
            }),
            tokens_used: r.tokens_used,
            took_micros: r.took_micros,
            recall_id: r.recall_id.map(|id| id.to_string()).unwrap_or_default(),
        }
    }
}

impl TryFrom<pb::RecallResponse> for RecallResponse {
    type Error = ValidationError;

    fn try_from(r: pb::RecallResponse) -> Result<Self, ValidationError> {
        Ok(RecallResponse {
            hits: convert_all(r.hits)?,
            time_window: r
                .time_window
                .map(|w| Ok::<_, ValidationError>((parse_time(&w.from)?, parse_time(&w.to)?)))
                .transpose()?,
            tokens_used: r.tokens_used,
            took_micros: r.took_micros,
            recall_id: match r.recall_id.trim() {
                "" => None,
                id => Some(id.parse()?),
            },
        })
    }
}

impl From<&RecallHit> for pb::RecallHit {
    fn from(h: &RecallHit) -> Self {
        pb::RecallHit {
            memory: Some(pb::Memory::from(&h.memory)),
            status: Some(pb::MemoryStatus::from(&h.status)),
            score: h.score,
            explain: Some(pb::Explain::from(&h.explain)),
        }
    }
}

impl TryFrom<pb::RecallHit> for RecallHit {
    type Error = ValidationError;

    fn try_from(h: pb::RecallHit) -> Result<Self, ValidationError> {
        Ok(RecallHit {
            memory: required(h.memory, "memory")?.try_into()?,
            status: required(h.status, "status")?.try_into()?,
            score: h.score,
            explain: h.explain.unwrap_or_default().into(),
        })
    }
}

impl From<&Explain> for pb::Explain {
    fn from(e: &Explain) -> Self {
        pb::Explain {
            arms: e
                .arms
                .iter()
                .map(|a| pb::ArmHit {
                    arm: a.arm.clone(),
                    rank: a.rank,
                    score: a.score,
                })
                .collect(),
            relevance: e.relevance,
            confidence: e.confidence,
            freshness: e.freshness,
            score: e.score,
            status: e.status.clone(),
            flags: e.flags.clone(),
            collapsed: e.collapsed.clone(),
            adjustments: e.adjustments.clone(),
        }
    }
}

impl From<pb::Explain> for Explain {
    fn from(e: pb::Explain) -> Self {
        Explain {
            arms: e
                .arms
                .into_iter()
                .map(|a| ArmHit {
                    arm: a.arm,
                    rank: a.rank,
                    score: a.score,
                })
                .collect(),
            relevance: e.relevance,
            confidence: e.confidence,
            freshness: e.freshness,
            score: e.score,
            status: e.status,
            flags: e.flags,
            collapsed: e.collapsed,
            adjustments: e.adjustments,
        }
    }
}
