use std::sync::Arc;
use std::time::Duration;

use hindsight_core::{Command, CommandOutcome};
use hindsight_store::{LeaderLink, LinkFuture, StoreError};

use crate::pb::{ProposeRequest, ReadIndexRequest};
use crate::peers::{not_taken, Peers};

/// How long a forwarded proposal may take: the leader's group commit and fsync, under load.
const PROPOSE_TIMEOUT: Duration = Duration::from_secs(30);
const READ_INDEX_TIMEOUT: Duration = Duration::from_secs(10);

/// [`LeaderLink`] over the cluster transport.
#[derive(Clone)]
pub struct GrpcLeaderLink {
    peers: Peers,
}

impl GrpcLeaderLink {
    pub fn new(peers: Peers) -> GrpcLeaderLink {
        GrpcLeaderLink { peers }
    }
}

fn refused(leader: u64, addr: &str, status: &tonic::Status) -> StoreError {
    if not_taken(status) {
        StoreError::NotLeader {
            leader_id: None,
            leader_addr: None,
        }
    } else {
        // The leader may or may not have applied it: say so rather than retry and apply it twice.
        StoreError::NoQuorum(format!(
            "the leader (node {leader} at {addr}) did not answer ({:?}: {}); the change may or may not have been applied",
            status.code(),
            status.message()
        ))
    }
}

impl LeaderLink for GrpcLeaderLink {
    fn propose(
        &self,
        leader: u64,
        addr: String,
        command: Arc<Command>,
    ) -> LinkFuture<(u64, CommandOutcome)> {
        let peers = self.peers.clone();
        Box::pin(async move {
            let command = bincode::serialize(&*command)
                .map_err(|e| StoreError::Internal(format!("encoding a command: {e}")))?;
            let mut client = peers.client(&addr).map_err(|e| StoreError::NotLeader {
                leader_id: Some(leader),
                leader_addr: Some(format!("{addr} ({e})")),
            })?;
            let request = peers.request(
                ProposeRequest {
                    target_node: leader,
                    group_id: peers.group_id(),
                    command,
                },
                Some(PROPOSE_TIMEOUT),
            );
            let reply = client
                .propose(request)
                .await
                .map_err(|status| refused(leader, &addr, &status))?
                .into_inner();
            let outcome: CommandOutcome = bincode::deserialize(&reply.outcome)
                .map_err(|e| StoreError::Internal(format!("decoding the leader's outcome: {e}")))?;
            Ok((reply.log_index, outcome))
        })
    }

    fn read_index(&self, leader: u64, addr: String) -> LinkFuture<u64> {
        let peers = self.peers.clone();
        Box::pin(async move {
            let mut client = peers.client(&addr).map_err(|_| StoreError::NotLeader {
                leader_id: Some(leader),
                leader_addr: Some(addr.clone()),
            })?;
            let request = peers.request(
                ReadIndexRequest {
                    target_node: leader,
                    group_id: peers.group_id(),
                },
                Some(READ_INDEX_TIMEOUT),
            );
            match client.read_index(request).await {
                Ok(reply) => Ok(reply.into_inner().read_index),
                // A read changes nothing, so a failure may be retried against the next leader;
                // only a refusal of the request itself is final.
                Err(status)
                    if !matches!(
                        status.code(),
                        tonic::Code::PermissionDenied
                            | tonic::Code::Unauthenticated
                            | tonic::Code::InvalidArgument
                    ) =>
                {
                    Err(StoreError::NotLeader {
                        leader_id: None,
                        leader_addr: None,
                    })
                }
                Err(status) => Err(StoreError::Internal(format!(
                    "the leader (node {leader} at {addr}) refused a read confirmation: {}",
                    status.message()
                ))),
            }
        })
    }
}
