//! Forgetting (archived softly, or deleted with everything derived from it), expiry once a
//! memory's time to live has passed, and recorded access, which may restore an archived memory.

use super::{rejected, Ctx, StateMut};
use crate::bank::BankName;
use crate::command::{AccessHit, CommandOutcome};
use crate::id::MemoryId;
use crate::memory::Status;
use crate::time::Timestamp;

/// Confidence a restored record starts again from, so that the next decay step does not archive
/// it straight away (decay takes 0.02 a day of disuse; this leaves it ten such days).
pub const RESTORED_CONFIDENCE: f32 = 0.3;

impl<S: StateMut> Ctx<'_, S> {
    pub(super) fn forget(
        &mut self,
        id: MemoryId,
        hard: bool,
        at: Timestamp,
        reason: &str,
    ) -> CommandOutcome {
        let Some(memory) = self.state.memory(id) else {
            return rejected(format!("memory {id} not found"), true);
        };
        if !hard {
            if memory.held_in_quarantine() {
                return rejected(
                    format!(
                        "memory {id} is held in quarantine: archiving it would let a recall restore it, so it stays quarantined; delete it for good (hard forget), or an admin releases it"
                    ),
                    false,
                );
            }
            if memory.status == Status::Archived {
                return CommandOutcome::Forgotten { ids: vec![] };
            }
            self.set_status(memory, Status::Archived, at, at, "forget", reason);
            return CommandOutcome::Forgotten { ids: vec![id] };
        }
        // Hard delete cascades to everything derived from the record, transitively.
        let mut removed = vec![];
        let mut queue = vec![memory];
        let bank_ids = self.state.bank_memory_ids(&queue[0].bank);
        while let Some(next) = queue.pop() {
            if removed.contains(&next.id) {
                continue;
            }
            for other in &bank_ids {
                if removed.contains(other) || *other == next.id {
                    continue;
                }
                if let Some(candidate) = self.state.memory(*other) {
                    if candidate.support.derived_from.contains(&next.id) {
                        queue.push(candidate);
                    }
                }
            }
            removed.push(next.id);
            self.remove(&next);
        }
        CommandOutcome::Forgotten { ids: removed }
    }

    pub(super) fn expire(
        &mut self,
        bank: &BankName,
        ids: &[MemoryId],
        as_of: Timestamp,
        at: Timestamp,
    ) -> CommandOutcome {
        let mut expired = vec![];
        for id in ids {
            let Some(memory) = self.state.memory(*id) else {
                continue;
            };
            let Some(expires_at) = memory.expires_at else {
                continue;
            };
            if &memory.bank != bank || expires_at > as_of || memory.status.hidden_by_default() {
                continue;
            }
            self.set_status(
                memory,
                Status::Expired,
                expires_at,
                at,
                "review",
                &format!("time to live ended at {expires_at}"),
            );
            expired.push(*id);
        }
        CommandOutcome::Expired { ids: expired }
    }

    pub(super) fn record_access(&mut self, hit: &AccessHit) {
        if let Some(mut memory) = self.state.memory(hit.id) {
            memory.access.count += hit.count;
            memory.access.last_accessed_at = Some(
                memory
                    .access
                    .last_accessed_at
                    .map_or(hit.at, |t| t.max(hit.at)),
            );
            if hit.restore && memory.status == Status::Archived && !memory.held_in_quarantine() {
                let old = memory.confidence;
                memory.confidence = memory.confidence.max(RESTORED_CONFIDENCE);
                let reason = format!(
                    "recalled with include_archived; confidence {old:.2} → {:.2}",
                    memory.confidence
                );
                self.set_status(memory, Status::Active, hit.at, hit.at, "recall", &reason);
                return;
            }
            // Access statistics are bookkeeping, not a change of what the memory says: no history entry.
            self.state.put_memory(&memory);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::apply::tests::{create, run, with_bank};
    use crate::command::{Command, CommandOutcome, WriteItem};
    use crate::id::MemoryId;
    use crate::memory::tests::sample;
    use crate::memory::Status;
    use crate::time::Timestamp;

    #[test]
    fn hard_forget_cascades_to_derived_records() {
        let mut state = with_bank();
        let mut rule = sample(3, "rule");
        rule.support.derived_from = vec![MemoryId(1)];
        let mut meta_rule = sample(4, "rule about rule");
        meta_rule.support.derived_from = vec![MemoryId(3)];
        run(
            &mut state,
            Command::Write {
                items: vec![
                    create(1, "episode"),
                    create(2, "unrelated"),
                    WriteItem::Create {
                        memory: Box::new(rule),
                    },
                    WriteItem::Create {
                        memory: Box::new(meta_rule),
                    },
                ],
            },
        );
        let outcome = run(
            &mut state,
            Command::Forget {
                id: MemoryId(1),
                hard: true,
                at: Timestamp(9),
                reason: "gdpr".into(),
            },
        );
        let CommandOutcome::Forgotten { mut ids } = outcome else {
            panic!("{outcome:?}")
        };
        ids.sort();
        assert_eq!(ids, vec![MemoryId(1), MemoryId(3), MemoryId(4)]);
        assert_eq!(state.memories.len(), 1);
        assert!(state.history.iter().all(|h| h.memory == MemoryId(2)));
    }

    #[test]
    fn expire_only_touches_memories_whose_ttl_passed() {
        let mut state = with_bank();
        let mut short = sample(1, "short");
        short.expires_at = Some(Timestamp(2_000_000));
        let mut long = sample(2, "long");
        long.expires_at = Some(Timestamp(9_000_000));
        run(
            &mut state,
            Command::Write {
                items: vec![
                    WriteItem::Create {
                        memory: Box::new(short),
                    },
                    WriteItem::Create {
                        memory: Box::new(long),
                    },
                ],
            },
        );
        let outcome = run(
            &mut state,
            Command::Expire {
                bank: "test/bank".parse().unwrap(),
                ids: vec![MemoryId(1), MemoryId(2)],
                as_of: Timestamp(3_000_000),
                at: Timestamp(10),
            },
        );
        assert_eq!(
            outcome,
            CommandOutcome::Expired {
                ids: vec![MemoryId(1)]
            }
        );
        let expired = &state.memories[&MemoryId(1)];
        assert_eq!(expired.status, Status::Expired);
        assert_eq!(
            expired.status_as_of(Timestamp(1_500_000)),
            Some(Status::Active)
        );
        assert_eq!(state.memories[&MemoryId(2)].status, Status::Active);
    }
}
