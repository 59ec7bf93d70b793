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

    /// Like [`Neighbourhood::similar`], among the memories `keep` accepts only. An index that
    /// can filter while it searches should: a rare kind of memory (an agent's inference among
    /// hundreds of events) is easily crowded out of a plain nearest-neighbour list.
    fn similar_where(
        &self,
        memory: &Memory,
        min_similarity: f32,
        limit: usize,
        keep: &dyn Fn(&Memory) -> bool,
    ) -> Vec<(Arc<Memory>, f32)> {
        self.similar(memory, min_similarity, usize::MAX)
            .into_iter()
            .filter(|(m, _)| keep(m))
            .take(limit)
            .collect()
    }

    /// Memories of the same bank that state a value for `memory`'s slot (same subject and
    /// attribute). Empty when `memory` has no slot.
    fn same_slot(&self, memory: &Memory) -> Vec<Arc<Memory>>;
}
