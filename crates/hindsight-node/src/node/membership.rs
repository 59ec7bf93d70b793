//! The membership operations of the admin API.

use std::time::Duration;

use hindsight_cluster::ClusterStatus;

use super::Node;
use crate::error::NodeError;

/// How long a leaving node's partitions may take to move off it (each move may need a snapshot
/// sent to the new replica) before the removal answers that it is not finished.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(300);

impl Node {
    /// The Raft group as this node sees it.
    pub fn cluster_status(&self) -> ClusterStatus {
        self.cluster().status()
    }

    /// Makes this node, which belongs to no cluster, the first member of a new one.
    pub async fn init_cluster(&self) -> Result<ClusterStatus, NodeError> {
        Ok(self
            .cluster()
            .initialize(&self.config().advertise_addr())
            .await?)
    }

    /// Asks the cluster `seed` belongs to to add this node.
    pub async fn join_cluster(&self, seed: &str) -> Result<ClusterStatus, NodeError> {
        if self.is_member() {
            // Its log would clash with the other cluster's: a node joins with an empty one.
            return Err(NodeError::FailedPrecondition(format!(
                "node {} already belongs to a cluster (perhaps one of its own, started on a fresh data directory); start a node to join with cluster.bootstrap = false or cluster.join set",
                self.config().node.id
            )));
        }
        Ok(self
            .cluster()
            .join(seed, &self.config().advertise_addr())
            .await?)
    }

    /// Removes node `id` from the cluster. With partitions the node is drained first: it stops
    /// voting in the metadata group (so the placement leaves it out), its partitions move to the
    /// other nodes, and only then is it removed; each step is safe to repeat, so a removal cut
    /// short (a timeout, a leader change) finishes when asked again.
    pub async fn remove_member(&self, id: u64) -> Result<ClusterStatus, NodeError> {
        if let Some(partitions) = self.partitions() {
            let status = self.cluster().status();
            if status.members.iter().any(|m| m.node_id == id) {
                self.cluster().demote_member(id).await?;
                partitions
                    .drain(
                        self.banks().metadata_store(),
                        self.cluster(),
                        id,
                        DRAIN_TIMEOUT,
                    )
                    .await?;
            }
        }
        Ok(self.cluster().remove_member(id).await?)
    }
}
