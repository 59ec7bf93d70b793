//! The node's place in its Raft cluster: how it talks to peers, joining through a seed at start,
//! and the membership operations of the admin API.

use std::time::Duration;

use hindsight_cluster::{
    ClusterError, PeerTls, Peers, PeersConfig, RaftTransportService, TransportAuth,
};

use crate::config::NodeConfig;
use crate::error::NodeError;

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
pub(crate) fn spawn_join(cluster: &RaftTransportService, config: &NodeConfig) {
    let seeds = config.cluster.seeds();
    let id = config.node.id;
    if seeds.is_empty() || is_voter(cluster, id) {
        return;
    }
    let cluster = cluster.clone();
    let advertise = config.advertise_addr();
    tokio::spawn(async move {
        let mut round = 0u32;
        loop {
            for seed in &seeds {
                // A learner whose promotion was cut short (the leader failed) asks again.
                if is_voter(&cluster, id) {
                    return;
                }
                match cluster.join(seed, &advertise).await {
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

fn is_voter(cluster: &RaftTransportService, id: u64) -> bool {
    cluster
        .status()
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
            ClusterError::Internal(m) => NodeError::internal(m),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_prove_membership_with_the_cluster_secret_and_refuse_without_it_under_auth() {
        let mut config = NodeConfig::default();
        config.cluster.join = "10.0.0.1:7400".into();
        config.auth.enabled = true;
        config.cluster.secret = "s".repeat(32);
        let (_, auth) = peers(&config).unwrap();
        assert!(matches!(auth, TransportAuth::Secret(_)));
        config.cluster.secret.clear();
        config.cluster.join.clear();
        let (_, auth) = peers(&config).unwrap();
        assert!(
            matches!(auth, TransportAuth::Refused(ref why) if why.contains("cluster.secret")),
            "{auth:?}"
        );
    }
}
