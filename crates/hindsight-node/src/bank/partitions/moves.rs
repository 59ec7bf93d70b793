//! Moving replicas: an operator's move of one replica, a partition's leader carrying the table
//! out on its group, and the drain that waits for a leaving node's replicas to move off it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;

use hindsight_cluster::pb::AddMemberRequest;
use hindsight_cluster::RaftTransportService;
use hindsight_core::command::{Command, CommandOutcome};
use hindsight_core::placement::{group_of, MoveError, PartitionId, PlacementTable};
use hindsight_store::StoreHandle;

use super::{member_addresses, Partitions};
use crate::error::NodeError;

/// How long an operator's move waits for this node's replica of the metadata group to apply it.
const MOVE_APPLY_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
/// How long a partition's leader waits for a new replica to catch up before it tries again.
const MOVE_STEP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// How often a drain looks whether the leaving node's partitions have moved.
const DRAIN_CHECK_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

impl Partitions {
    /// An operator's move of partition `p`'s replica from node `from` to node `to`: the table
    /// with that change, checked against the newest table and the metadata group's voters and
    /// proposed through the metadata group. The partition's leader then carries the move out as
    /// for any table change. Nothing changes when the move is refused.
    pub(crate) async fn move_replica(
        &self,
        metadata: &StoreHandle,
        cluster: &RaftTransportService,
        p: PartitionId,
        from: u64,
        to: u64,
    ) -> Result<PlacementTable, NodeError> {
        metadata
            .ensure_linearizable()
            .await
            .map_err(|e| NodeError::Unavailable(format!("reading the placement table: {e}")))?;
        let table = metadata
            .reader()
            .placement()
            .map_err(NodeError::internal)?
            .ok_or_else(|| {
                NodeError::Unavailable(
                    "the cluster has not placed its partitions yet; try again in a moment".into(),
                )
            })?;
        let voters: Vec<u64> = cluster.status().voters().into_iter().collect();
        let moved = table.with_move(p, from, to, &voters).map_err(|e| match e {
            MoveError::UnknownPartition { .. } | MoveError::UnknownNode(_) => {
                NodeError::NotFound(e.to_string())
            }
            MoveError::SameNode(_)
            | MoveError::AlreadyHosts { .. }
            | MoveError::NotHosting { .. }
            | MoveError::WouldEmpty(_) => NodeError::FailedPrecondition(e.to_string()),
        })?;
        let proposed = metadata
            .propose(Command::SetPlacement {
                table: moved.clone(),
            })
            .await
            .map_err(|e| {
                NodeError::Unavailable(format!("the placement table was not changed: {e}"))
            })?;
        match proposed.outcome {
            CommandOutcome::PlacementSet { .. } => {
                // A forwarded proposal is answered once the leader applied it; the caller reads
                // the table here next, so this replica must hold the change too.
                if let Err(e) = metadata
                    .wait_applied_within(proposed.log_index, MOVE_APPLY_WAIT)
                    .await
                {
                    tracing::warn!(error = %e, "the moved table is not applied here yet");
                }
                tracing::info!(
                    partition = p,
                    from,
                    to,
                    version = moved.version,
                    "placement changed by an operator"
                );
                Ok(moved)
            }
            // Another change of the table won the race: nothing of this one was applied.
            CommandOutcome::Rejected { reason, .. } => Err(NodeError::Unavailable(format!(
                "the placement table changed meanwhile ({reason}); nothing was moved: look at \
                 `hindsight partition list` and ask again"
            ))),
            other => Err(NodeError::internal(format!("unexpected outcome {other:?}"))),
        }
    }

    /// Waits until node `id`, a learner of the metadata group now (so the placement leaves it
    /// out), holds no partition any more: the table places none on it and every partition's
    /// group, asked through a replica the table names, no longer counts it. Its replicas
    /// move one by one (a new replica added and caught up before the old is removed), so every
    /// partition keeps its replication while the node leaves. A dead node drains the same way:
    /// the moves need the remaining replicas only.
    pub(crate) async fn drain(
        &self,
        metadata: &StoreHandle,
        cluster: &RaftTransportService,
        id: u64,
        timeout: std::time::Duration,
    ) -> Result<(), NodeError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let Some(waiting_for) = self.holds_any(metadata, cluster, id).await else {
                return Ok(());
            };
            if tokio::time::Instant::now() >= deadline {
                return Err(NodeError::Unavailable(format!(
                    "node {id} no longer votes, but its partitions did not move off it within {} s \
                     (waiting for {waiting_for}); it stays a learner: ask again to finish removing it",
                    timeout.as_secs()
                )));
            }
            tokio::time::sleep(DRAIN_CHECK_EVERY).await;
        }
    }

    /// `None` once node `id` holds no partition; otherwise what the drain still waits for.
    async fn holds_any(
        &self,
        metadata: &StoreHandle,
        cluster: &RaftTransportService,
        id: u64,
    ) -> Option<String> {
        let table = match metadata.reader().placement() {
            Ok(Some(table)) => table,
            Ok(None) => return None,
            Err(e) => return Some(format!("the placement table to be readable ({e})")),
        };
        let addresses = member_addresses(cluster);
        for p in 0..table.partition_count() {
            if table.replicas(p).contains(&id) {
                return Some(format!("the placement table to move partition {p} off it"));
            }
            let peers = self.peers.for_group(group_of(p));
            let mut seen = None;
            for replica in table.replicas(p) {
                let Some(address) = addresses.get(replica) else {
                    continue;
                };
                if let Ok(status) = hindsight_cluster::group_status_at(&peers, address).await {
                    if status.leader_id.is_some() {
                        seen = Some(status);
                        break;
                    }
                }
            }
            match seen {
                None => return Some(format!("a replica of partition {p} with a leader")),
                Some(status) if status.members.iter().any(|m| m.node_id == id) => {
                    return Some(format!("partition {p}'s group to remove it"));
                }
                Some(_) => {}
            }
        }
        None
    }

    /// On partition `p`'s leader: adds the replicas the table names and the group lacks, then
    /// removes the ones it no longer names, this node last. Runs in the background, since adding
    /// a replica waits for it to catch up; one change of a partition at a time. Returns whether
    /// this node leads the partition.
    pub(super) fn move_if_leading(
        &self,
        table: &PlacementTable,
        p: PartitionId,
        addresses: &BTreeMap<u64, String>,
    ) -> bool {
        let (service, moving) = {
            let replicas = self.replicas.lock();
            let Some(replica) = replicas.get(&p) else {
                return false;
            };
            (replica.service.clone(), replica.moving.clone())
        };
        let status = service.status();
        if !self.leads(&status) {
            return false;
        }
        let voters = status.voters();
        let members: BTreeSet<u64> = status.members.iter().map(|m| m.node_id).collect();
        let target: BTreeSet<u64> = table.replicas(p).iter().copied().collect();
        if (voters == target && members == target) || moving.swap(true, Ordering::SeqCst) {
            return true;
        }
        let additions: Vec<(u64, String)> = target
            .difference(&voters)
            .filter_map(|id| addresses.get(id).map(|a| (*id, a.clone())))
            .collect();
        let me = self.node_id;
        // Learners too: one added for a table that has changed since would go on receiving the
        // log.
        let mut removals: Vec<u64> = members.difference(&target).copied().collect();
        removals.sort_by_key(|id| *id == me);
        let key_check = self.key_check.clone();
        tokio::spawn(async move {
            let group = service.group_id();
            let requests: Vec<AddMemberRequest> = additions
                .iter()
                .map(|(id, address)| AddMemberRequest {
                    node_id: *id,
                    address: address.clone(),
                    key_check: key_check.clone(),
                    group_id: group,
                })
                .collect();
            // All of a round's newcomers join in one membership change: a group growing from one
            // voter to two, one newcomer at a time, would stall if that newcomer died while the
            // change waited for its vote. A newcomer that is down does not catch up: it stays a
            // learner and is tried again on a later round, which may also follow a newer table.
            if !requests.is_empty() {
                match service.add_members_here(&requests, MOVE_STEP_TIMEOUT).await {
                    Ok(voting) => {
                        let added: Vec<u64> = voting.difference(&voters).copied().collect();
                        if !added.is_empty() {
                            tracing::info!(partition = p, nodes = ?added, "added partition replicas");
                        }
                        if additions.iter().any(|(id, _)| !voting.contains(id)) {
                            moving.store(false, Ordering::SeqCst);
                            return;
                        }
                    }
                    Err(e) => {
                        tracing::warn!(partition = p, error = %e, "could not add partition replicas yet");
                        moving.store(false, Ordering::SeqCst);
                        return;
                    }
                }
            }
            // Removing waits until every addition is a voter, so the group never shrinks below
            // the replicas the table asks for.
            for id in removals {
                match service.remove_member(id).await {
                    Ok(_) => {
                        tracing::info!(partition = p, node = id, "removed a partition replica")
                    }
                    Err(e) => {
                        tracing::warn!(partition = p, node = id, error = %e, "could not remove a partition replica yet");
                        break;
                    }
                }
            }
            moving.store(false, Ordering::SeqCst);
        });
        true
    }
}
