//! Decay: memories nobody used since the last cycle lose a little confidence each cycle, and
//! those that fall below the archive threshold are archived (docs/DESIGN.md, "Review").
//! Critical memories never decay. Expiry (TTL) is a separate step and not handled here.

use std::collections::BTreeSet;
use std::sync::Arc;

use hindsight_core::{Memory, MemoryId, Status, Timestamp};
use serde::{Deserialize, Serialize};

use crate::decision::{Action, Decision, MemoryUpdate};
use crate::pair::is_reviewable;

/// Decay parameters, per bank.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DecayConfig {
    /// Confidence lost per cycle without use.
    pub per_cycle: f32,
    /// Below this confidence a decayed memory is archived.
    pub archive_below: f32,
}

impl Default for DecayConfig {
    fn default() -> Self {
        DecayConfig {
            per_cycle: 0.02,
            archive_below: 0.1,
        }
    }
}

/// The name decay decisions carry as their judge.
pub const DECAY: &str = "decay";

/// Decay and archive decisions for `memories`, sorted by id.
///
/// A memory decays when it was stored before `last_cycle_at` and has not been accessed since.
/// Memories in `decided` (already changed by this cycle's conflict decisions) are left alone, so
/// that one cycle never gives a memory two confidence changes that do not know of each other.
pub fn decay(
    memories: &[Arc<Memory>],
    last_cycle_at: Timestamp,
    decided: &BTreeSet<MemoryId>,
    config: &DecayConfig,
) -> Vec<Decision> {
    let mut candidates: Vec<&Arc<Memory>> = memories
        .iter()
        .filter(|m| is_reviewable(m) && !m.critical && !decided.contains(&m.id))
        .filter(|m| m.recorded_at < last_cycle_at)
        .filter(|m| m.access.last_accessed_at.is_none_or(|t| t < last_cycle_at))
        .collect();
    candidates.sort_by_key(|m| m.id);
    candidates.dedup_by_key(|m| m.id);
    candidates
        .into_iter()
        .filter_map(|m| {
            let confidence = (m.confidence - config.per_cycle).max(0.0);
            if confidence == m.confidence {
                return None;
            }
            let since = m.access.last_accessed_at.unwrap_or(m.recorded_at);
            let (action, reason) = if confidence < config.archive_below {
                let update = MemoryUpdate::of(m.id)
                    .status(Status::Archived)
                    .confidence(confidence);
                let reason = format!(
                    "unused since {since}; confidence {:.2} → {confidence:.2}, below the archive threshold {:.2}",
                    m.confidence, config.archive_below
                );
                (Action::Archive(update), reason)
            } else {
                let update = MemoryUpdate::of(m.id).confidence(confidence);
                let reason = format!(
                    "unused since {since}; confidence {:.2} → {confidence:.2}",
                    m.confidence
                );
                (Action::Decay(update), reason)
            };
            Some(Decision {
                action,
                judge: DECAY.to_string(),
                reason,
            })
        })
        .collect()
}

/// The memories `decisions` change, to pass to [`decay`] as already decided.
pub fn decided_ids(decisions: &[Decision]) -> BTreeSet<MemoryId> {
    decisions
        .iter()
        .flat_map(|d| d.updates().into_iter().map(|u| u.id).chain(d.retires()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{memory, MemoryExt, DAY};

    fn run(memories: Vec<Memory>, last_cycle_day: i64) -> Vec<Decision> {
        let memories: Vec<Arc<Memory>> = memories.into_iter().map(Arc::new).collect();
        let last = Timestamp(1_700_000_000_000 + last_cycle_day * DAY);
        decay(&memories, last, &BTreeSet::new(), &DecayConfig::default())
    }

    #[test]
    fn unused_memories_lose_confidence_each_cycle() {
        let decisions = run(vec![memory(1, "I drink tea.")], 10);
        assert_eq!(decisions.len(), 1);
        match &decisions[0].action {
            Action::Decay(u) => {
                assert_eq!(u.id, MemoryId(1));
                assert!((u.confidence.unwrap() - 0.88).abs() < 1e-6);
                assert_eq!(u.status, None);
            }
            other => panic!("expected decay, got {other:?}"),
        }
        assert_eq!(decisions[0].judge, DECAY);
    }

    #[test]
    fn used_new_critical_and_resolved_memories_do_not_decay() {
        let mut used = memory(1, "I drink tea.");
        used.access.last_accessed_at = Some(Timestamp(1_700_000_000_000 + 11 * DAY));
        let recent = memory(20, "I moved to Munich.");
        let critical = memory(2, "Never share the root password.").critical();
        let superseded =
            memory(3, "I drink coffee.").with_status(Status::Superseded { by: MemoryId(1) });
        assert!(run(vec![used, recent, critical, superseded], 10).is_empty());
    }

    #[test]
    fn below_the_threshold_a_memory_is_archived() {
        let weak = memory(1, "The user might like jazz.").with_confidence(0.11);
        let decisions = run(vec![weak], 10);
        match &decisions[0].action {
            Action::Archive(u) => {
                assert_eq!(u.status, Some(Status::Archived));
                assert!(u.confidence.unwrap() < 0.1);
            }
            other => panic!("expected archive, got {other:?}"),
        }
    }

    #[test]
    fn memories_decided_this_cycle_are_left_alone() {
        let memories = vec![Arc::new(memory(1, "I drink tea."))];
        let last = Timestamp(1_700_000_000_000 + 10 * DAY);
        let decided = BTreeSet::from([MemoryId(1)]);
        assert!(decay(&memories, last, &decided, &DecayConfig::default()).is_empty());
    }
}
