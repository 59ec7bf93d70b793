//! Erasure of deleted memories from the node's retrieval log. A hard delete (or the purge of an
//! archived record past its retention) removes the record from the replicated state; the recalls
//! this node logged still hold the content they returned, and must not once the record is gone.
//!
//! The state machine reports each removal while it applies an entry, on every replica, and must
//! not wait there: removals go to a thread of their own, which erases them from the log in
//! batches. It holds the log weakly, so a node that shuts down closes its log as before.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Weak};

use hindsight_core::{BankName, MemoryId};
use hindsight_store::RetrievalLog;

/// What was removed from the state.
enum Removed {
    Memory(MemoryId),
    Bank(BankName),
}

/// Where removed memories are sent to be erased from the retrieval log.
pub struct RecallErasure {
    queue: Sender<Removed>,
}

impl RecallErasure {
    pub fn start(log: &Arc<RetrievalLog>) -> RecallErasure {
        let (queue, removed) = channel();
        let log = Arc::downgrade(log);
        let spawned = std::thread::Builder::new()
            .name("hindsight-erasure".into())
            .spawn(move || erase_until_closed(&log, &removed));
        if let Err(e) = spawned {
            tracing::error!(error = %e, "the retrieval log's erasure thread did not start: deleted memories stay in logged recalls until they age out");
        }
        RecallErasure { queue }
    }

    /// Queues `id`, removed from the state, for erasure. Never blocks.
    pub fn erase_memory(&self, id: MemoryId) {
        let _ = self.queue.send(Removed::Memory(id));
    }

    /// Queues every logged hit of `bank`, deleted with its records, for erasure.
    pub fn erase_bank(&self, bank: BankName) {
        let _ = self.queue.send(Removed::Bank(bank));
    }
}

fn erase_until_closed(log: &Weak<RetrievalLog>, removed: &Receiver<Removed>) {
    while let Ok(first) = removed.recv() {
        let (mut memories, mut banks) = (vec![], vec![]);
        for next in std::iter::once(first).chain(removed.try_iter()) {
            match next {
                Removed::Memory(id) => memories.push(id),
                Removed::Bank(bank) => banks.push(bank),
            }
        }
        let Some(log) = log.upgrade() else {
            return;
        };
        let erased = banks
            .iter()
            .try_fold(0, |n, bank| log.erase_bank(bank).map(|more| n + more));
        match erased.and_then(|n| log.erase_memories(&memories).map(|more| n + more)) {
            Ok(records) => {
                metrics::counter!("hindsight_retrieval_log_erasures_total")
                    .increment(records as u64);
                tracing::debug!(
                    memories = memories.len(),
                    banks = banks.len(),
                    records,
                    "erased deleted memories from logged recalls"
                );
            }
            Err(e) => {
                tracing::error!(error = %e, memories = memories.len(), "erasing deleted memories from the retrieval log failed")
            }
        }
    }
}
