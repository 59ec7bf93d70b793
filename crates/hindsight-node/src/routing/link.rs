//! The actor link: this node's actor system joined to its peers' with `ractor_cluster`, so that
//! an actor here can message an actor on another node.
//!
//! What goes over it is what may be lost: review hints. A follower that takes a write which
//! looks like a conflict sends the bank's name to the review inbox of the node leading the bank's
//! group, which hands it to that bank's reviewer actor. Requests, Raft traffic and anything a
//! client waits for stay on tonic, with deadlines and typed errors (crates/hindsight-cluster/
//! DESIGN.md says why). A hint the link cannot take (no session to the leader yet) goes over the
//! `ReviewHint` RPC instead, and a lost one is covered by the periodic review.
//!
//! The link's byte stream rides the node-to-node gRPC port (`hindsight_cluster::link`), so it
//! has the peers' TLS and authentication. Of each pair of members, the one with the higher id
//! dials, so two nodes hold one session between them. `ractor_cluster`'s own TCP listener, which
//! its node server always opens, binds an ephemeral loopback port and is not used; its
//! handshake still needs the cookie, derived from `cluster.secret`.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hindsight_cluster::RaftTransportService;
use hindsight_core::BankName;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use ractor_cluster::{
    BoxRead, BoxWrite, ClusterBidiStream, NodeServer, NodeServerMessage, RactorClusterMessage,
};
use sha2::{Digest, Sha256};
use tokio::io::DuplexStream;

use crate::error::NodeError;

/// How often a node looks for members it should hold a session with and has none.
pub(crate) const DIAL_EVERY: Duration = Duration::from_secs(2);
const SESSIONS_TIMEOUT_MS: u64 = 2_000;

/// Messages one node's actors send to another node's review inbox.
#[derive(RactorClusterMessage)]
pub enum LinkInboxMsg {
    /// A write taken on the sender looked like it contradicts a memory of this bank.
    ReviewHint(String),
}

/// Where hints that arrive over the link go: the node's own handling, which runs the bank's
/// reviewer only while this node leads the bank's group.
pub(crate) type HintHandler = Arc<dyn Fn(BankName) + Send + Sync>;

struct LinkInbox;

struct InboxState {
    handle: HintHandler,
    counters: Arc<LinkCounters>,
}

impl Actor for LinkInbox {
    type Msg = LinkInboxMsg;
    type State = InboxState;
    type Arguments = (String, HintHandler, Arc<LinkCounters>);

    async fn pre_start(
        &self,
        myself: ActorRef<LinkInboxMsg>,
        (address, handle, counters): (String, HintHandler, Arc<LinkCounters>),
    ) -> Result<InboxState, ActorProcessingErr> {
        ractor::pg::join(inbox_group(&address), vec![myself.get_cell()]);
        Ok(InboxState { handle, counters })
    }

    async fn handle(
        &self,
        _myself: ActorRef<LinkInboxMsg>,
        message: LinkInboxMsg,
        state: &mut InboxState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            LinkInboxMsg::ReviewHint(bank) => match bank.parse::<BankName>() {
                Ok(bank) => {
                    state
                        .counters
                        .hints_received
                        .fetch_add(1, Ordering::Relaxed);
                    metrics::counter!("hindsight_link_messages_total", "kind" => "review_hint", "direction" => "received").increment(1);
                    (state.handle)(bank);
                }
                Err(e) => tracing::debug!(bank, error = %e, "review hint over the link dropped"),
            },
        }
        Ok(())
    }
}

/// The process group a node's review inbox joins, named by the address the node advertises to
/// its peers (group membership is what the link shares between actor systems). An address, not
/// a node id: ids repeat across clusters, and process groups are shared by everything in one
/// process, such as the nodes of several test clusters.
fn inbox_group(address: &str) -> String {
    format!("hindsight/review-inbox/{address}")
}

/// The name a node's actor system gives itself in the handshake.
fn system_name(node_id: u64) -> String {
    format!("hindsight-{node_id}")
}

/// The node id in a peer's handshake name (`hindsight-<id>@host`).
fn node_of_system(name: &str) -> Option<u64> {
    name.split('@')
        .next()?
        .strip_prefix("hindsight-")?
        .parse()
        .ok()
}

/// The handshake cookie: the link is already authenticated by the gRPC layer, and this keeps
/// ractor_cluster's own loopback listener closed to anyone without the cluster's secret.
fn cookie(secret: &str) -> String {
    hex::encode(Sha256::digest(format!("hindsight actor link\0{secret}")))
}

#[derive(Default)]
pub(crate) struct LinkCounters {
    hints_sent: AtomicU64,
    hints_received: AtomicU64,
}

/// One end of a link's pipe, handed to the node server as an external transport.
struct LinkStream {
    pipe: DuplexStream,
    label: String,
}

impl ClusterBidiStream for LinkStream {
    fn split(self: Box<Self>) -> (BoxRead, BoxWrite) {
        let (read, write) = tokio::io::split(self.pipe);
        (Box::new(read), Box::new(write))
    }

    fn peer_label(&self) -> Option<String> {
        Some(self.label.clone())
    }
}

/// This node's side of the actor link.
pub struct ActorLink {
    node_id: u64,
    server: ActorRef<NodeServerMessage>,
    inbox: ActorRef<LinkInboxMsg>,
    counters: Arc<LinkCounters>,
}

/// What the link of a node reports about itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkStatus {
    /// Members this node holds an authenticated session with.
    pub linked_nodes: Vec<u64>,
    pub hints_sent: u64,
    pub hints_received: u64,
}

impl ActorLink {
    pub(crate) async fn start(
        node_id: u64,
        secret: &str,
        advertise: &str,
        handle: HintHandler,
    ) -> Result<ActorLink, NodeError> {
        let hostname = advertise.rsplit_once(':').map_or(advertise, |(h, _)| h);
        let failed = |e: &dyn std::fmt::Display| {
            NodeError::internal(format!("cannot start the actor link: {e}"))
        };
        let server = NodeServer::new(
            0,
            cookie(secret),
            system_name(node_id),
            hostname.to_string(),
            None,
            Some(ractor_cluster::node::NodeConnectionMode::Isolated),
        )
        .with_listen_addr(IpAddr::V4(Ipv4Addr::LOCALHOST));
        let (server, _) = Actor::spawn(None, server, ())
            .await
            .map_err(|e| failed(&e))?;
        let counters = Arc::new(LinkCounters::default());
        let inbox = match Actor::spawn(
            None,
            LinkInbox,
            (advertise.to_string(), handle, counters.clone()),
        )
        .await
        {
            Ok((inbox, _)) => inbox,
            Err(e) => {
                server.stop(None);
                return Err(failed(&e));
            }
        };
        Ok(ActorLink {
            node_id,
            server,
            inbox,
            counters,
        })
    }

    /// Takes a link a peer opened to this node.
    pub(crate) fn accept(&self, pipe: DuplexStream, label: String) {
        self.open(pipe, label, true);
    }

    fn open(&self, pipe: DuplexStream, label: String, is_server: bool) {
        let stream = Box::new(LinkStream { pipe, label });
        if let Err(e) = self
            .server
            .cast(NodeServerMessage::ConnectionOpenedExternal { stream, is_server })
        {
            tracing::debug!(error = %e, "actor link session not opened");
        }
    }

    /// Members with an authenticated session to this node, and members being connected (their
    /// dialed session still in its handshake).
    async fn sessions(&self) -> (BTreeSet<u64>, BTreeSet<u64>) {
        let mut linked = BTreeSet::new();
        let mut pending = BTreeSet::new();
        let Ok(sessions) = ractor::call_t!(
            self.server,
            NodeServerMessage::GetSessions,
            SESSIONS_TIMEOUT_MS
        ) else {
            return (linked, pending);
        };
        for session in sessions.values() {
            match session
                .peer_name
                .as_ref()
                .and_then(|n| node_of_system(&n.name))
            {
                Some(id) => {
                    linked.insert(id);
                }
                None => {
                    if let Some(id) = session
                        .peer_addr
                        .strip_prefix("node-")
                        .and_then(|id| id.parse().ok())
                    {
                        pending.insert(id);
                    }
                }
            }
        }
        (linked, pending)
    }

    /// Dials every member with a lower id that this node holds no session with.
    pub(crate) async fn dial_missing(&self, cluster: &RaftTransportService) {
        let (linked, pending) = self.sessions().await;
        let members = cluster.status().members;
        for member in members {
            let id = member.node_id;
            if id >= self.node_id || linked.contains(&id) || pending.contains(&id) {
                continue;
            }
            match cluster.dial_link(id, &member.address).await {
                Ok(pipe) => self.open(pipe, format!("node-{id}"), false),
                Err(e) => tracing::debug!(peer = id, error = %e, "actor link not opened"),
            }
        }
    }

    /// Sends a review hint for `bank` to the review inbox of the node advertised at
    /// `leader_address` over the link; false when no session reaches that node.
    pub(crate) fn send_review_hint(&self, leader_address: &str, bank: &BankName) -> bool {
        let remote = ractor::pg::get_members(&inbox_group(leader_address))
            .into_iter()
            .find(|cell| !cell.get_id().is_local());
        let Some(remote) = remote else {
            return false;
        };
        let sent = ActorRef::<LinkInboxMsg>::from(remote)
            .cast(LinkInboxMsg::ReviewHint(bank.to_string()))
            .is_ok();
        if sent {
            self.counters.hints_sent.fetch_add(1, Ordering::Relaxed);
            metrics::counter!("hindsight_link_messages_total", "kind" => "review_hint", "direction" => "sent").increment(1);
        }
        sent
    }

    pub async fn status(&self) -> LinkStatus {
        let (linked, _) = self.sessions().await;
        LinkStatus {
            linked_nodes: linked.into_iter().collect(),
            hints_sent: self.counters.hints_sent.load(Ordering::Relaxed),
            hints_received: self.counters.hints_received.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn stop(&self) {
        self.inbox.stop(None);
        self.server.stop(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_is_known_by_the_name_its_actor_system_gives() {
        assert_eq!(node_of_system(&system_name(12)), Some(12));
        assert_eq!(node_of_system("hindsight-3@10.0.0.3"), Some(3));
        assert_eq!(node_of_system("other-3@host"), None);
        assert_eq!(node_of_system("hindsight-x@host"), None);
    }

    #[test]
    fn the_cookie_depends_on_the_secret_and_does_not_reveal_it() {
        assert_ne!(cookie("a"), cookie("b"));
        assert!(!cookie("secret").contains("secret"));
    }
}
