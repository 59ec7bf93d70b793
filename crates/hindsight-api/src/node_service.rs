use hindsight_node::Node;
use tonic::{Request, Response, Status};

use hindsight_core::auth::Grant;

use crate::access::{principal, require_global_admin};
use crate::pb;
use crate::pb::node_service_server::NodeService;
use crate::status::{from_node, invalid};
use crate::ServerStatus;

/// `hindsight.v1.NodeService` over a node.
#[derive(Clone)]
pub struct NodeApi {
    node: Node,
}

impl NodeApi {
    pub fn new(node: Node) -> Self {
        NodeApi { node }
    }
}

#[tonic::async_trait]
impl NodeService for NodeApi {
    async fn status(
        &self,
        request: Request<pb::StatusRequest>,
    ) -> Result<Response<pb::StatusResponse>, Status> {
        principal(&self.node, &request)?;
        let status = ServerStatus {
            node: self.node.status(),
            ready: self.node.is_ready(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        };
        Ok(Response::new((&status).into()))
    }

    async fn create_api_key(
        &self,
        request: Request<pb::CreateApiKeyRequest>,
    ) -> Result<Response<pb::CreateApiKeyResponse>, Status> {
        let caller = principal(&self.node, &request)?;
        require_global_admin(&caller)?;
        let request = request.into_inner();
        let grants = request
            .grants
            .iter()
            .map(|g| g.parse::<Grant>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(invalid)?;
        let issued = self
            .node
            .create_api_key(&request.principal, grants)
            .await
            .map_err(from_node)?;
        tracing::info!(id = %issued.record.id, principal = %issued.record.principal, by = %caller.name, "API key created");
        Ok(Response::new(pb::CreateApiKeyResponse {
            key: issued.key,
            info: Some((&issued.record).into()),
        }))
    }

    async fn revoke_api_key(
        &self,
        request: Request<pb::RevokeApiKeyRequest>,
    ) -> Result<Response<pb::ApiKeyInfo>, Status> {
        let caller = principal(&self.node, &request)?;
        require_global_admin(&caller)?;
        let id = request.into_inner().id;
        let key = self.node.revoke_api_key(&id).await.map_err(from_node)?;
        tracing::info!(%id, by = %caller.name, "API key revoked");
        Ok(Response::new((&key).into()))
    }

    async fn list_api_keys(
        &self,
        request: Request<pb::ListApiKeysRequest>,
    ) -> Result<Response<pb::ListApiKeysResponse>, Status> {
        let caller = principal(&self.node, &request)?;
        require_global_admin(&caller)?;
        let keys = self.node.api_keys().map_err(from_node)?;
        Ok(Response::new(pb::ListApiKeysResponse {
            keys: keys.iter().map(pb::ApiKeyInfo::from).collect(),
        }))
    }

    async fn cluster_status(
        &self,
        request: Request<pb::ClusterStatusRequest>,
    ) -> Result<Response<pb::ClusterStatusResponse>, Status> {
        require_global_admin(&principal(&self.node, &request)?)?;
        Ok(Response::new(
            cluster_status(&self.node, self.node.cluster_status()).await,
        ))
    }

    async fn init_cluster(
        &self,
        request: Request<pb::InitClusterRequest>,
    ) -> Result<Response<pb::ClusterStatusResponse>, Status> {
        let caller = principal(&self.node, &request)?;
        require_global_admin(&caller)?;
        let status = self.node.init_cluster().await.map_err(from_node)?;
        tracing::info!(by = %caller.name, "cluster initialised");
        Ok(Response::new(cluster_status(&self.node, status).await))
    }

    async fn join_cluster(
        &self,
        request: Request<pb::JoinClusterRequest>,
    ) -> Result<Response<pb::ClusterStatusResponse>, Status> {
        let caller = principal(&self.node, &request)?;
        require_global_admin(&caller)?;
        let seed = request.into_inner().seed;
        if !hindsight_cluster::is_host_port(&seed) {
            return Err(Status::invalid_argument(format!(
                "seed {seed:?} is not HOST:PORT of a cluster member"
            )));
        }
        let status = self.node.join_cluster(&seed).await.map_err(from_node)?;
        tracing::info!(%seed, by = %caller.name, "joined a cluster");
        Ok(Response::new(cluster_status(&self.node, status).await))
    }

    async fn remove_member(
        &self,
        request: Request<pb::RemoveMemberRequest>,
    ) -> Result<Response<pb::ClusterStatusResponse>, Status> {
        let caller = principal(&self.node, &request)?;
        require_global_admin(&caller)?;
        let id = request.into_inner().node_id;
        if id == 0 {
            return Err(Status::invalid_argument("node_id must be at least 1"));
        }
        let status = self.node.remove_member(id).await.map_err(from_node)?;
        tracing::info!(node = id, by = %caller.name, "member removed");
        Ok(Response::new(cluster_status(&self.node, status).await))
    }

    async fn list_partitions(
        &self,
        request: Request<pb::ListPartitionsRequest>,
    ) -> Result<Response<pb::ListPartitionsResponse>, Status> {
        require_global_admin(&principal(&self.node, &request)?)?;
        list_partitions(&self.node).map(Response::new)
    }

    async fn move_partition(
        &self,
        request: Request<pb::MovePartitionRequest>,
    ) -> Result<Response<pb::ListPartitionsResponse>, Status> {
        let caller = principal(&self.node, &request)?;
        require_global_admin(&caller)?;
        let pb::MovePartitionRequest {
            partition,
            from_node: from,
            to_node: to,
        } = request.into_inner();
        if from == 0 || to == 0 {
            return Err(Status::invalid_argument(
                "from_node and to_node must both be node ids (at least 1)",
            ));
        }
        if from == to {
            return Err(Status::invalid_argument(format!(
                "from_node and to_node both name node {from}: a move needs two nodes"
            )));
        }
        self.node
            .move_partition(partition, from, to)
            .await
            .map_err(from_node)?;
        tracing::info!(partition, from, to, by = %caller.name, "partition move asked for");
        list_partitions(&self.node).map(Response::new)
    }
}

async fn cluster_status(
    node: &Node,
    s: hindsight_cluster::ClusterStatus,
) -> pb::ClusterStatusResponse {
    let link = node.link_status().await.unwrap_or_default();
    let table = node.placement().ok().flatten();
    let partitions = match (node.partitions(), &table) {
        (Some(partitions), Some(table)) => (0..table.partition_count())
            .map(|p| {
                let here = partitions.status(p);
                pb::PartitionStatus {
                    partition: p,
                    replicas: table.replicas(p).to_vec(),
                    hosted: here.is_some(),
                    leader_id: here.as_ref().and_then(|s| s.leader_id),
                    applied_index: here.as_ref().and_then(|s| s.applied_index),
                    voters: here
                        .map(|s| s.voters().into_iter().collect())
                        .unwrap_or_default(),
                }
            })
            .collect(),
        _ => vec![],
    };
    pb::ClusterStatusResponse {
        linked_nodes: link.linked_nodes,
        link_hints_sent: link.hints_sent,
        link_hints_received: link.hints_received,
        placement_version: table.map(|t| t.version),
        partitions,
        node_id: s.node_id,
        leader_id: s.leader_id,
        term: s.term,
        state: s.state,
        last_log_index: s.last_log_index,
        committed_index: s.committed_index,
        applied_index: s.applied_index,
        millis_since_quorum_ack: s.millis_since_quorum_ack,
        members: s.members.into_iter().map(member).collect(),
    }
}

fn member(m: hindsight_cluster::ClusterMember) -> pb::ClusterMember {
    pb::ClusterMember {
        node_id: m.node_id,
        address: m.address,
        voter: m.voter,
        lag: m.lag,
        reachable: m.reachable,
        millis_since_ack: m.millis_since_ack,
    }
}

/// The placement table and this node's view of the partitions it holds.
fn list_partitions(node: &Node) -> Result<pb::ListPartitionsResponse, Status> {
    let Some(partitions) = node.partitions() else {
        return Err(Status::failed_precondition(
            "this cluster has no partitions (cluster.partitions = 0): every node holds every bank",
        ));
    };
    let table = node.placement().map_err(from_node)?;
    let infos = table
        .iter()
        .flat_map(|table| {
            (0..table.partition_count()).map(move |p| {
                let here = partitions.status(p);
                let (voters, learners) = here
                    .as_ref()
                    .map(|s| {
                        let voters: Vec<u64> = s.voters().into_iter().collect();
                        let learners = s
                            .members
                            .iter()
                            .filter(|m| !m.voter)
                            .map(|m| m.node_id)
                            .collect();
                        (voters, learners)
                    })
                    .unwrap_or_default();
                pb::PartitionInfo {
                    partition: p,
                    replicas: table.replicas(p).to_vec(),
                    hosted: here.is_some(),
                    leader_id: here.as_ref().and_then(|s| s.leader_id),
                    voters,
                    learners,
                    applied_index: here.as_ref().and_then(|s| s.applied_index),
                    moving: partitions.moving(p, table),
                }
            })
        })
        .collect();
    Ok(pb::ListPartitionsResponse {
        node_id: node.status().node_id,
        placement_version: table.as_ref().map(|t| t.version),
        partitions: infos,
    })
}
