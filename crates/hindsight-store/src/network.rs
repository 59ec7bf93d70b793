//! The Raft transport of a node with no peers. A single node never sends an RPC; should a peer ever
//! appear in its membership, every call reports `Unreachable`, which makes openraft back off instead
//! of retrying in a tight loop. The cluster transport replaces this behind the same trait.

use std::io;

use openraft::error::{InstallSnapshotError, RPCError, RaftError, Unreachable};
use openraft::network::RPCOption;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{BasicNode, RaftNetwork, RaftNetworkFactory};

use crate::type_config::TypeConfig;

/// Hands out [`UnreachablePeer`]s.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoPeersNetwork;

impl RaftNetworkFactory<TypeConfig> for NoPeersNetwork {
    type Network = UnreachablePeer;

    async fn new_client(&mut self, target: u64, node: &BasicNode) -> Self::Network {
        UnreachablePeer {
            target,
            addr: node.addr.clone(),
        }
    }
}

/// A peer this node has no transport to.
#[derive(Clone, Debug)]
pub struct UnreachablePeer {
    target: u64,
    addr: String,
}

impl UnreachablePeer {
    fn unreachable<E: std::error::Error>(&self) -> RPCError<u64, BasicNode, E> {
        let cause = io::Error::new(
            io::ErrorKind::NotConnected,
            format!(
                "no transport to node {} at {:?}: this store runs without a cluster network",
                self.target, self.addr
            ),
        );
        RPCError::Unreachable(Unreachable::new(&cause))
    }
}

impl RaftNetwork<TypeConfig> for UnreachablePeer {
    async fn append_entries(
        &mut self,
        _rpc: AppendEntriesRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<AppendEntriesResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        Err(self.unreachable())
    }

    async fn install_snapshot(
        &mut self,
        _rpc: InstallSnapshotRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<u64>,
        RPCError<u64, BasicNode, RaftError<u64, InstallSnapshotError>>,
    > {
        Err(self.unreachable())
    }

    async fn vote(
        &mut self,
        _rpc: VoteRequest<u64>,
        _option: RPCOption,
    ) -> Result<VoteResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        Err(self.unreachable())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn every_rpc_reports_unreachable() {
        let mut peer = NoPeersNetwork
            .new_client(2, &BasicNode::new("10.0.0.2:7400"))
            .await;
        let option = RPCOption::new(Duration::from_millis(100));
        let vote = VoteRequest::new(openraft::Vote::new(1, 1), None);
        let err = peer.vote(vote, option).await.unwrap_err();
        assert!(matches!(err, RPCError::Unreachable(_)), "{err}");
        assert!(err.to_string().contains("node 2"), "{err}");
    }
}
