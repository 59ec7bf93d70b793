//! Review: the per-bank reviewer actors and the cycle they run (judging pairs of memories,
//! maintenance, quarantine), the conflict queue a review leaves for people, and reflection on
//! task traces.

mod candidates;
pub mod conflicts;
pub(crate) mod cycle;
mod decisions;
mod expiry;
pub mod judging;
pub(crate) mod maintenance;
mod neighbourhood;
pub(crate) mod quarantine_review;
pub mod reflecting;
pub(crate) mod reviewing;
#[cfg(test)]
mod service_tests;
pub(crate) mod token_window;
mod voices;

use std::future::Future;

use hindsight_core::write::{WriteOutcome, WriteRequest};

use crate::bank::Banks;
use crate::config::NodeConfig;
use crate::error::NodeError;
use crate::write::writing::Writing;
use reviewing::Reviewing;

/// What a review cycle, the conflict queue and reflection take from the node they run in.
pub(crate) trait ReviewHost: Sync {
    fn banks(&self) -> &Banks;
    fn config(&self) -> &NodeConfig;
    /// The review service's own state: the model judge, when there is one, and the reflector.
    fn reviewing(&self) -> &Reviewing;
    /// The write service's state, whose signer signs what a cycle derives.
    fn writing(&self) -> &Writing;
    /// Writes what reflection learned as any client's write would be.
    fn write_batch(
        &self,
        requests: Vec<WriteRequest>,
    ) -> impl Future<Output = Result<Vec<WriteOutcome>, NodeError>> + Send;
}
