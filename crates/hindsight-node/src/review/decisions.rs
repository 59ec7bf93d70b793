//! The cycle's decisions: when decay joins them, and what they become — replicated changes,
//! conflict-queue entries and the report's counts.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use hindsight_core::review::{ChangeReason, Conflict, MemoryChange};
use hindsight_core::time::MILLIS_PER_DAY;
use hindsight_core::{Memory, MemoryId, Timestamp};
use hindsight_review::{Action, Decision, MemoryUpdate};

/// Since when the cycle decays memories unused, or `None` when decay is not due: it is off
/// (`per_cycle` 0), the bank was never reviewed (nothing to count disuse from), or this cycle is in
/// the same day (UTC, of event time) as the last one.
///
/// Decay counts days of disuse, not cycles: a bank reviewed every five minutes loses 0.02 of
/// confidence once a day, not every five minutes. Comparing calendar days rather than the time
/// since the last cycle matters: with cycles minutes apart, "a day since the last cycle" is never
/// true, and nothing would ever decay. The first cycle of a new day decays what went unused for
/// the whole day before it, or since the last cycle when that is longer ago.
pub(super) fn decay_since(
    last: Option<Timestamp>,
    as_of: Timestamp,
    per_cycle: f32,
) -> Option<Timestamp> {
    let last = last?;
    let day = |t: Timestamp| t.0.div_euclid(MILLIS_PER_DAY);
    (per_cycle > 0.0 && day(as_of) > day(last))
        .then(|| last.min(Timestamp(as_of.0.saturating_sub(MILLIS_PER_DAY))))
}

/// The decisions as replicated changes: one [`MemoryChange`] per memory that changes, and a
/// conflict-queue entry per undecidable pair.
pub(super) fn to_changes(
    decisions: &[Decision],
    records: &HashMap<MemoryId, Arc<Memory>>,
    now: Timestamp,
) -> (Vec<MemoryChange>, Vec<Conflict>) {
    let occurred = |id: MemoryId| records.get(&id).map_or(now, |m| m.occurred_at);
    let mut changes = vec![];
    let mut conflicts = vec![];
    for decision in decisions {
        let change = |update: &MemoryUpdate,
                      reason: ChangeReason,
                      related: Option<MemoryId>,
                      effective_at: Timestamp| MemoryChange {
            id: update.id,
            reason,
            status: update.status.clone(),
            confidence: update.confidence,
            valid_to: update.valid_to,
            absorbed: None,
            derived: vec![],
            related,
            effective_at,
            judge: decision.judge.clone(),
            explanation: decision.reason.clone(),
        };
        match &decision.action {
            Action::Supersede { newer, older } => {
                let at = occurred(newer.id);
                changes.push(change(older, ChangeReason::Superseded, Some(newer.id), at));
                if newer.changes_anything() {
                    changes.push(change(newer, ChangeReason::Confirmed, Some(older.id), at));
                }
            }
            Action::Falsify { fact, inference } => {
                let at = occurred(*fact);
                changes.push(change(inference, ChangeReason::Falsified, Some(*fact), at));
            }
            Action::Dispute { a, b } => {
                let at = occurred(a.id).max(occurred(b.id));
                for (update, other) in [(a, b.id), (b, a.id)] {
                    if update.changes_anything() {
                        changes.push(change(update, ChangeReason::Disputed, Some(other), at));
                    }
                }
            }
            Action::PendingReview { a, b, .. } => {
                let at = occurred(a.id).max(occurred(b.id));
                for (update, other) in [(a, b.id), (b, a.id)] {
                    if update.changes_anything() {
                        changes.push(change(update, ChangeReason::PendingReview, Some(other), at));
                    }
                }
                conflicts.push(Conflict {
                    id: 0,
                    bank: records
                        .get(&a.id)
                        .map(|m| m.bank.clone())
                        .expect("a pair's memories come from the bank"),
                    a: a.id,
                    b: b.id,
                    judge: decision.judge.clone(),
                    explanation: decision.reason.clone(),
                    opened_at: now,
                    resolution: None,
                });
            }
            Action::Merge { into, from, .. } => {
                let at = occurred(into.id).max(occurred(*from));
                let mut away = change(
                    &MemoryUpdate::of(*from)
                        .status(hindsight_core::Status::Superseded { by: into.id }),
                    ChangeReason::MergedAway,
                    Some(into.id),
                    at,
                );
                away.explanation = format!("restates {}: {}", into.id, decision.reason);
                changes.push(away);
                let mut absorbed = change(into, ChangeReason::Absorbed, Some(*from), at);
                absorbed.absorbed = Some(*from);
                changes.push(absorbed);
            }
            Action::Decay(update) => changes.push(change(update, ChangeReason::Decayed, None, now)),
            Action::Archive(update) => {
                changes.push(change(update, ChangeReason::Archived, None, now))
            }
            Action::Reinforce { rule, episodes } => {
                let at = episodes.iter().map(|id| occurred(*id)).max().unwrap_or(now);
                let mut reinforced = change(rule, ChangeReason::Reinforced, None, at);
                reinforced.derived = episodes.clone();
                changes.push(reinforced);
            }
            // Distilled rules are new records; the cycle carries them whole.
            Action::Distill(_) => {}
        }
    }
    (changes, conflicts)
}

/// How many decisions of each action the cycle made, for its report.
pub(super) fn count_by_action(decisions: &[Decision]) -> BTreeMap<String, u64> {
    let mut by_action: BTreeMap<String, u64> = BTreeMap::new();
    for decision in decisions {
        *by_action
            .entry(decision.action.name().to_string())
            .or_default() += 1;
    }
    by_action
}

#[cfg(test)]
mod tests {
    use super::*;
    use hindsight_core::{Provenance, SourceKind, Status};
    use hindsight_review::Relation;

    const DAY: i64 = 86_400_000;
    const NOW: Timestamp = Timestamp(100 * DAY);

    /// A memory stated on day `day`.
    fn stated(id: u128, day: i64) -> Arc<Memory> {
        Arc::new(Memory::new(
            MemoryId(id),
            "t/bank".parse().unwrap(),
            format!("memory {id}"),
            Provenance::from_source(SourceKind::User),
            Timestamp(day * DAY),
        ))
    }

    fn table(records: Vec<Arc<Memory>>) -> HashMap<MemoryId, Arc<Memory>> {
        records.into_iter().map(|m| (m.id, m)).collect()
    }

    fn decided(action: Action) -> Decision {
        Decision {
            action,
            judge: "rules".into(),
            reason: "the user moved".into(),
        }
    }

    fn reasons(changes: &[MemoryChange]) -> Vec<(u128, ChangeReason, Option<u128>)> {
        changes
            .iter()
            .map(|c| (c.id.0, c.reason, c.related.map(|r| r.0)))
            .collect()
    }

    #[test]
    fn decay_is_due_on_the_first_cycle_of_a_new_day_and_never_when_off_or_before_a_first_cycle() {
        let last = Timestamp(10 * DAY + DAY / 4);
        assert_eq!(decay_since(None, Timestamp(20 * DAY), 0.02), None);
        assert_eq!(
            decay_since(Some(last), Timestamp(10 * DAY + DAY / 2), 0.02),
            None,
            "same day as the last cycle"
        );
        assert_eq!(
            decay_since(Some(last), Timestamp(11 * DAY + DAY / 8), 0.02),
            Some(Timestamp(10 * DAY + DAY / 8)),
            "the next day, less than a day after the last cycle: unused for the day before"
        );
        assert_eq!(
            decay_since(Some(last), Timestamp(30 * DAY), 0.02),
            Some(last)
        );
        assert_eq!(decay_since(Some(last), Timestamp(30 * DAY), 0.0), None);
    }

    #[test]
    fn a_bank_reviewed_every_five_minutes_decays_once_a_day_what_went_unused_for_a_day() {
        let step = 5 * 60 * 1000;
        let mut last = Timestamp(10 * DAY + 7 * step);
        let mut due = vec![];
        while last.0 < 13 * DAY + DAY / 2 {
            let as_of = Timestamp(last.0 + step);
            if let Some(since) = decay_since(Some(last), as_of, 0.02) {
                due.push((as_of, since));
            }
            last = as_of;
        }
        assert_eq!(
            due.iter()
                .map(|(as_of, _)| as_of.0 / DAY)
                .collect::<Vec<_>>(),
            vec![11, 12, 13],
            "once on each new day"
        );
        for (as_of, since) in due {
            assert_eq!(
                since,
                Timestamp(as_of.0 - DAY),
                "unused for the whole day before"
            );
        }
    }

    #[test]
    fn a_superseded_memory_names_its_successor_and_holds_from_when_the_newer_claim_occurred() {
        let records = table(vec![stated(1, 3), stated(2, 7)]);
        let older = MemoryUpdate::of(MemoryId(1))
            .status(Status::Superseded { by: MemoryId(2) })
            .confidence(0.05);
        let quiet = decided(Action::Supersede {
            newer: MemoryUpdate::of(MemoryId(2)),
            older: older.clone(),
        });
        let (changes, conflicts) = to_changes(&[quiet], &records, NOW);
        assert!(conflicts.is_empty());
        assert_eq!(
            reasons(&changes),
            vec![(1, ChangeReason::Superseded, Some(2))]
        );
        let change = &changes[0];
        assert_eq!(change.effective_at, Timestamp(7 * DAY));
        assert_eq!(change.status, Some(Status::Superseded { by: MemoryId(2) }));
        assert_eq!(change.confidence, Some(0.05));
        assert_eq!(change.judge, "rules");
        assert_eq!(change.explanation, "the user moved");

        // A newer claim whose confidence rises is confirmed by the one it replaces.
        let boosted = decided(Action::Supersede {
            newer: MemoryUpdate::of(MemoryId(2)).confidence(0.95),
            older,
        });
        let (changes, _) = to_changes(&[boosted], &records, NOW);
        assert_eq!(
            reasons(&changes),
            vec![
                (1, ChangeReason::Superseded, Some(2)),
                (2, ChangeReason::Confirmed, Some(1)),
            ]
        );
    }

    #[test]
    fn an_undecidable_pair_opens_one_conflict_and_leaves_a_memory_with_no_update_alone() {
        let records = table(vec![stated(4, 2), stated(9, 5)]);
        let held = decided(Action::PendingReview {
            a: MemoryUpdate::of(MemoryId(4)).status(Status::PendingReview),
            b: MemoryUpdate::of(MemoryId(9)),
            relation: Relation::Undecidable,
        });
        let (changes, conflicts) = to_changes(&[held], &records, NOW);
        assert_eq!(
            reasons(&changes),
            vec![(4, ChangeReason::PendingReview, Some(9))]
        );
        assert_eq!(changes[0].effective_at, Timestamp(5 * DAY));
        assert_eq!(conflicts.len(), 1);
        let conflict = &conflicts[0];
        assert_eq!((conflict.a, conflict.b), (MemoryId(4), MemoryId(9)));
        assert_eq!(conflict.bank, records[&MemoryId(4)].bank);
        assert_eq!(conflict.opened_at, NOW);
        assert_eq!(conflict.explanation, "the user moved");
        assert!(conflict.resolution.is_none());
    }

    #[test]
    fn a_merge_retires_the_restatement_into_the_survivor_which_records_what_it_absorbed() {
        let records = table(vec![stated(3, 8), stated(6, 4)]);
        let merge = decided(Action::Merge {
            into: MemoryUpdate::of(MemoryId(6)),
            from: MemoryId(3),
            merged: vec![MemoryId(3)],
            support_count: 2,
        });
        let decay = decided(Action::Decay(MemoryUpdate::of(MemoryId(6)).confidence(0.5)));
        let (changes, conflicts) = to_changes(&[merge.clone(), decay.clone()], &records, NOW);
        assert!(conflicts.is_empty());
        assert_eq!(
            reasons(&changes),
            vec![
                (3, ChangeReason::MergedAway, Some(6)),
                (6, ChangeReason::Absorbed, Some(3)),
                (6, ChangeReason::Decayed, None),
            ]
        );
        let (away, absorbed, decayed) = (&changes[0], &changes[1], &changes[2]);
        assert_eq!(away.status, Some(Status::Superseded { by: MemoryId(6) }));
        assert_eq!(
            away.explanation,
            format!("restates {}: the user moved", MemoryId(6))
        );
        assert_eq!(absorbed.absorbed, Some(MemoryId(3)));
        assert_eq!(away.effective_at, Timestamp(8 * DAY));
        assert_eq!(absorbed.effective_at, Timestamp(8 * DAY));
        // Disuse has no event time of its own: it holds from the cycle.
        assert_eq!(decayed.effective_at, NOW);

        let counts = count_by_action(&[merge, decay.clone(), decay]);
        assert_eq!(
            counts.into_iter().collect::<Vec<_>>(),
            vec![("decay".to_string(), 2), ("merge".to_string(), 1)]
        );
    }
}
