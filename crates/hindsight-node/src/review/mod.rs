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
use std::sync::Arc;

use hindsight_core::write::{WriteOutcome, WriteRequest};
use hindsight_core::Memory;

use crate::bank::Banks;
use crate::config::NodeConfig;
use crate::error::NodeError;
use judging::LlmJudge;
use reflecting::NodeReflector;

/// What a review cycle, the conflict queue and reflection take from the node they run in.
pub(crate) trait ReviewHost: Sync {
    fn banks(&self) -> &Banks;
    fn config(&self) -> &NodeConfig;
    /// The model-backed review judge, when `review.judge` asks for one.
    fn llm_judge(&self) -> Option<Arc<LlmJudge>>;
    fn reflector(&self) -> Arc<NodeReflector>;
    /// Signs a record about to be written (nothing when signatures are off).
    fn sign(&self, memory: &mut Memory);
    /// Writes what reflection learned as any client's write would be.
    fn write_batch(
        &self,
        requests: Vec<WriteRequest>,
    ) -> impl Future<Output = Result<Vec<WriteOutcome>, NodeError>> + Send;
}
