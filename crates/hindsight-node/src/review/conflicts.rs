//! The conflict queue: contradictions the review could not decide wait here for a person. Resolving
//! one is a Raft command that changes both memories and records the answer in their history.

use hindsight_core::command::{Command, CommandOutcome};
use hindsight_core::review::{
    ChangeReason, Conflict, ConflictResolution, MemoryChange, ResolutionOutcome,
};
use hindsight_core::{BankName, Memory, MemoryId, Status, Timestamp};

use super::ReviewHost;
use crate::error::NodeError;

/// Confidence a memory a person confirmed gets back, at least.
const CONFIRMED_CONFIDENCE: f32 = 0.9;

pub(crate) async fn list(
    node: &impl ReviewHost,
    bank: &BankName,
    include_resolved: bool,
) -> Result<Vec<Conflict>, NodeError> {
    let home = node.banks().home_of_bank(bank)?;
    if home
        .reader()
        .bank(bank)
        .map_err(NodeError::internal)?
        .is_none()
    {
        return Err(NodeError::NotFound(format!("bank {bank} does not exist")));
    }
    let conflicts = home.reader().conflicts(bank).map_err(NodeError::internal)?;
    Ok(conflicts
        .into_iter()
        .filter(|c| include_resolved || c.resolution.is_none())
        .collect())
}

pub(crate) async fn resolve(
    node: &impl ReviewHost,
    bank: BankName,
    id: u64,
    outcome: ResolutionOutcome,
    note: String,
) -> Result<(Conflict, Vec<MemoryId>), NodeError> {
    let home = node.banks().home_of_bank(&bank)?;
    let conflict = home
        .reader()
        .conflict(&bank, id)
        .map_err(NodeError::internal)?
        .ok_or_else(|| NodeError::NotFound(format!("conflict {id} not found in bank {bank}")))?;
    if conflict.resolution.is_some() {
        return Err(NodeError::FailedPrecondition(format!(
            "conflict {id} is already resolved"
        )));
    }
    let memory = |id: MemoryId| -> Result<Memory, NodeError> {
        home.reader()
            .memory(id)
            .map_err(NodeError::internal)?
            .ok_or_else(|| NodeError::NotFound(format!("memory {id} no longer exists")))
    };
    let (a, b) = (memory(conflict.a)?, memory(conflict.b)?);
    let now = Timestamp::now();
    let explanation = if note.is_empty() {
        format!("conflict {id} resolved: {}", outcome_name(outcome))
    } else {
        format!("conflict {id} resolved: {}; {note}", outcome_name(outcome))
    };
    let keep = |m: &Memory, other: MemoryId| MemoryChange {
        id: m.id,
        reason: ChangeReason::Confirmed,
        status: Some(Status::Active),
        confidence: Some(m.confidence.max(CONFIRMED_CONFIDENCE)),
        valid_to: None,
        absorbed: None,
        derived: vec![],
        related: Some(other),
        effective_at: now,
        judge: "person".into(),
        explanation: explanation.clone(),
    };
    let discard = |m: &Memory, other: MemoryId| MemoryChange {
        id: m.id,
        reason: ChangeReason::Falsified,
        status: Some(Status::Falsified),
        confidence: Some(0.0),
        valid_to: Some(now),
        absorbed: None,
        derived: vec![],
        related: Some(other),
        effective_at: now,
        judge: "person".into(),
        explanation: explanation.clone(),
    };
    let changes = match outcome {
        ResolutionOutcome::KeepA => vec![keep(&a, b.id), discard(&b, a.id)],
        ResolutionOutcome::KeepB => vec![discard(&a, b.id), keep(&b, a.id)],
        ResolutionOutcome::KeepBoth => vec![keep(&a, b.id), keep(&b, a.id)],
        ResolutionOutcome::DiscardBoth => vec![discard(&a, b.id), discard(&b, a.id)],
    };
    let resolution = ConflictResolution {
        outcome,
        resolved_at: now,
        note,
    };
    let (log_index, result) = node
        .banks()
        .propose_to(
            &home,
            Command::ResolveConflict {
                bank: bank.clone(),
                id,
                resolution,
                changes,
            },
        )
        .await?;
    let changed = match result {
        CommandOutcome::ConflictResolved { changed } => changed,
        CommandOutcome::Rejected { reason, not_found } => {
            return Err(NodeError::refused(reason, not_found))
        }
        other => {
            return Err(NodeError::internal(format!(
                "unexpected outcome of a conflict resolution: {other:?}"
            )))
        }
    };
    if !changed.is_empty() {
        let view = node.banks().bank_view(&bank).await?;
        node.banks().wait_indexed(view, log_index).await?;
    }
    let conflict = home
        .reader()
        .conflict(&bank, id)
        .map_err(NodeError::internal)?
        .ok_or_else(|| NodeError::internal("resolved conflict vanished"))?;
    Ok((conflict, changed))
}

pub use hindsight_core::review::outcome_name;

/// [`hindsight_core::review::parse_outcome`] as the node's callers handle errors.
pub fn parse_outcome(name: &str) -> Result<ResolutionOutcome, NodeError> {
    hindsight_core::review::parse_outcome(name).map_err(NodeError::Invalid)
}
