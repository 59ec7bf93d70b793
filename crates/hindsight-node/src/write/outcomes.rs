//! What the caller is told: each planned item's outcome, from the log entry's results.

use hindsight_core::command::{CommandOutcome, WriteResult};
use hindsight_core::write::{Disposition, WriteOutcome};

use super::plan::{Fate, Planned};
use crate::error::NodeError;

/// The write's results, one per logged item in item order.
pub(crate) fn written_results(outcome: CommandOutcome) -> Result<Vec<WriteResult>, NodeError> {
    match outcome {
        CommandOutcome::Written(results) => Ok(results),
        // Bank creations first, the write last. A concurrent first write may have created the
        // bank already; that creation's refusal is harmless and the write itself still landed.
        CommandOutcome::Batch(mut outcomes) => match outcomes.pop() {
            Some(CommandOutcome::Written(results)) => Ok(results),
            Some(CommandOutcome::Rejected { reason, .. }) => {
                Err(NodeError::FailedPrecondition(reason))
            }
            other => Err(NodeError::internal(format!(
                "unexpected outcome of a write: {other:?}"
            ))),
        },
        CommandOutcome::Rejected { reason, .. } => Err(NodeError::FailedPrecondition(reason)),
        other => Err(NodeError::internal(format!(
            "unexpected outcome of a write: {other:?}"
        ))),
    }
}

/// Gives every item its outcome: an item not kept has its own, a logged one takes the next of
/// `results`. Fails at the first item the entry refused or did not answer.
pub(crate) fn settle(items: &mut [Planned], results: Vec<WriteResult>) -> Result<(), NodeError> {
    let mut results = results.into_iter();
    for item in items {
        let outcome = match &item.fate {
            Fate::NotKept { scores } => WriteOutcome {
                id: item.memory.id,
                disposition: Disposition::RejectedLowImportance { scores: *scores },
            },
            _ => {
                let Some(result) = results.next() else {
                    return Err(NodeError::internal(
                        "the write's log entry had fewer results than items",
                    ));
                };
                from_result(item, result)?
            }
        };
        item.outcome = Some(outcome);
    }
    Ok(())
}

/// A logged item's outcome. What the planner decided counts only for a result about the item's
/// own memory; a merge whose target was gone when the entry applied comes back created.
fn from_result(item: &Planned, result: WriteResult) -> Result<WriteOutcome, NodeError> {
    let own = |id| id == item.memory.id;
    Ok(match result {
        WriteResult::Created { id } => WriteOutcome {
            id,
            disposition: match &item.fate {
                Fate::Create { held: Some(reason) } if own(id) => Disposition::Quarantined {
                    reason: reason.clone(),
                },
                _ => Disposition::Created,
            },
        },
        // The caller gets the memory that now holds the write: the write's own id names no
        // record (it is kept in the target's `support.merged`), so a `get` of it would fail.
        WriteResult::MergedInto { id, target } => WriteOutcome {
            id: target,
            disposition: Disposition::MergedInto {
                target,
                similarity: match item.fate {
                    Fate::Merge { similarity, .. } if own(id) => similarity,
                    _ => 1.0,
                },
            },
        },
        WriteResult::Rejected { reason, .. } => {
            return Err(NodeError::FailedPrecondition(reason));
        }
    })
}

/// The settled outcomes in request order.
pub(crate) fn in_request_order(mut items: Vec<Planned>) -> Vec<WriteOutcome> {
    items.sort_by_key(|p| p.index);
    items.into_iter().filter_map(|p| p.outcome).collect()
}
