//! The write path: admission and quotas before a batch is proposed, screening for injected
//! instructions, and the writer's stages: the batch's banks, the plan (with the duplicate check),
//! the proposal, the outcomes, and the wait until the batch is searchable.

pub(crate) mod admission;
mod banks;
mod duplicates;
pub mod guarding;
mod intake;
mod outcomes;
mod plan;
mod propose;
pub(crate) mod quota;
#[cfg(test)]
mod service_tests;
#[cfg(test)]
pub(crate) mod testing;
pub(crate) mod writer;
pub(crate) mod writing;

use crate::bank::Banks;
use crate::config::NodeConfig;
use writing::Writing;

/// What the write path takes from the node it runs in.
pub(crate) trait WriteHost: Sync {
    fn banks(&self) -> &Banks;
    fn config(&self) -> &NodeConfig;
    /// The write service's own state: screening, signing, admission and byte reservations.
    fn writing(&self) -> &Writing;
    /// Asks for a review cycle of `bank` soon; the write does not wait for it.
    fn hint_review_soon(&self, bank: hindsight_core::BankName);
}
