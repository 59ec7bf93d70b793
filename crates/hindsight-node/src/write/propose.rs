//! From a plan to a log entry: the byte quotas' admission, the one command the batch is, its
//! proposal, and the wait until the batch's banks show it.

use std::collections::BTreeMap;
use std::sync::Arc;

use hindsight_core::command::{Command, CommandOutcome, ItemVectors, WriteItem};
use hindsight_core::{BankName, MemoryId, Timestamp};

use super::banks::BatchBanks;
use super::plan::{Fate, Planned};
use super::quota::{Demand, Reservation, Reservations};
use super::WriteHost;
use crate::bank::homes::Home;
use crate::error::NodeError;

/// Checks the write against its banks' byte quotas. Only records the write creates count: a
/// merge adds support to a memory, not content.
pub(crate) fn admit_bytes(
    reservations: &Arc<Reservations>,
    banks: &BatchBanks,
    items: &[Planned],
) -> Result<Reservation, NodeError> {
    let mut adds: BTreeMap<&BankName, u64> = BTreeMap::new();
    for p in items {
        if let Fate::Create { .. } = p.fate {
            *adds.entry(&p.memory.bank).or_default() += p.memory.quota_bytes();
        }
    }
    let demands: Vec<Demand<'_>> = adds
        .into_iter()
        .map(|(bank, adds)| {
            let bank_of_batch = &banks[bank];
            Demand {
                bank,
                max_bytes: bank_of_batch.config.max_bytes,
                held: bank_of_batch.view.as_ref().map_or(0, |v| v.held_bytes()),
                adds,
            }
        })
        .collect();
    reservations.admit(&demands)
}

/// The batch's one log entry: the banks it creates, then the earlier writes the guard holds with
/// it (before the write, so that the two halves are held together), then the write of every item
/// that is kept. `model` made the items' vectors.
pub(crate) fn command(
    creations: Vec<Command>,
    also_held: Vec<(MemoryId, String)>,
    items: &[Planned],
    model: String,
    now: Timestamp,
) -> Command {
    let mut commands = creations;
    commands.extend(
        also_held
            .into_iter()
            .map(|(id, reason)| Command::Quarantine {
                id,
                at: now,
                reason,
            }),
    );
    let mut written = Vec::with_capacity(items.len());
    // The entry carries every item's vector (a merge's too, for when its target is gone by the
    // time it applies), so that no replica embeds the write again.
    let mut carried = Vec::with_capacity(items.len());
    for p in items {
        let memory = Box::new(p.memory.clone());
        written.push(match p.fate {
            Fate::Create { .. } => WriteItem::Create { memory },
            Fate::Merge { target, similarity } => WriteItem::Merge {
                target,
                similarity,
                memory,
            },
            Fate::NotKept { .. } => continue,
        });
        carried.push(p.vector.clone());
    }
    commands.push(Command::WriteEmbedded {
        items: written,
        vectors: ItemVectors {
            model,
            vectors: carried,
        },
    });
    if commands.len() == 1 {
        commands.pop().expect("one command")
    } else {
        Command::Batch(commands)
    }
}

/// Proposes the entry to the batch's group; the log index it got and what it did.
pub(crate) async fn propose(
    node: &impl WriteHost,
    home: &Home,
    banks: &BatchBanks,
    command: Command,
) -> Result<(u64, CommandOutcome), NodeError> {
    let creates_bank = banks.values().any(|bank| bank.view.is_none());
    let (log_index, outcome) = node.banks().propose_to(home, command).await?;
    if creates_bank {
        // The bank's actor starts from this replica's copy, which must hold the new bank.
        node.banks().wait_applied(home, log_index).await?;
    }
    Ok((log_index, outcome))
}

/// Waits until every bank of the batch shows the entry at `log_index` to searches.
pub(crate) async fn await_searchable(
    node: &impl WriteHost,
    banks: &BatchBanks,
    log_index: u64,
) -> Result<(), NodeError> {
    for bank in banks.keys() {
        let view = node.banks().bank_view(bank).await?;
        node.banks().wait_indexed(view, log_index).await?;
    }
    Ok(())
}
