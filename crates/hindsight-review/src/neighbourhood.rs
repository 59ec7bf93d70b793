//! How the review finds a memory's neighbours without owning an index.

use std::sync::Arc;

use hindsight_core::Memory;

/// The bank's indexes as the review sees them. The caller answers from its vector and slot
/// indexes; tests answer from a table. Answers may include the memory itself and memories the
/// review cannot act on: candidate selection filters them out, so an implementation can stay a
/// thin adapter over the index.
pub trait Neighbourhood {
    /// Memories of the same bank whose embeddings are at least `min_similarity` similar to
    /// `memory`'s, most similar first, at most `limit`.
    fn similar(
        &self,
        memory: &Memory,
        min_similarity: f32,
        limit: usize,
    ) -> Vec<(Arc<Memory>, f32)>;

    /// Memories of the same bank that state a value for `memory`'s slot (same subject and
    /// attribute). Empty when `memory` has no slot.
    fn same_slot(&self, memory: &Memory) -> Vec<Arc<Memory>>;
}
