//! Nearest-neighbour search by cosine similarity.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hnsw_rs::api::AnnT;
use hnsw_rs::hnsw::Hnsw;
use hnsw_rs::hnswio::HnswIo;
use parking_lot::{Condvar, Mutex, RwLock, RwLockReadGuard};

use crate::background::run_build;
use crate::codes::{products, CodeArena, Coded, QueryCodes};
use crate::distance::{dot, normalised, UnitCosine};
use crate::flat::{FlatGraph, ScratchPool, Vectors};
use crate::heap::{hash_map_bytes, nested_vec_bytes, vec_bytes, IndexMemory};
use crate::persist;
use crate::topk::{sort_hits, TopK};
use crate::IndexError;

/// Tuning knobs of a [`VectorIndex`].
#[derive(Clone, Debug)]
pub struct VectorConfig {
    /// Vector dimension; every vector and query must have exactly this length.
    pub dim: usize,
    /// Links per node in the upper layers (layer 0 keeps twice as many).
    pub max_nb_connection: usize,
    /// Candidate list size while inserting. The default 100 was chosen by measurement
    /// (`bench/hnsw-vs-hnswlib`, 20,000 × 512, M 24): it links in 25 s where 200 took 45 s, and
    /// its graph finds the same neighbours (recall@10 0.960 against 0.964 at ef 64, 0.995 against
    /// 0.996 at ef 128) at the same search cost.
    pub ef_construction: usize,
    /// Candidate list size while searching (raised to `k` when smaller).
    pub ef_search: usize,
    /// Below this many live vectors searches scan exactly. The graph starts at half as many,
    /// so that the linker has caught up by the time searches need it. `0` forces the graph for
    /// every unfiltered search. The default is where a 512-d scan (about 5 ms at 20k) stops
    /// beating the graph.
    pub exact_threshold: usize,
    /// A graph search with candidate list `ef` costs about as much as an
    /// exact scan of `graph_cost_per_ef × ef` vectors. Filtered searches use
    /// it to pick the cheaper path: a scan computes distances only for the
    /// vectors that pass, while the graph must widen its list by the inverse
    /// of the pass rate. The default 320 was measured at 100k × 512 (ef 128:
    /// 11 ms; full scan: 25 ms). `0` always uses the graph.
    pub graph_cost_per_ef: f64,
    /// Rebuild when dead slots exceed this fraction of all slots.
    pub rebuild_tombstone_ratio: f64,
    /// Rebuild on a background thread (`true`) or inside the mutating call.
    pub background_rebuild: bool,
}

/// Live vectors from which an index keeps a graph: half the exact threshold.
fn graph_from(cfg: &VectorConfig) -> usize {
    cfg.exact_threshold / 2
}

impl VectorConfig {
    /// Defaults tuned for sentence embeddings (dim 384–1024).
    pub fn new(dim: usize) -> Self {
        VectorConfig {
            dim,
            max_nb_connection: 24,
            ef_construction: 100,
            ef_search: 128,
            exact_threshold: 20_000,
            graph_cost_per_ef: 320.0,
            rebuild_tombstone_ratio: 0.2,
            background_rebuild: true,
        }
    }
}

/// Counters describing a [`VectorIndex`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VectorStats {
    /// Vectors that searches can return.
    pub live: usize,
    /// Removed or replaced vectors still occupying a slot (and a graph node).
    pub tombstones: usize,
    /// Nodes in the HNSW graph, if one is built.
    pub graph_points: Option<usize>,
    /// Slots a graph search would scan exactly: those the linker has not linked yet, or not
    /// copied for searching yet; all of them while there is no graph.
    pub unsearched: usize,
    /// Whether a rebuild is scheduled or running.
    pub rebuilding: bool,
}

/// Cosine-similarity index over L2-normalised `f32` vectors keyed by `u128`.
///
/// Small indexes (and very selective filters) are scanned exactly; larger
/// ones are searched through an HNSW graph. The graph cannot delete, so
/// removals and replacements leave tombstones that searches skip,
/// and a compacting rebuild runs once they pass
/// [`VectorConfig::rebuild_tombstone_ratio`]. All methods take `&self`;
/// searches and writes may run concurrently from any thread.
pub struct VectorIndex {
    shared: Arc<Shared>,
}

/// Vectors stored per arena chunk; chunking avoids copying the whole arena
/// when it grows.
const CHUNK: usize = 1024;
/// Slots copied per read-lock acquisition while a rebuild snapshots the index.
const COPY_BATCH: usize = 8192;
/// Graph inserts per batch while rebuilding; the shutdown flag is checked
/// between batches.
const BUILD_BATCH: usize = 4096;
/// Batches at least this large are inserted with hnsw_rs's rayon-parallel insert.
const PARALLEL_MIN: usize = 32;
/// Slots the linker takes into the graph at a time. A dump waits for the batch in hand, so it is
/// kept to a fraction of a second of linking; large enough for both of rayon's threads to share.
const LINK_BATCH: usize = 512;
/// A rebuild for tombstones alone is not worth it below this many.
const MIN_DEAD_FOR_REBUILD: usize = 32;
/// Live vectors sampled to estimate how selective a filter is.
const FILTER_SAMPLE: usize = 64;
/// Slots an exact scan scores at once against all its queries: a multiple of the distance
/// kernel's block of three vectors, and few enough that their scores stay in cache.
const SCAN_CHUNK: usize = 96;
/// Upper bound for the candidate list when retrying a graph search.
const MAX_EF: usize = 4096;
/// Layers of the graph; hnsw_rs only dumps graphs with its maximum of 16.
const MAX_LAYER: usize = 16;
/// Slots linked into the graph after its links were copied for searching are
/// scanned exactly by every search; the copy is refreshed once they number
/// this many, or `1 / REFRESH_FRACTION` of the copied slots when that is
/// more. A copy reads every node's links, so its cost grows with the graph;
/// tying the interval to the graph's size keeps that cost per insert flat
/// while the scanned tail stays a small fraction of a search.
const REFRESH_MIN: usize = 256;
const REFRESH_FRACTION: usize = 64;
/// Marks a slot that was dead when a rebuild copied it.
const NO_SLOT: u32 = u32::MAX;

const VECTORS_MAGIC: &[u8; 4] = b"HIVX";
const VECTORS_VERSION: u32 = 1;
const VECTORS_FILE: &str = "vectors.bin";
/// The flat copy of the graph's links (`flat.rs`), saved beside hnsw_rs's own files so that a
/// loaded index searches its graph before hnsw_rs has read it back.
const LINKS_FILE: &str = "links.bin";
const GRAPH_BASENAME: &str = "graph";

struct Shared {
    cfg: VectorConfig,
    ef_search: AtomicUsize,
    state: RwLock<State>,
    /// Serialises rebuilds, the linker and refreshes of the flat copy.
    build_lock: Mutex<()>,
    /// Held while slots are linked into the current graph, and by a dump, which must not save
    /// a graph with half-linked points.
    link_lock: Mutex<()>,
    status: Mutex<BuildStatus>,
    idle: Condvar,
    closing: AtomicBool,
    /// Working memory of the flat graph search.
    scratch: ScratchPool,
    /// Graphs built from the vectors and swapped in (see [`VectorIndex::graphs_built`]).
    graphs_built: AtomicU64,
}

#[derive(Default)]
struct BuildStatus {
    scheduled: bool,
}

#[derive(Clone, Copy)]
struct Slot {
    id: u128,
    live: bool,
}

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
struct Arena {
    dim: usize,
    chunks: Vec<Vec<f32>>,
    len: usize,
    codes: CodeArena,
}

impl Arena {
    fn new(dim: usize) -> Self {
        Arena {
            dim,
            chunks: Vec::new(),
            len: 0,
            codes: CodeArena::new(dim, CHUNK),
        }
    }

    fn push(&mut self, v: &[f32]) {
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

    fn get(&self, slot: usize) -> &[f32] {
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

/// Everything a search needs, swapped as a whole by a rebuild.
struct State {
    slots: Vec<Slot>,
    arena: Arena,
    /// Live id → slot.
    by_id: HashMap<u128, u32>,
    graph: Option<Arc<Graph>>,
    /// Slots below this are in `graph`, or were dead when the linker reached them. Writes only
    /// append; the linker links the slots from here on in the background, and searches scan
    /// them exactly meanwhile.
    linked: usize,
    /// The graph's links among the slots below `covered()`, searched instead
    /// of `graph`; slots from there on are scanned exactly.
    flat: Option<Arc<FlatGraph>>,
    /// A dumped graph that a background thread is reading back; `graph` is
    /// `None` meanwhile, and `flat`, when the dump had it, already searches it.
    pending: Option<Arc<PendingGraph>>,
}

/// Where a dumped graph is, and how far it reaches.
struct PendingGraph {
    dir: PathBuf,
    basename: String,
    points: usize,
    /// Slots the dumped graph had linked; the linker goes on from there once it is attached.
    linked: usize,
}

impl State {
    fn new(dim: usize) -> Self {
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

    fn live(&self) -> usize {
        self.by_id.len()
    }

    fn dead(&self) -> usize {
        self.slots.len() - self.by_id.len()
    }

    /// Appends a live slot, turning any previous slot of the same id into a tombstone.
    fn push(&mut self, id: u128, v: &[f32]) -> u32 {
        if let Some(&old) = self.by_id.get(&id) {
            self.kill(old);
        }
        let slot = u32::try_from(self.slots.len()).expect("more than 4 billion slots");
        self.slots.push(Slot { id, live: true });
        self.arena.push(v);
        self.by_id.insert(id, slot);
        slot
    }

    fn kill(&mut self, slot: u32) {
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
    fn graph_missing(&self, cfg: &VectorConfig) -> bool {
        self.graph.is_none() && self.pending.is_none() && self.live() >= graph_from(cfg).max(1)
    }

    /// Tombstones enough for a compacting rebuild.
    fn too_dead(&self, cfg: &VectorConfig) -> bool {
        let dead = self.dead();
        dead >= MIN_DEAD_FOR_REBUILD
            && dead as f64 > cfg.rebuild_tombstone_ratio * self.slots.len() as f64
    }

    /// Whether the background has work: a graph to read back, to build, to extend or to copy.
    fn needs_maintenance(&self, cfg: &VectorConfig) -> bool {
        self.pending.is_some() || self.needs_build(cfg) || self.needs_link() || self.needs_refresh()
    }

    /// Whether the graph has slots still to link.
    fn needs_link(&self) -> bool {
        self.graph.is_some() && self.linked < self.slots.len()
    }

    /// Whether enough slots were linked since the flat copy to copy again.
    fn needs_refresh(&self) -> bool {
        if self.graph.is_none() {
            return false;
        }
        let copied = self.copied();
        self.linked.saturating_sub(copied) >= REFRESH_MIN.max(copied / REFRESH_FRACTION)
    }

    /// Slots the flat copy of the links covers.
    fn copied(&self) -> usize {
        self.flat.as_ref().map_or(0, |f| f.covered())
    }

    /// Slots a graph search reaches through the graph; the ones from here on it scans.
    fn covered(&self) -> usize {
        match (&self.flat, &self.graph) {
            (Some(flat), _) => flat.covered(),
            (None, Some(_)) => self.linked,
            (None, None) => 0,
        }
    }

    /// Slots a graph search would have to scan exactly: all of them while there is no graph.
    fn unsearched(&self) -> usize {
        self.slots.len() - self.covered()
    }

    /// Fraction of a deterministic sample of live vectors that pass `filter`.
    fn pass_rate(&self, filter: &dyn Fn(u128) -> bool) -> f64 {
        let step = (self.slots.len() / FILTER_SAMPLE).max(1);
        let (mut seen, mut passed) = (0usize, 0usize);
        for s in self.slots.iter().step_by(step).filter(|s| s.live) {
            seen += 1;
            passed += usize::from(filter(s.id));
        }
        if seen == 0 {
            1.0
        } else {
            passed as f64 / seen as f64
        }
    }

    fn exact(
        &self,
        q: &[f32],
        k: usize,
        filter: &dyn Fn(u128) -> bool,
        filter_first: bool,
    ) -> Vec<(u128, f32)> {
        self.exact_many(&[q], k, filter, filter_first)
            .pop()
            .unwrap_or_default()
    }

    fn exact_many(
        &self,
        qs: &[&[f32]],
        k: usize,
        filter: &dyn Fn(u128) -> bool,
        filter_first: bool,
    ) -> Vec<Vec<(u128, f32)>> {
        self.exact_many_from(qs, k, filter, filter_first, 0)
    }

    /// One pass over the slots for every query: a chunk of slots at a time is scored against all
    /// of them at once through the vectors' eight-bit codes (see `codes.rs`), and a slot's float
    /// score is computed for a query only where the codes leave it a chance of that query's top
    /// k. Slots are offered in slot order with their float scores, as when each was scored
    /// alone, so the codes change the work and not the answer. The filter runs at most once
    /// per slot. Only the slots from `first` on are scanned.
    fn exact_many_from(
        &self,
        qs: &[&[f32]],
        k: usize,
        filter: &dyn Fn(u128) -> bool,
        filter_first: bool,
        first: usize,
    ) -> Vec<Vec<(u128, f32)>> {
        if qs.is_empty() {
            return Vec::new();
        }
        let mut tops: Vec<TopK> = qs.iter().map(|_| TopK::new(k)).collect();
        let mut floors: Vec<f32> = tops.iter().map(TopK::floor).collect();
        let mut codes = QueryCodes::new(qs);
        let mut live = self
            .slots
            .iter()
            .enumerate()
            .skip(first)
            .filter(|(_, s)| s.live);
        // A chunk's ids, slots and codes, in slot order.
        let mut ids: Vec<u128> = Vec::with_capacity(SCAN_CHUNK);
        let mut slots: Vec<usize> = Vec::with_capacity(SCAN_CHUNK);
        let mut coded: Vec<Coded<'_>> = Vec::with_capacity(SCAN_CHUNK);
        let mut chunk_products = vec![0i32; SCAN_CHUNK * qs.len()];
        loop {
            ids.clear();
            slots.clear();
            coded.clear();
            for (slot, s) in live.by_ref() {
                if filter_first && !filter(s.id) {
                    continue;
                }
                ids.push(s.id);
                slots.push(slot);
                coded.push(self.arena.codes.get(slot));
                if ids.len() == SCAN_CHUNK {
                    break;
                }
            }
            if ids.is_empty() {
                break;
            }
            let chunk_products = &mut chunk_products[..ids.len() * qs.len()];
            products(&codes, &coded, chunk_products);
            for (((&id, &slot), v), row) in ids
                .iter()
                .zip(&slots)
                .zip(&coded)
                .zip(chunk_products.chunks_exact(qs.len()))
            {
                if !codes.any_reaches(*v, row) {
                    continue;
                }
                let mut passes = filter_first.then_some(true);
                for (i, &product) in row.iter().enumerate() {
                    if !codes.reaches(i, *v, product) {
                        continue;
                    }
                    let (top, floor) = (&mut tops[i], &mut floors[i]);
                    let score = similarity(qs[i], self.arena.get(slot));
                    if score < *floor {
                        continue;
                    }
                    // The filter runs only for hits that would make the cut.
                    if top.admits(id, score) && *passes.get_or_insert_with(|| filter(id)) {
                        top.push(id, score);
                        *floor = top.floor();
                        codes.set_floor(i, *floor);
                    }
                }
            }
        }
        tops.into_iter().map(TopK::into_sorted).collect()
    }
}

/// Read access to an index's stored vectors; see [`VectorIndex::stored`].
pub struct StoredVectors<'a> {
    st: RwLockReadGuard<'a, State>,
}

impl StoredVectors<'_> {
    /// The stored (normalised) vector of `id`.
    pub fn get(&self, id: u128) -> Option<&[f32]> {
        let slot = *self.st.by_id.get(&id)?;
        Some(self.st.arena.get(slot as usize))
    }
}

/// How a search is answered; see [`VectorIndex::plan`].
enum Plan {
    Nothing,
    Exact {
        filter_first: bool,
    },
    /// Through the flat copy of the links when there is one, else through
    /// hnsw_rs's graph; at least one of the two exists.
    Graph {
        graph: Option<Arc<Graph>>,
        visible: f64,
    },
}

/// Same arithmetic as `1 - UnitCosine::eval`, so exact and graph searches
/// report bit-identical scores.
fn similarity(a: &[f32], b: &[f32]) -> f32 {
    similarity_of_dot(dot(a, b))
}

fn similarity_of_dot(dot: f32) -> f32 {
    1.0 - (1.0 - dot).clamp(0.0, 2.0)
}

struct Graph {
    hnsw: Hnsw<'static, f32, UnitCosine>,
}

/// What hnsw_rs allocates per point besides its copy of the vector: the point (behind an `Arc`),
/// its lock around one list header per possible layer, and its entry in the layer table.
const GRAPH_BYTES_PER_POINT: usize =
    16 + std::mem::size_of::<hnsw_rs::hnsw::Point<'static, f32>>() + 48 + MAX_LAYER * 24 + 8;
/// Per link: the `Arc` it points to (the neighbour and its distance) and its slot in a neighbour
/// list, twice over: a list grows by doubling until it passes its cap (`2 M` links on layer 0,
/// `M` above) and drops its worst link, so a full list's buffer has about twice the slots it uses.
const GRAPH_BYTES_PER_LINK: usize = 32 + 2 * 8;

impl Graph {
    /// Heap bytes of hnsw_rs's graph, estimated from its points and, through the flat copy of its
    /// links, from how many links a point has on average.
    fn heap_bytes(&self, flat: Option<&FlatGraph>, dim: usize) -> u64 {
        let points = self.hnsw.get_nb_point();
        let links = match flat {
            Some(flat) if flat.covered() > 0 => flat.links() * points / flat.covered(),
            _ => points * self.hnsw.get_max_nb_connection() as usize,
        };
        (points * (GRAPH_BYTES_PER_POINT + dim * 4) + links * GRAPH_BYTES_PER_LINK) as u64
    }

    fn new(cfg: &VectorConfig, capacity: usize) -> Self {
        let m = cfg.max_nb_connection.clamp(4, 64);
        Graph {
            hnsw: Hnsw::new(
                m,
                capacity.max(1024),
                MAX_LAYER,
                cfg.ef_construction.max(m),
                UnitCosine,
            ),
        }
    }

    fn insert_many(&self, items: &[(&[f32], usize)]) {
        if items.len() >= PARALLEL_MIN {
            self.hnsw.parallel_insert_slice(&items.to_vec());
        } else {
            for &item in items {
                self.hnsw.insert_slice(item);
            }
        }
    }
}

/// A graph saved with the vectors, as the bank manifest records it.
pub(crate) struct SavedGraph<'a> {
    pub(crate) basename: &'a str,
    pub(crate) points: usize,
    /// Slots the graph had linked; `None` for dumps from before the linker, which linked all.
    pub(crate) linked: Option<usize>,
}

/// What a dump wrote, recorded in the bank manifest.
pub(crate) struct VectorDump {
    pub(crate) graph_basename: Option<String>,
    /// Nodes in the saved graph; not every slot has one (a slot replaced
    /// within the same batch is never linked).
    pub(crate) graph_points: usize,
    /// Slots the saved graph had linked; the linker goes on from there after a load.
    pub(crate) graph_linked: usize,
}

impl VectorDump {
    /// The saved graph, as a load reads it.
    #[cfg(test)]
    pub(crate) fn saved(&self) -> Option<SavedGraph<'_>> {
        self.graph_basename.as_deref().map(|basename| SavedGraph {
            basename,
            points: self.graph_points,
            linked: Some(self.graph_linked),
        })
    }
}

impl VectorIndex {
    /// An empty index.
    ///
    /// # Panics
    /// If `cfg.dim` is zero.
    pub fn new(cfg: VectorConfig) -> Self {
        assert!(cfg.dim > 0, "vector dimension must be positive");
        let mut state = State::new(cfg.dim);
        if cfg.exact_threshold == 0 {
            state.graph = Some(Arc::new(Graph::new(&cfg, 0)));
        }
        Self::from_state(cfg, state)
    }

    fn from_state(cfg: VectorConfig, state: State) -> Self {
        VectorIndex {
            shared: Arc::new(Shared {
                ef_search: AtomicUsize::new(cfg.ef_search.max(1)),
                cfg,
                state: RwLock::new(state),
                build_lock: Mutex::new(()),
                link_lock: Mutex::new(()),
                status: Mutex::new(BuildStatus::default()),
                idle: Condvar::new(),
                closing: AtomicBool::new(false),
                scratch: ScratchPool::default(),
                graphs_built: AtomicU64::new(0),
            }),
        }
    }

    /// The configuration this index was created with.
    pub fn config(&self) -> &VectorConfig {
        &self.shared.cfg
    }

    /// Vector dimension.
    pub fn dim(&self) -> usize {
        self.shared.cfg.dim
    }

    /// Current search candidate list size.
    pub fn ef_search(&self) -> usize {
        self.shared.ef_search.load(Ordering::Relaxed)
    }

    /// Changes the search candidate list size (recall/latency trade-off).
    pub fn set_ef_search(&self, ef: usize) {
        self.shared.ef_search.store(ef.max(1), Ordering::Relaxed);
    }

    /// Inserts or replaces the vector of `id`. The vector is normalised;
    /// re-inserting an identical vector is a no-op. Searches find it as soon as this returns:
    /// they scan it exactly until the linker, in the background, has linked it into the graph.
    pub fn insert(&self, id: u128, vector: &[f32]) -> Result<(), IndexError> {
        let v = normalised(vector, self.dim())?;
        {
            let mut st = self.shared.state.write();
            if let Some(&slot) = st.by_id.get(&id) {
                if st.arena.get(slot as usize) == v.as_slice() {
                    return Ok(());
                }
            }
            st.push(id, &v);
        }
        self.maybe_rebuild();
        Ok(())
    }

    /// Inserts or replaces many vectors; nothing is inserted if any vector is
    /// invalid.
    pub fn insert_batch(&self, items: &[(u128, Vec<f32>)]) -> Result<(), IndexError> {
        let dim = self.dim();
        let vecs = items
            .iter()
            .map(|(_, v)| normalised(v, dim))
            .collect::<Result<Vec<_>, _>>()?;
        {
            let mut st = self.shared.state.write();
            for ((id, _), v) in items.iter().zip(&vecs) {
                if let Some(&slot) = st.by_id.get(id) {
                    if st.arena.get(slot as usize) == v.as_slice() {
                        continue;
                    }
                }
                st.push(*id, v);
            }
        }
        self.maybe_rebuild();
        Ok(())
    }

    /// Removes `id`; returns whether it was present.
    pub fn remove(&self, id: u128) -> bool {
        let removed = {
            let mut st = self.shared.state.write();
            match st.by_id.get(&id) {
                Some(&slot) => {
                    st.kill(slot);
                    true
                }
                None => false,
            }
        };
        if removed {
            self.maybe_rebuild();
        }
        removed
    }

    /// Whether `id` has a vector.
    pub fn contains(&self, id: u128) -> bool {
        self.shared.state.read().by_id.contains_key(&id)
    }

    /// Number of live vectors.
    pub fn len(&self) -> usize {
        self.shared.state.read().live()
    }

    /// Whether no live vector exists.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The stored (normalised) vector of `id`.
    pub fn get(&self, id: u128) -> Option<Vec<f32>> {
        let st = self.shared.state.read();
        st.by_id
            .get(&id)
            .map(|&slot| st.arena.get(slot as usize).to_vec())
    }

    /// The stored vectors under one read lock, for scoring many ids without a copy each. Writes
    /// to this index wait while it is held, and a second read lock taken meanwhile can deadlock
    /// behind a waiting writer: hold it for one loop and call nothing else on the index.
    pub fn stored(&self) -> StoredVectors<'_> {
        StoredVectors {
            st: self.shared.state.read(),
        }
    }

    /// Cosine similarity between `query` and the stored vector of `id`.
    pub fn similarity(&self, id: u128, query: &[f32]) -> Result<Option<f32>, IndexError> {
        let q = normalised(query, self.dim())?;
        let st = self.shared.state.read();
        Ok(st
            .by_id
            .get(&id)
            .map(|&slot| similarity(&q, st.arena.get(slot as usize))))
    }

    /// Heap bytes of the vectors, their codes, the flat links and hnsw_rs's graph; the other
    /// parts of the result are zero.
    pub fn memory(&self) -> IndexMemory {
        let st = self.shared.state.read();
        let arena = &st.arena;
        let vectors =
            nested_vec_bytes(&arena.chunks) + vec_bytes(&st.slots) + hash_map_bytes(&st.by_id);
        IndexMemory {
            vectors,
            codes: arena.codes.heap_bytes(),
            links: st.flat.as_ref().map_or(0, |flat| flat.heap_bytes()),
            graph: st.graph.as_ref().map_or(0, |graph| {
                graph.heap_bytes(st.flat.as_deref(), self.shared.cfg.dim)
            }),
            ..IndexMemory::default()
        }
    }

    /// Graphs built from the vectors and swapped in, and bursts of linking finished, since the
    /// index was created or loaded. A dump taken before the last of them does not hold it, even
    /// when no vector changed since: a bank loaded without its graph builds one in the
    /// background, the linker goes on linking after a bulk load's last write, and only a new
    /// dump keeps the next start from doing that work again.
    pub fn graphs_built(&self) -> u64 {
        self.shared.graphs_built.load(Ordering::Acquire)
    }

    /// Whether a search now costs at most one pass over `exact_threshold` vectors: the index is
    /// that small, or its graph reaches all but that many. After a bulk load a large index scans
    /// the slots the linker has not reached yet; searches a recall can do without should wait.
    pub fn searches_quickly(&self) -> bool {
        let st = self.shared.state.read();
        let threshold = self.shared.cfg.exact_threshold;
        st.live() <= threshold || st.unsearched() <= threshold
    }

    /// Counters for monitoring and tests.
    pub fn stats(&self) -> VectorStats {
        let rebuilding = self.shared.status.lock().scheduled;
        let st = self.shared.state.read();
        VectorStats {
            live: st.live(),
            tombstones: st.dead(),
            graph_points: st
                .graph
                .as_ref()
                .map(|g| g.hnsw.get_nb_point())
                .or(st.pending.as_ref().map(|p| p.points)),
            unsearched: st.unsearched(),
            rebuilding,
        }
    }

    /// The `k` most similar live vectors passing `filter`, best first, as
    /// `(id, cosine similarity)`.
    ///
    /// Uses the graph when one is built and the index is above the exact
    /// threshold, unless scanning just the vectors that pass the filter is
    /// estimated to be cheaper (see [`VectorConfig::graph_cost_per_ef`]);
    /// falls back to an exact scan when the graph cannot produce `k` results.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        filter: &dyn Fn(u128) -> bool,
    ) -> Result<Vec<(u128, f32)>, IndexError> {
        self.search_with_ef(query, k, self.ef_search(), filter)
    }

    /// [`search`](Self::search) with a candidate list of `ef` instead of the index's own: a caller
    /// that needs only the closest few (near-duplicates) can trade recall far down the list for
    /// speed.
    pub fn search_with_ef(
        &self,
        query: &[f32],
        k: usize,
        ef: usize,
        filter: &dyn Fn(u128) -> bool,
    ) -> Result<Vec<(u128, f32)>, IndexError> {
        Ok(self
            .search_batch(&[query], k, ef, filter)?
            .pop()
            .unwrap_or_default())
    }

    /// [`search_with_ef`](Self::search_with_ef) for several queries under one filter, each
    /// answered exactly as alone. Where the plan is an exact scan, the queries share one pass
    /// over the vectors, so each vector is read from memory once for all of them: a batch of
    /// writes' duplicate checks costs about one scan instead of one per write.
    pub fn search_batch(
        &self,
        queries: &[&[f32]],
        k: usize,
        ef: usize,
        filter: &dyn Fn(u128) -> bool,
    ) -> Result<Vec<Vec<(u128, f32)>>, IndexError> {
        let qs = queries
            .iter()
            .map(|q| normalised(q, self.dim()))
            .collect::<Result<Vec<_>, _>>()?;
        if k == 0 || qs.is_empty() {
            return Ok(vec![Vec::new(); qs.len()]);
        }
        let st = self.shared.state.read();
        Ok(match self.plan(&st, k, ef, filter) {
            Plan::Nothing => vec![Vec::new(); qs.len()],
            Plan::Exact { filter_first } => {
                let qs: Vec<&[f32]> = qs.iter().map(Vec::as_slice).collect();
                st.exact_many(&qs, k, filter, filter_first)
            }
            Plan::Graph { graph, visible } => qs
                .iter()
                .map(|q| {
                    graph_search(
                        &self.shared.scratch,
                        &st,
                        graph.as_deref(),
                        q,
                        k,
                        ef.max(1),
                        visible,
                        filter,
                    )
                })
                .collect(),
        })
    }

    /// How a search of `k` under `filter` is answered: by the graph when one is built and the
    /// index is above the exact threshold, unless scanning just the vectors that pass the filter is
    /// estimated to be cheaper.
    fn plan(&self, st: &State, k: usize, ef: usize, filter: &dyn Fn(u128) -> bool) -> Plan {
        let live = st.live();
        if live == 0 {
            return Plan::Nothing;
        }
        // A graph that reaches under half the slots saves less than its search costs.
        let searchable = 2 * st.unsearched() <= st.slots.len();
        if !searchable || live < self.shared.cfg.exact_threshold {
            return Plan::Exact {
                filter_first: false,
            };
        }
        let graph = st.graph.clone();
        let pass = st.pass_rate(filter);
        let ef = ef.max(1).max(k) as f64;
        // A scan computes `live × pass` distances; the graph costs about
        // `graph_cost_per_ef × ef / pass`.
        let exact_cheaper =
            pass < 1.0 && live as f64 * pass * pass < self.shared.cfg.graph_cost_per_ef * ef;
        if exact_cheaper || pass * (live as f64) < (4 * k) as f64 {
            return Plan::Exact {
                filter_first: pass < 0.5,
            };
        }
        Plan::Graph {
            graph,
            visible: pass * live as f64 / st.slots.len() as f64,
        }
    }

    /// Exact scan regardless of size; the reference the graph is measured against.
    pub fn search_exact(
        &self,
        query: &[f32],
        k: usize,
        filter: &dyn Fn(u128) -> bool,
    ) -> Result<Vec<(u128, f32)>, IndexError> {
        let q = normalised(query, self.dim())?;
        Ok(self.shared.state.read().exact(&q, k, filter, false))
    }

    /// Rebuilds (compacts, and builds or drops the graph) on the calling
    /// thread, after any background rebuild has finished.
    pub fn rebuild_now(&self) {
        self.wait_for_rebuild();
        build(&self.shared);
    }

    /// Blocks until no background rebuild is scheduled or running.
    pub fn wait_for_rebuild(&self) {
        let mut status = self.shared.status.lock();
        while status.scheduled {
            self.shared.idle.wait(&mut status);
        }
    }

    fn maybe_rebuild(&self) {
        let shared = &self.shared;
        if !shared.state.read().needs_maintenance(&shared.cfg) {
            return;
        }
        if !shared.cfg.background_rebuild {
            run_maintenance(shared);
            return;
        }
        let mut status = shared.status.lock();
        if status.scheduled || shared.closing.load(Ordering::Acquire) {
            return;
        }
        status.scheduled = true;
        let worker = Arc::clone(shared);
        let spawned = std::thread::Builder::new()
            .name("hindsight-vector-rebuild".into())
            .spawn(move || rebuild_loop(&worker));
        if spawned.is_err() {
            // Out of threads: leave it to the next write to try again.
            status.scheduled = false;
        }
    }

    /// Blocks until a graph being read back from the dump this index was
    /// loaded from is attached, or has failed to load. Saved before that, the
    /// graph would be missing from the dump and the next load would build it
    /// from scratch.
    pub(crate) fn wait_for_dumped_graph(&self) {
        while self.shared.state.read().pending.is_some() {
            // Starts the reading if no write has yet.
            self.maybe_rebuild();
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Writes `vectors.bin` and, when a graph exists, hnsw_rs's graph files
    /// into `dir`, without fsyncing them: the caller syncs the directory's
    /// files once writers may go on. Holds the read lock, so writers wait
    /// while searches continue.
    pub(crate) fn dump_into(&self, dir: &Path) -> Result<VectorDump, IndexError> {
        self.wait_for_dumped_graph();
        // No point is half linked while the graph is saved: the linker finishes its batch first.
        let _linker_paused = self.shared.link_lock.lock();
        let st = self.shared.state.read();
        write_vectors(&st, &dir.join(VECTORS_FILE))?;
        let (graph_basename, graph_points) = match &st.graph {
            Some(g) if g.hnsw.get_nb_point() > 0 => {
                if let Some(flat) = &st.flat {
                    persist::write_file_unsynced(&dir.join(LINKS_FILE), &flat.to_bytes())?;
                }
                (Some(dump_graph(g, dir)?), g.hnsw.get_nb_point())
            }
            _ => (None, 0),
        };
        Ok(VectorDump {
            graph_linked: if graph_basename.is_some() {
                st.linked
            } else {
                0
            },
            graph_basename,
            graph_points,
        })
    }

    /// Reads a dump written by [`Self::dump_into`]. hnsw_rs's graph is read
    /// back after the load returns (at the first write when the dump has the
    /// flat copy of its links, at once otherwise), in the background when the
    /// configuration says so: until then searches use the saved links, or
    /// scan exactly when the dump has none, and the linker goes on once it is
    /// back. hnsw_rs's reading of a 100,000-point graph takes seconds, which
    /// would otherwise keep the bank from answering. A graph that is missing,
    /// unreadable or inconsistent with the vectors is rebuilt from them.
    pub(crate) fn load_from(
        dir: &Path,
        cfg: VectorConfig,
        graph: Option<SavedGraph<'_>>,
    ) -> Result<VectorIndex, IndexError> {
        let index = Self::open_dump(dir, cfg, graph)?;
        let searchable_without_graph = {
            let st = index.shared.state.read();
            st.pending
                .as_ref()
                .is_some_and(|p| p.linked == st.slots.len())
                && st.flat.is_some()
        };
        // With its saved links the graph is searched as it is, and hnsw_rs's copy, needed only
        // to link new vectors, is read at the first write: a bank that is only read never
        // spends the time or the memory on it. Otherwise (also when the dump was taken before
        // the linker had reached every slot) the graph is read back, or built when
        // none was dumped or it does not load, in the background when rebuilds are: the bank
        // answers at once instead of keeping its node from serving for the seconds a read or
        // the minutes a build takes.
        if !searchable_without_graph {
            index.maybe_rebuild();
        }
        Ok(index)
    }

    /// The index a dump describes, with its graph still to be read back.
    fn open_dump(
        dir: &Path,
        cfg: VectorConfig,
        graph: Option<SavedGraph<'_>>,
    ) -> Result<VectorIndex, IndexError> {
        let mut state = read_vectors(&dir.join(VECTORS_FILE), cfg.dim)?;
        if let Some(saved) = graph {
            let linked = saved.linked.unwrap_or(state.slots.len());
            if saved.points <= state.slots.len() && linked <= state.slots.len() {
                state.flat = read_links(&dir.join(LINKS_FILE), linked).map(Arc::new);
                state.pending = Some(Arc::new(PendingGraph {
                    dir: dir.to_path_buf(),
                    basename: saved.basename.to_owned(),
                    points: saved.points,
                    linked,
                }));
            }
        }
        if state.graph.is_none() && cfg.exact_threshold == 0 && state.slots.is_empty() {
            state.graph = Some(Arc::new(Graph::new(&cfg, 0)));
        }
        Ok(VectorIndex::from_state(cfg, state))
    }
}

impl Drop for VectorIndex {
    fn drop(&mut self) {
        // A running rebuild notices and abandons its work.
        self.shared.closing.store(true, Ordering::Release);
    }
}

impl std::fmt::Debug for VectorIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorIndex")
            .field("dim", &self.dim())
            .field("stats", &self.stats())
            .finish()
    }
}

/// Graph search with post-filtering.
///
/// hnsw_rs's own filtered search (`search_filter`) disables early
/// termination: on 20k × 64 it took 1.5× the time of an unfiltered search of
/// equal recall with a filter passing everything, and 15.7 ms with a filter
/// passing 1 in 7 (an exact scan of all 20k takes 0.6 ms). So the graph is
/// searched unfiltered with the candidate list widened by
/// `1 / expected_visible`, and tombstones and filtered ids are dropped
/// afterwards: if at least `k` of the returned nearest nodes pass, they are
/// the nearest passing nodes the graph can see. Otherwise the list is
/// widened again, and as a last resort the index is scanned exactly.
///
/// The graph is searched through its flat copy when there is one (see
/// `flat.rs`), with the slots linked since the copy scanned exactly; before
/// the first copy, through hnsw_rs.
#[allow(clippy::too_many_arguments)]
fn graph_search(
    pool: &ScratchPool,
    st: &State,
    graph: Option<&Graph>,
    q: &[f32],
    k: usize,
    ef_search: usize,
    expected_visible: f64,
    filter: &dyn Fn(u128) -> bool,
) -> Vec<(u128, f32)> {
    let base = ef_search.max(k);
    let mut ef =
        ((base as f64 / expected_visible.max(1e-3)).ceil() as usize).clamp(base, MAX_EF.max(base));
    let flat = st.flat.as_deref();
    // Slots the graph does not reach yet are scanned; what the graph returns from there on (the
    // linker may be adding them as this runs) is left to the scan.
    let covered = st.covered();
    let tail = st
        .exact_many_from(&[q], k, filter, false, covered)
        .pop()
        .unwrap_or_default();
    let mut scratch = flat.map(|_| pool.take());
    let result = loop {
        let mut hits = tail.clone();
        match (flat, scratch.as_mut(), graph) {
            (Some(f), Some(scratch), _) => {
                f.search(&st.arena, q, ef, scratch);
                hits.extend(scratch.found.iter().filter_map(|&(d, slot)| {
                    let s = st.slots.get(slot as usize)?;
                    (s.live && filter(s.id)).then_some((s.id, 1.0 - d))
                }));
            }
            (_, _, Some(graph)) => {
                let found = graph.hnsw.search(q, ef, ef);
                hits.extend(found.iter().filter_map(|n| {
                    let s = st.slots[..covered].get(n.d_id)?;
                    (s.live && filter(s.id)).then_some((s.id, 1.0 - n.distance))
                }));
            }
            // Not planned: a graph search needs the copy or the graph.
            _ => break st.exact(q, k, filter, expected_visible < 0.5),
        }
        if hits.len() >= k {
            sort_hits(&mut hits);
            hits.truncate(k);
            break hits;
        }
        if ef >= MAX_EF || ef >= st.slots.len() {
            // Fewer than k reachable: only an exact scan can tell if more exist.
            break st.exact(q, k, filter, expected_visible < 0.5);
        }
        ef = (ef * 4).min(MAX_EF);
    };
    if let Some(scratch) = scratch {
        pool.put(scratch);
    }
    result
}

/// Copies the graph's links for searching again, covering every slot linked by now: when
/// enough were linked since the last copy, or, `at_any_size`, when any were.
fn refresh_flat(shared: &Shared, at_any_size: bool) {
    let _serial = shared.build_lock.lock();
    let (graph, covered) = {
        let st = shared.state.read();
        let due = st.needs_refresh() || (at_any_size && st.linked > st.copied());
        if !due {
            return;
        }
        let Some(g) = &st.graph else { return };
        (Arc::clone(g), st.linked)
    };
    let Some(flat) = run_build(|| FlatGraph::copy(&graph.hnsw, covered)) else {
        return;
    };
    let mut st = shared.state.write();
    let same_graph = st.graph.as_ref().is_some_and(|g| Arc::ptr_eq(g, &graph));
    if same_graph && st.flat.as_ref().is_none_or(|f| f.covered() < covered) {
        st.flat = Some(Arc::new(flat));
    }
}

/// Gives a bank that has grown large enough an empty graph, which the linker then fills from the
/// first slot on while searches go on scanning: the slots are not copied, as a rebuild would.
fn start_graph(shared: &Shared) {
    let _serial = shared.build_lock.lock();
    let mut st = shared.state.write();
    if st.graph_missing(&shared.cfg) {
        st.graph = Some(Arc::new(Graph::new(&shared.cfg, st.slots.len())));
        st.linked = 0;
        st.flat = None;
    }
}

/// Links the next [`LINK_BATCH`] slots into the graph and returns how many it took. Their
/// vectors are copied out first, so that writes go on while hnsw_rs links them; a slot that
/// dies meanwhile is linked all the same and skipped by searches as any tombstone is.
fn link_next(shared: &Shared) -> usize {
    let _serial = shared.build_lock.lock();
    let (graph, batch, end) = {
        let st = shared.state.read();
        let Some(graph) = st.graph.clone() else {
            return 0;
        };
        let start = st.linked;
        let end = st.slots.len().min(start + LINK_BATCH);
        let batch: Vec<(Vec<f32>, usize)> = (start..end)
            .filter(|&i| st.slots[i].live)
            .map(|i| (st.arena.get(i).to_vec(), i))
            .collect();
        (graph, batch, end)
    };
    let _linking = shared.link_lock.lock();
    let items: Vec<(&[f32], usize)> = batch.iter().map(|(v, i)| (v.as_slice(), *i)).collect();
    run_build(|| graph.insert_many(&items));
    let mut st = shared.state.write();
    if !st.graph.as_ref().is_some_and(|g| Arc::ptr_eq(g, &graph)) || end <= st.linked {
        return 0;
    }
    let taken = end - st.linked;
    st.linked = end;
    taken
}

/// One round of background work: attach a graph being read back, build a graph (the first,
/// or a compacted one), link the next slots, copy the links for searching.
fn run_maintenance(shared: &Shared) {
    let pending = shared.state.read().pending.clone();
    if let Some(pending) = pending {
        attach_dumped_graph(shared, &pending);
    }
    // A graph that did not load is started or built here: built, with the slots compacted, when
    // there are tombstones to drop; started empty for the linker to fill otherwise.
    let (missing, too_dead, dead) = {
        let st = shared.state.read();
        (
            st.graph_missing(&shared.cfg),
            st.too_dead(&shared.cfg),
            st.dead(),
        )
    };
    if too_dead || (missing && dead > 0) {
        build(shared);
    } else if missing {
        start_graph(shared);
    }
    // A burst of writes is copied for searching once linked, even below the refresh interval;
    // single writes to a large bank wait for the interval, as a copy reads the whole graph.
    let mut linked_in_round = 0;
    loop {
        if shared.closing.load(Ordering::Acquire) {
            return;
        }
        let (link, refresh) = {
            let st = shared.state.read();
            (st.needs_link(), st.needs_refresh())
        };
        if refresh {
            refresh_flat(shared, false);
        } else if link {
            linked_in_round += link_next(shared);
        } else {
            if linked_in_round >= REFRESH_MIN {
                refresh_flat(shared, true);
                // Links worth saving: the bank dumps its index again even with no write since.
                shared.graphs_built.fetch_add(1, Ordering::AcqRel);
            }
            return;
        }
    }
}

fn rebuild_loop(shared: &Shared) {
    loop {
        run_maintenance(shared);
        let mut status = shared.status.lock();
        // Checked under the status lock: a writer that sees `scheduled` still
        // set relies on this check to pick up its change.
        let again = !shared.closing.load(Ordering::Acquire)
            && shared.state.read().needs_maintenance(&shared.cfg);
        if !again {
            status.scheduled = false;
            shared.idle.notify_all();
            return;
        }
    }
}

/// Copies live slots of `old` in `range` into `fresh`, recording where each went.
fn copy_range(old: &State, fresh: &mut State, remap: &mut Vec<u32>, range: Range<usize>) {
    for i in range {
        let s = old.slots[i];
        remap.push(if s.live {
            fresh.push(s.id, old.arena.get(i))
        } else {
            NO_SLOT
        });
    }
}

/// Links the live slots of `fresh` in `range` into `graph`; false if the
/// index is being dropped.
fn index_range(shared: &Shared, graph: &Graph, fresh: &State, range: Range<usize>) -> bool {
    let mut start = range.start;
    while start < range.end {
        if shared.closing.load(Ordering::Acquire) {
            return false;
        }
        let end = (start + BUILD_BATCH).min(range.end);
        let items: Vec<(&[f32], usize)> = (start..end)
            .filter(|&i| fresh.slots[i].live)
            .map(|i| (fresh.arena.get(i), i))
            .collect();
        graph.insert_many(&items);
        start = end;
    }
    true
}

/// Reads back the graph of `pending` and makes it the index's graph; the linker then links the
/// slots written since the dump. Searches and inserts go on meanwhile. If the graph does not
/// load, the pending mark is dropped and the next round builds the graph from the vectors.
fn attach_dumped_graph(shared: &Shared, pending: &Arc<PendingGraph>) {
    let _serial = shared.build_lock.lock();
    let is_current = |st: &State| st.pending.as_ref().is_some_and(|p| Arc::ptr_eq(p, pending));
    let loaded = load_graph(
        &pending.dir,
        &pending.basename,
        pending.points,
        shared.cfg.dim,
    );
    let mut st = shared.state.write();
    if !is_current(&st) {
        return;
    }
    st.pending = None;
    if let Some(graph) = loaded {
        st.graph = Some(Arc::new(graph));
        st.linked = pending.linked;
    }
}

/// The saved flat copy of the links, if it is there and describes a graph
/// over at most `slots` slots; otherwise searches wait for hnsw_rs's graph.
fn read_links(path: &Path, slots: usize) -> Option<FlatGraph> {
    let bytes = std::fs::read(path).ok()?;
    FlatGraph::from_bytes(&bytes, slots)
}

/// Builds a compacted state (and graph) from the live vectors while searches and writes continue
/// on the current one, then swaps: the slots written meanwhile are copied over unlinked, and the
/// linker links them next.
fn build(shared: &Shared) {
    let _serial = shared.build_lock.lock();
    let cfg = &shared.cfg;
    let mut fresh = State::new(cfg.dim);
    let mut remap: Vec<u32> = Vec::new();
    let mut cursor = 0usize;
    let had_graph;
    loop {
        let st = shared.state.read();
        let end = st.slots.len().min(cursor + COPY_BATCH);
        copy_range(&st, &mut fresh, &mut remap, cursor..end);
        cursor = end;
        if cursor >= st.slots.len() {
            had_graph = st.graph.is_some();
            break;
        }
    }
    // Hysteresis: a bank hovering around the size where its graph starts keeps it.
    let live = fresh.live();
    let want_graph = cfg.exact_threshold == 0
        || live >= graph_from(cfg)
        || (had_graph && live >= graph_from(cfg) / 2);
    let graph = want_graph.then(|| Graph::new(cfg, fresh.slots.len()));
    let linked = fresh.slots.len();
    if let Some(g) = &graph {
        if !run_build(|| index_range(shared, g, &fresh, 0..linked)) {
            return;
        }
    }
    let flat = graph
        .as_ref()
        .and_then(|g| run_build(|| FlatGraph::copy(&g.hnsw, linked)));
    let mut st = shared.state.write();
    copy_range(&st, &mut fresh, &mut remap, cursor..st.slots.len());
    // Removals since the copy: slots only ever go from live to dead.
    for (old, &new) in remap.iter().enumerate() {
        if new != NO_SLOT && !st.slots[old].live {
            fresh.kill(new);
        }
    }
    let built = graph.is_some();
    fresh.graph = graph.map(Arc::new);
    fresh.linked = if built { linked } else { 0 };
    fresh.flat = flat.map(Arc::new);
    *st = fresh;
    if built {
        shared.graphs_built.fetch_add(1, Ordering::AcqRel);
    }
}

fn dump_graph(g: &Graph, dir: &Path) -> Result<String, IndexError> {
    let res = catch_unwind(AssertUnwindSafe(|| g.hnsw.file_dump(dir, GRAPH_BASENAME)));
    let basename = match res {
        Ok(Ok(b)) => b,
        Ok(Err(e)) => {
            return Err(IndexError::io(
                dir,
                std::io::Error::other(format!("hnsw dump failed: {e}")),
            ))
        }
        Err(p) => {
            return Err(IndexError::io(
                dir,
                std::io::Error::other(format!(
                    "hnsw dump panicked: {}",
                    persist::panic_message(p.as_ref())
                )),
            ))
        }
    };
    Ok(basename)
}

fn load_graph(dir: &Path, basename: &str, points: usize, dim: usize) -> Option<Graph> {
    // `load_hnsw` ties the graph's lifetime to its loader (for mmapped data,
    // which is not used here). The loader is a few hundred bytes, so it is
    // leaked on purpose once per load to get a `'static` graph without unsafe code.
    let loader: &'static mut HnswIo = Box::leak(Box::new(HnswIo::new(dir, basename)));
    // hnsw_rs asserts on malformed files; a damaged graph is rebuilt instead.
    let loaded = catch_unwind(AssertUnwindSafe(move || {
        // Moving the reference in (not reborrowing it) lets the graph keep `'static`.
        let owned = loader;
        owned.load_hnsw::<f32, UnitCosine>()
    }));
    let mut hnsw = match loaded {
        Ok(Ok(h)) => h,
        _ => return None,
    };
    let dim_ok = hnsw.get_point_indexation().get_data_dimension() == dim;
    if hnsw.get_nb_point() != points || !dim_ok {
        return None;
    }
    // Reloaded graphs turn candidate extension on; keep inserts as when built.
    hnsw.set_extend_candidates(false);
    Some(Graph { hnsw })
}

fn write_vectors(st: &State, path: &Path) -> Result<(), IndexError> {
    let io_err = |e| IndexError::io(path, e);
    let file = File::create(path).map_err(io_err)?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let dim = u32::try_from(st.arena.dim).expect("dimension fits u32");
    let mut header = Vec::with_capacity(20);
    header.extend_from_slice(VECTORS_MAGIC);
    header.extend_from_slice(&VECTORS_VERSION.to_le_bytes());
    header.extend_from_slice(&dim.to_le_bytes());
    header.extend_from_slice(&(st.slots.len() as u64).to_le_bytes());
    w.write_all(&header).map_err(io_err)?;
    for s in &st.slots {
        w.write_all(&s.id.to_le_bytes()).map_err(io_err)?;
        w.write_all(&[u8::from(s.live)]).map_err(io_err)?;
    }
    let mut buf = Vec::with_capacity(st.arena.dim * 4);
    for i in 0..st.slots.len() {
        buf.clear();
        for x in st.arena.get(i) {
            buf.extend_from_slice(&x.to_le_bytes());
        }
        w.write_all(&buf).map_err(io_err)?;
    }
    w.into_inner().map_err(|e| io_err(e.into_error()))?;
    Ok(())
}

fn read_vectors(path: &Path, dim: usize) -> Result<State, IndexError> {
    let io_err = |e| IndexError::io(path, e);
    let file = File::open(path).map_err(io_err)?;
    let mut r = BufReader::with_capacity(1 << 20, file);
    let mut header = [0u8; 20];
    r.read_exact(&mut header).map_err(io_err)?;
    if &header[0..4] != VECTORS_MAGIC {
        return Err(IndexError::Corrupt(format!(
            "{}: bad magic",
            path.display()
        )));
    }
    let version = u32::from_le_bytes(header[4..8].try_into().expect("4 bytes"));
    if version != VECTORS_VERSION {
        return Err(IndexError::UnsupportedFormat {
            found: version,
            expected: VECTORS_VERSION,
        });
    }
    let file_dim = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes")) as usize;
    if file_dim != dim {
        return Err(IndexError::Corrupt(format!(
            "{}: dimension {file_dim}, manifest says {dim}",
            path.display()
        )));
    }
    let n = u64::from_le_bytes(header[12..20].try_into().expect("8 bytes"));
    let expected_len = 20 + n.saturating_mul(17 + 4 * dim as u64);
    let actual_len = r.get_ref().metadata().map_err(io_err)?.len();
    if actual_len != expected_len {
        return Err(IndexError::Corrupt(format!(
            "{}: {actual_len} bytes, expected {expected_len}",
            path.display()
        )));
    }
    let n = n as usize;
    let mut slots = Vec::with_capacity(n);
    let mut rec = [0u8; 17];
    for _ in 0..n {
        r.read_exact(&mut rec).map_err(io_err)?;
        let id = u128::from_le_bytes(rec[0..16].try_into().expect("16 bytes"));
        slots.push(Slot {
            id,
            live: rec[16] != 0,
        });
    }
    let mut arena = Arena::new(dim);
    let mut buf = vec![0u8; dim * 4];
    let mut v = vec![0f32; dim];
    for _ in 0..n {
        r.read_exact(&mut buf).map_err(io_err)?;
        for (x, b) in v.iter_mut().zip(buf.chunks_exact(4)) {
            *x = f32::from_le_bytes(b.try_into().expect("4 bytes"));
        }
        arena.push(&v);
    }
    let mut by_id = HashMap::with_capacity(n);
    for (i, s) in slots.iter().enumerate() {
        if s.live && by_id.insert(s.id, i as u32).is_some() {
            return Err(IndexError::Corrupt(format!(
                "{}: id {:#x} live twice",
                path.display(),
                s.id
            )));
        }
    }
    Ok(State {
        slots,
        arena,
        by_id,
        graph: None,
        linked: 0,
        flat: None,
        pending: None,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    /// Vectors on a low-dimensional subspace plus a little noise, which is
    /// closer to embeddings than uniform ones are.
    fn vectors(seed: u64, n: usize, dim: usize) -> Vec<Vec<f32>> {
        let mut basis_rng = 0x2545_f491_4f6c_dd1d_u64;
        let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let next = |s: &mut u64| {
            *s ^= *s << 13;
            *s ^= *s >> 7;
            *s ^= *s << 17;
            (*s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        let basis: Vec<Vec<f32>> = (0..8)
            .map(|_| (0..dim).map(|_| next(&mut basis_rng)).collect())
            .collect();
        (0..n)
            .map(|_| {
                let z: Vec<f32> = basis.iter().map(|_| next(&mut s)).collect();
                (0..dim)
                    .map(|d| {
                        let x: f32 = basis.iter().zip(&z).map(|(b, z)| b[d] * z).sum();
                        x + 0.05 * next(&mut s)
                    })
                    .collect()
            })
            .collect()
    }

    fn graph_index(dim: usize) -> VectorIndex {
        let mut cfg = VectorConfig::new(dim);
        cfg.max_nb_connection = 12;
        cfg.ef_construction = 64;
        cfg.exact_threshold = 0;
        cfg.background_rebuild = false;
        cfg.rebuild_tombstone_ratio = 1.0;
        VectorIndex::new(cfg)
    }

    fn insert_all(idx: &VectorIndex, first: usize, vecs: &[Vec<f32>]) {
        let items: Vec<(u128, Vec<f32>)> = vecs
            .iter()
            .enumerate()
            .map(|(i, v)| ((first + i) as u128, v.clone()))
            .collect();
        idx.insert_batch(&items).unwrap();
    }

    fn covered(idx: &VectorIndex) -> Option<usize> {
        idx.shared.state.read().flat.as_ref().map(|f| f.covered())
    }

    fn recall(idx: &VectorIndex, queries: &[Vec<f32>], filter: &dyn Fn(u128) -> bool) -> f64 {
        let mut found = 0;
        for q in queries {
            let truth: HashSet<u128> = idx
                .search_exact(q, 10, filter)
                .unwrap()
                .iter()
                .map(|h| h.0)
                .collect();
            let got = idx.search(q, 10, filter).unwrap();
            assert_eq!(got.len(), 10);
            assert!(got.iter().all(|h| filter(h.0)));
            assert!(got.windows(2).all(|w| w[0].1 >= w[1].1), "best first");
            found += got.iter().filter(|h| truth.contains(&h.0)).count();
        }
        found as f64 / (10 * queries.len()) as f64
    }

    #[test]
    fn flat_search_agrees_with_the_exact_scan() {
        let dim = 48;
        let idx = graph_index(dim);
        insert_all(&idx, 0, &vectors(1, 6_000, dim));
        assert_eq!(covered(&idx), Some(6_000), "copied once linked");
        idx.set_ef_search(64);
        let queries = vectors(2, 200, dim);
        let r = recall(&idx, &queries, &|_| true);
        let flat = idx.shared.state.write().flat.take();
        let r_hnsw = recall(&idx, &queries, &|_| true);
        idx.shared.state.write().flat = flat;
        // hnsw_rs's own search of the same graph is the reference.
        assert!(r >= r_hnsw - 0.02, "recall@10 = {r}, hnsw_rs {r_hnsw}");
        assert!(r >= 0.95, "recall@10 = {r}");
        // Scores are the exact scan's, bit for bit, for the ids both return.
        for q in queries.iter().take(20) {
            let exact: HashMap<u128, f32> = idx
                .search_exact(q, 10, &|_| true)
                .unwrap()
                .into_iter()
                .collect();
            for (id, score) in idx.search(q, 10, &|_| true).unwrap() {
                if let Some(&e) = exact.get(&id) {
                    assert_eq!(e.to_bits(), score.to_bits());
                }
            }
        }
    }

    #[test]
    fn writes_are_found_before_the_linker_reaches_them_and_a_dump_mid_way_resumes_it() {
        let dim = 24;
        let cfg = graph_index(dim).config().clone();
        let idx = VectorIndex::new(cfg.clone());
        let vecs = vectors(21, 3_000, dim);
        // Appended as writes append, with the linker not yet run.
        {
            let mut st = idx.shared.state.write();
            for (i, v) in vecs.iter().enumerate() {
                st.push(i as u128, &normalised(v, dim).unwrap());
            }
        }
        assert_eq!(idx.stats().unsearched, 3_000);
        for i in (0..3_000).step_by(97) {
            let hits = idx.search(&vecs[i], 1, &|_| true).unwrap();
            assert_eq!(
                hits[0].0, i as u128,
                "found by the scan of what is not linked"
            );
        }
        assert_eq!(link_next(&idx.shared), LINK_BATCH);
        let dir = tempfile::tempdir().unwrap();
        let dump = idx.dump_into(dir.path()).unwrap();
        assert_eq!(dump.graph_linked, LINK_BATCH);
        assert_eq!(dump.graph_points, LINK_BATCH);
        // The loaded copy links the rest, each slot once.
        let loaded = VectorIndex::load_from(dir.path(), cfg, dump.saved()).unwrap();
        loaded.insert(9_999, &vectors(22, 1, dim)[0]).unwrap();
        let stats = loaded.stats();
        assert_eq!(stats.graph_points, Some(3_001), "{stats:?}");
        assert!(stats.unsearched < REFRESH_MIN, "{stats:?}");
        loaded.set_ef_search(64);
        let r = recall(&loaded, &vectors(23, 50, dim), &|_| true);
        assert!(r >= 0.95, "recall@10 after the reload = {r}");
    }

    #[test]
    fn flat_search_respects_filters_and_tombstones() {
        let dim = 32;
        let idx = graph_index(dim);
        let vecs = vectors(3, 4_000, dim);
        insert_all(&idx, 0, &vecs);
        for id in (0..4_000u128).filter(|i| i % 5 == 0) {
            assert!(idx.remove(id));
        }
        assert!(covered(&idx).is_some());
        idx.set_ef_search(64);
        let queries = vectors(4, 100, dim);
        let odd = |id: u128| id % 2 == 1;
        let r = recall(&idx, &queries, &odd);
        assert!(r >= 0.9, "filtered recall@10 = {r}");
        // A removed vector as the query would be its own nearest neighbour.
        for id in (0..4_000usize).step_by(5).take(100) {
            let hits = idx.search(&vecs[id], 10, &|_| true).unwrap();
            assert_eq!(hits.len(), 10);
            assert!(hits.iter().all(|h| h.0 % 5 != 0), "tombstone returned");
        }
    }

    #[test]
    fn points_linked_after_the_copy_are_found() {
        let dim = 32;
        let idx = graph_index(dim);
        insert_all(&idx, 0, &vectors(5, 3_000, dim));
        assert_eq!(covered(&idx), Some(3_000));
        // Fewer than a refresh's worth: left to the exact scan of the tail.
        let late = vectors(6, 100, dim);
        for (i, v) in late.iter().enumerate() {
            idx.insert(10_000 + i as u128, v).unwrap();
        }
        assert_eq!(covered(&idx), Some(3_000), "no copy for a small tail");
        for (i, v) in late.iter().enumerate() {
            let hits = idx.search(v, 5, &|_| true).unwrap();
            assert_eq!(hits[0].0, 10_000 + i as u128);
        }
        // A tail past the threshold is copied, and the points stay found.
        let more = vectors(7, REFRESH_MIN, dim);
        insert_all(&idx, 20_000, &more);
        assert_eq!(covered(&idx), Some(3_000 + 100 + REFRESH_MIN));
        for (i, v) in late.iter().enumerate() {
            let hits = idx.search(v, 5, &|_| true).unwrap();
            assert_eq!(hits[0].0, 10_000 + i as u128);
        }
        for (i, v) in more.iter().enumerate().step_by(7) {
            let hits = idx.search(v, 5, &|_| true).unwrap();
            assert_eq!(hits[0].0, 20_000 + i as u128);
        }
        // A replaced vector in the tail: only its new version answers.
        idx.insert(5, &late[0]).unwrap();
        let hits = idx.search(&late[0], 3, &|_| true).unwrap();
        let top: HashSet<u128> = hits.iter().take(2).map(|h| h.0).collect();
        assert_eq!(top, HashSet::from([5, 10_000]));
        assert_eq!(hits.iter().filter(|h| h.0 == 5).count(), 1);
    }

    #[test]
    fn rebuild_and_reload_copy_the_graph() {
        let dim = 16;
        let idx = graph_index(dim);
        insert_all(&idx, 0, &vectors(8, 2_000, dim));
        for id in 0..500u128 {
            idx.remove(id);
        }
        idx.rebuild_now();
        assert_eq!(covered(&idx), Some(1_500));
        let dir = tempfile::tempdir().unwrap();
        let dump = idx.dump_into(dir.path()).unwrap();
        let graph = dump.saved();
        assert!(graph.is_some());
        let loaded = VectorIndex::load_from(dir.path(), idx.config().clone(), graph).unwrap();
        assert_eq!(covered(&loaded), Some(1_500));
        loaded.set_ef_search(64);
        let r = recall(&loaded, &vectors(9, 50, dim), &|_| true);
        assert!(r >= 0.95, "recall@10 after reload = {r}");
    }

    #[test]
    fn a_batch_of_queries_gets_what_each_query_gets_alone() {
        let dim = 32;
        let mut cfg = VectorConfig::new(dim);
        cfg.background_rebuild = false;
        let scanned = VectorIndex::new(cfg);
        let graphed = graph_index(dim);
        let vecs = vectors(5, 3_000, dim);
        for idx in [&scanned, &graphed] {
            insert_all(idx, 0, &vecs);
            for id in (0..3_000u128).filter(|i| i % 7 == 0) {
                assert!(idx.remove(id));
            }
        }
        // Copies of one vector under other ids tie on every query: the batch must break the
        // ties by id as a single search does.
        for idx in [&scanned, &graphed] {
            for copy in (0..12u128).rev() {
                idx.insert(10_001 + 7 * copy, &vecs[1]).unwrap();
            }
        }
        let mut queries = vectors(6, 40, dim);
        queries.push(vecs[1].clone());
        let refs: Vec<&[f32]> = queries.iter().map(Vec::as_slice).collect();
        let filters: [&dyn Fn(u128) -> bool; 3] =
            [&|_| true, &|id| id % 3 == 0, &|id| id % 50 == 1];
        for idx in [&scanned, &graphed] {
            for filter in filters {
                let batch = idx.search_batch(&refs, 5, 64, filter).unwrap();
                assert_eq!(batch.len(), queries.len());
                for (q, got) in queries.iter().zip(&batch) {
                    assert_eq!(got, &idx.search_with_ef(q, 5, 64, filter).unwrap());
                    assert_eq!(got.len(), 5);
                    assert!(got.iter().all(|h| filter(h.0) && h.0 % 7 != 0));
                }
            }
        }
        let tied = scanned.search_batch(&refs, 5, 64, &|_| true).unwrap();
        let ids: Vec<u128> = tied.last().unwrap().iter().map(|h| h.0).collect();
        assert_eq!(
            ids,
            [1, 10_001, 10_008, 10_015, 10_022],
            "ties go to the lowest ids"
        );
        assert!(scanned
            .search_batch(&[], 5, 64, &|_| true)
            .unwrap()
            .is_empty());
        let short = [&queries[0][..dim - 1]];
        assert!(scanned.search_batch(&short, 5, 64, &|_| true).is_err());
    }

    #[test]
    fn a_dump_without_its_graph_loads_at_once_and_builds_the_graph_behind_searches() {
        let dim = 16;
        let mut cfg = VectorConfig::new(dim);
        cfg.background_rebuild = false;
        let scanned = VectorIndex::new(cfg.clone());
        insert_all(&scanned, 0, &vectors(10, 2_000, dim));
        let dir = tempfile::tempdir().unwrap();
        let dump = scanned.dump_into(dir.path()).unwrap();
        assert!(
            dump.graph_basename.is_none(),
            "below the threshold: no graph"
        );
        // Loaded where the threshold is lower, the bank needs a graph it does not have.
        cfg.exact_threshold = 1_000;
        cfg.background_rebuild = true;
        let loaded = VectorIndex::load_from(dir.path(), cfg, None).unwrap();
        // Linking 2,000 points takes far longer than returning from the load did.
        let stats = loaded.stats();
        assert!(
            stats.graph_points.is_none() && stats.rebuilding,
            "{stats:?}"
        );
        // Answers right away, exactly while no graph exists yet.
        for q in vectors(11, 20, dim) {
            let got = loaded.search(&q, 10, &|_| true).unwrap();
            if loaded.stats().graph_points.is_none() {
                assert_eq!(got, loaded.search_exact(&q, 10, &|_| true).unwrap());
            }
            assert_eq!(got.len(), 10);
        }
        loaded.wait_for_rebuild();
        assert_eq!(loaded.stats().graph_points, Some(2_000));
        loaded.set_ef_search(64);
        let r = recall(&loaded, &vectors(12, 50, dim), &|_| true);
        assert!(r >= 0.95, "recall@10 once the graph is built = {r}");
    }

    /// A graph-backed index of `n` vectors with a tail past its last flat copy, dumped into a
    /// fresh directory.
    fn dumped_graph(dim: usize, n: usize) -> (VectorIndex, tempfile::TempDir, VectorDump) {
        let idx = graph_index(dim);
        insert_all(&idx, 0, &vectors(13, n, dim));
        for id in (0..n as u128).step_by(9) {
            idx.remove(id);
        }
        // Single inserts past the copy: the saved links do not reach them.
        for (i, v) in vectors(14, 40, dim).iter().enumerate() {
            idx.insert(50_000 + i as u128, v).unwrap();
        }
        let dir = tempfile::tempdir().unwrap();
        let dump = idx.dump_into(dir.path()).unwrap();
        assert!(dump.graph_basename.is_some(), "a graph was dumped");
        (idx, dir, dump)
    }

    #[test]
    fn a_reloaded_graph_answers_from_its_saved_links_before_hnsw_rs_has_read_it() {
        let dim = 24;
        let (original, dir, dump) = dumped_graph(dim, 3_000);
        let points = dump.graph_points;
        let saved_covered = covered(&original).expect("a flat copy");
        assert!(saved_covered < 3_040, "the dump has a tail past the copy");
        let mut cfg = original.config().clone();
        cfg.background_rebuild = true;
        let loaded = VectorIndex::open_dump(dir.path(), cfg, dump.saved()).unwrap();
        // Holds off the background reading of the graph that the first write starts.
        let reading = loaded.shared.build_lock.lock();
        {
            let st = loaded.shared.state.read();
            assert!(st.graph.is_none() && st.pending.is_some());
            assert_eq!(st.flat.as_ref().map(|f| f.covered()), Some(saved_covered));
        }
        assert_eq!(loaded.stats().graph_points, Some(points));
        // The same links and vectors: the same answers as before the restart, filtered or not.
        let queries = vectors(15, 60, dim);
        let even = |id: u128| id.is_multiple_of(2);
        for q in &queries {
            for filter in [&|_| true, &even as &dyn Fn(u128) -> bool] {
                assert_eq!(
                    loaded.search(q, 10, filter).unwrap(),
                    original.search(q, 10, filter).unwrap()
                );
            }
        }
        // Writes while the graph is away are found at once, through the exact scan of the tail.
        let late = vectors(16, 300, dim);
        insert_all(&loaded, 70_000, &late);
        assert!(loaded.remove(1));
        for (i, v) in late.iter().enumerate().step_by(11) {
            assert_eq!(
                loaded.search(v, 3, &|_| true).unwrap()[0].0,
                70_000 + i as u128
            );
        }
        assert!(
            loaded.shared.state.read().graph.is_none(),
            "not attached yet"
        );
        // Attached, with the late writes linked into it and copied for searching.
        drop(reading);
        loaded.wait_for_rebuild();
        let st = loaded.shared.state.read();
        assert!(st.pending.is_none());
        let graph = st.graph.as_ref().expect("attached");
        assert_eq!(graph.hnsw.get_nb_point(), points + late.len());
        assert_eq!(st.flat.as_ref().map(|f| f.covered()), Some(st.slots.len()));
        drop(st);
        for (i, v) in late.iter().enumerate().step_by(11) {
            assert_eq!(
                loaded.search(v, 3, &|_| true).unwrap()[0].0,
                70_000 + i as u128
            );
        }
        loaded.set_ef_search(64);
        let r = recall(&loaded, &queries, &|id| id != 1);
        assert!(r >= 0.95, "recall@10 once attached = {r}");
    }

    #[test]
    fn a_graph_with_saved_links_is_read_back_at_the_first_write_only() {
        let dim = 16;
        let (original, dir, dump) = dumped_graph(dim, 2_000);
        let points = dump.graph_points;
        let mut cfg = original.config().clone();
        cfg.background_rebuild = true;
        let loaded = VectorIndex::load_from(dir.path(), cfg, dump.saved()).unwrap();
        for q in vectors(20, 20, dim) {
            assert_eq!(
                loaded.search(&q, 10, &|_| true).unwrap(),
                original.search(&q, 10, &|_| true).unwrap()
            );
        }
        // Nothing was started: the wait returns at once and the graph is still on disk.
        loaded.wait_for_rebuild();
        assert!(loaded.shared.state.read().pending.is_some());
        let late = vectors(21, 5, dim);
        insert_all(&loaded, 90_000, &late);
        loaded.wait_for_rebuild();
        let st = loaded.shared.state.read();
        assert!(st.pending.is_none());
        assert_eq!(
            st.graph.as_ref().map(|g| g.hnsw.get_nb_point()),
            Some(points + late.len())
        );
    }

    #[test]
    fn a_dump_taken_while_the_graph_is_read_back_waits_for_it_and_keeps_it() {
        let dim = 16;
        let (original, dir, dump) = dumped_graph(dim, 2_000);
        let points = dump.graph_points;
        let mut cfg = original.config().clone();
        cfg.background_rebuild = true;
        let loaded = VectorIndex::open_dump(dir.path(), cfg, dump.saved()).unwrap();
        assert!(loaded.shared.state.read().pending.is_some());
        let again = tempfile::tempdir().unwrap();
        let dump = loaded.dump_into(again.path()).unwrap();
        assert_eq!(dump.graph_points, points, "the graph is in the dump");
        assert!(loaded.shared.state.read().pending.is_none());
        assert!(dump.graph_basename.is_some(), "a graph was dumped");
        let reloaded =
            VectorIndex::load_from(again.path(), original.config().clone(), dump.saved()).unwrap();
        assert_eq!(reloaded.stats().graph_points, Some(points));
        for q in vectors(17, 30, dim) {
            assert_eq!(
                reloaded.search(&q, 10, &|_| true).unwrap(),
                original.search(&q, 10, &|_| true).unwrap()
            );
        }
    }

    #[test]
    fn damaged_saved_links_or_graph_fall_back_to_scans_and_a_rebuild() {
        let dim = 16;
        let (original, dir, dump) = dumped_graph(dim, 2_000);
        let points = dump.graph_points;
        let links = dir.path().join(LINKS_FILE);
        let mut bytes = std::fs::read(&links).unwrap();
        // More links than a row holds, in layer 0's first row (after the 44-byte header):
        // rejected, not followed.
        bytes[44..48].copy_from_slice(&u32::MAX.to_le_bytes());
        std::fs::write(&links, &bytes).unwrap();
        let cfg = original.config().clone();
        let loaded = VectorIndex::open_dump(dir.path(), cfg.clone(), dump.saved()).unwrap();
        assert!(loaded.shared.state.read().flat.is_none());
        for q in vectors(18, 20, dim) {
            assert_eq!(
                loaded.search(&q, 10, &|_| true).unwrap(),
                loaded.search_exact(&q, 10, &|_| true).unwrap(),
                "scanned exactly until the graph is back"
            );
        }
        loaded.maybe_rebuild();
        assert_eq!(loaded.stats().graph_points, Some(points));
        assert!(covered(&loaded).is_some(), "copied again once attached");

        // Without hnsw_rs's files the graph is rebuilt from the vectors.
        let basename = dump.graph_basename.as_deref().expect("a graph was dumped");
        std::fs::remove_file(dir.path().join(format!("{basename}.hnsw.graph"))).unwrap();
        let rebuilt = VectorIndex::load_from(dir.path(), cfg, dump.saved()).unwrap();
        let live = rebuilt.len();
        assert_eq!(rebuilt.stats().graph_points, Some(live));
        rebuilt.set_ef_search(64);
        let r = recall(&rebuilt, &vectors(19, 40, dim), &|_| true);
        assert!(r >= 0.95, "recall@10 after the rebuild = {r}");
    }
}
