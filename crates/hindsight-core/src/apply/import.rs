//! Importing a bank: memories, history and conflicts from an export, checked whole before any
//! of it is stored.

use super::{rejected, Ctx, Effect, StateMut};
use crate::bank::{BankConfig, BankName};
use crate::command::CommandOutcome;
use crate::history::HistoryEntry;
use crate::id::MemoryId;
use crate::memory::{Memory, Status};
use crate::review::Conflict;

impl<S: StateMut> Ctx<'_, S> {
    pub(super) fn import(
        &mut self,
        bank: &BankName,
        config: Option<&BankConfig>,
        memories: &[Memory],
        history: &[HistoryEntry],
        conflicts: &[Conflict],
    ) -> CommandOutcome {
        let exists = self.state.bank(bank).is_some();
        match config {
            Some(_) if exists => {
                return rejected(
                    format!("bank {bank} already exists; import into a new bank name"),
                    false,
                )
            }
            None if !exists => {
                return rejected(format!("bank {bank} does not exist"), true);
            }
            _ => {}
        }
        if let Some(config) = config.filter(|c| &c.name != bank) {
            return rejected(
                format!("the configuration names bank {}", config.name),
                false,
            );
        }
        // Checked before anything changes: an import applies whole or not at all.
        for memory in memories {
            if &memory.bank != bank {
                return rejected(
                    format!("memory {} is in bank {}", memory.id, memory.bank),
                    false,
                );
            }
            if self.state.memory(memory.id).is_some() {
                return rejected(format!("memory {} already exists", memory.id), false);
            }
        }
        if let Some(conflict) = conflicts.iter().find(|c| &c.bank != bank) {
            return rejected(
                format!("conflict {} is in bank {}", conflict.id, conflict.bank),
                false,
            );
        }
        // An import may only speak of its own records and of the bank it goes into: a history
        // entry or a link naming another bank's record would overwrite that record's history or
        // lead a reader of this bank into the other one.
        let imported: std::collections::HashSet<MemoryId> = memories.iter().map(|m| m.id).collect();
        if let Some(entry) = history.iter().find(|e| !imported.contains(&e.memory)) {
            return rejected(
                format!(
                    "a history entry is for memory {}, which this import does not carry",
                    entry.memory
                ),
                false,
            );
        }
        // A link to a record not stored yet is allowed: a large bank is imported in several
        // calls in id order, and a superseded record names its newer successor.
        let in_reach = |id: &MemoryId| {
            imported.contains(id) || self.state.memory(*id).is_none_or(|m| &m.bank == bank)
        };
        for memory in memories {
            let superseded_by = match &memory.status {
                Status::Superseded { by } => Some(by),
                _ => None,
            };
            if let Some(link) = memory
                .support
                .derived_from
                .iter()
                .chain(superseded_by)
                .find(|id| !in_reach(id))
            {
                return rejected(
                    format!(
                        "memory {} links to memory {link}, a record of another bank",
                        memory.id
                    ),
                    false,
                );
            }
        }
        if let Some(conflict) = conflicts
            .iter()
            .find(|c| !in_reach(&c.a) || !in_reach(&c.b))
        {
            return rejected(
                format!(
                    "conflict {} names a memory of another bank than {bank}",
                    conflict.id
                ),
                false,
            );
        }
        if let Some(config) = config {
            self.state.put_bank(config);
            self.effects.push(Effect::BankChanged(bank.clone()));
        }
        for memory in memories {
            self.state.put_memory(memory);
            self.effects
                .push(Effect::MemoryUpserted(Box::new(memory.clone())));
        }
        for entry in history {
            self.state.append_history(entry);
        }
        for conflict in conflicts {
            self.state.put_conflict(conflict);
        }
        // What the source bank had reviewed stays reviewed; only later changes are news.
        let mut review = self.state.review_state(bank).unwrap_or_default();
        review.watermark = review.watermark.max(self.log_index);
        let next = conflicts.iter().map(|c| c.id + 1).max().unwrap_or(0);
        review.next_conflict = review.next_conflict.max(next);
        self.state.put_review_state(bank, &review);
        CommandOutcome::Imported {
            memories: memories.len(),
            conflicts: conflicts.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::apply;
    use crate::apply::tests::{run, with_bank};
    use crate::command::{Command, WriteItem};
    use crate::history::HistoryKind;
    use crate::memory::tests::sample;
    use crate::time::Timestamp;

    #[test]
    fn an_import_speaks_only_of_its_own_records_and_its_bank() {
        let mut state = with_bank();
        let other_bank: BankName = "other/tenant".parse().unwrap();
        let mut effects = vec![];
        apply(
            &mut state,
            &Command::CreateBank {
                config: BankConfig::new(other_bank.clone(), Timestamp(0)),
            },
            1,
            &mut effects,
        );
        let mut theirs = sample(50, "Their private note");
        theirs.bank = other_bank.clone();
        run(
            &mut state,
            Command::Write {
                items: vec![WriteItem::Create {
                    memory: Box::new(theirs),
                }],
            },
        );
        let import = |memories: Vec<Memory>, history: Vec<HistoryEntry>| Command::ImportBank {
            bank: "test/bank".parse().unwrap(),
            config: None,
            memories,
            history,
            conflicts: vec![],
        };
        let entry = |memory: u128| HistoryEntry {
            memory: MemoryId(memory),
            version: 1,
            kind: HistoryKind::Created,
            effective_at: Timestamp(1),
            recorded_at: Timestamp(1),
            log_index: 1,
            actor: "write".into(),
            reason: "crafted".into(),
            changes: vec![],
        };
        let overwrite = run(
            &mut state,
            import(vec![sample(10, "Mine")], vec![entry(10), entry(50)]),
        );
        assert!(
            matches!(&overwrite, CommandOutcome::Rejected { reason, .. } if reason.contains("history entry")),
            "{overwrite:?}"
        );
        let mut linked = sample(11, "A rule drawn from someone else's notes");
        linked.support.derived_from = vec![MemoryId(50)];
        let reach = run(&mut state, import(vec![linked], vec![]));
        assert!(
            matches!(&reach, CommandOutcome::Rejected { reason, .. } if reason.contains("another bank")),
            "{reach:?}"
        );
        assert!(state.memory(MemoryId(10)).is_none() && state.memory(MemoryId(11)).is_none());

        // Links within the import, or to records not stored yet, are fine.
        let mut rule = sample(13, "A rule");
        rule.support.derived_from = vec![MemoryId(12)];
        let mut old = sample(12, "An episode");
        old.status = Status::Superseded { by: MemoryId(99) };
        let fine = run(&mut state, import(vec![old, rule], vec![entry(12)]));
        assert!(
            matches!(fine, CommandOutcome::Imported { memories: 2, .. }),
            "{fine:?}"
        );
    }
}
