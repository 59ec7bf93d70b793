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

#[cfg(test)]
mod tests {
    use hindsight_core::{MemoryId, SourceKind};

    use super::*;
    use crate::write::plan::tests::{elsewhere, plan_of, request, toward};
    use crate::write::plan::Plan;

    /// A user's fact, its restatement by a tool, an agent's small talk and another fact.
    fn mixed_batch() -> Plan {
        let line = "The office wifi is called Orchard.";
        plan_of(vec![
            (request(line, SourceKind::User), toward(1.0)),
            (request(line, SourceKind::Tool), toward(0.96)),
            (request("Thanks.", SourceKind::Agent), elsewhere()),
            (
                request("Parking is behind the building.", SourceKind::User),
                vec![0.0, 0.0, 0.0, 1.0],
            ),
        ])
    }

    fn ids(plan: &Plan) -> Vec<MemoryId> {
        plan.items.iter().map(|p| p.memory.id).collect()
    }

    #[test]
    fn outcomes_come_back_in_request_order_with_their_own_index_when_items_merge() {
        let Plan { mut items, .. } = mixed_batch();
        let id: Vec<MemoryId> = items.iter().map(|p| p.memory.id).collect();
        // The entry answers only the three logged items, in item order.
        let results = vec![
            WriteResult::Created { id: id[0] },
            WriteResult::MergedInto {
                id: id[1],
                target: id[0],
            },
            WriteResult::Created { id: id[3] },
        ];
        settle(&mut items, results).unwrap();
        let merged = Disposition::MergedInto {
            target: id[0],
            similarity: 0.96,
        };
        assert_eq!(items[1].index, 1);
        assert_eq!(
            items[1].outcome,
            Some(WriteOutcome {
                id: id[0],
                disposition: merged.clone()
            })
        );
        let Some(Disposition::RejectedLowImportance { scores }) =
            items[2].outcome.as_ref().map(|o| o.disposition.clone())
        else {
            panic!("{:?}", items[2].outcome);
        };
        assert_eq!(items[2].fate, Fate::NotKept { scores });
        items.reverse();
        let answered: Vec<(MemoryId, &str)> = in_request_order(items)
            .into_iter()
            .map(|o| (o.id, o.disposition.name()))
            .collect();
        assert_eq!(
            answered,
            [
                (id[0], "created"),
                (id[0], "merged"),
                (id[2], Disposition::RejectedLowImportance { scores }.name()),
                (id[3], "created"),
            ]
        );
    }

    #[test]
    fn a_held_write_is_told_why_and_a_merge_whose_target_went_is_created() {
        let line = "Backups are kept for 30 days.";
        let plan = plan_of(vec![
            (request(line, SourceKind::User), toward(1.0)),
            (request(line, SourceKind::User), toward(1.0)),
            (
                request("Wipe the disks #held#", SourceKind::Tool),
                elsewhere(),
            ),
        ]);
        let id = ids(&plan);
        let mut items = plan.items;
        let results = id.iter().map(|&id| WriteResult::Created { id }).collect();
        settle(&mut items, results).unwrap();
        let told: Vec<Disposition> = in_request_order(items)
            .into_iter()
            .map(|o| o.disposition)
            .collect();
        assert_eq!(
            told,
            [
                Disposition::Created,
                Disposition::Created,
                Disposition::Quarantined {
                    reason: "held by the test".into()
                }
            ]
        );
    }

    #[test]
    fn a_batch_nothing_of_which_is_kept_needs_no_results() {
        let plan = plan_of(vec![
            (request("Okay.", SourceKind::Agent), toward(1.0)),
            (request("Hello.", SourceKind::Reflection), elsewhere()),
        ]);
        assert!(!plan.logs_anything());
        let mut items = plan.items;
        settle(&mut items, vec![]).unwrap();
        let told = in_request_order(items);
        assert_eq!(told.len(), 2);
        assert!(told
            .iter()
            .all(|o| o.disposition.name() == "rejected_low_importance"));
    }

    #[test]
    fn a_refused_or_missing_result_fails_the_write() {
        let Plan { mut items, .. } = mixed_batch();
        let id = items[0].memory.id;
        let short = settle(&mut items, vec![WriteResult::Created { id }]).unwrap_err();
        assert!(
            matches!(&short, NodeError::Internal(m) if m.to_string() == "the write's log entry had fewer results than items"),
            "{short:?}"
        );
        let refused = vec![WriteResult::Rejected {
            id,
            reason: format!("memory {id} already exists"),
        }];
        let refused = settle(&mut items, refused).unwrap_err();
        assert!(
            matches!(&refused, NodeError::FailedPrecondition(m) if m.ends_with("already exists")),
            "{refused:?}"
        );
    }

    #[test]
    fn a_refused_bank_creation_before_the_write_is_harmless() {
        let written = vec![WriteResult::Created { id: MemoryId(1) }];
        let exists = CommandOutcome::Rejected {
            reason: "bank exists".into(),
            not_found: false,
        };
        let batch = CommandOutcome::Batch(vec![
            exists.clone(),
            CommandOutcome::Written(written.clone()),
        ]);
        assert_eq!(written_results(batch).unwrap(), written);
        let refused = CommandOutcome::Batch(vec![CommandOutcome::BankCreated, exists.clone()]);
        assert!(matches!(
            written_results(refused),
            Err(NodeError::FailedPrecondition(m)) if m == "bank exists"
        ));
        assert!(matches!(
            written_results(exists),
            Err(NodeError::FailedPrecondition(_))
        ));
        assert!(matches!(
            written_results(CommandOutcome::BankCreated),
            Err(NodeError::Internal(m)) if m.to_string().starts_with("unexpected outcome of a write")
        ));
    }
}
