//! Node-to-node traffic of Hindsight's Raft group, over gRPC (tonic):
//!
//! - [`GrpcNetwork`]: openraft's network — AppendEntries, Vote and snapshot chunks;
//! - [`GrpcLeaderLink`]: a follower's way to the leader, for proposals and linearizable reads;
//! - [`RaftTransportService`]: the server side of both, plus membership changes and status;
//! - [`RaftGroups`]: the node's one gRPC service, routing each message to the service of the
//!   Raft group it names, and carrying the actor link between nodes (`Link`, see `link.rs`).
//!
//! Every message names the node it is for, and a node refuses one addressed to another id. A
//! shared secret (or mutual TLS) authenticates the traffic; see `DESIGN.md` next to this crate.

mod error;
mod groups;
mod leader_link;
mod link;
mod membership;
mod network;
mod peers;
mod service;

pub mod pb {
    tonic::include_proto!("hindsight.cluster.v1");
}

pub use error::ClusterError;
pub use groups::RaftGroups;
pub use leader_link::GrpcLeaderLink;
pub use link::{LinkFrames, LinkSink};
pub use membership::{ClusterMember, ClusterStatus};
pub use network::GrpcNetwork;
pub use peers::{is_connect_error, PeerTls, Peers, PeersConfig, SECRET_HEADER};
pub use service::{group_status_at, RaftTransportService, ReviewHintSink, TransportAuth};

/// Whether `addr` is `HOST:PORT` with a non-empty host (a name or an IP) and a valid port: the
/// form of a member's address in the membership, in `cluster.join` and in a join request.
pub fn is_host_port(addr: &str) -> bool {
    addr.rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok())
}

/// The largest node-to-node message: an AppendEntries carries up to 16 entries of about a
/// group-commit batch each (4 MiB, vectors included: a write's entry carries 2 KiB a memory at 512
/// dimensions; more entries than fit go in several messages), a forwarded proposal one such
/// batch, and a snapshot chunk 1 MiB.
pub const MAX_MESSAGE_BYTES: usize = 96 * 1024 * 1024;

#[cfg(test)]
mod tests {
    use super::is_host_port;

    #[test]
    fn host_port_needs_a_host_and_a_valid_port() {
        for good in ["127.0.0.1:7400", "hindsight-1:7400", "[::1]:7400"] {
            assert!(is_host_port(good), "{good}");
        }
        for bad in ["hindsight-1", ":7400", "host:", "host:99999", "host:port"] {
            assert!(!is_host_port(bad), "{bad}");
        }
    }
}
