//! What the store does at open when one of its databases was found corrupt and replaced by an empty
//! one: it rebuilds what it can from the rest, says so, and refuses to start when the rest cannot
//! stand in for what was lost.
//!
//! A single node's applied state holds every committed entry once it stopped cleanly (the state is
//! flushed at shutdown), and its log holds every entry after the latest snapshot; so one of
//! {state database, log + snapshot} is enough to lose nothing that was acknowledged.

use std::path::Path;

use openraft::storage::RaftLogStorage;
use openraft::LogId;

use crate::error::StoreError;
use crate::log_store::LogStore;
use crate::state_machine::StateMachineStore;

/// Brings `log` and `state` back in step after either was replaced, before Raft reads them.
pub(crate) async fn recover(
    log: &mut LogStore,
    state: &mut StateMachineStore,
    node_id: u64,
) -> Result<(), StoreError> {
    let log_lost = log.moved_aside().map(Path::to_path_buf);
    let state_lost = state.moved_aside().map(Path::to_path_buf);
    if let (Some(log_kept), Some(state_kept)) = (&log_lost, &state_lost) {
        return Err(StoreError::Unrecoverable(format!(
            "both the Raft log (moved to {}) and the state database (moved to {}) failed their \
             checks; the latest snapshot alone lacks what came after it. Restore one of them, or \
             clear the directory so that the node rejoins its cluster as a new member",
            log_kept.display(),
            state_kept.display()
        )));
    }

    // Also when nothing was moved: a state that sled rolled back must not fall behind the
    // snapshot, since the log behind the snapshot may be purged.
    let restored = state.catch_up_with_snapshot().await?;

    if let Some(state_kept) = state_lost {
        let purged = log
            .get_log_state()
            .await
            .map_err(|e| StoreError::storage("reading the log's state", e))?
            .last_purged_log_id;
        if purged > state.last_applied() {
            return Err(StoreError::Unrecoverable(format!(
                "the state database failed its checks (moved to {}), and the log is purged up to \
                 {} while the latest intact snapshot reaches only {}: the entries between are \
                 nowhere on this node",
                state_kept.display(),
                describe(purged),
                describe(state.last_applied())
            )));
        }
        tracing::warn!(
            moved_to = %state_kept.display(),
            restored_from_snapshot_up_to = %describe(restored),
            "the state database was corrupt and was moved aside: the state is rebuilt from the \
             latest snapshot and the Raft log after it; no committed entry is lost",
        );
    }

    let applied = state.last_applied();
    if let (Some(log_kept), None) = (&log_lost, applied) {
        return Err(StoreError::Unrecoverable(format!(
            "the Raft log failed its checks (moved to {}) and this node has no applied state \
             to resume from",
            log_kept.display()
        )));
    }
    let log_ends_at = log
        .get_log_state()
        .await
        .map_err(|e| StoreError::storage("reading the log's state", e))?
        .last_log_id;
    if let Some(applied) = applied.filter(|&a| log_ends_at < Some(a)) {
        // A log that starts empty, or that sled rolled back to an older end.
        log.resume_after(applied, node_id).await?;
        // openraft starts the log after `applied`; a snapshot up to there lets a leader serve
        // what precedes it to a follower.
        state.snapshot_now().await?;
        match &log_lost {
            Some(log_kept) => tracing::warn!(
                moved_to = %log_kept.display(),
                resumed_after = %applied,
                "the Raft log was corrupt and was moved aside: the node resumes from its \
                 applied state, which holds every entry it applied; in a cluster the leader \
                 re-sends anything after it",
            ),
            None => tracing::warn!(
                log_ends_at = %describe(log_ends_at),
                resumed_after = %applied,
                "the Raft log ends before the applied state (it lost its newest entries): the \
                 node resumes from its applied state; in a cluster the leader re-sends anything \
                 after it",
            ),
        }
    }
    Ok(())
}

fn describe(log_id: Option<LogId<u64>>) -> String {
    log_id.map_or_else(|| "nothing".into(), |l| l.to_string())
}
