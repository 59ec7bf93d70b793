use std::io;

use hindsight_store::TypeConfig;
use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
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
        let reply = reply.map_err(|status| {
            // A peer that is down or cut off: openraft backs off instead of retrying at once.
            match status.code() {
                tonic::Code::Unavailable | tonic::Code::Cancelled => {
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
        self.call(Rpc::AppendEntries, &rpc, option).await
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
