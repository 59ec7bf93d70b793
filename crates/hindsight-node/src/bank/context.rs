use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use hindsight_core::BankName;
use hindsight_store::StateReader;

use crate::bank::homes::Homes;
use crate::error::NodeError;

use crate::bank::embedding::SharedEmbedder;
use crate::bank::registry::BankRegistry;

/// What every bank actor shares.
pub struct BankContext {
    /// Where each bank's records are.
    pub homes: Homes,
    pub embedder: SharedEmbedder,
    /// Texts `embedder` was asked to embed since the node started (see [`crate::bank::embedding::Counting`]).
    pub embedded_texts: Arc<AtomicU64>,
    pub registry: Arc<BankRegistry>,
    pub index_root: PathBuf,
    /// A bank this long without a write lets its vector graph rest (`index.graph_rest_after_secs`);
    /// `None` never.
    pub graph_rest_after: Option<std::time::Duration>,
}

impl BankContext {
    /// The store reader holding `bank` on this node.
    pub fn reader_of(&self, bank: &BankName) -> Result<StateReader, NodeError> {
        Ok(self.homes.of_bank(bank)?.reader().clone())
    }

    pub fn index_dir(&self, bank: &BankName) -> PathBuf {
        // Bank names hold '/', which must not become directories of their own.
        self.index_root.join(bank.as_str().replace('/', "%2F"))
    }
}
