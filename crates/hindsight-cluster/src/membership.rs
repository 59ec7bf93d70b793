use std::collections::BTreeSet;
use std::time::Duration;

use hindsight_store::TypeConfig;
use openraft::{BasicNode, ChangeMembers, Raft, RaftMetrics, ServerState};

use crate::error::ClusterError;
use crate::pb;

/// One member of the group as this node sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterMember {
    pub node_id: u64,
    pub address: String,
    pub voter: bool,
    /// Entries behind the leader's log; known on the leader only.
    pub lag: Option<u64>,
    /// Whether it answers: on the leader, from its own Raft calls to the member; for the node
    /// answering, itself. `None` where this node cannot tell (a follower's view of the others).
    pub reachable: Option<bool>,
    /// On the leader: milliseconds since the member last answered one of its Raft calls (or,
    /// when it never has, since the first call).
    pub millis_since_ack: Option<u64>,
}

/// The group as this node sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterStatus {
    pub node_id: u64,
    pub group_id: u64,
    pub leader_id: Option<u64>,
    pub term: u64,
    pub state: String,
    pub last_log_index: Option<u64>,
    /// Known on the leader (the index a quorum holds); followers only know it is at least applied.
    pub committed_index: Option<u64>,
    pub applied_index: Option<u64>,
    /// On the leader: milliseconds since a majority last acknowledged it. A leader cut off from
    /// the majority still calls itself leader until it hears of a newer term; this grows instead.
    pub millis_since_quorum_ack: Option<u64>,
    /// The last log index the current snapshot covers; entries up to `purged_index` are gone from
    /// the log, so a member further behind can only catch up from the snapshot.
    pub snapshot_index: Option<u64>,
    pub purged_index: Option<u64>,
    pub members: Vec<ClusterMember>,
}

impl ClusterStatus {
    /// The ids of the members that vote, in order.
    pub fn voters(&self) -> BTreeSet<u64> {
        self.members
            .iter()
            .filter(|m| m.voter)
            .map(|m| m.node_id)
            .collect()
    }

    /// `silence` says how long a member has gone without answering this node's Raft calls;
    /// longer than `down_after` and the leader counts it down.
    pub(crate) fn of(
        metrics: &RaftMetrics<u64, BasicNode>,
        group_id: u64,
        silence: impl Fn(u64) -> Option<Duration>,
        down_after: Duration,
    ) -> ClusterStatus {
        let membership = metrics.membership_config.membership();
        let voters: BTreeSet<u64> = membership.voter_ids().collect();
        let matched = |id: u64| -> Option<u64> {
            if id == metrics.id {
                return metrics.last_log_index;
            }
            metrics
                .replication
                .as_ref()
                .and_then(|r| r.get(&id).cloned())
                .map(|log_id| log_id.map_or(0, |l| l.index))
        };
        let leading = metrics.state == ServerState::Leader;
        let members = membership
            .nodes()
            .map(|(id, node)| {
                let silent = (leading && *id != metrics.id)
                    .then(|| silence(*id))
                    .flatten();
                ClusterMember {
                    node_id: *id,
                    address: node.addr.clone(),
                    voter: voters.contains(id),
                    lag: match (metrics.state, metrics.last_log_index, matched(*id)) {
                        (ServerState::Leader, Some(last), Some(m)) if *id != metrics.id => {
                            Some(last.saturating_sub(m))
                        }
                        _ => None,
                    },
                    reachable: if *id == metrics.id {
                        Some(true)
                    } else {
                        silent.map(|s| s <= down_after)
                    },
                    millis_since_ack: silent.map(|s| s.as_millis() as u64),
                }
            })
            .collect();
        let committed_index = (metrics.state == ServerState::Leader)
            .then(|| {
                let mut indexes: Vec<u64> = voters.iter().filter_map(|id| matched(*id)).collect();
                indexes.sort_unstable_by(|a, b| b.cmp(a));
                indexes.get(voters.len() / 2).copied()
            })
            .flatten();
        ClusterStatus {
            node_id: metrics.id,
            group_id,
            leader_id: metrics.current_leader,
            term: metrics.current_term,
            state: format!("{:?}", metrics.state),
            last_log_index: metrics.last_log_index,
            committed_index,
            applied_index: metrics.last_applied.map(|l| l.index),
            millis_since_quorum_ack: (metrics.state == ServerState::Leader)
                .then_some(metrics.millis_since_quorum_ack)
                .flatten(),
            snapshot_index: metrics.snapshot.map(|l| l.index),
            purged_index: metrics.purged.map(|l| l.index),
            members,
        }
    }
}

impl From<ClusterStatus> for pb::ClusterStatusReply {
    fn from(s: ClusterStatus) -> Self {
        pb::ClusterStatusReply {
            node_id: s.node_id,
            group_id: s.group_id,
            leader_id: s.leader_id,
            term: s.term,
            state: s.state,
            last_log_index: s.last_log_index,
            committed_index: s.committed_index,
            applied_index: s.applied_index,
            millis_since_quorum_ack: s.millis_since_quorum_ack,
            snapshot_index: s.snapshot_index,
            purged_index: s.purged_index,
            members: s
                .members
                .into_iter()
                .map(|m| pb::ClusterMember {
                    node_id: m.node_id,
                    address: m.address,
                    voter: m.voter,
                    lag: m.lag,
                    reachable: m.reachable,
                    millis_since_ack: m.millis_since_ack,
                })
                .collect(),
        }
    }
}

impl From<pb::ClusterStatusReply> for ClusterStatus {
    fn from(s: pb::ClusterStatusReply) -> Self {
        ClusterStatus {
            node_id: s.node_id,
            group_id: s.group_id,
            leader_id: s.leader_id,
            term: s.term,
            state: s.state,
            last_log_index: s.last_log_index,
            committed_index: s.committed_index,
            applied_index: s.applied_index,
            millis_since_quorum_ack: s.millis_since_quorum_ack,
            snapshot_index: s.snapshot_index,
            purged_index: s.purged_index,
            members: s
                .members
                .into_iter()
                .map(|m| ClusterMember {
                    node_id: m.node_id,
                    address: m.address,
                    voter: m.voter,
                    lag: m.lag,
                    reachable: m.reachable,
                    millis_since_ack: m.millis_since_ack,
                })
                .collect(),
        }
    }
}

/// Adds `id` at `addr` as a learner, waits until it has caught up, then makes it a voter. Run on
/// the leader, one change at a time. Adding a voter again at the same address changes nothing.
pub(crate) async fn add_member(
    raft: &Raft<TypeConfig>,
    id: u64,
    addr: &str,
) -> Result<(), ClusterError> {
    let metrics = raft.metrics().borrow().clone();
    let membership = metrics.membership_config.membership();
    if check_addition(membership, id, addr)? {
        if membership.voter_ids().any(|v| v == id) {
            return Ok(());
        }
    } else {
        raft.add_learner(id, BasicNode::new(addr), true)
            .await
            .map_err(|e| {
                ClusterError::Unavailable(format!("adding node {id} as a learner: {e}"))
            })?;
    }
    raft.change_membership(ChangeMembers::AddVoterIds(BTreeSet::from([id])), false)
        .await
        .map_err(|e| ClusterError::Unavailable(format!("making node {id} a voter: {e}")))?;
    tracing::info!(node = id, addr, "added a voting member");
    Ok(())
}

/// Adds several members in one membership change: each new one as a learner that must catch up
/// within `catch_up`, then every one that did as a voter together. Growing a group one voter at a
/// time passes through small configurations (one voter to two) whose joint consensus needs the
/// newcomer's vote, so a newcomer dying in that window stalls the group; adding the others with it
/// keeps a majority without it. Returns the ids that vote afterwards among those asked for; a
/// member that did not catch up stays a learner, to be tried again. Run on the leader.
pub(crate) async fn add_members(
    raft: &Raft<TypeConfig>,
    members: &[(u64, String)],
    catch_up: Duration,
) -> Result<BTreeSet<u64>, ClusterError> {
    let metrics = raft.metrics().borrow().clone();
    let membership = metrics.membership_config.membership().clone();
    let voters: BTreeSet<u64> = membership.voter_ids().collect();
    let mut ready = BTreeSet::new();
    for (id, addr) in members {
        check_addition(&membership, *id, addr)?;
    }
    for (id, addr) in members {
        let (id, addr) = (*id, addr.as_str());
        if voters.contains(&id) {
            ready.insert(id);
            continue;
        }
        // Re-adding a learner is how openraft waits for it to catch up again.
        match tokio::time::timeout(catch_up, raft.add_learner(id, BasicNode::new(addr), true)).await
        {
            Ok(Ok(_)) => {
                ready.insert(id);
            }
            Ok(Err(e)) => {
                tracing::warn!(node = id, error = %e, "could not add a learner yet");
            }
            Err(_) => {
                tracing::warn!(
                    node = id,
                    "a learner did not catch up in {catch_up:?}; trying again later"
                );
            }
        }
    }
    let new_voters: BTreeSet<u64> = ready.difference(&voters).copied().collect();
    if !new_voters.is_empty() {
        raft.change_membership(ChangeMembers::AddVoterIds(new_voters.clone()), false)
            .await
            .map_err(|e| {
                ClusterError::Unavailable(format!("making nodes {new_voters:?} voters: {e}"))
            })?;
        tracing::info!(nodes = ?new_voters, "added voting members in one change");
    }
    Ok(ready)
}

/// Refuses adding `id` at `addr` unless the id and address are well formed and `id` is not a
/// member at another address. Returns whether `id` is already a member (voter or learner).
fn check_addition(
    membership: &openraft::Membership<u64, BasicNode>,
    id: u64,
    addr: &str,
) -> Result<bool, ClusterError> {
    if id == 0 {
        return Err(ClusterError::InvalidArgument("node ids start at 1".into()));
    }
    if !crate::is_host_port(addr) {
        return Err(ClusterError::InvalidArgument(format!(
            "{addr:?} is not HOST:PORT"
        )));
    }
    match membership.get_node(&id) {
        Some(node) if node.addr != addr => Err(ClusterError::InvalidArgument(format!(
            "node {id} is already a member at {}; remove it before adding it at {addr}",
            node.addr
        ))),
        known => Ok(known.is_some()),
    }
}

/// The group's voters, once `id` is known to be a member (voter or learner).
fn voters_beside(raft: &Raft<TypeConfig>, id: u64) -> Result<BTreeSet<u64>, ClusterError> {
    let metrics = raft.metrics().borrow().clone();
    let membership = metrics.membership_config.membership();
    if membership.get_node(&id).is_none() {
        return Err(ClusterError::InvalidArgument(format!(
            "node {id} is not a member of this cluster"
        )));
    }
    let voters: BTreeSet<u64> = membership.voter_ids().collect();
    if voters.len() == 1 && voters.contains(&id) {
        return Err(ClusterError::InvalidArgument(format!(
            "node {id} is the only voter; a cluster cannot remove its last member"
        )));
    }
    Ok(voters)
}

/// Makes voter `id` a learner: it keeps receiving the log but no longer counts towards a quorum
/// (or, in the metadata group, towards placing partitions). A learner is left as it is. Run on
/// the leader, one change at a time.
pub(crate) async fn demote_member(raft: &Raft<TypeConfig>, id: u64) -> Result<(), ClusterError> {
    if !voters_beside(raft, id)?.contains(&id) {
        return Ok(());
    }
    raft.change_membership(ChangeMembers::RemoveVoters(BTreeSet::from([id])), true)
        .await
        .map_err(|e| ClusterError::Unavailable(format!("making node {id} a learner: {e}")))?;
    tracing::info!(node = id, "made a voter a learner, to leave");
    Ok(())
}

/// Removes `id` from the group (voter or learner). Run on the leader, one change at a time.
pub(crate) async fn remove_member(raft: &Raft<TypeConfig>, id: u64) -> Result<(), ClusterError> {
    let change = if voters_beside(raft, id)?.contains(&id) {
        ChangeMembers::RemoveVoters(BTreeSet::from([id]))
    } else {
        ChangeMembers::RemoveNodes(BTreeSet::from([id]))
    };
    raft.change_membership(change, false)
        .await
        .map_err(|e| ClusterError::Unavailable(format!("removing node {id}: {e}")))?;
    tracing::info!(node = id, "removed a member");
    Ok(())
}
