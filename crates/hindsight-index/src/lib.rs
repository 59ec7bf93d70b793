//! Derived search indexes of a Hindsight bank.
//!
//! Nothing here is a source of truth: every index can be rebuilt from the
//! store, and dumps only save that work on restart. Text analysis happens
//! elsewhere; callers pass analysed terms and normalised entity names.
//! Memory ids are `u128` (ULIDs) and times are unix milliseconds.
//!
//! [`BankIndex`] bundles the four arms of recall — [`VectorIndex`] (cosine,
//! HNSW), [`Bm25Index`] (keywords), [`EntityIndex`] (one or two entity hops)
//! and [`TimeIndex`] (time windows) — and dumps and loads them together.
//! Every search takes a `filter` closure over memory ids and returns
//! `(id, score)` pairs, best first, ties broken by ascending id.

mod background;
mod bank;
mod bm25;
mod codes;
mod distance;
mod entity;
mod error;
mod flat;
mod half;
pub mod heap;
mod persist;
mod time;
mod topk;
mod vector;

pub use background::run_in_background;
pub use bank::{BankIndex, BankIndexConfig, IndexDoc, IndexMeta, DUMP_FORMAT};
pub use bm25::{Bm25Index, Bm25Stats, BM25_B, BM25_K1};
pub use distance::dot;
pub use entity::{EntityConfig, EntityIndex};
pub use error::IndexError;
pub use heap::IndexMemory;
pub use time::TimeIndex;
pub use vector::{StoredVectors, VectorConfig, VectorIndex, VectorStats};

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn indexes_are_shareable_across_threads() {
        assert_send_sync::<VectorIndex>();
        assert_send_sync::<Bm25Index>();
        assert_send_sync::<EntityIndex>();
        assert_send_sync::<TimeIndex>();
        assert_send_sync::<BankIndex>();
    }
}
