//! The HNSW graph's links copied into flat arrays, and the search over them.
//!
//! hnsw_rs builds, inserts and persists the graph, but its search allocates a
//! hash set and heaps of `Arc`s per query, clones every visited point's
//! neighbour lists under a lock and reads vectors through a pointer per point.
//! At 100k × 512 that made a search at equal recall cost about three times
//! what hnswlib's does. The same graph searched here, with neighbour ids in
//! flat arrays, vectors read from the index's own arena, a visited list reset
//! by bumping a generation and heaps kept across searches, avoids all of it.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use hnsw_rs::hnsw::Hnsw;
use parking_lot::Mutex;

use crate::distance::{dot, UnitCosine};

/// Where [`FlatGraph::search`] reads vectors: by slot number, which is also
/// the id the graph knows each point by.
pub(crate) trait Vectors {
    fn vector(&self, slot: usize) -> &[f32];
}

/// A copy of the links of an hnsw_rs graph over the slots below `covered`.
///
/// Links to later slots are left out: the copy stays valid while the graph
/// grows, and callers scan those slots exactly until the next copy.
pub(crate) struct FlatGraph {
    covered: usize,
    entry: u32,
    top_level: usize,
    /// Layer 0, `1 + stride0` words per slot: the link count, then the links.
    stride0: usize,
    level0: Vec<u32>,
    /// The few nodes above layer 0: where their blocks of `1 + stride_up`
    /// words (count, links) for layers `1..=level` start in `upper`.
    upper_at: HashMap<u32, usize>,
    stride_up: usize,
    upper: Vec<u32>,
}

/// A candidate as one heap key: distances are clamped to `[0, 2]`, and the
/// bit patterns of non-negative floats order like the floats, so the distance
/// goes in the high half and the slot breaks ties in the low half.
#[inline]
fn key(dist: f32, slot: u32) -> u64 {
    (u64::from(dist.to_bits()) << 32) | u64::from(slot)
}

#[inline]
fn key_dist(key: u64) -> f32 {
    f32::from_bits((key >> 32) as u32)
}

#[inline]
fn key_slot(key: u64) -> u32 {
    key as u32
}

/// Same arithmetic as `UnitCosine::eval`, so scores match the exact scan's bit for bit.
#[inline]
pub(crate) fn distance(a: &[f32], b: &[f32]) -> f32 {
    (1.0 - dot(a, b)).clamp(0.0, 2.0)
}

impl FlatGraph {
    /// Copies the links among slots below `covered`. Returns `None` when the
    /// graph has no node there. Safe to run while other threads insert: a
    /// node still being linked may get fewer links than it ends up with.
    pub(crate) fn copy(hnsw: &Hnsw<'static, f32, UnitCosine>, covered: usize) -> Option<Self> {
        let indexation = hnsw.get_point_indexation();
        let top = usize::from(indexation.get_max_level_observed());
        let mut level0_lists: Vec<(u32, Vec<u32>)> = Vec::new();
        let mut upper_lists: Vec<(u32, Vec<Vec<u32>>)> = Vec::new();
        let mut entry: Option<(usize, u32)> = None;
        for level in 0..=top {
            // Collected first so that hnsw_rs's layer lock is not held while
            // each point's own lock is taken below.
            let points: Vec<_> = indexation.get_layer_iterator(level).collect();
            for p in points {
                let slot = p.get_origin_id();
                if slot >= covered {
                    continue;
                }
                let slot = slot as u32;
                let mut layers = p.get_neighborhood_id();
                layers.truncate(level + 1);
                let mut lists = layers.into_iter().map(|l| {
                    l.into_iter()
                        .filter(|n| n.d_id < covered)
                        .map(|n| n.d_id as u32)
                        .collect::<Vec<u32>>()
                });
                level0_lists.push((slot, lists.next().unwrap_or_default()));
                if level > 0 {
                    upper_lists.push((slot, lists.collect()));
                }
                if entry.is_none_or(|(l, _)| level > l) {
                    entry = Some((level, slot));
                }
            }
        }
        let (top_level, entry) = entry?;
        let stride0 = level0_lists.iter().map(|(_, l)| l.len()).max().unwrap_or(0);
        let mut level0 = vec![0u32; covered * (1 + stride0)];
        for (slot, list) in &level0_lists {
            let row = &mut level0[*slot as usize * (1 + stride0)..][..1 + stride0];
            row[0] = list.len() as u32;
            row[1..=list.len()].copy_from_slice(list);
        }
        let stride_up = upper_lists
            .iter()
            .flat_map(|(_, layers)| layers.iter().map(Vec::len))
            .max()
            .unwrap_or(0);
        let mut upper_at = HashMap::with_capacity(upper_lists.len());
        let mut upper = Vec::new();
        for (slot, layers) in &upper_lists {
            upper_at.insert(*slot, upper.len());
            for list in layers {
                let start = upper.len();
                upper.resize(start + 1 + stride_up, 0);
                upper[start] = list.len() as u32;
                upper[start + 1..=start + list.len()].copy_from_slice(list);
            }
        }
        Some(FlatGraph {
            covered,
            entry,
            top_level,
            stride0,
            level0,
            upper_at,
            stride_up,
            upper,
        })
    }

    /// Slots below this were linked when the copy was made.
    pub(crate) fn covered(&self) -> usize {
        self.covered
    }

    #[inline]
    fn links0(&self, slot: u32) -> &[u32] {
        let row = &self.level0[slot as usize * (1 + self.stride0)..][..1 + self.stride0];
        &row[1..=row[0] as usize]
    }

    fn links_up(&self, slot: u32, level: usize) -> &[u32] {
        let Some(&at) = self.upper_at.get(&slot) else {
            return &[];
        };
        let start = at + (level - 1) * (1 + self.stride_up);
        match self.upper.get(start..start + 1 + self.stride_up) {
            Some(row) => &row[1..=row[0] as usize],
            None => &[],
        }
    }

    /// The `ef` nearest nodes to the unit vector `q` the graph leads to, as
    /// `(distance, slot)`, nearest first, in `scratch.found`. Tombstones are
    /// neither skipped nor filtered here; callers drop them afterwards.
    pub(crate) fn search<V: Vectors>(
        &self,
        vectors: &V,
        q: &[f32],
        ef: usize,
        scratch: &mut Scratch,
    ) {
        let ef = ef.max(1);
        let mut cur = self.entry;
        let mut cur_d = distance(q, vectors.vector(cur as usize));
        // Greedy descent through the upper layers, as in the HNSW paper.
        for level in (1..=self.top_level).rev() {
            loop {
                let mut moved = false;
                for &n in self.links_up(cur, level) {
                    let d = distance(q, vectors.vector(n as usize));
                    if d < cur_d {
                        cur_d = d;
                        cur = n;
                        moved = true;
                    }
                }
                if !moved {
                    break;
                }
            }
        }

        let stamp = scratch.next_stamp(self.covered);
        let visited = &mut scratch.visited;
        let candidates = &mut scratch.candidates;
        let best = &mut scratch.best;
        let out = &mut scratch.found;
        let pending = &mut scratch.pending;
        out.clear();
        candidates.clear();
        best.clear();
        visited[cur as usize] = stamp;
        candidates.push(Reverse(key(cur_d, cur)));
        best.push(key(cur_d, cur));
        let mut bound = cur_d;
        while let Some(Reverse(c)) = candidates.pop() {
            if key_dist(c) > bound && best.len() >= ef {
                break;
            }
            // Unvisited links are gathered first so that their vectors can
            // be fetched from memory ahead of the distances that read them.
            pending.clear();
            for &n in self.links0(key_slot(c)) {
                let seen = &mut visited[n as usize];
                if *seen != stamp {
                    *seen = stamp;
                    pending.push(n);
                }
            }
            for &n in pending.iter().take(PREFETCH_AHEAD) {
                prefetch(vectors.vector(n as usize));
            }
            for (i, &n) in pending.iter().enumerate() {
                if let Some(&ahead) = pending.get(i + PREFETCH_AHEAD) {
                    prefetch(vectors.vector(ahead as usize));
                }
                let d = distance(q, vectors.vector(n as usize));
                if best.len() < ef || d < bound {
                    candidates.push(Reverse(key(d, n)));
                    best.push(key(d, n));
                    if best.len() > ef {
                        best.pop();
                    }
                    if let Some(&worst) = best.peek() {
                        bound = key_dist(worst);
                    }
                }
            }
        }
        out.extend(best.drain().map(|k| (key_dist(k), key_slot(k))));
        out.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    }
}

/// How many vectors ahead of the distance being computed are prefetched.
const PREFETCH_AHEAD: usize = 2;
/// Cache lines prefetched from the start of each vector; the hardware
/// prefetcher follows the sequential reads after that.
const PREFETCH_LINES: usize = 4;

/// Hints the cache to load the start of `v`, which a coming distance reads.
#[inline]
fn prefetch(v: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let lines = (v.len() * 4).div_ceil(64).min(PREFETCH_LINES);
        for line in 0..lines {
            let p = v.as_ptr().cast::<i8>().wrapping_add(line * 64);
            // SAFETY: a prefetch is only a hint: it never faults or changes
            // memory, and `p` lies within the live slice `v`.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = v;
}

/// Per-search working memory, kept across searches.
#[derive(Default)]
pub(crate) struct Scratch {
    /// `visited[slot] == stamp` marks a slot seen by the current search.
    visited: Vec<u32>,
    stamp: u32,
    /// Nodes still to expand, nearest on top.
    candidates: BinaryHeap<Reverse<u64>>,
    /// The `ef` nearest found so far, farthest on top.
    best: BinaryHeap<u64>,
    /// Links of the node being expanded that the search has not seen yet.
    pending: Vec<u32>,
    /// Results handed back to the caller.
    pub(crate) found: Vec<(f32, u32)>,
}

impl Scratch {
    fn next_stamp(&mut self, slots: usize) -> u32 {
        if self.visited.len() < slots {
            self.visited.resize(slots, 0);
        }
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            // Wrapped: old marks could match again, so clear them once.
            self.visited.fill(0);
            self.stamp = 1;
        }
        self.stamp
    }
}

/// Scratch space for concurrent searches of one index; each search takes one
/// and puts it back, so at most as many exist as searches ever ran at once.
#[derive(Default)]
pub(crate) struct ScratchPool {
    free: Mutex<Vec<Scratch>>,
}

impl ScratchPool {
    pub(crate) fn take(&self) -> Scratch {
        self.free.lock().pop().unwrap_or_default()
    }

    pub(crate) fn put(&self, scratch: Scratch) {
        self.free.lock().push(scratch);
    }
}
