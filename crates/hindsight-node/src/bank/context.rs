use std::collections::HashMap;
use std::path::PathBuf;

use hindsight_core::{BankName, MemoryId};
use hindsight_store::StateReader;
use parking_lot::Mutex;

use crate::bank::registry::BankRegistry;
use crate::embedding::SharedEmbedder;

/// What every bank actor shares.
pub struct BankContext {
    pub reader: StateReader,
    pub embedder: SharedEmbedder,
    pub registry: std::sync::Arc<BankRegistry>,
    /// Vectors computed by the write path before proposing, so the actor need not embed again.
    pub pending_vectors: Mutex<HashMap<MemoryId, Vec<f32>>>,
    pub index_root: PathBuf,
}

impl BankContext {
    pub fn index_dir(&self, bank: &BankName) -> PathBuf {
        // Bank names hold '/', which must not become directories of their own.
        self.index_root.join(bank.as_str().replace('/', "%2F"))
    }
}
