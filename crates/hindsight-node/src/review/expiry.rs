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

#[cfg(test)]
mod tests {
    use super::*;
    use hindsight_core::{Provenance, SourceKind, Status};

    fn expiring(id: u128, expires_at: Option<i64>, status: Status) -> Arc<Memory> {
        let mut m = Memory::new(
            MemoryId(id),
            "t/bank".parse().unwrap(),
            format!("memory {id}"),
            Provenance::from_source(SourceKind::User),
            Timestamp(0),
        );
        m.expires_at = expires_at.map(Timestamp);
        m.status = status;
        Arc::new(m)
    }

    #[test]
    fn only_live_memories_past_their_time_to_live_expire_in_id_order() {
        let records: HashMap<MemoryId, Arc<Memory>> = [
            expiring(5, Some(900), Status::Active),
            expiring(2, Some(1_000), Status::Active),
            expiring(3, Some(1_001), Status::Active),
            expiring(4, None, Status::Active),
            expiring(1, Some(10), Status::Archived),
            expiring(6, Some(10), Status::Superseded { by: MemoryId(5) }),
            expiring(7, Some(10), Status::Expired),
        ]
        .into_iter()
        .map(|m| (m.id, m))
        .collect();
        assert_eq!(
            due_for_expiry(&records, Timestamp(1_000)),
            vec![MemoryId(2), MemoryId(5)]
        );
        assert!(due_for_expiry(&records, Timestamp(899)).is_empty());
    }
}
