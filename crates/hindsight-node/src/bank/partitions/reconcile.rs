//! One round of the loop every node runs: leaving with the cluster, keeping the placement table
//! in step with the metadata group's voters, opening the replicas the table places here and
//! closing the ones it moved away.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;

use hindsight_cluster::{ClusterStatus, RaftTransportService};
use hindsight_core::command::{Command, CommandOutcome};
use hindsight_core::placement::{gone_voters, target_placement, PartitionId, PlacementTable};
use hindsight_store::StoreHandle;

use super::{formed_with_one_group, member_addresses, Partitions};
use crate::error::NodeError;

impl Partitions {
    /// One round of the loop described in the documentation of [`crate::bank::partitions`].
    pub(crate) async fn reconcile(&self, metadata: &StoreHandle, cluster: &RaftTransportService) {
        if !self.hosted().is_empty() && self.left_cluster(cluster).await {
            // This node left the cluster, and hears of no table after that. Its replicas go, so
            // that a partition it led elects a leader among the nodes still in the cluster,
            // which then moves the partition as the newest table says.
            let _changing = self.changing.lock().await;
            for p in self.hosted() {
                self.close(p, true).await;
            }
            return;
        }
        if !self.active() {
            return;
        }
        // A node that joined such a cluster with cluster.partitions set learns it here.
        if let Ok(placed) = metadata.reader().placement() {
            if formed_with_one_group(metadata.reader(), placed.as_ref(), self.count()) {
                self.single_group.store(true, Ordering::Release);
                return;
            }
        }
        if let Err(e) = self.keep_placement(metadata, cluster).await {
            tracing::warn!(error = %e, "could not update the placement table");
        }
        let table = match metadata.reader().placement() {
            Ok(Some(table)) => table,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(error = %e, "could not read the placement table");
                return;
            }
        };
        let placed = table.partition_count();
        if self.partitions.swap(placed, Ordering::AcqRel) != placed {
            tracing::warn!(
                placed,
                "cluster.partitions differs from the placed table's; banks hash onto the table's partitions"
            );
        }
        let _changing = self.changing.lock().await;
        // A replica on disk that the table no longer places here may still be a voter (the table
        // changed while this node was down): it serves until its partition lets it go.
        let mut wanted: BTreeSet<PartitionId> =
            table.partitions_of(self.node_id).into_iter().collect();
        wanted.extend(self.on_disk());
        for p in wanted {
            if !self.replicas.lock().contains_key(&p) {
                if let Err(e) = self.open(&table, p).await {
                    tracing::warn!(partition = p, error = %e, "could not open a partition replica");
                }
            }
        }
        let addresses = member_addresses(cluster);
        for p in self.hosted() {
            // The leader moves its partition even when the table moves it off this node: it
            // removes itself last, once the new replicas vote.
            let leading = self.move_if_leading(&table, p, &addresses);
            if !leading && !table.hosts(self.node_id, p) && self.departed(&table, p).await {
                self.close(p, true).await;
            }
        }
    }

    /// Whether this node is no longer in the metadata group. Its own replica may not know: a
    /// leader sends a node nothing once it removed it, so the node may never receive its removal,
    /// and would go on leading its partitions by an old table. The metadata leader it knows of
    /// (or the one that leader names) settles it: the leader's membership is the newest.
    async fn left_cluster(&self, cluster: &RaftTransportService) -> bool {
        let counted =
            |status: &ClusterStatus| status.members.iter().any(|m| m.node_id == self.node_id);
        let own = cluster.status();
        if !counted(&own) {
            return true;
        }
        let (mut leader, mut members) = (own.leader_id, own.members);
        for _hop in 0..2 {
            let Some(leader_id) = leader.filter(|id| *id != self.node_id) else {
                return false;
            };
            let Some(address) = members
                .iter()
                .find(|m| m.node_id == leader_id)
                .map(|m| m.address.clone())
            else {
                return false;
            };
            match cluster.status_at(&address).await {
                Ok(theirs) if theirs.leader_id == Some(theirs.node_id) => return !counted(&theirs),
                // A deposed leader names its successor: ask that one.
                Ok(theirs) => (leader, members) = (theirs.leader_id, theirs.members),
                Err(_) => return false,
            }
        }
        false
    }

    /// On the metadata group's leader: the table its voters call for, leaving out the voters
    /// unanswered for longer than `cluster.replace_after_secs`, proposed when it differs from the
    /// one in force ([`target_placement`]).
    async fn keep_placement(
        &self,
        metadata: &StoreHandle,
        cluster: &RaftTransportService,
    ) -> Result<(), NodeError> {
        let status = cluster.status();
        if !self.leads(&status) {
            *self.led_since.lock() = None;
            return Ok(());
        }
        let led_for = {
            let mut since = self.led_since.lock();
            match *since {
                Some((term, at)) if term == status.term => at.elapsed(),
                _ => {
                    *since = Some((status.term, std::time::Instant::now()));
                    std::time::Duration::ZERO
                }
            }
        };
        let voters: Vec<u64> = status.voters().into_iter().collect();
        let silence: BTreeMap<u64, std::time::Duration> = status
            .members
            .iter()
            .filter(|m| m.voter && m.node_id != self.node_id)
            .filter_map(|m| {
                Some((
                    m.node_id,
                    std::time::Duration::from_millis(m.millis_since_ack?),
                ))
            })
            .collect();
        let gone = gone_voters(&silence, led_for, self.replace_after);
        let current = metadata.reader().placement().map_err(NodeError::internal)?;
        let target = target_placement(
            current.as_ref(),
            &voters,
            &gone,
            self.count(),
            self.replication,
        )
        .map_err(|e| NodeError::internal(format!("placing partitions: {e}")))?;
        if current.as_ref() == Some(&target) {
            return Ok(());
        }
        if let Some(table) = &current {
            let placed_before: BTreeSet<u64> = table.partitions.iter().flatten().copied().collect();
            for node in gone.intersection(&placed_before) {
                if target.partitions_of(*node).is_empty() {
                    tracing::warn!(
                        node,
                        after_secs = self.replace_after.map_or(0, |d| d.as_secs()),
                        "a node has not answered for longer than cluster.replace_after_secs; its partitions are re-placed on the other nodes"
                    );
                }
            }
        }
        let version = target.version;
        match metadata
            .propose(Command::SetPlacement { table: target })
            .await
            .map_err(|e| NodeError::Unavailable(e.to_string()))?
            .outcome
        {
            CommandOutcome::PlacementSet { .. } => {
                tracing::info!(version, "placement table updated");
                Ok(())
            }
            CommandOutcome::Rejected { reason, .. } => Err(NodeError::internal(reason)),
            other => Err(NodeError::internal(format!("unexpected outcome {other:?}"))),
        }
    }

    /// Whether partition `p`, which the table no longer places here, has let this replica go: the
    /// group does not count this node any more, as this replica or a replica the table names sees
    /// it. Until then this replica keeps serving, since the move may still need it.
    async fn departed(&self, table: &PlacementTable, p: PartitionId) -> bool {
        let Some(service) = self.replicas.lock().get(&p).map(|r| r.service.clone()) else {
            return false;
        };
        let member =
            |status: &ClusterStatus| status.members.iter().any(|m| m.node_id == self.node_id);
        let status = service.status();
        if !member(&status) {
            return true;
        }
        let addresses: Vec<String> = status
            .members
            .iter()
            .filter(|m| table.replicas(p).contains(&m.node_id))
            .map(|m| m.address.clone())
            .collect();
        for address in addresses {
            if let Ok(status) = service.status_at(&address).await {
                if status.leader_id.is_some() {
                    return !member(&status);
                }
            }
        }
        false
    }
}
