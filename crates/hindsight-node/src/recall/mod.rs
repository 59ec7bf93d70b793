//! Recall: the search that gathers, fuses and scores a bank's memories for a query, and the
//! learning loop that records what was recalled and takes feedback on it.

mod collapse;
mod fuse;
mod gather;
mod hops;
pub mod learning;
mod query;
pub(crate) mod recalling;
mod score;
pub(crate) mod search;
#[cfg(test)]
mod service_tests;
#[cfg(test)]
mod testing;
mod visibility;

use std::future::Future;
use std::sync::Arc;

use hindsight_core::recall::RecallHit;
use hindsight_core::{BankName, Memory, MemoryId, Timestamp};
use hindsight_guard::Screener;
use hindsight_store::RetrievalLog;

use crate::bank::integrity::Integrity;
use crate::bank::Banks;
use crate::config::NodeConfig;
use crate::error::NodeError;

/// What recall and feedback take from the node they run in.
pub(crate) trait RecallHost: Sync {
    fn banks(&self) -> &Banks;
    fn config(&self) -> &NodeConfig;
    /// The screener, for work that outlives the borrow of the node (a recall's blocking part).
    fn shared_screener(&self) -> Option<Arc<Screener>>;
    /// The signature check of a stored record, counted and logged when it fails.
    fn integrity(&self, memory: &Memory) -> Integrity;
    /// Counts the hits as accesses, recorded in the log in batches.
    fn note_access(&self, hits: &[RecallHit], at: Timestamp);
    /// Brings archived memories a recall returned on purpose back to the live set.
    fn restore(
        &self,
        ids: Vec<MemoryId>,
        at: Timestamp,
    ) -> impl Future<Output = Result<(), NodeError>> + Send;
    fn retrieval_log(&self) -> Result<Arc<RetrievalLog>, NodeError>;
    /// Feedback is checked against the log and recorded in it one request at a time.
    fn feedback_lock(&self) -> impl Future<Output = tokio::sync::MutexGuard<'_, ()>> + Send;
    /// The record, unless it failed its integrity check.
    fn get(&self, id: MemoryId) -> impl Future<Output = Result<Memory, NodeError>> + Send;
    /// Tells the reviewer of `bank` (wherever it runs) that a memory of it looks contradicted.
    fn hint_review(&self, bank: &BankName) -> impl Future<Output = ()> + Send;
}
