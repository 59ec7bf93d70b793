//! How the review finds a memory's neighbours without owning an index.

use std::sync::Arc;

use hindsight_core::Memory;

/// Whether a memory is the agent's own inference (or a reflection over its work) rather than
/// something a user or a tool stated.
pub fn is_inferred(memory: &Memory) -> bool {
    memory.provenance.source.is_inference()
}

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

    /// Like [`Neighbourhood::similar`], among the memories on the other side of the line
    /// between an agent's inferences and everyone else's statements only: for an inference, the
    /// statements that could refute it; for a statement, the inferences it could refute. An
    /// implementation should search that side directly, since a rare kind of memory (a few
    /// inferences among thousands of events) is easily crowded out of a plain neighbour list.
    fn similar_across(
        &self,
        memory: &Memory,
        min_similarity: f32,
        limit: usize,
    ) -> Vec<(Arc<Memory>, f32)> {
        let other_side = !is_inferred(memory);
        self.similar(memory, min_similarity, usize::MAX)
            .into_iter()
            .filter(|(m, _)| is_inferred(m) == other_side)
            .take(limit)
            .collect()
    }

    /// Memories of the same bank that state a value for `memory`'s slot (same subject and
    /// attribute), the most recent first (by when they happened), at most `limit`. Empty when
    /// `memory` has no slot. The limit keeps a busy slot (thousands of "Alice reported …") from
    /// making a cycle quadratic: what a new value contradicts is the slot's latest claims.
    fn same_slot(&self, memory: &Memory, limit: usize) -> Vec<Arc<Memory>>;
}
