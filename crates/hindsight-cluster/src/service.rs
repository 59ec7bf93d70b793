use std::sync::Arc;
use std::time::Duration;

use hindsight_core::{BankName, Command};
use hindsight_store::{Proposer, StoreError, TypeConfig};
use openraft::error::{CheckIsLeaderError, RaftError};
use openraft::raft::{AppendEntriesRequest, InstallSnapshotRequest, VoteRequest};
use openraft::{BasicNode, Raft, ServerState};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tonic::{Request, Response, Status};

use crate::error::ClusterError;
use crate::membership::{self, ClusterStatus};
use crate::pb::raft_transport_server::{RaftTransport, RaftTransportServer};
use crate::pb::{
    AddMemberRequest, ClusterStatusReply, ClusterStatusRequest, ProposeReply, ProposeRequest,
    RaftMessage, RaftReply, ReadIndexReply, ReadIndexRequest, RemoveMemberRequest, ReviewHintReply,
    ReviewHintRequest,
};
use crate::peers::{Peers, SECRET_HEADER};
use crate::MAX_MESSAGE_BYTES;

/// How long the leader may take to confirm a read with a quorum.
const READ_INDEX_TIMEOUT: Duration = Duration::from_secs(5);
/// Adding a learner waits for it to catch up, which may take a snapshot transfer.
const MEMBERSHIP_TIMEOUT: Duration = Duration::from_secs(120);
/// A review hint is worth little once late: the periodic review catches up anyway.
const REVIEW_HINT_TIMEOUT: Duration = Duration::from_secs(5);

/// Where the leader's service hands the review hints other members send it.
pub type ReviewHintSink = Arc<dyn Fn(BankName) + Send + Sync>;

/// Who may send node-to-node traffic.
#[derive(Clone, Debug, Default)]
pub enum TransportAuth {
    /// Anyone who can reach the port (a node with auth off, on a trusted network).
    #[default]
    Open,
    /// Callers must present this shared secret. A client certificate never stands in for it:
    /// with mutual TLS the same CA may sign ordinary API clients, which must not become peers.
    Secret(String),
    /// Every call is refused, with this reason: auth is on but nothing authenticates peers.
    Refused(String),
}

/// The node-to-node gRPC service, and the membership operations the admin API and the CLI use.
#[derive(Clone)]
pub struct RaftTransportService {
    inner: Arc<Inner>,
}

struct Inner {
    raft: Raft<TypeConfig>,
    proposer: Proposer,
    node_id: u64,
    peers: Peers,
    auth: TransportAuth,
    /// Membership changes are serialised: concurrent ones could leave a joint configuration.
    membership: tokio::sync::Mutex<()>,
    review_hints: std::sync::OnceLock<ReviewHintSink>,
    key_check: std::sync::OnceLock<String>,
}

impl RaftTransportService {
    pub fn new(
        raft: Raft<TypeConfig>,
        proposer: Proposer,
        node_id: u64,
        peers: Peers,
        auth: TransportAuth,
    ) -> RaftTransportService {
        RaftTransportService {
            inner: Arc::new(Inner {
                raft,
                proposer,
                node_id,
                peers,
                auth,
                membership: tokio::sync::Mutex::new(()),
                review_hints: std::sync::OnceLock::new(),
                key_check: std::sync::OnceLock::new(),
            }),
        }
    }

    /// The tonic service, with message limits fit for log batches and snapshot chunks.
    pub fn into_server(self) -> RaftTransportServer<RaftTransportService> {
        RaftTransportServer::new(self)
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES)
    }

    pub fn node_id(&self) -> u64 {
        self.inner.node_id
    }

    /// The Raft group this service carries the traffic of.
    pub fn group_id(&self) -> u64 {
        self.inner.peers.group_id()
    }

    /// The group as this node sees it.
    pub fn status(&self) -> ClusterStatus {
        let metrics = self.inner.raft.metrics().borrow().clone();
        // As long as a leader goes unanswered before it counts as cut off from its majority:
        // heartbeats go out every `heartbeat_interval`, so a member up and busy answers well
        // within it, and one stopped or cut off is named within a few seconds.
        let down_after = self
            .inner
            .raft
            .config()
            .election_timeout_max
            .saturating_mul(2);
        ClusterStatus::of(
            &metrics,
            self.inner.peers.group_id(),
            |node| self.inner.peers.silence(node),
            Duration::from_millis(down_after),
        )
    }

    /// This group as the member at `addr` sees it.
    pub async fn status_at(&self, addr: &str) -> Result<ClusterStatus, ClusterError> {
        group_status_at(&self.inner.peers, addr).await
    }

    /// Makes this node, which belongs to no cluster yet, the first member of a new one.
    pub async fn initialize(&self, advertise: &str) -> Result<ClusterStatus, ClusterError> {
        let raft = &self.inner.raft;
        if raft
            .is_initialized()
            .await
            .map_err(|e| ClusterError::Internal(e.to_string()))?
        {
            return Err(ClusterError::InvalidArgument(format!(
                "node {} already belongs to a cluster",
                self.inner.node_id
            )));
        }
        let members =
            std::collections::BTreeMap::from([(self.inner.node_id, BasicNode::new(advertise))]);
        raft.initialize(members)
            .await
            .map_err(|e| ClusterError::InvalidArgument(format!("initialising: {e}")))?;
        raft.wait(Some(Duration::from_secs(10)))
            .metrics(|m| m.current_leader.is_some(), "a leader")
            .await
            .map_err(|e| ClusterError::Unavailable(e.to_string()))?;
        Ok(self.status())
    }

    /// Asks the cluster that `seed` belongs to to add this node (at `advertise`).
    pub async fn join(&self, seed: &str, advertise: &str) -> Result<ClusterStatus, ClusterError> {
        let mut client = self.inner.peers.client(seed)?;
        let request = self.inner.peers.request(
            AddMemberRequest {
                node_id: self.inner.node_id,
                address: advertise.to_string(),
                key_check: self.key_check().to_string(),
                group_id: self.group_id(),
            },
            Some(MEMBERSHIP_TIMEOUT),
        );
        let reply = client
            .add_member(request)
            .await
            .map_err(|s| remote_error(seed, s))?;
        Ok(reply.into_inner().into())
    }

    /// Sets the fingerprint of this node's record-signing key (see `AddMemberRequest.key_check`).
    pub fn set_key_check(&self, check: String) {
        let _ = self.inner.key_check.set(check);
    }

    /// The fingerprint set by [`RaftTransportService::set_key_check`], empty when none was.
    pub fn key_check(&self) -> &str {
        self.inner.key_check.get().map_or("", String::as_str)
    }

    /// Adds a member, on the leader (forwarded there from any other member).
    pub async fn add_member(
        &self,
        request: AddMemberRequest,
    ) -> Result<ClusterStatus, ClusterError> {
        match self.leader()? {
            Leader::This => {
                self.check_key(&request)?;
                let _serial = self.inner.membership.lock().await;
                membership::add_member(&self.inner.raft, request.node_id, &request.address).await?;
                Ok(self.status())
            }
            Leader::Other {
                addr: leader_addr, ..
            } => {
                let mut client = self.inner.peers.client(&leader_addr)?;
                let request = self.inner.peers.request(request, Some(MEMBERSHIP_TIMEOUT));
                let reply = client
                    .add_member(request)
                    .await
                    .map_err(|s| remote_error(&leader_addr, s))?;
                Ok(reply.into_inner().into())
            }
        }
    }

    /// Refuses a member that signs records with another key than this cluster.
    fn check_key(&self, request: &AddMemberRequest) -> Result<(), ClusterError> {
        if request.key_check == self.key_check() {
            return Ok(());
        }
        // The check strings stay out of the answer: they fingerprint the cluster's key.
        Err(ClusterError::InvalidArgument(format!(
            "node {} signs records with another key than this cluster: give every node the same $HINDSIGHT_CLUSTER_SECRET (cluster.secret), or the same record key ($HINDSIGHT_RECORD_KEY) where one is set",
            request.node_id
        )))
    }

    /// Adds members on this node, which must lead the group: each as a learner that catches up
    /// within `catch_up`, then all that did as voters in one membership change (see
    /// [`membership::add_members`]). Returns the ids among `requests` that vote afterwards.
    pub async fn add_members_here(
        &self,
        requests: &[AddMemberRequest],
        catch_up: std::time::Duration,
    ) -> Result<std::collections::BTreeSet<u64>, ClusterError> {
        if !matches!(self.leader()?, Leader::This) {
            return Err(ClusterError::NotLeader {
                message: format!(
                    "node {} no longer leads group {}",
                    self.inner.node_id,
                    self.group_id()
                ),
            });
        }
        for request in requests {
            self.check_key(request)?;
        }
        let members: Vec<(u64, String)> = requests
            .iter()
            .map(|r| (r.node_id, r.address.clone()))
            .collect();
        let _serial = self.inner.membership.lock().await;
        membership::add_members(&self.inner.raft, &members, catch_up).await
    }

    /// Removes a member, on the leader (forwarded there from any other member).
    pub async fn remove_member(&self, id: u64) -> Result<ClusterStatus, ClusterError> {
        self.change_member(id, false).await
    }

    /// Makes voter `id` a learner, on the leader (forwarded there from any other member).
    pub async fn demote_member(&self, id: u64) -> Result<ClusterStatus, ClusterError> {
        self.change_member(id, true).await
    }

    async fn change_member(
        &self,
        id: u64,
        keep_as_learner: bool,
    ) -> Result<ClusterStatus, ClusterError> {
        match self.leader()? {
            Leader::This => {
                let _serial = self.inner.membership.lock().await;
                if keep_as_learner {
                    membership::demote_member(&self.inner.raft, id).await?;
                } else {
                    membership::remove_member(&self.inner.raft, id).await?;
                }
                Ok(self.status())
            }
            Leader::Other {
                addr: leader_addr, ..
            } => {
                let mut client = self.inner.peers.client(&leader_addr)?;
                let request = self.inner.peers.request(
                    RemoveMemberRequest {
                        node_id: id,
                        group_id: self.group_id(),
                        keep_as_learner,
                    },
                    Some(MEMBERSHIP_TIMEOUT),
                );
                let reply = client
                    .remove_member(request)
                    .await
                    .map_err(|s| remote_error(&leader_addr, s))?;
                Ok(reply.into_inner().into())
            }
        }
    }

    /// A channel to the leader's gRPC port, or `None` when this node leads. For requests that
    /// must run on the leader, such as a review cycle.
    pub fn leader_channel(&self) -> Result<Option<(u64, tonic::transport::Channel)>, ClusterError> {
        match self.leader()? {
            Leader::This => Ok(None),
            Leader::Other { id, addr } => Ok(Some((id, self.inner.peers.channel(&addr)?))),
        }
    }

    /// The id and address of the leader when another node leads this group; `None` when this
    /// node leads. An error when no leader is known now.
    pub fn other_leader(&self) -> Result<Option<(u64, String)>, ClusterError> {
        match self.leader()? {
            Leader::This => Ok(None),
            Leader::Other { id, addr } => Ok(Some((id, addr))),
        }
    }

    /// The (shared, lazily connected) channel to the node at `addr`, which serves the public API
    /// on the same port as this service.
    pub fn channel_to(&self, addr: &str) -> Result<tonic::transport::Channel, ClusterError> {
        self.inner.peers.channel(addr)
    }

    /// The address of this group's leader when another node leads it; `None` when this node
    /// leads or no leader is known.
    pub fn leader_address(&self) -> Option<String> {
        match self.leader() {
            Ok(Leader::Other { addr, .. }) => Some(addr),
            _ => None,
        }
    }

    /// Who may send node-to-node traffic to this node.
    pub fn auth(&self) -> &TransportAuth {
        &self.inner.auth
    }

    /// Opens the actor link to node `target` at `addr` (see [`crate::link`]).
    pub async fn dial_link(
        &self,
        target: u64,
        addr: &str,
    ) -> Result<tokio::io::DuplexStream, ClusterError> {
        crate::link::dial(&self.inner.peers, target, addr).await
    }

    /// Where review hints sent to this node go while it leads.
    pub fn on_review_hint(&self, sink: ReviewHintSink) {
        let _ = self.inner.review_hints.set(sink);
    }

    /// Tells the leader that a write taken here looked like it contradicts a memory of `bank`.
    pub async fn hint_leader(&self, bank: &BankName) -> Result<(), ClusterError> {
        match self.leader()? {
            Leader::This => {
                if let Some(sink) = self.inner.review_hints.get() {
                    sink(bank.clone());
                }
                Ok(())
            }
            Leader::Other { id, addr } => {
                let mut client = self.inner.peers.client(&addr)?;
                let request = self.inner.peers.request(
                    ReviewHintRequest {
                        target_node: id,
                        group_id: self.inner.peers.group_id(),
                        bank: bank.to_string(),
                    },
                    Some(REVIEW_HINT_TIMEOUT),
                );
                client
                    .review_hint(request)
                    .await
                    .map_err(|s| remote_error(&addr, s))?;
                Ok(())
            }
        }
    }

    fn leader(&self) -> Result<Leader, ClusterError> {
        let metrics = self.inner.raft.metrics().borrow().clone();
        match metrics.current_leader {
            Some(id) if id == self.inner.node_id && metrics.state == ServerState::Leader => {
                Ok(Leader::This)
            }
            Some(id) => metrics
                .membership_config
                .membership()
                .get_node(&id)
                .map(|n| Leader::Other {
                    id,
                    addr: n.addr.clone(),
                })
                .ok_or_else(|| {
                    ClusterError::Unavailable(format!("the leader, node {id}, has no address"))
                }),
            None => Err(ClusterError::Unavailable(
                "no leader is known yet; try again in a moment".into(),
            )),
        }
    }

    /// Refuses, as not the leader, a request only the leader may take.
    fn require_leader(&self) -> Result<(), ClusterError> {
        match self.leader() {
            Ok(Leader::This) => Ok(()),
            _ => Err(ClusterError::NotLeader {
                message: format!("node {} is not the leader", self.inner.node_id),
            }),
        }
    }

    /// Refuses calls from outside the cluster and calls meant for another node or group.
    fn admit<T>(&self, request: &Request<T>, target: Option<(u64, u64)>) -> Result<(), Status> {
        self.inner.auth.admit(request)?;
        if let Some((node, group)) = target {
            if node != self.inner.node_id {
                return Err(Status::permission_denied(format!(
                    "this message is addressed to node {node}, but this is node {}: a peer has a stale address",
                    self.inner.node_id
                )));
            }
            self.check_group(group)?;
        }
        Ok(())
    }

    fn check_group(&self, group: u64) -> Result<(), Status> {
        if group == self.group_id() {
            Ok(())
        } else {
            Err(Status::permission_denied(format!(
                "this message is for Raft group {group}, but this service carries group {}",
                self.group_id()
            )))
        }
    }
}

impl TransportAuth {
    /// Refuses a call from outside the cluster.
    pub(crate) fn admit<T>(&self, request: &Request<T>) -> Result<(), Status> {
        match self {
            TransportAuth::Open => Ok(()),
            TransportAuth::Refused(why) => Err(Status::permission_denied(why.clone())),
            TransportAuth::Secret(secret) => {
                let given = request
                    .metadata()
                    .get(SECRET_HEADER)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default();
                if same_secret(given.as_bytes(), secret.as_bytes()) {
                    Ok(())
                } else {
                    Err(Status::unauthenticated(
                        "node-to-node calls need the cluster's shared secret",
                    ))
                }
            }
        }
    }
}

enum Leader {
    This,
    Other { id: u64, addr: String },
}

fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len()
        && given
            .iter()
            .zip(expected)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// How the member at `addr` sees the group of `peers` (any group it hosts a replica of).
pub async fn group_status_at(peers: &Peers, addr: &str) -> Result<ClusterStatus, ClusterError> {
    let mut client = peers.client(addr)?;
    let request = peers.request(
        ClusterStatusRequest {
            group_id: peers.group_id(),
        },
        Some(READ_INDEX_TIMEOUT),
    );
    let reply = client
        .status(request)
        .await
        .map_err(|s| remote_error(addr, s))?;
    Ok(reply.into_inner().into())
}

pub(crate) fn remote_error(addr: &str, status: Status) -> ClusterError {
    let message = format!("{addr}: {}", status.message());
    match status.code() {
        tonic::Code::InvalidArgument => ClusterError::InvalidArgument(message),
        tonic::Code::PermissionDenied | tonic::Code::Unauthenticated => {
            ClusterError::PermissionDenied(message)
        }
        tonic::Code::FailedPrecondition => ClusterError::NotLeader { message },
        _ => ClusterError::Unavailable(message),
    }
}

fn decode<T: DeserializeOwned>(payload: &[u8]) -> Result<T, Status> {
    bincode::deserialize(payload)
        .map_err(|e| Status::invalid_argument(format!("undecodable Raft message: {e}")))
}

fn encode<T: Serialize>(value: &T) -> Result<Response<RaftReply>, Status> {
    bincode::serialize(value)
        .map(|payload| Response::new(RaftReply { payload }))
        .map_err(|e| Status::internal(format!("encoding a Raft reply: {e}")))
}

#[tonic::async_trait]
impl RaftTransport for RaftTransportService {
    async fn append_entries(
        &self,
        request: Request<RaftMessage>,
    ) -> Result<Response<RaftReply>, Status> {
        let m = request.get_ref();
        self.admit(&request, Some((m.target_node, m.group_id)))?;
        let rpc: AppendEntriesRequest<TypeConfig> = decode(&m.payload)?;
        encode(&self.inner.raft.append_entries(rpc).await)
    }

    async fn vote(&self, request: Request<RaftMessage>) -> Result<Response<RaftReply>, Status> {
        let m = request.get_ref();
        self.admit(&request, Some((m.target_node, m.group_id)))?;
        let rpc: VoteRequest<u64> = decode(&m.payload)?;
        encode(&self.inner.raft.vote(rpc).await)
    }

    async fn install_snapshot(
        &self,
        request: Request<RaftMessage>,
    ) -> Result<Response<RaftReply>, Status> {
        let m = request.get_ref();
        self.admit(&request, Some((m.target_node, m.group_id)))?;
        let rpc: InstallSnapshotRequest<TypeConfig> = decode(&m.payload)?;
        encode(&self.inner.raft.install_snapshot(rpc).await)
    }

    async fn propose(
        &self,
        request: Request<ProposeRequest>,
    ) -> Result<Response<ProposeReply>, Status> {
        let m = request.get_ref();
        self.admit(&request, Some((m.target_node, m.group_id)))?;
        // The sender retries on the leader it learns next; proposing here would forward again.
        self.require_leader()?;
        let command: Command = decode(&m.command)?;
        let proposed = self
            .inner
            .proposer
            .propose(command)
            .await
            .map_err(ClusterError::from)?;
        // The sender waits for its own replica to apply this entry. No heartbeat is needed for
        // that: the leader's replication streams send the new commit index as soon as it advances.
        let outcome = bincode::serialize(&proposed.outcome)
            .map_err(|e| Status::internal(format!("encoding an outcome: {e}")))?;
        Ok(Response::new(ProposeReply {
            log_index: proposed.log_index,
            outcome,
        }))
    }

    async fn read_index(
        &self,
        request: Request<ReadIndexRequest>,
    ) -> Result<Response<ReadIndexReply>, Status> {
        let m = request.get_ref();
        self.admit(&request, Some((m.target_node, m.group_id)))?;
        let confirmed =
            tokio::time::timeout(READ_INDEX_TIMEOUT, self.inner.raft.ensure_linearizable())
                .await
                .map_err(|_| Status::unavailable("no quorum confirmed the leadership in time"))?;
        match confirmed {
            Ok(log_id) => {
                // The caller waits until its replica has applied this far; the read index is at
                // most the commit index, which the replication streams already sent it.
                Ok(Response::new(ReadIndexReply {
                    read_index: log_id.map_or(0, |l| l.index),
                }))
            }
            Err(RaftError::APIError(CheckIsLeaderError::ForwardToLeader(_))) => {
                Err(ClusterError::NotLeader {
                    message: format!("node {} is not the leader", self.inner.node_id),
                }
                .into())
            }
            Err(e) => Err(ClusterError::from(StoreError::from(e)).into()),
        }
    }

    async fn add_member(
        &self,
        request: Request<AddMemberRequest>,
    ) -> Result<Response<ClusterStatusReply>, Status> {
        self.admit(&request, None)?;
        self.check_group(request.get_ref().group_id)?;
        let status = RaftTransportService::add_member(self, request.into_inner()).await?;
        Ok(Response::new(status.into()))
    }

    async fn remove_member(
        &self,
        request: Request<RemoveMemberRequest>,
    ) -> Result<Response<ClusterStatusReply>, Status> {
        self.admit(&request, None)?;
        self.check_group(request.get_ref().group_id)?;
        let m = request.get_ref();
        let status =
            RaftTransportService::change_member(self, m.node_id, m.keep_as_learner).await?;
        Ok(Response::new(status.into()))
    }

    async fn status(
        &self,
        request: Request<ClusterStatusRequest>,
    ) -> Result<Response<ClusterStatusReply>, Status> {
        self.admit(&request, None)?;
        self.check_group(request.get_ref().group_id)?;
        Ok(Response::new(RaftTransportService::status(self).into()))
    }

    async fn review_hint(
        &self,
        request: Request<ReviewHintRequest>,
    ) -> Result<Response<ReviewHintReply>, Status> {
        let m = request.get_ref();
        self.admit(&request, Some((m.target_node, m.group_id)))?;
        let bank: BankName = m.bank.parse().map_err(|e| {
            Status::invalid_argument(format!("review hint for bank {:?}: {e}", m.bank))
        })?;
        // Only the leader reviews; the sender does not pass the hint on again.
        self.require_leader()?;
        if let Some(sink) = self.inner.review_hints.get() {
            sink(bank);
        }
        Ok(Response::new(ReviewHintReply {}))
    }

    type LinkStream = crate::link::LinkFrames;

    /// The node's [`crate::RaftGroups`] takes links; one group's service alone never does.
    async fn link(
        &self,
        _request: Request<tonic::Streaming<crate::pb::LinkFrame>>,
    ) -> Result<Response<Self::LinkStream>, Status> {
        Err(Status::unimplemented(
            "the actor link is served by the node, not by one Raft group",
        ))
    }
}
