use hindsight_core::apply::Effect;

/// Told about every change the state machine makes, so derived indexes (vectors, BM25, entity graph)
/// on every replica can follow the store of record.
///
/// Calls come from the state machine's apply loop, in log order, after the entry's changes are
/// committed to sled and visible through [`crate::StateReader`]. The contract is **non-blocking**:
/// return quickly (hand the effects to a channel or an actor) and never wait on the store from inside
/// a call — a `propose` waits for apply, and apply waits for the listener, so that would deadlock.
///
/// Delivery is at least once: entries applied before a crash whose state had not reached disk are
/// applied and reported again on restart, so handlers must be idempotent (upserts and removes by id
/// are). Entries already in the state on disk are *not* reported again at start-up: derived state
/// restored from its own dump must be rebuilt from the reader when the dump is older than
/// `StateReader::last_applied_index()`.
pub trait ApplyListener: Send + Sync + 'static {
    /// One applied entry. Entries that carry no command (blank, membership) report no effects.
    fn on_apply(&self, log_index: u64, effects: &[Effect]);

    /// The state was replaced wholesale by an installed snapshot: derived state must be rebuilt from
    /// the reader, since no per-record effects describe the change.
    fn on_snapshot_installed(&self);
}

/// A listener that ignores everything, for callers with no derived state.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoopListener;

impl ApplyListener for NoopListener {
    fn on_apply(&self, _log_index: u64, _effects: &[Effect]) {}

    fn on_snapshot_installed(&self) {}
}
