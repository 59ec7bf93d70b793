//! The vectors by slot number, in chunks, each with its eight-bit codes beside it.

use crate::codes::CodeArena;
use crate::flat::Vectors;

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
/// Each vector's eight-bit codes are kept beside it, for exact scans (see `codes.rs`).
pub(super) struct Arena {
    pub(super) dim: usize,
    pub(super) chunks: Vec<Vec<f32>>,
    len: usize,
    pub(super) codes: CodeArena,
}

impl Arena {
    pub(super) fn new(dim: usize) -> Self {
        Arena {
            dim,
            chunks: Vec::new(),
            len: 0,
            codes: CodeArena::new(dim, CHUNK),
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
        self.chunks
            .last_mut()
            .expect("chunk allocated above")
            .extend_from_slice(v);
        self.codes.push(v);
        self.len += 1;
    }

    // Called per vector by the exact scans of `search.rs`, another codegen unit: without the
    // hint each read of a vector is a call.
    #[inline]
    pub(super) fn get(&self, slot: usize) -> &[f32] {
        let off = (slot % CHUNK) * self.dim;
        &self.chunks[slot / CHUNK][off..off + self.dim]
    }
}

impl Vectors for Arena {
    #[inline]
    fn vector(&self, slot: usize) -> &[f32] {
        self.get(slot)
    }
}
