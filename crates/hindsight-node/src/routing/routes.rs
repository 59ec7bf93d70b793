//! Where a request about a bank or a partition goes: the Raft groups this node hosts, the
//! partition replicas placed here, the node-to-node service of each, and the actor link to peers.

use std::sync::{Arc, OnceLock};

use hindsight_cluster::{RaftGroups, RaftTransportService};
use hindsight_core::placement::{PartitionId, PlacementTable};
use hindsight_core::BankName;

use super::link::ActorLink;
use crate::bank::partitions::Partitions;
use crate::bank::Banks;
use crate::error::NodeError;

pub(crate) struct Routes {
    /// Node-to-node service and membership operations of the metadata group.
    cluster: RaftTransportService,
    /// Every group this node hosts, behind its one node-to-node gRPC service.
    raft_groups: RaftGroups,
    /// The partition replicas placed here, when `cluster.partitions` is set.
    partitions: Option<Arc<Partitions>>,
    /// Joins this node's actor system to its peers' (see link.rs); set once the node runs.
    link: OnceLock<ActorLink>,
}

/// Another node that serves a group: its id and the address of its gRPC port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    pub id: u64,
    pub address: String,
}

impl Routes {
    pub(crate) fn new(
        cluster: RaftTransportService,
        raft_groups: RaftGroups,
        partitions: Option<Arc<Partitions>>,
    ) -> Self {
        Routes {
            cluster,
            raft_groups,
            partitions,
            link: OnceLock::new(),
        }
    }

    pub(crate) fn cluster(&self) -> &RaftTransportService {
        &self.cluster
    }

    pub(crate) fn raft_groups(&self) -> &RaftGroups {
        &self.raft_groups
    }

    /// The partition replicas placed on this node, whether or not they are active yet.
    pub(crate) fn placed_partitions(&self) -> Option<&Arc<Partitions>> {
        self.partitions.as_ref()
    }

    /// The partition replicas placed on this node; `None` unless `cluster.partitions` is set.
    pub(crate) fn partitions(&self) -> Option<&Partitions> {
        self.partitions.as_deref().filter(|p| p.active())
    }

    pub(crate) fn link(&self) -> Option<&ActorLink> {
        self.link.get()
    }

    /// Keeps the link once it runs; false when one was already set.
    pub(crate) fn set_link(&self, link: ActorLink) -> bool {
        self.link.set(link).is_ok()
    }

    /// This node's node-to-node service of the group `bank` lives in.
    pub(crate) fn bank_service(
        &self,
        banks: &Banks,
        bank: &BankName,
    ) -> Result<RaftTransportService, NodeError> {
        match (banks.partition_of_bank(bank), self.partitions()) {
            (Some(p), Some(partitions)) => partitions.service(p).ok_or_else(|| {
                NodeError::Unavailable(format!(
                    "bank {bank} lives in partition {p}, which this node holds no replica of"
                ))
            }),
            _ => Ok(self.cluster.clone()),
        }
    }

    /// The leader of the group `bank` lives in, when another node leads it; `None` when this
    /// node does.
    pub(crate) fn bank_leader(
        &self,
        banks: &Banks,
        bank: &BankName,
    ) -> Result<Option<Peer>, NodeError> {
        let leader = self
            .bank_service(banks, bank)?
            .other_leader()
            .map_err(|e| NodeError::Unavailable(e.to_string()))?;
        Ok(leader.map(|(id, address)| Peer { id, address }))
    }

    /// The nodes to hand a request about `partition` to when this node holds no replica of it,
    /// in the placement table's order (the preferred leader first). `None` when this node
    /// serves it: it holds a replica, or there are no partitions.
    pub(crate) fn owners_elsewhere(
        &self,
        placement: Option<PlacementTable>,
        partition: Option<PartitionId>,
    ) -> Result<Option<Vec<Peer>>, NodeError> {
        let (Some(p), Some(partitions)) = (partition, self.partitions()) else {
            return Ok(None);
        };
        if partitions.store(p).is_some() {
            return Ok(None);
        }
        let table = placement.ok_or_else(|| {
            NodeError::Unavailable(
                "the cluster has not placed its partitions yet; try again in a moment".into(),
            )
        })?;
        let members = self.cluster.status().members;
        let owners: Vec<Peer> = table
            .replicas(p)
            .iter()
            .filter_map(|id| {
                members.iter().find(|m| m.node_id == *id).map(|m| Peer {
                    id: *id,
                    address: m.address.clone(),
                })
            })
            .collect();
        if owners.is_empty() {
            return Err(NodeError::Unavailable(format!(
                "no node of the cluster holds partition {p} now"
            )));
        }
        Ok(Some(owners))
    }
}

#[cfg(test)]
mod tests {
    use hindsight_cluster::{Peers, PeersConfig, TransportAuth};

    use super::*;
    use crate::bank::testing::SmallRuntime;

    fn routes_of(runtime: &SmallRuntime) -> Routes {
        let store = runtime.banks.metadata_store();
        let cluster = RaftTransportService::new(
            store.raft().clone(),
            store.proposer().clone(),
            1,
            Peers::new(PeersConfig::default()),
            TransportAuth::Open,
        );
        Routes::new(cluster, RaftGroups::new(1, TransportAuth::Open), None)
    }

    #[tokio::test]
    async fn a_node_that_leads_the_group_keeps_the_request() {
        let runtime = SmallRuntime::start().await;
        let routes = routes_of(&runtime);
        let bank: BankName = "team/notes".parse().unwrap();
        assert_eq!(routes.bank_leader(&runtime.banks, &bank).unwrap(), None);
    }

    #[tokio::test]
    async fn without_partitions_no_request_goes_elsewhere() {
        let runtime = SmallRuntime::start().await;
        let routes = routes_of(&runtime);
        assert!(routes.partitions().is_none());
        assert_eq!(routes.owners_elsewhere(None, Some(3)).unwrap(), None);
        assert_eq!(routes.owners_elsewhere(None, None).unwrap(), None);
    }
}
