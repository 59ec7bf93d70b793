//! Everything a search reads, swapped as a whole by a rebuild: the slots, the arena, the graph
//! and its flat copy, and how far the linker has got.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use super::arena::Arena;
use super::graph::Graph;
use super::{graph_from, VectorConfig};
use crate::flat::FlatGraph;

/// A rebuild for tombstones alone is not worth it below this many.
const MIN_DEAD_FOR_REBUILD: usize = 32;

/// Slots linked into the graph after its links were copied for searching are
/// scanned exactly by every search; the copy is refreshed once they number
/// this many, or `1 / REFRESH_FRACTION` of the copied slots when that is
/// more. A copy reads every node's links, so its cost grows with the graph;
/// tying the interval to the graph's size keeps that cost per insert flat
/// while the scanned tail stays a small fraction of a search.
pub(super) const REFRESH_MIN: usize = 256;
const REFRESH_FRACTION: usize = 64;

#[derive(Clone, Copy)]
pub(super) struct Slot {
    pub(super) id: u128,
    pub(super) live: bool,
}

/// Everything a search needs, swapped as a whole by a rebuild.
pub(super) struct State {
    pub(super) slots: Vec<Slot>,
    pub(super) arena: Arena,
    /// Live id → slot.
    pub(super) by_id: HashMap<u128, u32>,
    pub(super) graph: Option<Arc<Graph>>,
    /// Slots below this are in `graph`, or were dead when the linker reached them. Writes only
    /// append; the linker links the slots from here on in the background, and searches scan
    /// them exactly meanwhile.
    pub(super) linked: usize,
    /// The graph's links among the slots below `covered()`, searched instead
    /// of `graph`; slots from there on are scanned exactly.
    pub(super) flat: Option<Arc<FlatGraph>>,
    /// A dumped graph that a background thread is reading back; `graph` is
    /// `None` meanwhile, and `flat`, when the dump had it, already searches it.
    pub(super) pending: Option<Arc<PendingGraph>>,
}

/// Where a dumped graph is, and how far it reaches.
pub(super) struct PendingGraph {
    pub(super) dir: PathBuf,
    pub(super) basename: String,
    pub(super) points: usize,
    /// Slots the dumped graph had linked; the linker goes on from there once it is attached.
    pub(super) linked: usize,
}

impl State {
    pub(super) fn new(dim: usize) -> Self {
        State {
            slots: Vec::new(),
            arena: Arena::new(dim),
            by_id: HashMap::new(),
            graph: None,
            linked: 0,
            flat: None,
            pending: None,
        }
    }

    #[inline]
    pub(super) fn live(&self) -> usize {
        self.by_id.len()
    }

    #[inline]
    pub(super) fn dead(&self) -> usize {
        self.slots.len() - self.by_id.len()
    }

    /// Appends a live slot, turning any previous slot of the same id into a tombstone.
    pub(super) fn push(&mut self, id: u128, v: &[f32]) -> u32 {
        if let Some(&old) = self.by_id.get(&id) {
            self.kill(old);
        }
        let slot = u32::try_from(self.slots.len()).expect("more than 4 billion slots");
        self.slots.push(Slot { id, live: true });
        self.arena.push(v);
        self.by_id.insert(id, slot);
        slot
    }

    pub(super) fn kill(&mut self, slot: u32) {
        let s = &mut self.slots[slot as usize];
        if s.live {
            s.live = false;
            if self.by_id.get(&s.id) == Some(&slot) {
                self.by_id.remove(&s.id);
            }
        }
    }

    fn needs_build(&self, cfg: &VectorConfig) -> bool {
        self.graph_missing(cfg) || self.too_dead(cfg)
    }

    /// Large enough for a graph, and without one.
    pub(super) fn graph_missing(&self, cfg: &VectorConfig) -> bool {
        self.graph.is_none() && self.pending.is_none() && self.live() >= graph_from(cfg).max(1)
    }

    /// Tombstones enough for a compacting rebuild.
    pub(super) fn too_dead(&self, cfg: &VectorConfig) -> bool {
        let dead = self.dead();
        dead >= MIN_DEAD_FOR_REBUILD
            && dead as f64 > cfg.rebuild_tombstone_ratio * self.slots.len() as f64
    }

    /// Whether the background has work: a graph to read back, to build, to extend or to copy.
    pub(super) fn needs_maintenance(&self, cfg: &VectorConfig) -> bool {
        self.pending.is_some() || self.needs_build(cfg) || self.needs_link() || self.needs_refresh()
    }

    /// Whether the graph has slots still to link.
    #[inline]
    pub(super) fn needs_link(&self) -> bool {
        self.graph.is_some() && self.linked < self.slots.len()
    }

    /// Whether enough slots were linked since the flat copy to copy again.
    pub(super) fn needs_refresh(&self) -> bool {
        // A graph holding no point has no links to copy, however many slots it has passed: the
        // slots linked so far were all removed before their turn. A copy would come back empty
        // and leave this true, and the maintenance loop would copy again forever.
        if self
            .graph
            .as_ref()
            .is_none_or(|graph| graph.hnsw.get_nb_point() == 0)
        {
            return false;
        }
        let copied = self.copied();
        self.linked.saturating_sub(copied) >= REFRESH_MIN.max(copied / REFRESH_FRACTION)
    }

    /// Slots the flat copy of the links covers.
    #[inline]
    pub(super) fn copied(&self) -> usize {
        self.flat.as_ref().map_or(0, |f| f.covered())
    }

    /// Slots a graph search reaches through the graph; the ones from here on it scans.
    #[inline]
    pub(super) fn covered(&self) -> usize {
        match (&self.flat, &self.graph) {
            (Some(flat), _) => flat.covered(),
            (None, Some(_)) => self.linked,
            (None, None) => 0,
        }
    }

    /// Slots a graph search would have to scan exactly: all of them while there is no graph.
    #[inline]
    pub(super) fn unsearched(&self) -> usize {
        self.slots.len() - self.covered()
    }
}
