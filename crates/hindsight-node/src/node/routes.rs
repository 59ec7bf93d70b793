use super::Node;
use crate::bank::partitions::Partitions;
use crate::error::NodeError;
use crate::routing::routes::Peer;
use hindsight_cluster::{RaftGroups, RaftTransportService};
use hindsight_core::placement::{PartitionId, PlacementTable};
use hindsight_core::{BankName, MemoryId};
use std::sync::Arc;

impl Node {
    /// Starts the actor link, takes the links peers open to this node, and dials the members it
    /// should hold a session with. A node whose link does not start still serves: its hints go
    /// over the `ReviewHint` RPC.
    pub(super) async fn start_link(&self) {
        if matches!(
            self.cluster().auth(),
            hindsight_cluster::TransportAuth::Refused(_)
        ) {
            return;
        }
        let node = Arc::downgrade(&self.inner);
        let handle: crate::routing::link::HintHandler = Arc::new(move |bank: BankName| {
            if let Some(inner) = node.upgrade() {
                let node = Node { inner };
                // Only the leader of the bank's group reviews it; a hint sent on a stale view of
                // who leads is dropped rather than passed on again.
                if node.leads_bank(&bank) {
                    tokio::spawn(async move { node.hint_reviewer_here(&bank).await });
                }
            }
        });
        let config = &self.inner.config;
        let link = match crate::routing::link::ActorLink::start(
            config.node.id,
            &config.cluster.secret,
            &config.advertise_addr(),
            handle,
        )
        .await
        {
            Ok(link) => link,
            Err(e) => {
                tracing::warn!(error = %e, "review hints go over the ReviewHint RPC only");
                return;
            }
        };
        if !self.inner.routes.set_link(link) {
            return;
        }
        let node = Arc::downgrade(&self.inner);
        self.raft_groups().on_link(Arc::new(move |pipe, label| {
            if let Some(link) = node
                .upgrade()
                .as_ref()
                .and_then(|inner| inner.routes.link())
            {
                link.accept(pipe, label);
            }
        }));
        let node = self.clone();
        self.inner.tasks.lock().push(tokio::spawn(async move {
            let mut tick = tokio::time::interval(crate::routing::link::DIAL_EVERY);
            loop {
                tick.tick().await;
                if let Some(link) = node.inner.routes.link() {
                    link.dial_missing(node.cluster()).await;
                }
            }
        }));
    }

    /// The actor link's sessions and traffic; `None` when it is not running.
    pub async fn link_status(&self) -> Option<crate::routing::link::LinkStatus> {
        Some(self.inner.routes.link()?.status().await)
    }

    /// The nodes to hand a request about `partition` to when this node holds no replica of it,
    /// in the placement table's order (the preferred leader first). `None` when this node
    /// serves it: it holds a replica, or there are no partitions.
    pub fn owners_elsewhere(
        &self,
        partition: Option<PartitionId>,
    ) -> Result<Option<Vec<Peer>>, NodeError> {
        self.inner
            .routes
            .owners_elsewhere(self.placement()?, partition)
    }

    /// This node's node-to-node service of the group `bank` lives in.
    pub(super) fn bank_service(&self, bank: &BankName) -> Result<RaftTransportService, NodeError> {
        self.inner.routes.bank_service(self.banks(), bank)
    }

    /// The node-to-node service (served on the gRPC port) and membership operations.
    pub fn cluster(&self) -> &RaftTransportService {
        self.inner.routes.cluster()
    }

    /// The node-to-node service of every Raft group hosted here, to mount on the gRPC port.
    pub fn raft_groups(&self) -> &RaftGroups {
        self.inner.routes.raft_groups()
    }

    /// The partition replicas placed on this node; `None` unless `cluster.partitions` is set.
    pub fn partitions(&self) -> Option<&Partitions> {
        self.inner.routes.partitions()
    }

    /// Which nodes replicate each partition, as this node's replica of the metadata group holds
    /// it; `None` before the first placement (or without partitions).
    pub fn placement(&self) -> Result<Option<PlacementTable>, NodeError> {
        self.banks()
            .metadata_reader()
            .placement()
            .map_err(NodeError::internal)
    }

    /// An operator's move of partition `p`'s replica from node `from` to node `to`, proposed
    /// through the metadata group; the table now in force. See [`Partitions::move_replica`].
    pub async fn move_partition(
        &self,
        p: PartitionId,
        from: u64,
        to: u64,
    ) -> Result<PlacementTable, NodeError> {
        let partitions = self.partitions().ok_or_else(|| {
            NodeError::FailedPrecondition(
                "this cluster has no partitions (cluster.partitions = 0): every node holds every bank"
                    .into(),
            )
        })?;
        partitions
            .move_replica(
                self.inner.banks.metadata_store(),
                self.inner.routes.cluster(),
                p,
                from,
                to,
            )
            .await
    }

    /// Whether this node belongs to a cluster (as a voter or a learner).
    pub fn is_member(&self) -> bool {
        self.inner.banks.is_member()
    }

    /// The partition `bank` lives in; `None` without partitions.
    pub fn partition_of_bank(&self, bank: &BankName) -> Option<PartitionId> {
        self.inner.banks.partition_of_bank(bank)
    }

    /// The partition memory `id` lives in; `None` without partitions.
    pub fn partition_of_memory(&self, id: MemoryId) -> Option<PartitionId> {
        self.inner.banks.partition_of_memory(id)
    }
}
