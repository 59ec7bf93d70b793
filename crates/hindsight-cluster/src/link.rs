//! The byte stream under the actor link between two nodes (`Link` in `raft.proto`).
//!
//! The nodes' actor systems (`ractor_cluster`) speak their own framed protocol over any
//! bidirectional byte stream. Carrying it inside a gRPC stream on the node-to-node port, rather
//! than on a port of its own, gives it the peers' TLS and authentication (the cluster secret or
//! mutual TLS) and means no extra port to open, proxy or publish. Each side sees one end of an
//! in-memory pipe; two tasks copy between the pipe and the gRPC frames.

use std::pin::Pin;
use std::sync::Arc;

use tokio::io::{AsyncWriteExt, DuplexStream, WriteHalf};
use tokio_stream::{Stream, StreamExt};
use tokio_util::io::ReaderStream;
use tonic::{Status, Streaming};

use crate::error::ClusterError;
use crate::pb::LinkFrame;
use crate::peers::Peers;
use crate::service::remote_error;

/// Where a node hands the link streams its peers open to it: the local end of the pipe, and a
/// label naming the peer for logs.
pub type LinkSink = Arc<dyn Fn(DuplexStream, String) + Send + Sync>;

/// The frames one side of a link sends.
pub type LinkFrames = Pin<Box<dyn Stream<Item = Result<LinkFrame, Status>> + Send>>;

/// Bytes a pipe buffers each way before its writer waits for the other side.
const PIPE_BYTES: usize = 256 * 1024;
/// The most one frame carries; the actor system's own frames may span several.
const FRAME_BYTES: usize = 64 * 1024;

/// The answering side: copies `inbound` (what the caller sends after its first frame) into the
/// pipe and returns the pipe's local end with the frames that carry the other direction.
pub(crate) fn accept(inbound: Streaming<LinkFrame>) -> (DuplexStream, LinkFrames) {
    let (local, remote) = tokio::io::duplex(PIPE_BYTES);
    let (from_actors, to_actors) = tokio::io::split(remote);
    tokio::spawn(copy_in(inbound, to_actors));
    let outbound = ReaderStream::with_capacity(from_actors, FRAME_BYTES).map(|chunk| {
        chunk
            .map(|data| LinkFrame {
                target_node: 0,
                data: data.to_vec(),
            })
            .map_err(|e| Status::internal(format!("actor link: {e}")))
    });
    (local, Box::pin(outbound))
}

/// The calling side: opens a link to node `target` at `addr` and returns the pipe's local end.
/// It fails at once when the peer refuses it (wrong node id, no credentials, link not running).
pub async fn dial(peers: &Peers, target: u64, addr: &str) -> Result<DuplexStream, ClusterError> {
    let (local, remote) = tokio::io::duplex(PIPE_BYTES);
    let (from_actors, to_actors) = tokio::io::split(remote);
    let first = LinkFrame {
        target_node: target,
        data: Vec::new(),
    };
    let outbound = tokio_stream::once(first).chain(
        ReaderStream::with_capacity(from_actors, FRAME_BYTES).map_while(move |chunk| {
            chunk.ok().map(|data| LinkFrame {
                target_node: target,
                data: data.to_vec(),
            })
        }),
    );
    let mut client = peers.client(addr)?;
    let inbound = client
        .link(peers.request(outbound, None))
        .await
        .map_err(|status| remote_error(addr, status))?
        .into_inner();
    tokio::spawn(copy_in(inbound, to_actors));
    Ok(local)
}

/// Copies the peer's frames into the pipe until either ends; closing the pipe's write side
/// tells the actor system the session is over.
async fn copy_in(mut inbound: Streaming<LinkFrame>, mut to_actors: WriteHalf<DuplexStream>) {
    while let Ok(Some(frame)) = inbound.message().await {
        if to_actors.write_all(&frame.data).await.is_err() {
            break;
        }
    }
    let _ = to_actors.shutdown().await;
}
