use std::io;

use hindsight_store::TypeConfig;
use openraft::error::{
    InstallSnapshotError, NetworkError, PayloadTooLarge, RPCError, RaftError, RemoteError,
    Unreachable,
};
use openraft::network::RPCOption;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{BasicNode, RaftNetwork, RaftNetworkFactory};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::pb::RaftMessage;
use crate::peers::Peers;
use crate::MAX_MESSAGE_BYTES;

/// openraft's network over gRPC: one [`GrpcPeer`] per target node.
#[derive(Clone)]
pub struct GrpcNetwork {
    peers: Peers,
}

impl GrpcNetwork {
    pub fn new(peers: Peers) -> GrpcNetwork {
        GrpcNetwork { peers }
    }
}

impl RaftNetworkFactory<TypeConfig> for GrpcNetwork {
    type Network = GrpcPeer;

    async fn new_client(&mut self, target: u64, node: &BasicNode) -> Self::Network {
        GrpcPeer {
            target,
            addr: node.addr.clone(),
            peers: self.peers.clone(),
        }
    }
}

/// The connection to one peer.
pub struct GrpcPeer {
    target: u64,
    addr: String,
    peers: Peers,
}

#[derive(Clone, Copy)]
enum Rpc {
    AppendEntries,
    Vote,
    InstallSnapshot,
}

type RpcResult<T, E> = Result<T, RPCError<u64, BasicNode, RaftError<u64, E>>>;

impl GrpcPeer {
    async fn call<Req, Resp, E>(
        &self,
        rpc: Rpc,
        request: &Req,
        option: RPCOption,
    ) -> RpcResult<Resp, E>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        let payload = bincode::serialize(request).map_err(|e| network_error(&e))?;
        self.send(rpc, payload, option).await
    }

    async fn send<Resp, E>(
        &self,
        rpc: Rpc,
        payload: Vec<u8>,
        option: RPCOption,
    ) -> RpcResult<Resp, E>
    where
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        self.peers.calling(self.target);
        let message = RaftMessage {
            target_node: self.target,
            group_id: self.peers.group_id(),
            payload,
        };
        let mut client = self
            .peers
            .client(&self.addr)
            .map_err(|e| RPCError::Unreachable(Unreachable::new(&e)))?;
        let request = self.peers.request(message, Some(option.hard_ttl()));
        let reply = match rpc {
            Rpc::AppendEntries => client.append_entries(request).await,
            Rpc::Vote => client.vote(request).await,
            Rpc::InstallSnapshot => client.install_snapshot(request).await,
        };
        if reply.is_ok() {
            self.peers.answered(self.target);
        }
        let reply = reply.map_err(|status| {
            // A peer that is down or cut off: openraft backs off instead of retrying at once.
            // A late answer is not that. The call's deadline is one heartbeat interval (100 ms),
            // and a busy follower misses it now and then (all three nodes of the cluster bench
            // building a snapshot at once, on two cores): counted as unreachable, both followers
            // were left alone for openraft's 500 ms backoff, and no write could commit meanwhile
            // (write p99 743 ms). As a network error it is retried at the next turn.
            match status.code() {
                tonic::Code::Unavailable => {
                    RPCError::Unreachable(Unreachable::new(&status_error(&status)))
                }
                _ => network_error(&status_error(&status)),
            }
        })?;
        let answer: Result<Resp, RaftError<u64, E>> =
            bincode::deserialize(&reply.into_inner().payload).map_err(|e| network_error(&e))?;
        answer.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

/// Room left in a node-to-node message for an AppendEntries' encoded request, below
/// [`MAX_MESSAGE_BYTES`] by the envelope (target, group, gRPC framing).
const MAX_APPEND_BYTES: usize = MAX_MESSAGE_BYTES - 64 * 1024;

/// When `entries` entries encode to `bytes`, more than one message may carry: how many to send
/// at once instead. One entry always goes alone: it is at most a group-commit batch (4 MiB) plus
/// one command (a client request of at most 16 MiB with its vectors), far below the limit.
fn entries_that_fit(entries: usize, bytes: usize) -> Option<usize> {
    if bytes <= MAX_APPEND_BYTES || entries <= 1 {
        return None;
    }
    let fit = (entries as u128 * MAX_APPEND_BYTES as u128 / bytes as u128) as usize;
    Some(fit.clamp(1, entries - 1))
}

fn network_error<E: std::error::Error + 'static, Inner: std::error::Error>(
    error: &E,
) -> RPCError<u64, BasicNode, Inner> {
    RPCError::Network(NetworkError::new(error))
}

fn status_error(status: &tonic::Status) -> io::Error {
    io::Error::other(format!("{:?}: {}", status.code(), status.message()))
}

impl RaftNetwork<TypeConfig> for GrpcPeer {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        let payload = bincode::serialize(&rpc).map_err(|e| network_error(&e))?;
        if let Some(fit) = entries_that_fit(rpc.entries.len(), payload.len()) {
            // Entries carry writes' vectors, so a full AppendEntries can pass the transport's
            // limit: openraft sends fewer at once and retries straight away.
            return Err(RPCError::PayloadTooLarge(
                PayloadTooLarge::new_entries_hint(fit as u64),
            ));
        }
        self.send(Rpc::AppendEntries, payload, option).await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<u64>,
        RPCError<u64, BasicNode, RaftError<u64, InstallSnapshotError>>,
    > {
        self.call(Rpc::InstallSnapshot, &rpc, option).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        option: RPCOption,
    ) -> Result<VoteResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        self.call(Rpc::Vote, &rpc, option).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_append_over_the_message_limit_is_split_by_entries() {
        assert_eq!(entries_that_fit(16, 4 << 20), None);
        assert_eq!(
            entries_that_fit(1, 500 << 20),
            None,
            "one entry goes as it is"
        );
        // 16 entries of 8 MiB: 128 MiB, about 11 fit in 96 MiB.
        let fit = entries_that_fit(16, 16 * (8 << 20)).unwrap();
        assert_eq!(fit, 11);
        assert!(fit * (8 << 20) <= MAX_APPEND_BYTES);
        assert_eq!(entries_that_fit(2, 1 << 30), Some(1));
    }
}
