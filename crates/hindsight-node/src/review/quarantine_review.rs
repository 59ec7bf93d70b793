//! The review's optional LLM check of quarantined memories (docs/DESIGN.md, "Guard"). Write-time
//! screening holds back anything that looks like an attack; with a model configured
//! (`review.judge = "llm"` or `"consensus"`, and `review.llm.check_quarantine`), each cycle sends
//! the bank's quarantined memories that no model has looked at yet, with the screen's reason, and
//! the model confirms or releases each one.
//!
//! The answers become one `QuarantineChecked` Raft command, so every replica agrees and each
//! memory's history (and `trace`) names the judge and its reason; the memory is marked
//! `metadata.quarantine_check` and never sent again. A memory without a valid answer (a malformed
//! reply past the re-asks, an endpoint down, the budget spent) stays unmarked and is asked about
//! in a later cycle. Without a model nothing here runs.

use std::sync::Arc;

use hindsight_core::command::{Command, CommandOutcome};
use hindsight_core::review::QUARANTINE_CHECK;
use hindsight_core::{BankName, Memory, Status, Timestamp};

use super::ReviewHost;
use crate::error::NodeError;

/// Checks `bank`'s unchecked quarantined memories; `spent` is what the cycle already spent of the
/// bank's token budget.
pub(crate) async fn check(
    node: &impl ReviewHost,
    bank: &BankName,
    spent: u64,
) -> Result<(), NodeError> {
    let Some(llm) = node.reviewing().llm_judge() else {
        return Ok(());
    };
    if !llm.checks_quarantine() {
        return Ok(());
    }
    let view = node.banks().bank_view(bank).await?;
    let mut pending: Vec<Arc<Memory>> = view.with_records(|records| {
        records
            .values()
            .filter(|m| {
                matches!(m.status, Status::Quarantined { .. })
                    && !m.metadata.contains_key(QUARANTINE_CHECK)
            })
            .cloned()
            .collect()
    });
    if pending.is_empty() {
        return Ok(());
    }
    pending.sort_by_key(|m| m.id);
    let checked = tokio::task::spawn_blocking(move || llm.check_quarantined(&pending, spent))
        .await
        .map_err(NodeError::internal)?;
    metrics::counter!("hindsight_quarantine_check_tokens_total").increment(checked.tokens_used);
    if let Some((first, reason)) = checked.deferred.first() {
        metrics::counter!("hindsight_quarantine_checks_total", "decision" => "deferred")
            .increment(checked.deferred.len() as u64);
        tracing::warn!(
            %bank, waiting = checked.deferred.len(), %first, %reason,
            "quarantined memories without a model's answer; asked again next cycle"
        );
    }
    if checked.checks.is_empty() {
        return Ok(());
    }
    let (log_index, outcome) = node
        .banks()
        .propose_for_bank(
            bank,
            Command::QuarantineChecked {
                bank: bank.clone(),
                checks: checked.checks,
                at: Timestamp::now(),
            },
        )
        .await?;
    match outcome {
        CommandOutcome::QuarantineChecked {
            confirmed,
            released,
        } => {
            metrics::counter!("hindsight_quarantine_checks_total", "decision" => "confirmed")
                .increment(confirmed.len() as u64);
            metrics::counter!("hindsight_quarantine_checks_total", "decision" => "released")
                .increment(released.len() as u64);
            if !released.is_empty() {
                tracing::warn!(%bank, ?released, "quarantined memories released by the model");
            }
            tracing::info!(
                %bank, confirmed = confirmed.len(), released = released.len(),
                tokens = checked.tokens_used, "quarantine checked"
            );
        }
        CommandOutcome::Rejected { reason, not_found } => {
            return Err(NodeError::refused(reason, not_found))
        }
        other => {
            return Err(NodeError::internal(format!(
                "unexpected outcome of a quarantine check: {other:?}"
            )))
        }
    }
    node.banks().wait_indexed(view, log_index).await?;
    Ok(())
}
