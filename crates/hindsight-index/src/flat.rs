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

use hnsw_rs::anndists::dist::distances::Distance;
use hnsw_rs::hnsw::Hnsw;
use parking_lot::Mutex;

use crate::distance::dot_f16;
use crate::heap::{hash_map_bytes, vec_bytes};

/// Where [`FlatGraph::search`] reads vectors, as halves (see `half.rs`): by slot number, which
/// is also the id the graph knows each point by.
pub(crate) trait Vectors {
    fn halves(&self, slot: usize) -> &[u16];
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

/// Distance from the unit vector `q` to a stored one, with the arithmetic of the exact scan's
/// scores, so that both report the same bits.
#[inline]
pub(crate) fn distance(q: &[f32], stored: &[u16]) -> f32 {
    (1.0 - dot_f16(stored, q)).clamp(0.0, 2.0)
}

impl FlatGraph {
    /// Copies the links among slots below `covered`. Returns `None` when the
    /// graph has no node there. Safe to run while other threads insert: a
    /// node still being linked may get fewer links than it ends up with.
    pub(crate) fn copy<T, D>(hnsw: &Hnsw<'static, T, D>, covered: usize) -> Option<Self>
    where
        T: Clone + Send + Sync,
        D: Distance<T> + Send + Sync,
    {
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

    /// Heap bytes of the copy.
    pub(crate) fn heap_bytes(&self) -> u64 {
        vec_bytes(&self.level0) + vec_bytes(&self.upper) + hash_map_bytes(&self.upper_at)
    }

    /// Links the copy holds on every layer: as many as hnsw_rs's graph holds among the covered
    /// slots.
    pub(crate) fn links(&self) -> usize {
        [(&self.level0, self.stride0), (&self.upper, self.stride_up)]
            .into_iter()
            .flat_map(|(words, stride)| words.chunks_exact(1 + stride))
            .map(|row| row[0] as usize)
            .sum()
    }

    /// Serialises the links, little-endian, for [`Self::from_bytes`].
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let words = self.level0.len() + self.upper.len() + 3 * self.upper_at.len();
        let mut out = Vec::with_capacity(FLAT_HEADER + 4 * words);
        out.extend_from_slice(FLAT_MAGIC);
        for word in [
            FLAT_VERSION,
            self.entry,
            self.top_level as u32,
            self.stride0 as u32,
            self.stride_up as u32,
        ] {
            out.extend_from_slice(&word.to_le_bytes());
        }
        for len in [self.covered, self.upper_at.len(), self.upper.len()] {
            out.extend_from_slice(&(len as u64).to_le_bytes());
        }
        for &word in &self.level0 {
            out.extend_from_slice(&word.to_le_bytes());
        }
        let mut starts: Vec<(u32, usize)> = self.upper_at.iter().map(|(&s, &a)| (s, a)).collect();
        starts.sort_unstable();
        for (slot, at) in starts {
            out.extend_from_slice(&slot.to_le_bytes());
            out.extend_from_slice(&(at as u64).to_le_bytes());
        }
        for &word in &self.upper {
            out.extend_from_slice(&word.to_le_bytes());
        }
        out
    }

    /// Reads links written by [`Self::to_bytes`] for an index of `slots` slots, of which the
    /// copy may cover fewer (slots added after it are scanned exactly). Every count and link is
    /// checked, so whatever the bytes, searching the result stays within `slots`; `None` when
    /// they do not describe such a graph.
    pub(crate) fn from_bytes(bytes: &[u8], slots: usize) -> Option<Self> {
        let mut r = Words(bytes.strip_prefix(FLAT_MAGIC.as_slice())?);
        if r.u32()? != FLAT_VERSION {
            return None;
        }
        let entry = r.u32()?;
        let top_level = r.u32()? as usize;
        let stride0 = r.u32()? as usize;
        let stride_up = r.u32()? as usize;
        let covered = usize::try_from(r.u64()?).ok()?;
        let upper_nodes = usize::try_from(r.u64()?).ok()?;
        let upper_len = usize::try_from(r.u64()?).ok()?;
        if covered > slots || entry as usize >= covered || top_level > MAX_LEVELS {
            return None;
        }
        let level0 = r.u32s(covered.checked_mul(1 + stride0)?)?;
        let mut upper_at = HashMap::with_capacity(upper_nodes.min(covered));
        for _ in 0..upper_nodes {
            let slot = r.u32()?;
            let at = usize::try_from(r.u64()?).ok()?;
            let aligned = at % (1 + stride_up) == 0 && at < upper_len;
            if slot as usize >= covered || !aligned || upper_at.insert(slot, at).is_some() {
                return None;
            }
        }
        let upper = r.u32s(upper_len)?;
        if !r.0.is_empty() || !upper.len().is_multiple_of(1 + stride_up) {
            return None;
        }
        let rows_valid = |words: &[u32], stride: usize| {
            words.chunks_exact(1 + stride).all(|row| {
                let n = row[0] as usize;
                n <= stride && row[1..=n].iter().all(|&l| (l as usize) < covered)
            })
        };
        if !rows_valid(&level0, stride0) || !rows_valid(&upper, stride_up) {
            return None;
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
        let mut cur_d = distance(q, vectors.halves(cur as usize));
        // Greedy descent through the upper layers, as in the HNSW paper.
        for level in (1..=self.top_level).rev() {
            loop {
                let mut moved = false;
                for &n in self.links_up(cur, level) {
                    let d = distance(q, vectors.halves(n as usize));
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
                prefetch(vectors.halves(n as usize));
            }
            for (i, &n) in pending.iter().enumerate() {
                if let Some(&ahead) = pending.get(i + PREFETCH_AHEAD) {
                    prefetch(vectors.halves(ahead as usize));
                }
                let d = distance(q, vectors.halves(n as usize));
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

const FLAT_MAGIC: &[u8; 4] = b"HIFL";
const FLAT_VERSION: u32 = 1;
/// Magic, five `u32` and three `u64`.
const FLAT_HEADER: usize = 4 + 5 * 4 + 3 * 8;
/// hnsw_rs's graphs have at most 16 layers.
const MAX_LEVELS: usize = 16;

/// Little-endian words off the front of a byte slice.
struct Words<'a>(&'a [u8]);

impl Words<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn u32s(&mut self, n: usize) -> Option<Vec<u32>> {
        let bytes = self.take(n.checked_mul(4)?)?;
        Some(
            bytes
                .chunks_exact(4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
        )
    }
}

/// How many vectors ahead of the distance being computed are prefetched.
const PREFETCH_AHEAD: usize = 2;
/// Cache lines prefetched from the start of each vector; the hardware
/// prefetcher follows the sequential reads after that.
const PREFETCH_LINES: usize = 4;

/// Hints the cache to load the start of `v`, which a coming distance reads.
#[inline]
fn prefetch<T>(v: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let lines = std::mem::size_of_val(v).div_ceil(64).min(PREFETCH_LINES);
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

#[cfg(test)]
mod tests {
    use hnsw_rs::hnsw::Hnsw;

    use super::*;
    use crate::distance::UnitCosine;

    fn graph(n: usize, dim: usize) -> Hnsw<'static, f32, UnitCosine> {
        let hnsw = Hnsw::new(8, n, 16, 32, UnitCosine);
        let mut s = 0x9e37_79b9_7f4a_7c15_u64;
        for slot in 0..n {
            let v: Vec<f32> = (0..dim)
                .map(|_| {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    (s >> 40) as f32 - (1u64 << 23) as f32
                })
                .collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            let unit: Vec<f32> = v.iter().map(|x| x / norm).collect();
            hnsw.insert_slice((&unit, slot));
        }
        hnsw
    }

    #[test]
    fn saved_links_read_back_as_saved_and_nothing_else_is_accepted() {
        let hnsw = graph(600, 8);
        let flat = FlatGraph::copy(&hnsw, 600).expect("a graph");
        assert!(
            flat.top_level > 0 && !flat.upper_at.is_empty(),
            "upper layers are covered"
        );
        let bytes = flat.to_bytes();
        let back = FlatGraph::from_bytes(&bytes, 600).expect("reads back");
        assert_eq!(back.to_bytes(), bytes);
        assert_eq!((back.entry, back.top_level), (flat.entry, flat.top_level));
        assert_eq!(back.level0, flat.level0);
        assert_eq!(back.upper_at, flat.upper_at);
        assert_eq!(back.upper, flat.upper);

        assert!(
            FlatGraph::from_bytes(&bytes, 599).is_none(),
            "fewer slots than it covers"
        );
        assert!(
            FlatGraph::from_bytes(&bytes, 601).is_some(),
            "a tail past the copy"
        );
        for cut in [0, 3, FLAT_HEADER - 1, bytes.len() / 2, bytes.len() - 1] {
            assert!(
                FlatGraph::from_bytes(&bytes[..cut], 600).is_none(),
                "cut at {cut}"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(
            FlatGraph::from_bytes(&longer, 600).is_none(),
            "trailing bytes"
        );
        // A link count past the row, in layer 0's first row.
        let mut wide = bytes.clone();
        wide[FLAT_HEADER..FLAT_HEADER + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(FlatGraph::from_bytes(&wide, 600).is_none());
        // The entry point past the last slot.
        let mut entry = bytes;
        entry[8..12].copy_from_slice(&600u32.to_le_bytes());
        assert!(FlatGraph::from_bytes(&entry, 600).is_none());
    }
}
