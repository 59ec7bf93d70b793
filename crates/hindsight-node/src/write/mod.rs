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
pub(crate) mod writer;
pub(crate) mod writing;

use std::sync::Arc;

use hindsight_core::Memory;
use hindsight_guard::{RecentWrites, Screener};
use parking_lot::Mutex;

use crate::bank::Banks;
use crate::config::NodeConfig;
use admission::WriteAdmission;
use quota::Reservations;

/// What the write path takes from the node it runs in.
pub(crate) trait WriteHost: Sync {
    fn banks(&self) -> &Banks;
    fn config(&self) -> &NodeConfig;
    /// Write-time screening, unless `guard.enabled` is off.
    fn screener(&self) -> Option<&Screener>;
    /// The last harmless write of each recent bank and source, for the guard to judge an
    /// instruction split over two writes as a whole.
    fn recent_writes(&self) -> &Mutex<RecentWrites>;
    /// Signs a record about to be written (nothing when signatures are off).
    fn sign(&self, memory: &mut Memory);
    fn write_admission(&self) -> &WriteAdmission;
    /// Bytes admitted under the banks' byte quotas that their views do not show yet.
    fn reservations(&self) -> &Arc<Reservations>;
    /// Asks for a review cycle of `bank` soon; the write does not wait for it.
    fn hint_review_soon(&self, bank: hindsight_core::BankName);
}
