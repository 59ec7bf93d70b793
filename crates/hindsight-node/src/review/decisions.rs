//! The cycle's decisions: when decay joins them, and what they become — replicated changes,
//! conflict-queue entries and the report's counts.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use hindsight_core::review::{ChangeReason, Conflict, MemoryChange};
use hindsight_core::{Memory, MemoryId, Timestamp};
use hindsight_review::{Action, Decision, MemoryUpdate};

/// Decay counts days of disuse, not cycles: a bank reviewed every five minutes must not lose
/// 0.02 of confidence every five minutes.
const DECAY_PERIOD_DAYS: f64 = 1.0;

/// Since when the cycle decays memories unused, or `None` when decay is not due: it is off
/// (`per_cycle` 0), the bank was never reviewed (nothing to count disuse from), or its last cycle
/// (`last`) is less than a day before `as_of`.
pub(super) fn decay_since(
    last: Option<Timestamp>,
    as_of: Timestamp,
    per_cycle: f32,
) -> Option<Timestamp> {
    let last = last?;
    (per_cycle > 0.0 && as_of.days_since(last) >= DECAY_PERIOD_DAYS).then_some(last)
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
                changes.push(change(a, ChangeReason::Disputed, Some(b.id), at));
                changes.push(change(b, ChangeReason::Disputed, Some(a.id), at));
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
