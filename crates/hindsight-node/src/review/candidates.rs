//! What a cycle judges: the changed memories it takes on (and how far they move the watermark),
//! and the pairs a budget deferred from earlier cycles.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use hindsight_core::{Memory, MemoryId};
use hindsight_review::{Pair, PairKey};

/// The memories a cycle takes on, in id order.
pub(super) struct Changed {
    pub memories: Vec<Arc<Memory>>,
    /// The log index through which the bank is reviewed once the cycle is applied.
    pub watermark: u64,
    /// Changed memories left for later cycles.
    pub backlog: u64,
}

/// The records changed since `watermark`, as many as [`oldest_changes`] lets one cycle take.
/// `indexed_through` is the log index the records were read at.
pub(super) fn changed_since(
    records: &HashMap<MemoryId, Arc<Memory>>,
    watermark: u64,
    max: usize,
    indexed_through: u64,
) -> Changed {
    let changed: Vec<Arc<Memory>> = records
        .values()
        .filter(|m| m.updated_index > watermark)
        .cloned()
        .collect();
    let (mut memories, watermark, backlog) = oldest_changes(changed, max, indexed_through);
    memories.sort_by_key(|m| m.id);
    Changed {
        memories,
        watermark,
        backlog,
    }
}

/// At most `max` of the changed memories, oldest changes first, and the watermark the cycle
/// reaches with them. A log entry's changes are taken whole (the watermark is a log index), so a
/// cycle may exceed `max` by the rest of one entry.
fn oldest_changes(
    mut changed: Vec<Arc<Memory>>,
    max: usize,
    indexed_through: u64,
) -> (Vec<Arc<Memory>>, u64, u64) {
    if changed.len() <= max.max(1) {
        return (changed, indexed_through, 0);
    }
    changed.sort_by_key(|m| (m.updated_index, m.id));
    let last_index = changed[max.max(1) - 1].updated_index;
    let end = changed.partition_point(|m| m.updated_index <= last_index);
    let backlog = (changed.len() - end) as u64;
    changed.truncate(end);
    (changed, last_index, backlog)
}

/// `pairs` and the pairs a budget deferred in earlier cycles, each pair once. A deferred pair
/// one of whose memories is gone (erased, purged) is dropped: there is nothing left to judge.
pub(super) fn with_deferred(
    mut pairs: Vec<Pair>,
    deferred: &[(MemoryId, MemoryId)],
    records: &HashMap<MemoryId, Arc<Memory>>,
) -> Vec<Pair> {
    let mut keys: HashSet<PairKey> = pairs.iter().map(Pair::key).collect();
    for (a, b) in deferred {
        if let (Some(a), Some(b)) = (records.get(a), records.get(b)) {
            if keys.insert(PairKey::new(a.id, b.id)) {
                pairs.push(Pair::new(a.clone(), b.clone(), None));
            }
        }
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use hindsight_core::{Provenance, SourceKind, Timestamp};

    /// A memory last changed by the log entry at `updated_index`.
    fn changed_at(id: u128, updated_index: u64) -> Arc<Memory> {
        let mut m = Memory::new(
            MemoryId(id),
            "t/bank".parse().unwrap(),
            format!("memory {id}"),
            Provenance::from_source(SourceKind::User),
            Timestamp(1_000_000 * id as i64),
        );
        m.updated_index = updated_index;
        Arc::new(m)
    }

    fn table(records: Vec<Arc<Memory>>) -> HashMap<MemoryId, Arc<Memory>> {
        records.into_iter().map(|m| (m.id, m)).collect()
    }

    fn ids(memories: &[Arc<Memory>]) -> Vec<u128> {
        memories.iter().map(|m| m.id.0).collect()
    }

    #[test]
    fn a_cycle_under_its_limit_takes_every_change_since_the_watermark_and_reaches_the_read_index() {
        let records = table(vec![
            changed_at(3, 12),
            changed_at(1, 15),
            changed_at(2, 4),
            changed_at(4, 11),
            changed_at(5, 10),
        ]);
        let batch = changed_since(&records, 10, 100, 20);
        assert_eq!(ids(&batch.memories), vec![1, 3, 4]);
        assert_eq!(batch.watermark, 20);
        assert_eq!(batch.backlog, 0);

        let nothing = changed_since(&records, 20, 100, 20);
        assert!(nothing.memories.is_empty());
        assert_eq!(nothing.watermark, 20);
    }

    #[test]
    fn a_cycle_over_its_limit_takes_the_oldest_whole_log_entries_and_the_next_takes_the_rest() {
        // Entry 12 changed two memories: both go in one cycle, or the watermark would skip one.
        let records = table(vec![
            changed_at(5, 11),
            changed_at(1, 12),
            changed_at(4, 12),
            changed_at(2, 13),
            changed_at(3, 14),
        ]);
        let first = changed_since(&records, 10, 2, 14);
        assert_eq!(ids(&first.memories), vec![1, 4, 5]);
        assert_eq!(first.watermark, 12);
        assert_eq!(first.backlog, 2);

        let second = changed_since(&records, first.watermark, 2, 14);
        assert_eq!(ids(&second.memories), vec![2, 3]);
        assert_eq!(second.watermark, 14);
        assert_eq!(second.backlog, 0);
    }

    #[test]
    fn a_limit_of_zero_still_moves_the_watermark_by_one_entry() {
        let records = table(vec![changed_at(1, 7), changed_at(2, 8), changed_at(3, 9)]);
        let batch = changed_since(&records, 0, 0, 9);
        assert_eq!(ids(&batch.memories), vec![1]);
        assert_eq!(batch.watermark, 7);
        assert_eq!(batch.backlog, 2);
    }

    #[test]
    fn a_deferred_pair_is_judged_again_once_and_dropped_when_a_memory_is_gone() {
        let records = table(vec![changed_at(1, 1), changed_at(2, 1), changed_at(3, 1)]);
        let selected = vec![Pair::new(
            records[&MemoryId(1)].clone(),
            records[&MemoryId(2)].clone(),
            Some(0.9),
        )];
        let deferred = [
            (MemoryId(1), MemoryId(2)),
            (MemoryId(2), MemoryId(3)),
            (MemoryId(3), MemoryId(2)),
            (MemoryId(3), MemoryId(9)),
        ];
        let pairs = with_deferred(selected, &deferred, &records);
        let keys: Vec<(u128, u128)> = pairs.iter().map(|p| (p.a.id.0, p.b.id.0)).collect();
        assert_eq!(keys, vec![(1, 2), (2, 3)]);
        // The selected pair keeps what the index said of it.
        assert_eq!(pairs[0].similarity, Some(0.9));
        assert_eq!(pairs[1].similarity, None);
    }
}
