//! The node's place in its Raft cluster: how it talks to peers, joining through a seed at start,
//! and the membership operations of the admin API.

use std::time::Duration;

use hindsight_cluster::{ClusterError, ClusterStatus, PeerTls, Peers, PeersConfig, TransportAuth};

use crate::config::NodeConfig;
use crate::error::NodeError;
use crate::node::Node;

/// How long a leaving node's partitions may take to move off it (each move may need a snapshot
/// sent to the new replica) before the removal answers that it is not finished.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(300);

/// Pause between rounds of asking the seeds to add this node.
const JOIN_RETRY: Duration = Duration::from_secs(1);

/// The peer connections and who may call this node's node-to-node service.
pub(crate) fn peers(config: &NodeConfig) -> Result<(Peers, TransportAuth), NodeError> {
    let secret = (!config.cluster.secret.is_empty()).then(|| config.cluster.secret.clone());
    let tls = if config.tls.enabled() && !config.cluster_ca_file().is_empty() {
        let read = |path: &str| {
            std::fs::read(path).map_err(|e| NodeError::Config(format!("cannot read {path}: {e}")))
        };
        Some(PeerTls {
            ca_pem: read(config.cluster_ca_file())?,
            identity: Some((read(&config.tls.cert_file)?, read(&config.tls.key_file)?)),
        })
    } else {
        None
    };
    // Peers prove membership with the cluster secret alone. A client certificate is not enough,
    // even from the cluster's CA: `tls.client_ca_file` also signs the API's clients, and a
    // tenant's certificate must never be able to propose Raft entries.
    let mutual_tls = config.tls.enabled() && !config.tls.client_ca_file.is_empty();
    let auth = match (&secret, config.auth.enabled || mutual_tls) {
        (Some(secret), _) => TransportAuth::Secret(secret.clone()),
        (None, false) => TransportAuth::Open,
        (None, true) => TransportAuth::Refused(
            "node-to-node calls are authenticated by the cluster secret, which this node does not have: it refuses them until $HINDSIGHT_CLUSTER_SECRET (cluster.secret) is set, the same on every node".into(),
        ),
    };
    if matches!(auth, TransportAuth::Open) && !config.cluster.seeds().is_empty() {
        tracing::warn!("node-to-node calls are not authenticated (no $HINDSIGHT_CLUSTER_SECRET, no mutual TLS): anyone who reaches the gRPC port can send Raft messages");
    }
    Ok((
        Peers::new(PeersConfig {
            group_id: 0,
            secret,
            tls,
            source_ip: config.cluster.source_ip.parse().ok(),
        }),
        auth,
    ))
}

/// When `cluster.join` names seeds and this node is not a member yet, keeps asking them (in
/// turn) to add it until one does. Runs in the background: the leader replicates the log to this
/// node while adding it, which needs this node's server up.
pub(crate) fn spawn_join(node: &Node) {
    let seeds = node.config().cluster.seeds();
    if seeds.is_empty() || is_voter(node) {
        return;
    }
    let node = node.clone();
    let advertise = node.config().advertise_addr();
    tokio::spawn(async move {
        let mut round = 0u32;
        loop {
            for seed in &seeds {
                // A learner whose promotion was cut short (the leader failed) asks again.
                if is_voter(&node) {
                    return;
                }
                match node.cluster().join(seed, &advertise).await {
                    Ok(status) => {
                        tracing::info!(seed = %seed, leader = ?status.leader_id, "joined the cluster");
                        return;
                    }
                    Err(ClusterError::InvalidArgument(why)) => {
                        // A refusal, not an outage: asking again would get the same answer.
                        tracing::error!(seed = %seed, error = %why, "the cluster refused this node; fix its configuration and restart it");
                        return;
                    }
                    Err(e) if round.is_multiple_of(10) => {
                        tracing::warn!(seed = %seed, error = %e, "could not join the cluster yet; retrying")
                    }
                    Err(e) => tracing::debug!(seed = %seed, error = %e, "join attempt failed"),
                }
            }
            round = round.wrapping_add(1);
            tokio::time::sleep(JOIN_RETRY).await;
        }
    });
}

fn is_voter(node: &Node) -> bool {
    let id = node.config().node.id;
    node.cluster_status()
        .members
        .iter()
        .any(|m| m.node_id == id && m.voter)
}

impl From<ClusterError> for NodeError {
    fn from(error: ClusterError) -> Self {
        match error {
            ClusterError::InvalidArgument(m) => NodeError::FailedPrecondition(m),
            ClusterError::PermissionDenied(m) => NodeError::PermissionDenied(m),
            ClusterError::NotLeader { message } | ClusterError::Unavailable(message) => {
                NodeError::Unavailable(message)
            }
            ClusterError::Internal(m) => NodeError::Internal(m),
        }
    }
}

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
                    .drain(self.metadata_store(), self.cluster(), id, DRAIN_TIMEOUT)
                    .await?;
            }
        }
        Ok(self.cluster().remove_member(id).await?)
    }
}
