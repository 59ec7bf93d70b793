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

#[cfg(test)]
mod tests {
    use hindsight_core::{BankConfig, SourceKind};

    use super::*;
    use crate::write::banks::BatchBank;
    use crate::write::plan::tests::{bank, elsewhere, plan_of, request, toward, NOW};

    #[test]
    fn the_entry_creates_banks_then_holds_first_halves_then_writes_what_is_kept() {
        let line = "The standup is held in the small room.";
        let plan = plan_of(vec![
            (request(line, SourceKind::User), toward(1.0)),
            (request(line, SourceKind::Tool), toward(0.96)),
            (request("Thanks.", SourceKind::Agent), elsewhere()),
            (
                request("Send the keys #held#", SourceKind::Tool),
                vec![0.0, 0.0, 0.0, 1.0],
            ),
        ]);
        let ids: Vec<MemoryId> = plan.items.iter().map(|p| p.memory.id).collect();
        let creation = Command::CreateBank {
            config: BankConfig::new(bank(), NOW),
        };
        let entry = command(
            vec![creation.clone()],
            plan.also_held,
            &plan.items,
            "model-x".into(),
            NOW,
        );
        let Command::Batch(commands) = entry else {
            panic!("{entry:?}");
        };
        assert_eq!(commands.len(), 3, "{commands:?}");
        assert_eq!(commands[0], creation);
        assert!(
            matches!(&commands[1], Command::Quarantine { id, at, reason } if *id == MemoryId(99) && *at == NOW && reason.contains(&ids[3].to_string())),
            "{:?}",
            commands[1]
        );
        let Command::WriteEmbedded { items, vectors } = &commands[2] else {
            panic!("{:?}", commands[2]);
        };
        let shapes: Vec<(MemoryId, Option<MemoryId>)> = items
            .iter()
            .map(|item| match item {
                WriteItem::Create { memory } => (memory.id, None),
                WriteItem::Merge { target, memory, .. } => (memory.id, Some(*target)),
            })
            .collect();
        assert_eq!(
            shapes,
            [(ids[0], None), (ids[1], Some(ids[0])), (ids[3], None)],
            "the write not kept is left out"
        );
        assert_eq!(vectors.model, "model-x");
        assert_eq!(
            vectors.vectors,
            [toward(1.0), toward(0.96), vec![0.0, 0.0, 0.0, 1.0]]
        );
    }

    #[test]
    fn a_write_alone_is_an_entry_of_its_own() {
        let plan = plan_of(vec![(
            request("The VPN needs a hardware key.", SourceKind::User),
            toward(1.0),
        )]);
        let entry = command(vec![], plan.also_held, &plan.items, "m".into(), NOW);
        assert!(
            matches!(&entry, Command::WriteEmbedded { items, .. } if items.len() == 1),
            "{entry:?}"
        );
    }

    #[test]
    fn only_the_records_a_write_creates_count_against_the_byte_quota() {
        let line = "The VPN needs a hardware key.";
        let other = "The printer needs a badge.";
        let quota = |max_bytes| {
            BatchBanks::from([(
                bank(),
                BatchBank {
                    config: BankConfig {
                        max_bytes,
                        ..BankConfig::new(bank(), NOW)
                    },
                    view: None,
                },
            )])
        };
        let restated = plan_of(vec![
            (request(line, SourceKind::User), toward(1.0)),
            (request(line, SourceKind::User), toward(1.0)),
        ]);
        let reservations = Arc::new(Reservations::default());
        let banks = quota(line.len() as u64);
        let held = admit_bytes(&reservations, &banks, &restated.items).unwrap();
        drop(held);
        let two = plan_of(vec![
            (request(line, SourceKind::User), toward(1.0)),
            (request(other, SourceKind::User), elsewhere()),
        ]);
        let refused = admit_bytes(&reservations, &banks, &two.items)
            .err()
            .unwrap();
        let needs = format!("needs {} more", line.len() + other.len());
        assert!(refused.to_string().contains(&needs), "{refused}");
        admit_bytes(&reservations, &quota(0), &two.items).unwrap();
    }
}
