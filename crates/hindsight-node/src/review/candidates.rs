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
