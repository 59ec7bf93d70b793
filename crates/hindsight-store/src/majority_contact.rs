//! A leader cut off from its majority. openraft keeps such a leader leading until it hears of a
//! newer term, so a proposal there waits for a commit that cannot come, and a linearizable read
//! for a confirmation that cannot come, while the other members may already serve under a new
//! leader. Once the silence is longer than any election takes, this node says so at once instead.

use std::time::Duration;

use openraft::{Raft, ServerState};

use crate::error::StoreError;
use crate::type_config::TypeConfig;

/// Milliseconds since a majority last acknowledged this node as leader, when that is over twice
/// the longest election timeout: long enough that the other members have elected another leader
/// if they can, and far longer than a healthy leader goes unanswered (heartbeats go out every
/// `heartbeat_interval`). `None` on a follower, or on a leader in touch with its majority.
pub(crate) fn unanswered_leader(raft: &Raft<TypeConfig>) -> Option<u64> {
    let bound = raft.config().election_timeout_max.saturating_mul(2);
    let metrics = raft.metrics();
    let metrics = metrics.borrow();
    if metrics.state != ServerState::Leader {
        return None;
    }
    metrics.millis_since_quorum_ack.filter(|ms| *ms > bound)
}

/// Resolves, with the milliseconds, once this node leads unanswered (see [`unanswered_leader`]).
/// openraft refreshes its metrics at least every one and a half heartbeat intervals.
pub(crate) async fn lost_majority(raft: &Raft<TypeConfig>) -> u64 {
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        tick.tick().await;
        if let Some(ms) = unanswered_leader(raft) {
            return ms;
        }
    }
}

/// The answer of a leader no majority has answered for `ms` milliseconds; `outcome` says what
/// became of the request.
pub(crate) fn cut_off(node_id: u64, ms: u64, outcome: &str) -> StoreError {
    StoreError::NoQuorum(cut_off_message(node_id, ms, outcome))
}

pub(crate) fn cut_off_message(node_id: u64, ms: u64, outcome: &str) -> String {
    format!(
        "node {node_id} leads, but no majority has answered it for {ms} ms (it may be cut off from the other members); {outcome}"
    )
}
