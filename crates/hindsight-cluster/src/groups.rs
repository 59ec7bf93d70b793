use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::RwLock;
use tonic::{Request, Response, Status, Streaming};

use crate::link::{LinkFrames, LinkSink};
use crate::pb::raft_transport_server::{RaftTransport, RaftTransportServer};
use crate::pb::{
    AddMemberRequest, ClusterStatusReply, ClusterStatusRequest, LinkFrame, ProposeReply,
    ProposeRequest, RaftMessage, RaftReply, ReadIndexReply, ReadIndexRequest, RemoveMemberRequest,
    ReviewHintReply, ReviewHintRequest,
};
use crate::service::{RaftTransportService, TransportAuth};
use crate::MAX_MESSAGE_BYTES;

/// The Raft groups one node hosts a replica of, behind its one node-to-node gRPC service.
///
/// Every message names its group; this routes it to that group's [`RaftTransportService`], which
/// then checks the node id and serves it. Groups come and go while the node runs: a partition
/// placed on this node is inserted once its store is open, and removed when it moves away. A
/// message for a group not hosted here is refused as `NotFound`, so a sender with a stale
/// placement backs off instead of feeding the wrong log.
#[derive(Clone)]
pub struct RaftGroups {
    inner: Arc<Inner>,
}

struct Inner {
    node_id: u64,
    auth: TransportAuth,
    groups: RwLock<BTreeMap<u64, RaftTransportService>>,
    link_sink: std::sync::OnceLock<LinkSink>,
}

impl RaftGroups {
    pub fn new(node_id: u64, auth: TransportAuth) -> RaftGroups {
        RaftGroups {
            inner: Arc::new(Inner {
                node_id,
                auth,
                groups: RwLock::default(),
                link_sink: std::sync::OnceLock::new(),
            }),
        }
    }

    /// Where the actor links peers open to this node go.
    pub fn on_link(&self, sink: LinkSink) {
        let _ = self.inner.link_sink.set(sink);
    }

    /// Serves `service`'s group from now on, in place of any earlier service of that group.
    pub fn insert(&self, service: RaftTransportService) {
        self.inner
            .groups
            .write()
            .insert(service.group_id(), service);
    }

    /// Stops serving `group`; its messages are refused from now on.
    pub fn remove(&self, group: u64) -> Option<RaftTransportService> {
        self.inner.groups.write().remove(&group)
    }

    pub fn get(&self, group: u64) -> Option<RaftTransportService> {
        self.inner.groups.read().get(&group).cloned()
    }

    /// The groups hosted here, in id order.
    pub fn group_ids(&self) -> Vec<u64> {
        self.inner.groups.read().keys().copied().collect()
    }

    /// The tonic service, with message limits fit for log batches and snapshot chunks.
    pub fn into_server(self) -> RaftTransportServer<RaftGroups> {
        RaftTransportServer::new(self)
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES)
    }

    /// The service of `group`, once the caller proved it belongs to the cluster: an outsider
    /// learns nothing, not even which groups this node hosts.
    fn route<T>(&self, request: &Request<T>, group: u64) -> Result<RaftTransportService, Status> {
        self.inner.auth.admit(request)?;
        self.get(group).ok_or_else(|| {
            Status::not_found(format!(
                "node {} hosts no replica of Raft group {group}",
                self.inner.node_id
            ))
        })
    }
}

/// Implements every RPC by handing the request to the service of the group it names.
macro_rules! routed_by_group {
    ($($method:ident($request:ty) -> $reply:ty;)*) => {
        #[tonic::async_trait]
        impl RaftTransport for RaftGroups {
            $(
                async fn $method(
                    &self,
                    request: Request<$request>,
                ) -> Result<Response<$reply>, Status> {
                    let group = self.route(&request, request.get_ref().group_id)?;
                    RaftTransport::$method(&group, request).await
                }
            )*

            type LinkStream = LinkFrames;

            /// The actor link belongs to the node, not to a group.
            async fn link(
                &self,
                request: Request<Streaming<LinkFrame>>,
            ) -> Result<Response<LinkFrames>, Status> {
                self.inner.auth.admit(&request)?;
                let peer = request
                    .remote_addr()
                    .map_or_else(|| "a peer".to_string(), |a| a.to_string());
                let mut inbound = request.into_inner();
                let first = inbound.message().await?.ok_or_else(|| {
                    Status::invalid_argument("the link closed before naming the node it is for")
                })?;
                if first.target_node != self.inner.node_id {
                    return Err(Status::permission_denied(format!(
                        "this link is for node {}, but this is node {}: a peer has a stale address",
                        first.target_node, self.inner.node_id
                    )));
                }
                let sink = self.inner.link_sink.get().ok_or_else(|| {
                    Status::unavailable("this node's actor system takes no links yet")
                })?;
                let (local, outbound) = crate::link::accept(inbound);
                sink(local, peer);
                Ok(Response::new(outbound))
            }
        }
    };
}

routed_by_group! {
    append_entries(RaftMessage) -> RaftReply;
    vote(RaftMessage) -> RaftReply;
    install_snapshot(RaftMessage) -> RaftReply;
    propose(ProposeRequest) -> ProposeReply;
    read_index(ReadIndexRequest) -> ReadIndexReply;
    add_member(AddMemberRequest) -> ClusterStatusReply;
    remove_member(RemoveMemberRequest) -> ClusterStatusReply;
    status(ClusterStatusRequest) -> ClusterStatusReply;
    review_hint(ReviewHintRequest) -> ReviewHintReply;
}
