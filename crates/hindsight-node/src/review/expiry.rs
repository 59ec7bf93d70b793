//! Expiry, the step before a cycle: memories whose time to live passed leave the live set in a
//! command of their own, and the cycle then plans on the view that shows it.

use std::collections::HashMap;
use std::sync::Arc;

use hindsight_core::command::{Command, CommandOutcome};
use hindsight_core::{BankName, Memory, MemoryId, Timestamp};

use super::ReviewHost;
use crate::bank::BankView;
use crate::error::NodeError;

/// Expires the memories due at `as_of` and waits until the bank's view shows it.
pub(super) async fn expire(
    node: &impl ReviewHost,
    bank: &BankName,
    view: &Arc<BankView>,
    as_of: Timestamp,
    now: Timestamp,
) -> Result<Vec<MemoryId>, NodeError> {
    let due = view.with_records(|records| due_for_expiry(records, as_of));
    if due.is_empty() {
        return Ok(vec![]);
    }
    let (log_index, outcome) = node
        .banks()
        .propose_for_bank(
            bank,
            Command::Expire {
                bank: bank.clone(),
                ids: due,
                as_of,
                at: now,
            },
        )
        .await?;
    let CommandOutcome::Expired { ids } = outcome else {
        return Err(NodeError::internal(format!(
            "unexpected outcome of expiry: {outcome:?}"
        )));
    };
    node.banks().wait_indexed(view.clone(), log_index).await?;
    Ok(ids)
}

/// The memories whose time to live passed at `as_of`, in id order (the command's order on every
/// replica). A memory already out of the live set (superseded, archived, expired) is left as it
/// is: its status says why it left.
pub(super) fn due_for_expiry(
    records: &HashMap<MemoryId, Arc<Memory>>,
    as_of: Timestamp,
) -> Vec<MemoryId> {
    let mut due: Vec<MemoryId> = records
        .values()
        .filter(|m| m.is_expired_at(as_of) && !m.status.hidden_by_default())
        .map(|m| m.id)
        .collect();
    due.sort();
    due
}
