//! Writes: requests and outcomes.

use hindsight_core::write::ImportanceScores;
use hindsight_core::{Disposition, Kind, ValidationError, WriteOutcome, WriteRequest};

use super::{opt_time, required, time};
use crate::pb;

impl TryFrom<pb::WriteRequest> for WriteRequest {
    type Error = ValidationError;

    fn try_from(r: pb::WriteRequest) -> Result<Self, ValidationError> {
        Ok(WriteRequest {
            bank: r.bank.parse()?,
            content: r.content,
            kind: r
                .kind
                .as_deref()
                .map(str::parse)
                .transpose()?
                .unwrap_or(Kind::Semantic),
            subtype: r.subtype.as_deref().map(str::parse).transpose()?,
            provenance: r.provenance.unwrap_or_default().try_into()?,
            occurred_at: opt_time(r.occurred_at.as_deref())?,
            ttl_secs: r.ttl_seconds,
            confidence: r.confidence,
            importance: r.importance,
            critical: r.critical,
            tags: r.tags,
            metadata: r.metadata,
        })
    }
}

impl From<&WriteRequest> for pb::WriteRequest {
    fn from(r: &WriteRequest) -> Self {
        pb::WriteRequest {
            bank: r.bank.to_string(),
            content: r.content.clone(),
            kind: Some(r.kind.as_str().to_string()),
            subtype: r.subtype.map(|s| s.as_str().to_string()),
            provenance: Some(pb::Provenance::from(&r.provenance)),
            occurred_at: r.occurred_at.map(time),
            ttl_seconds: r.ttl_secs,
            confidence: r.confidence,
            importance: r.importance,
            critical: r.critical,
            tags: r.tags.clone(),
            metadata: r.metadata.clone(),
        }
    }
}

impl From<&WriteOutcome> for pb::WriteResponse {
    fn from(o: &WriteOutcome) -> Self {
        let mut response = pb::WriteResponse {
            id: o.id.to_string(),
            disposition: o.disposition.name().to_string(),
            ..Default::default()
        };
        match &o.disposition {
            Disposition::Created => {}
            Disposition::MergedInto { target, similarity } => {
                response.merged_into = Some(target.to_string());
                response.similarity = Some(*similarity);
            }
            Disposition::Quarantined { reason } => {
                response.quarantine_reason = Some(reason.clone());
            }
            Disposition::RejectedLowImportance { scores } => {
                response.importance = Some(pb::ImportanceScores {
                    reuse: scores.reuse,
                    impact: scores.impact,
                    stability: scores.stability,
                    uniqueness: scores.uniqueness,
                    total: scores.total,
                });
            }
        }
        response
    }
}

impl TryFrom<pb::WriteResponse> for WriteOutcome {
    type Error = ValidationError;

    fn try_from(r: pb::WriteResponse) -> Result<Self, ValidationError> {
        let disposition = match r.disposition.as_str() {
            "created" => Disposition::Created,
            "merged" => Disposition::MergedInto {
                target: required(r.merged_into, "merged_into")?.parse()?,
                similarity: r.similarity.unwrap_or_default(),
            },
            "quarantined" => Disposition::Quarantined {
                reason: r.quarantine_reason.unwrap_or_default(),
            },
            "rejected_low_importance" => {
                let s = required(r.importance, "importance")?;
                Disposition::RejectedLowImportance {
                    scores: ImportanceScores {
                        reuse: s.reuse,
                        impact: s.impact,
                        stability: s.stability,
                        uniqueness: s.uniqueness,
                        total: s.total,
                    },
                }
            }
            _ => {
                return Err(ValidationError::UnknownEnumValue {
                    field: "disposition",
                    value: r.disposition,
                    expected: "created merged quarantined rejected_low_importance",
                })
            }
        };
        Ok(WriteOutcome {
            id: r.id.parse()?,
            disposition,
        })
    }
}
