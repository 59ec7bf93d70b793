//! Bounded best-k selection shared by every index.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A scored hit; `Ord` puts the *better* hit first (higher score, then lower
/// id so results are deterministic when scores tie).
#[derive(Clone, Copy, Debug)]
struct Hit {
    id: u128,
    score: f32,
}

impl Hit {
    fn rank(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then_with(|| self.id.cmp(&other.id))
    }
}

impl PartialEq for Hit {
    fn eq(&self, other: &Self) -> bool {
        self.rank(other) == Ordering::Equal
    }
}
impl Eq for Hit {}
impl PartialOrd for Hit {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Hit {
    // A max-heap of this order keeps the worst retained hit on top, ready to evict.
    fn cmp(&self, other: &Self) -> Ordering {
        self.rank(other)
    }
}

/// Keeps the `k` best `(id, score)` pairs seen so far.
pub(crate) struct TopK {
    k: usize,
    heap: BinaryHeap<Hit>,
}

impl TopK {
    pub(crate) fn new(k: usize) -> Self {
        TopK {
            k,
            heap: BinaryHeap::with_capacity(k.saturating_add(1).min(4096)),
        }
    }

    /// Whether a hit would be kept; lets callers skip an expensive filter call
    /// for hits that could not make the cut anyway.
    pub(crate) fn admits(&self, id: u128, score: f32) -> bool {
        if self.k == 0 {
            return false;
        }
        if self.heap.len() < self.k {
            return true;
        }
        let worst = self.heap.peek().expect("heap is full");
        Hit { id, score }.rank(worst) == Ordering::Less
    }

    /// A score below which nothing is admitted, whatever its id: a cheap first test for scans
    /// that offer many hits. Scores at or above it still need [`TopK::admits`].
    pub(crate) fn floor(&self) -> f32 {
        if self.k == 0 {
            f32::INFINITY
        } else if self.heap.len() < self.k {
            f32::NEG_INFINITY
        } else {
            self.heap.peek().expect("heap is full").score
        }
    }

    pub(crate) fn push(&mut self, id: u128, score: f32) {
        if !self.admits(id, score) {
            return;
        }
        if self.heap.len() == self.k {
            self.heap.pop();
        }
        self.heap.push(Hit { id, score });
    }

    /// Best first.
    pub(crate) fn into_sorted(self) -> Vec<(u128, f32)> {
        let mut v = self.heap.into_vec();
        v.sort_by(Hit::rank);
        v.into_iter().map(|h| (h.id, h.score)).collect()
    }
}

/// Sorts best first with the same tie-break as [`TopK`].
pub(crate) fn sort_hits(hits: &mut [(u128, f32)]) {
    hits.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_best_k_with_deterministic_ties() {
        let mut t = TopK::new(3);
        for (id, s) in [(5, 0.1), (1, 0.9), (2, 0.5), (4, 0.5), (3, 0.5), (6, 0.95)] {
            t.push(id, s);
        }
        assert_eq!(t.into_sorted(), vec![(6, 0.95), (1, 0.9), (2, 0.5)]);
    }

    #[test]
    fn nothing_below_the_floor_is_admitted_and_a_tie_at_it_is_ranked_by_id() {
        let mut t = TopK::new(2);
        assert_eq!(t.floor(), f32::NEG_INFINITY);
        t.push(5, 0.5);
        assert_eq!(t.floor(), f32::NEG_INFINITY);
        t.push(7, 0.7);
        assert_eq!(t.floor(), 0.5);
        assert!(!t.admits(1, 0.49));
        assert!(t.admits(1, 0.5), "a lower id wins a tie");
        assert!(!t.admits(9, 0.5));
        assert_eq!(TopK::new(0).floor(), f32::INFINITY);
    }

    #[test]
    fn zero_k_keeps_nothing() {
        let mut t = TopK::new(0);
        t.push(1, 1.0);
        assert!(t.into_sorted().is_empty());
    }
}
