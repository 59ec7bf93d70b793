//! The retrieval log and feedback on recalled memories.

use hindsight_core::retrieval::{FeedbackEvent, LoggedHit, RecallId, RetrievalQuery};
use hindsight_core::{FeedbackReport, RetrievalRecord, ValidationError};

use super::{opt_time, parse_time, required, time};
use crate::pb;

/// Recalls listed when the caller does not say how many.
const DEFAULT_LIST_LIMIT: usize = 50;
/// Most recalls one listing returns.
const MAX_LIST_LIMIT: usize = 1_000;

pub fn recall_id(value: &str) -> Result<RecallId, ValidationError> {
    if value.trim().is_empty() {
        return Err(ValidationError::Invalid("recall_id is missing".into()));
    }
    value.parse()
}

impl TryFrom<pb::ListRecallsRequest> for RetrievalQuery {
    type Error = ValidationError;

    fn try_from(r: pb::ListRecallsRequest) -> Result<Self, ValidationError> {
        let limit = r.limit.map_or(DEFAULT_LIST_LIMIT, |l| l as usize);
        if limit == 0 || limit > MAX_LIST_LIMIT {
            return Err(ValidationError::OutOfRange {
                field: "limit",
                value: limit.to_string(),
                min: "1".into(),
                max: MAX_LIST_LIMIT.to_string(),
            });
        }
        Ok(RetrievalQuery {
            bank: r
                .bank
                .filter(|b| !b.trim().is_empty())
                .map(|b| b.parse())
                .transpose()?,
            query_contains: r.query_contains.filter(|q| !q.trim().is_empty()),
            since: opt_time(r.since.as_deref())?,
            until: opt_time(r.until.as_deref())?,
            limit,
        })
    }
}

impl From<&RetrievalQuery> for pb::ListRecallsRequest {
    fn from(q: &RetrievalQuery) -> Self {
        pb::ListRecallsRequest {
            bank: q.bank.as_ref().map(ToString::to_string),
            query_contains: q.query_contains.clone(),
            since: q.since.map(time),
            until: q.until.map(time),
            limit: Some(q.limit as u32),
        }
    }
}

impl From<&RetrievalRecord> for pb::LoggedRecall {
    fn from(r: &RetrievalRecord) -> Self {
        pb::LoggedRecall {
            id: r.id.to_string(),
            at: time(r.at),
            principal: r.principal.clone(),
            request: Some(pb::RecallRequest::from(&r.request)),
            hits: r
                .hits
                .iter()
                .map(|h| pb::LoggedHit {
                    memory_id: h.memory.to_string(),
                    bank: h.bank.to_string(),
                    rank: h.rank,
                    score: h.score,
                    content: h.content.clone(),
                    explain: Some(pb::Explain::from(&h.explain)),
                })
                .collect(),
            latency_micros: r.latency_micros,
            feedback: r.feedback.iter().map(pb::FeedbackEvent::from).collect(),
        }
    }
}

impl TryFrom<pb::LoggedRecall> for RetrievalRecord {
    type Error = ValidationError;

    fn try_from(r: pb::LoggedRecall) -> Result<Self, ValidationError> {
        Ok(RetrievalRecord {
            id: recall_id(&r.id)?,
            at: parse_time(&r.at)?,
            principal: r.principal,
            request: required(r.request, "request")?.try_into()?,
            hits: r
                .hits
                .into_iter()
                .map(|h| {
                    Ok(LoggedHit {
                        memory: h.memory_id.parse()?,
                        bank: h.bank.parse()?,
                        rank: h.rank,
                        score: h.score,
                        content: h.content,
                        explain: h.explain.unwrap_or_default().into(),
                    })
                })
                .collect::<Result<_, ValidationError>>()?,
            latency_micros: r.latency_micros,
            feedback: r
                .feedback
                .into_iter()
                .map(FeedbackEvent::try_from)
                .collect::<Result<_, _>>()?,
        })
    }
}

impl From<&FeedbackEvent> for pb::FeedbackEvent {
    fn from(e: &FeedbackEvent) -> Self {
        pb::FeedbackEvent {
            memory_id: e.memory.to_string(),
            outcome: e.outcome.as_str().to_string(),
            at: time(e.at),
            principal: e.principal.clone(),
            confidence_before: e.confidence_before,
            confidence_after: e.confidence_after,
        }
    }
}

impl TryFrom<pb::FeedbackEvent> for FeedbackEvent {
    type Error = ValidationError;

    fn try_from(e: pb::FeedbackEvent) -> Result<Self, ValidationError> {
        Ok(FeedbackEvent {
            memory: e.memory_id.parse()?,
            outcome: e.outcome.parse()?,
            at: parse_time(&e.at)?,
            principal: e.principal,
            confidence_before: e.confidence_before,
            confidence_after: e.confidence_after,
        })
    }
}

impl From<&FeedbackReport> for pb::FeedbackResponse {
    fn from(r: &FeedbackReport) -> Self {
        pb::FeedbackResponse {
            memory: Some(pb::Memory::from(&r.memory)),
            confidence_before: r.confidence_before,
            confidence_after: r.confidence_after,
            applied: r.applied,
        }
    }
}

impl TryFrom<pb::FeedbackResponse> for FeedbackReport {
    type Error = ValidationError;

    fn try_from(r: pb::FeedbackResponse) -> Result<Self, ValidationError> {
        Ok(FeedbackReport {
            memory: required(r.memory, "memory")?.try_into()?,
            confidence_before: r.confidence_before,
            confidence_after: r.confidence_after,
            applied: r.applied,
        })
    }
}
