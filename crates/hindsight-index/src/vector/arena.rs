//! The vectors by slot number, in chunks of halves, each with its eight-bit codes beside it.

use crate::codes::CodeArena;
use crate::distance::dot_f16;
use crate::flat::Vectors;
use crate::half;
use crate::heap::nested_vec_bytes;

/// Vectors stored per arena chunk; chunking avoids copying the whole arena
/// when it grows.
const CHUNK: usize = 1024;

/// The capacity a new arena chunk starts with: none for the first, which then grows as vectors
/// arrive (to the full chunk at most, since capacities double from one vector's size), so that a
/// bank of twenty memories holds twenty vectors' worth and not a thousand; a full one for later
/// chunks, whose bank is already large.
pub(crate) fn first_chunk_grows<T>(chunks: &[Vec<T>], full: usize) -> usize {
    if chunks.is_empty() {
        0
    } else {
        full
    }
}

/// Vectors by slot number, which is also the id the graph knows them by.
///
/// Each vector is kept in half precision (see `half.rs`): it is what the index stores, scores
/// and hands out, so every score of a stored vector, here or in a caller holding a copy, comes
/// from the same values. Its eight-bit codes, for exact scans (see `codes.rs`), are made from
/// those values too, so that their bounds hold for the scores that are reported.
pub(super) struct Arena {
    pub(super) dim: usize,
    chunks: Vec<Vec<u16>>,
    len: usize,
    pub(super) codes: CodeArena,
    /// The last pushed vector, widened back from its halves; kept to avoid an allocation per
    /// push.
    widened: Vec<f32>,
}

impl Arena {
    pub(super) fn new(dim: usize) -> Self {
        Arena {
            dim,
            chunks: Vec::new(),
            len: 0,
            codes: CodeArena::new(dim, CHUNK),
            widened: vec![0.0; dim],
        }
    }

    pub(super) fn push(&mut self, v: &[f32]) {
        debug_assert_eq!(v.len(), self.dim);
        if self.len.is_multiple_of(CHUNK) {
            self.chunks.push(Vec::with_capacity(first_chunk_grows(
                &self.chunks,
                CHUNK * self.dim,
            )));
        }
        let chunk = self.chunks.last_mut().expect("chunk allocated above");
        let start = chunk.len();
        half::encode_into(v, chunk);
        half::decode_into(&chunk[start..], &mut self.widened);
        self.codes.push(&self.widened);
        self.len += 1;
    }

    // Called per vector by the exact scans of `search.rs`, another codegen unit: without the
    // hint each read of a vector is a call.
    #[inline]
    pub(super) fn halves(&self, slot: usize) -> &[u16] {
        let off = (slot % CHUNK) * self.dim;
        &self.chunks[slot / CHUNK][off..off + self.dim]
    }

    /// The stored vector of `slot`, as floats.
    pub(super) fn get(&self, slot: usize) -> Vec<f32> {
        half::decode(self.halves(slot))
    }

    /// The dot product of the stored vector of `slot` with `q`; the same bits as
    /// `distance::dot` of [`Arena::get`]'s copy.
    #[inline]
    pub(super) fn dot(&self, slot: usize, q: &[f32]) -> f32 {
        dot_f16(self.halves(slot), q)
    }

    /// Whether `slot` holds what pushing `v` would store.
    pub(super) fn holds(&self, slot: usize, v: &[f32]) -> bool {
        let stored = self.halves(slot);
        stored.len() == v.len() && stored.iter().zip(v).all(|(&h, &x)| h == half::to_f16(x))
    }

    /// Heap bytes of the vectors and their codes.
    pub(super) fn heap_bytes(&self) -> (u64, u64) {
        (nested_vec_bytes(&self.chunks), self.codes.heap_bytes())
    }
}

impl Vectors for Arena {
    #[inline]
    fn halves(&self, slot: usize) -> &[u16] {
        Arena::halves(self, slot)
    }
}
