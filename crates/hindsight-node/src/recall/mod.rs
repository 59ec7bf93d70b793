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

use hindsight_core::{BankName, Memory, MemoryId};

use crate::bank::Banks;
use crate::config::NodeConfig;
use crate::error::NodeError;
use crate::write::writing::Writing;
use recalling::Recalling;

/// What recall and feedback take from the node they run in.
pub(crate) trait RecallHost: Sync {
    fn banks(&self) -> &Banks;
    fn config(&self) -> &NodeConfig;
    /// The recall service's own state: the retrieval log, feedback's lock, access statistics.
    fn recalling(&self) -> &Recalling;
    /// The write service's state, for its screener and the signature check of stored records.
    fn writing(&self) -> &Writing;
    /// The record, unless it failed its integrity check.
    fn get(&self, id: MemoryId) -> impl Future<Output = Result<Memory, NodeError>> + Send;
    /// Tells the reviewer of `bank` (wherever it runs) that a memory of it looks contradicted.
    fn hint_review(&self, bank: &BankName) -> impl Future<Output = ()> + Send;
}
