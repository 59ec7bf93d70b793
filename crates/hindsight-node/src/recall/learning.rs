//! Learning from use: every recall is written to the node's retrieval log under a recall id, and
//! feedback on a recalled memory moves its confidence through Raft, with the recall named in the
//! memory's history.

use hindsight_core::command::{Command, CommandOutcome};
use hindsight_core::retrieval::{
    FeedbackEvent, FeedbackOutcome, LoggedHit, RecallId, RetrievalQuery,
};
use hindsight_core::{
    MemoryId, RecallRequest, RecallResponse, RetrievalRecord, Timestamp, ValidationError,
};

use super::RecallHost;
use crate::error::NodeError;

pub use hindsight_core::api_types::FeedbackReport;

/// Records a served recall and gives the response its recall id: `part_of`, when the recall is
/// one part of a recall over several partitions whose caller already has that id, else a new one.
/// A log that cannot be written costs the caller its recall id, not its answer.
pub(crate) fn log_recall(
    node: &impl RecallHost,
    principal: &str,
    request: RecallRequest,
    response: &mut RecallResponse,
    at: Timestamp,
    part_of: Option<RecallId>,
) {
    let Ok(log) = node.recalling().retrieval_log() else {
        return;
    };
    if !log.enabled() {
        return;
    }
    let id = part_of.unwrap_or_else(|| RecallId::new(at.millis(), rand::random()));
    let record = RetrievalRecord {
        id,
        at,
        principal: principal.to_string(),
        request,
        hits: response
            .hits
            .iter()
            .enumerate()
            .map(|(n, h)| LoggedHit {
                memory: h.memory.id,
                bank: h.memory.bank.clone(),
                rank: n as u32 + 1,
                score: h.score,
                content: h.memory.content.clone(),
                explain: h.explain.clone(),
            })
            .collect(),
        latency_micros: response.took_micros,
        feedback: vec![],
    };
    let recorded = match part_of {
        Some(_) => log.record_part(record),
        None => log.record(&record).map(|()| true),
    };
    match recorded {
        Ok(true) => response.recall_id = Some(id),
        Ok(false) => tracing::warn!(
            %id,
            "a recall part named the id of another principal's recall; not logged"
        ),
        Err(e) => tracing::warn!(error = %e, "could not write the retrieval log"),
    }
}

pub(crate) async fn feedback(
    node: &impl RecallHost,
    principal: &str,
    recall: RecallId,
    memory: MemoryId,
    outcome: FeedbackOutcome,
) -> Result<FeedbackReport, NodeError> {
    let log = node.recalling().retrieval_log()?;
    if !log.enabled() {
        return Err(NodeError::FailedPrecondition(
            "the retrieval log is off on this node (retrieval_log.enabled = false), so feedback \
             has no recall to refer to"
                .into(),
        ));
    }
    // One feedback at a time: the duplicate check and the log update below must not interleave.
    let _serial = node.recalling().feedback_lock().await;
    let record = log
        .get(recall)
        .map_err(NodeError::internal)?
        .ok_or_else(|| {
            NodeError::NotFound(format!(
            "recall {recall} is not in this node's retrieval log (made elsewhere, or older than \
             retrieval_log.max_age_days)"
        ))
        })?;
    if record.hit(memory).is_none() {
        return Err(NodeError::Invalid(ValidationError::Invalid(format!(
            "memory {memory} was not among the {} results of recall {recall}",
            record.hits.len()
        ))));
    }
    if record
        .feedback
        .iter()
        .any(|f| f.memory == memory && f.outcome == outcome)
    {
        let current = node.get(memory).await?;
        return Ok(FeedbackReport {
            confidence_before: current.confidence,
            confidence_after: current.confidence,
            memory: current,
            applied: false,
        });
    }
    let delta = node.config().feedback.delta(outcome);
    let at = Timestamp::now();
    let home = node.banks().home_of_memory(memory)?;
    let (log_index, result) = node
        .banks()
        .propose_to(
            &home,
            Command::Feedback {
                id: memory,
                recall,
                outcome,
                delta,
                at,
                principal: principal.to_string(),
            },
        )
        .await?;
    let (before, after) = match result {
        CommandOutcome::FeedbackApplied {
            confidence_before,
            confidence_after,
        } => (confidence_before, confidence_after),
        CommandOutcome::Rejected { reason, not_found } => {
            return Err(NodeError::refused(reason, not_found))
        }
        other => {
            return Err(NodeError::internal(format!(
                "unexpected outcome of feedback: {other:?}"
            )))
        }
    };
    let event = FeedbackEvent {
        memory,
        outcome,
        at,
        principal: principal.to_string(),
        confidence_before: before,
        confidence_after: after,
    };
    if let Err(e) = log.update(recall, |r| {
        r.feedback.push(event);
        Ok::<(), ()>(())
    }) {
        tracing::warn!(%recall, error = %e, "feedback applied but not written to the retrieval log");
    }
    metrics::counter!("hindsight_feedback_total", "outcome" => outcome.as_str()).increment(1);
    let current = node.get(memory).await?;
    let view = node.banks().bank_view(&current.bank).await?;
    node.banks().wait_indexed(view, log_index).await?;
    if matches!(outcome, FeedbackOutcome::Wrong) && node.config().review.on_likely_conflict {
        node.hint_review(&current.bank).await;
    }
    Ok(FeedbackReport {
        memory: current,
        confidence_before: before,
        confidence_after: after,
        applied: true,
    })
}

pub(crate) fn list(
    node: &impl RecallHost,
    query: &RetrievalQuery,
) -> Result<Vec<RetrievalRecord>, NodeError> {
    node.recalling()
        .retrieval_log()?
        .list(query)
        .map_err(NodeError::internal)
}

pub(crate) fn get(node: &impl RecallHost, recall: RecallId) -> Result<RetrievalRecord, NodeError> {
    node.recalling()
        .retrieval_log()?
        .get(recall)
        .map_err(NodeError::internal)?
        .ok_or_else(|| {
            NodeError::NotFound(format!(
                "recall {recall} is not in this node's retrieval log"
            ))
        })
}
