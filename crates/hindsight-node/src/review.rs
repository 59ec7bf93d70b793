//! The review step. Here: expiry of memories whose time to live has passed by `as_of`. Every decision
//! is a Raft command, so replicas agree and each record's history says why it changed.

use std::time::Instant;

use hindsight_core::command::{Command, CommandOutcome};
use hindsight_core::{BankName, Consistency, Timestamp};

use crate::error::NodeError;
use crate::node::Node;
use crate::types::ReviewReport;

pub async fn review(
    node: &Node,
    bank: BankName,
    as_of: Option<Timestamp>,
) -> Result<ReviewReport, NodeError> {
    let started = Instant::now();
    let now = Timestamp::now();
    let as_of = as_of.unwrap_or(now);
    let view = node.bank_view(&bank).await?;
    let view = node
        .read_barrier(vec![view], Consistency::Linearizable)
        .await?
        .remove(0);
    let (considered, due) = view.with_records(|records| {
        let mut due: Vec<_> = records
            .values()
            .filter(|m| m.is_expired_at(as_of) && !m.status.hidden_by_default())
            .map(|m| m.id)
            .collect();
        due.sort();
        (records.len(), due)
    });
    let mut expired = vec![];
    if !due.is_empty() {
        let (log_index, outcome) = node
            .propose(Command::Expire {
                bank: bank.clone(),
                ids: due,
                as_of,
                at: now,
            })
            .await?;
        match outcome {
            CommandOutcome::Expired { ids } => expired = ids,
            other => {
                return Err(NodeError::internal(format!(
                    "unexpected outcome of expiry: {other:?}"
                )))
            }
        }
        node.wait_indexed(view, log_index).await?;
    }
    if !expired.is_empty() {
        tracing::info!(%bank, %as_of, expired = expired.len(), "review expired memories");
    }
    Ok(ReviewReport {
        bank: bank.to_string(),
        as_of,
        considered,
        expired,
        took_micros: started.elapsed().as_micros() as u64,
    })
}
