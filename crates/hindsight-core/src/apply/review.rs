//! A review cycle's decisions (rules it distilled, changes to memories, purges of archived
//! records, conflicts it queued) and the resolution of a queued conflict.

use super::{rejected, Ctx, Effect, StateMut};
use crate::bank::BankName;
use crate::command::CommandOutcome;
use crate::history::{FieldChange, HistoryKind};
use crate::id::MemoryId;
use crate::memory::{Status, StatusChange};
use crate::review::{
    ChangeReason, Conflict, ConflictResolution, CycleReport, DerivedMemory, MemoryChange,
};
use crate::time::Timestamp;

impl<S: StateMut> Ctx<'_, S> {
    pub(super) fn review(&mut self, bank: &BankName, parts: ReviewParts<'_>) -> CommandOutcome {
        let ReviewParts {
            changes,
            conflicts,
            report,
            watermark,
            deferred,
            created,
            purged,
        } = parts;
        if self.state.bank(bank).is_none() {
            return rejected(format!("bank {bank} does not exist"), true);
        }
        let mut state = self.state.review_state(bank).unwrap_or_default();
        let mut made = vec![];
        for derived in created {
            if self.create_derived(bank, derived) {
                made.push(derived.memory.id);
            }
        }
        let (applied, removed) = self.change_and_purge(bank, changes, purged, report.started_at);
        let mut opened = vec![];
        for conflict in conflicts {
            let mut conflict = conflict.clone();
            conflict.id = state.next_conflict;
            state.next_conflict += 1;
            conflict.bank = bank.clone();
            self.state.put_conflict(&conflict);
            opened.push(conflict.id);
        }
        state.watermark = state.watermark.max(watermark);
        state.cycles += 1;
        let mut report = report.clone();
        report.cycle = state.cycles;
        state.last = Some(report);
        state.deferred = deferred.to_vec();
        self.state.put_review_state(bank, &state);
        CommandOutcome::Reviewed {
            changed: applied,
            conflicts: opened,
            cycle: state.cycles,
            created: made,
            purged: removed,
        }
    }

    /// A part of a cycle's changes and purges, ahead of the cycle's closing command.
    pub(super) fn review_part(
        &mut self,
        bank: &BankName,
        changes: &[MemoryChange],
        purged: &[MemoryId],
        at: Timestamp,
    ) -> CommandOutcome {
        if self.state.bank(bank).is_none() {
            return rejected(format!("bank {bank} does not exist"), true);
        }
        let (changed, purged) = self.change_and_purge(bank, changes, purged, at);
        CommandOutcome::ReviewPartApplied { changed, purged }
    }

    /// Applies `changes` and deletes the `purged` records that are still archived; returns the
    /// ids of the memories changed and of those deleted.
    fn change_and_purge(
        &mut self,
        bank: &BankName,
        changes: &[MemoryChange],
        purged: &[MemoryId],
        at: Timestamp,
    ) -> (Vec<MemoryId>, Vec<MemoryId>) {
        let mut applied = vec![];
        for change in changes {
            if self.change_memory(bank, change, at) {
                applied.push(change.id);
            }
        }
        let mut removed = vec![];
        for id in purged {
            if let Some(memory) = self.state.memory(*id) {
                // Only what is still archived goes; a record restored meanwhile stays.
                if &memory.bank == bank && memory.status == Status::Archived {
                    self.remove(&memory);
                    removed.push(*id);
                }
            }
        }
        (applied, removed)
    }

    /// Stores a rule a review distilled; false when its id is taken or it names another bank.
    /// Sources that are gone by now are dropped from its support rather than refusing the rule.
    fn create_derived(&mut self, bank: &BankName, derived: &DerivedMemory) -> bool {
        let mut memory = derived.memory.clone();
        if &memory.bank != bank || self.state.memory(memory.id).is_some() {
            return false;
        }
        memory.support.derived_from.retain(|id| {
            self.state
                .memory(*id)
                .is_some_and(|m| &m.bank == bank && m.status != Status::Deleted)
        });
        if memory.support.derived_from.is_empty() {
            return false;
        }
        memory.support.count = memory.support.derived_from.len() as u32;
        memory.updated_index = self.log_index;
        self.state.put_memory(&memory);
        self.history(
            &memory,
            HistoryKind::Created,
            memory.occurred_at,
            memory.recorded_at,
            &format!("review:{}", derived.judge),
            format!(
                "derived from {}: {}",
                join_ids(&memory.support.derived_from),
                derived.explanation
            ),
            vec![],
        );
        self.effects.push(Effect::MemoryUpserted(Box::new(memory)));
        true
    }

    /// Carries out one review change; false when the memory is gone or no longer in the bank, or
    /// when a later command already hid it (a change never revives a hidden record).
    fn change_memory(&mut self, bank: &BankName, change: &MemoryChange, at: Timestamp) -> bool {
        let Some(mut memory) = self.state.memory(change.id) else {
            return false;
        };
        if &memory.bank != bank || memory.status == Status::Deleted {
            return false;
        }
        let reopens = change
            .status
            .as_ref()
            .is_some_and(|s| !s.hidden_by_default());
        // Only a deliberate restore brings an archived record back; nothing revives other hidden ones.
        let restores = change.reason == ChangeReason::Restored && memory.status == Status::Archived;
        if memory.status.hidden_by_default() && reopens && !restores {
            return false;
        }
        let mut fields = vec![];
        let mut new_status = None;
        if let Some(status) = &change.status {
            if *status != memory.status {
                fields.push(FieldChange::new("status", &memory.status, status));
                memory.status = status.clone();
                new_status = Some(status.clone());
            }
        }
        if let Some(confidence) = change.confidence {
            let confidence = confidence.clamp(0.0, 1.0);
            if confidence != memory.confidence {
                fields.push(FieldChange::new(
                    "confidence",
                    memory.confidence,
                    confidence,
                ));
                memory.confidence = confidence;
            }
        }
        if let Some(valid_to) = change.valid_to {
            if memory.valid_to != Some(valid_to) {
                let old = memory.valid_to.map(|t| t.to_string()).unwrap_or_default();
                fields.push(FieldChange::new("valid_to", old, valid_to));
                memory.valid_to = Some(valid_to);
            }
        }
        if let Some(absorbed) = change.absorbed {
            if let Some(from) = self.state.memory(absorbed) {
                if !memory.support.merged.contains(&absorbed) {
                    let old = memory.support.count;
                    memory.support.count += from.support.count.max(1);
                    memory.support.merged.push(absorbed);
                    // What the absorbed record had absorbed travels with it.
                    for id in &from.support.merged {
                        if !memory.support.merged.contains(id) {
                            memory.support.merged.push(*id);
                        }
                    }
                    fields.push(FieldChange::new("support.count", old, memory.support.count));
                    fields.push(FieldChange::new("support.merged", "", absorbed));
                }
            }
        }
        let mut reinforced = vec![];
        for id in &change.derived {
            let supports = self
                .state
                .memory(*id)
                .is_some_and(|m| &m.bank == bank && m.status != Status::Deleted);
            if supports && *id != memory.id && !memory.support.derived_from.contains(id) {
                memory.support.derived_from.push(*id);
                reinforced.push(*id);
            }
        }
        if !reinforced.is_empty() {
            let old = memory.support.count;
            memory.support.count += reinforced.len() as u32;
            fields.push(FieldChange::new("support.count", old, memory.support.count));
            fields.push(FieldChange::new(
                "support.derived_from",
                "",
                join_ids(&reinforced),
            ));
        }
        if fields.is_empty() {
            return false;
        }
        if let Some(status) = new_status {
            memory.status_log.push(StatusChange {
                effective_at: change.effective_at,
                status,
                confidence: Some(memory.confidence),
            });
        }
        let kind = match change.reason {
            ChangeReason::Archived => HistoryKind::Archived,
            ChangeReason::Absorbed => HistoryKind::Merged,
            _ if change.status.is_some() => HistoryKind::StatusChanged,
            _ => HistoryKind::Updated,
        };
        memory.version += 1;
        memory.updated_at = at;
        // A review's own decision is not news for the next cycle: bumping `updated_index` here
        // would have every cycle judge again the pairs the previous one settled (and queue the
        // same conflict twice).
        self.state.put_memory(&memory);
        let related = change
            .related
            .map(|id| format!(" (with {id})"))
            .unwrap_or_default();
        self.history(
            &memory,
            kind,
            change.effective_at,
            at,
            &format!("review:{}", change.judge),
            format!(
                "{}{related}: {}",
                change.reason.as_str(),
                change.explanation
            ),
            fields,
        );
        self.effects.push(Effect::MemoryUpserted(Box::new(memory)));
        true
    }

    pub(super) fn resolve_conflict(
        &mut self,
        bank: &BankName,
        id: u64,
        resolution: &ConflictResolution,
        changes: &[MemoryChange],
        at: Timestamp,
    ) -> CommandOutcome {
        let Some(mut conflict) = self.state.conflict(bank, id) else {
            return rejected(format!("conflict {id} not found in bank {bank}"), true);
        };
        if conflict.resolution.is_some() {
            return rejected(format!("conflict {id} is already resolved"), false);
        }
        let mut applied = vec![];
        for change in changes {
            if change.id != conflict.a && change.id != conflict.b {
                continue;
            }
            if self.change_memory(bank, change, at) {
                applied.push(change.id);
            }
        }
        conflict.resolution = Some(resolution.clone());
        self.state.put_conflict(&conflict);
        CommandOutcome::ConflictResolved { changed: applied }
    }
}

/// The parts of a [`Command::Review`], borrowed.
pub(super) struct ReviewParts<'a> {
    pub(super) changes: &'a [MemoryChange],
    pub(super) conflicts: &'a [Conflict],
    pub(super) report: &'a CycleReport,
    pub(super) watermark: u64,
    pub(super) deferred: &'a [(MemoryId, MemoryId)],
    pub(super) created: &'a [DerivedMemory],
    pub(super) purged: &'a [MemoryId],
}

fn join_ids(ids: &[MemoryId]) -> String {
    ids.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::tests::{create, run, with_bank, MemState};
    use crate::apply::{apply, RESTORED_CONFIDENCE};
    use crate::command::{AccessHit, Command};
    use crate::memory::tests::sample;

    fn change(id: u128, reason: ChangeReason) -> MemoryChange {
        MemoryChange {
            id: MemoryId(id),
            reason,
            status: None,
            confidence: None,
            valid_to: None,
            absorbed: None,
            derived: vec![],
            related: None,
            effective_at: Timestamp(5_000_000),
            judge: "rules".into(),
            explanation: "test".into(),
        }
    }

    fn review(changes: Vec<MemoryChange>, conflicts: Vec<Conflict>) -> Command {
        Command::Review {
            bank: "test/bank".parse().unwrap(),
            changes,
            conflicts,
            report: CycleReport::default(),
            watermark: 2,
            deferred: vec![],
            created: vec![],
            purged: vec![],
        }
    }

    fn episodes(state: &mut MemState, ids: &[u128]) {
        let items = ids
            .iter()
            .map(|id| create(*id, &format!("episode {id}")))
            .collect();
        run(state, Command::Write { items });
    }

    fn distilled(id: u128, from: &[u128]) -> DerivedMemory {
        let mut memory = sample(id, "rule");
        memory.support.derived_from = from.iter().map(|i| MemoryId(*i)).collect();
        DerivedMemory {
            memory,
            judge: "distill".into(),
            explanation: "3 episodes agree".into(),
        }
    }

    #[test]
    fn a_distilled_rule_keeps_only_sources_that_exist_and_records_them() {
        let mut state = with_bank();
        episodes(&mut state, &[1, 2, 3]);
        let mut command = review(vec![], vec![]);
        if let Command::Review { created, .. } = &mut command {
            created.push(distilled(10, &[1, 2, 3, 99]));
            created.push(distilled(11, &[98]));
        }
        let outcome = run(&mut state, command);
        assert!(
            matches!(outcome, CommandOutcome::Reviewed { created, .. } if created == vec![MemoryId(10)])
        );
        let rule = &state.memories[&MemoryId(10)];
        assert_eq!(
            rule.support.derived_from,
            vec![MemoryId(1), MemoryId(2), MemoryId(3)]
        );
        assert_eq!(rule.support.count, 3);
        assert!(!state.memories.contains_key(&MemoryId(11)));
        let entry = state
            .history
            .iter()
            .find(|h| h.memory == MemoryId(10))
            .unwrap();
        assert!(entry.reason.contains("derived from"), "{}", entry.reason);
    }

    #[test]
    fn reinforcing_a_rule_adds_each_new_episode_once() {
        let mut state = with_bank();
        episodes(&mut state, &[1, 2, 3, 4]);
        let mut command = review(vec![], vec![]);
        if let Command::Review { created, .. } = &mut command {
            created.push(distilled(10, &[1, 2, 3]));
        }
        run(&mut state, command);
        let mut more = change(10, ChangeReason::Reinforced);
        more.derived = vec![MemoryId(4), MemoryId(3)];
        run(&mut state, review(vec![more.clone()], vec![]));
        let rule = &state.memories[&MemoryId(10)];
        assert_eq!(rule.support.count, 4);
        assert_eq!(rule.support.derived_from.len(), 4);
        let again = run(&mut state, review(vec![more], vec![]));
        assert!(matches!(again, CommandOutcome::Reviewed { changed, .. } if changed.is_empty()));
        assert_eq!(state.memories[&MemoryId(10)].support.count, 4);
    }

    #[test]
    fn only_archived_records_are_purged_and_a_restored_one_stays() {
        let mut state = with_bank();
        episodes(&mut state, &[1, 2, 3]);
        for id in [1, 2] {
            let mut archive = change(id, ChangeReason::Archived);
            archive.status = Some(Status::Archived);
            run(&mut state, review(vec![archive], vec![]));
        }
        run(
            &mut state,
            Command::RecordAccess {
                hits: vec![AccessHit {
                    id: MemoryId(2),
                    count: 1,
                    at: Timestamp(6_000_000),
                    restore: true,
                }],
            },
        );
        let restored = &state.memories[&MemoryId(2)];
        assert_eq!(restored.status, Status::Active);
        assert!(restored.confidence >= RESTORED_CONFIDENCE);
        let mut command = review(vec![], vec![]);
        if let Command::Review { purged, .. } = &mut command {
            *purged = vec![MemoryId(1), MemoryId(2), MemoryId(3)];
        }
        let outcome = run(&mut state, command);
        assert!(
            matches!(outcome, CommandOutcome::Reviewed { purged, .. } if purged == vec![MemoryId(1)])
        );
        assert!(!state.memories.contains_key(&MemoryId(1)));
        assert!(state.memories.contains_key(&MemoryId(2)));
        assert!(state.memories.contains_key(&MemoryId(3)));
    }

    #[test]
    fn a_review_part_changes_and_purges_but_moves_no_watermark_and_counts_no_cycle() {
        let mut state = with_bank();
        episodes(&mut state, &[1, 2, 3]);
        let mut archive = change(3, ChangeReason::Archived);
        archive.status = Some(Status::Archived);
        run(&mut state, review(vec![archive], vec![]));
        let before = state.reviews[&"test/bank".parse::<BankName>().unwrap()].clone();
        let mut lower = change(1, ChangeReason::Decayed);
        lower.confidence = Some(0.4);
        let part = Command::ReviewPart {
            bank: "test/bank".parse().unwrap(),
            changes: vec![lower.clone(), change(2, ChangeReason::Decayed)],
            purged: vec![MemoryId(3), MemoryId(2)],
            at: Timestamp(9_000_000),
        };
        let outcome = run(&mut state, part.clone());
        assert_eq!(
            outcome,
            CommandOutcome::ReviewPartApplied {
                changed: vec![MemoryId(1)],
                purged: vec![MemoryId(3)],
            },
            "a change that changes nothing and a purge of an active record are no-ops"
        );
        assert_eq!(state.memories[&MemoryId(1)].confidence, 0.4);
        assert_eq!(
            state.memories[&MemoryId(1)].updated_at,
            Timestamp(9_000_000)
        );
        assert!(!state.memories.contains_key(&MemoryId(3)));
        assert_eq!(
            state.reviews[&"test/bank".parse::<BankName>().unwrap()],
            before
        );
        let again = run(&mut state, part);
        assert_eq!(
            again,
            CommandOutcome::ReviewPartApplied {
                changed: vec![],
                purged: vec![],
            },
            "a part applied twice (a cycle planned again after it was cut short) changes nothing"
        );
        let gone = run(
            &mut state,
            Command::ReviewPart {
                bank: "test/nowhere".parse().unwrap(),
                changes: vec![lower],
                purged: vec![],
                at: Timestamp(9_000_000),
            },
        );
        assert!(matches!(gone, CommandOutcome::Rejected { .. }), "{gone:?}");
    }

    #[test]
    fn a_supersession_hides_the_old_statement_from_its_new_time_on() {
        let mut state = with_bank();
        run(
            &mut state,
            Command::Write {
                items: vec![create(1, "tea"), create(2, "coffee now")],
            },
        );
        let mut old = change(1, ChangeReason::Superseded);
        old.status = Some(Status::Superseded { by: MemoryId(2) });
        old.confidence = Some(0.05);
        old.valid_to = Some(Timestamp(5_000_000));
        old.related = Some(MemoryId(2));
        let mut new = change(2, ChangeReason::Confirmed);
        new.confidence = Some(1.0);
        let outcome = apply(&mut state, &review(vec![old, new], vec![]), 7, &mut vec![]);
        assert_eq!(
            outcome,
            CommandOutcome::Reviewed {
                changed: vec![MemoryId(1), MemoryId(2)],
                conflicts: vec![],
                cycle: 1,
                created: vec![],
                purged: vec![],
            }
        );
        let superseded = &state.memories[&MemoryId(1)];
        assert_eq!(superseded.valid_to, Some(Timestamp(5_000_000)));
        assert_eq!(superseded.confidence, 0.05);
        assert_eq!(
            superseded.updated_index, 2,
            "a review decision does not count as a change to review again"
        );
        assert_eq!(
            superseded.status_as_of(Timestamp(4_999_999)),
            Some(Status::Active)
        );
        assert!(superseded
            .status_as_of(Timestamp(5_000_000))
            .is_some_and(|s| s.hidden_by_default()));
        let why = state.history.last().unwrap();
        assert_eq!(why.memory, MemoryId(2));
        let old_why = state
            .history
            .iter()
            .rfind(|h| h.memory == MemoryId(1))
            .unwrap();
        assert_eq!(old_why.actor, "review:rules");
        assert!(
            old_why.reason.starts_with("superseded"),
            "{}",
            old_why.reason
        );
        assert_eq!(
            state.reviews[&"test/bank".parse::<BankName>().unwrap()].watermark,
            2
        );
    }

    #[test]
    fn an_absorbed_duplicate_carries_its_support_and_a_hidden_record_is_not_revived() {
        let mut state = with_bank();
        run(
            &mut state,
            Command::Write {
                items: vec![
                    create(1, "peanut allergy"),
                    create(2, "allergic to peanuts"),
                ],
            },
        );
        let mut away = change(2, ChangeReason::MergedAway);
        away.status = Some(Status::Superseded { by: MemoryId(1) });
        let mut into = change(1, ChangeReason::Absorbed);
        into.absorbed = Some(MemoryId(2));
        run(&mut state, review(vec![away, into], vec![]));
        let kept = &state.memories[&MemoryId(1)];
        assert_eq!(kept.support.count, 2);
        assert_eq!(kept.support.merged, vec![MemoryId(2)]);
        let mut revive = change(2, ChangeReason::Disputed);
        revive.status = Some(Status::Disputed);
        let outcome = run(&mut state, review(vec![revive], vec![]));
        assert!(matches!(outcome, CommandOutcome::Reviewed { changed, .. } if changed.is_empty()));
    }

    #[test]
    fn a_queued_conflict_is_resolved_once() {
        let mut state = with_bank();
        run(
            &mut state,
            Command::Write {
                items: vec![create(1, "a"), create(2, "b")],
            },
        );
        let conflict = Conflict {
            id: 0,
            bank: "test/bank".parse().unwrap(),
            a: MemoryId(1),
            b: MemoryId(2),
            judge: "rules".into(),
            explanation: "cannot tell".into(),
            opened_at: Timestamp(1),
            resolution: None,
        };
        let outcome = run(&mut state, review(vec![], vec![conflict]));
        assert!(
            matches!(outcome, CommandOutcome::Reviewed { conflicts, .. } if conflicts == vec![0])
        );
        let resolution = ConflictResolution {
            outcome: crate::review::ResolutionOutcome::KeepA,
            resolved_at: Timestamp(9),
            note: "".into(),
        };
        let mut drop_b = change(2, ChangeReason::Falsified);
        drop_b.status = Some(Status::Falsified);
        let resolve = Command::ResolveConflict {
            bank: "test/bank".parse().unwrap(),
            id: 0,
            resolution,
            changes: vec![drop_b],
        };
        assert!(matches!(
            run(&mut state, resolve.clone()),
            CommandOutcome::ConflictResolved { .. }
        ));
        assert_eq!(state.memories[&MemoryId(2)].status, Status::Falsified);
        assert!(matches!(
            run(&mut state, resolve),
            CommandOutcome::Rejected {
                not_found: false,
                ..
            }
        ));
    }
}
