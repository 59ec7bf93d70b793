use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use hindsight_core::{Command, CommandOutcome};

use crate::error::StoreError;

/// A boxed future, so that the link can be a trait object.
pub type LinkFuture<T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'static>>;

/// How a follower reaches its leader for what openraft 0.9 only does on the leader: proposing a
/// command and confirming a linearizable read. The cluster transport implements it over gRPC; a
/// node without peers has none and answers `NotLeader` itself.
///
/// Errors say whether the leader surely did not take the request: `NotLeader` means it was not
/// proposed (the target no longer leads, or could not be reached before anything was sent), so
/// the caller may try the new leader; any other error leaves the outcome unknown.
pub trait LeaderLink: Send + Sync + 'static {
    /// Proposes `command` on `leader` (at `addr`) and returns the log index and outcome it got.
    fn propose(
        &self,
        leader: u64,
        addr: String,
        command: Arc<Command>,
    ) -> LinkFuture<(u64, CommandOutcome)>;

    /// Asks `leader` to confirm it leads; returns the log index a read must have applied.
    fn read_index(&self, leader: u64, addr: String) -> LinkFuture<u64>;
}
