//! Nearest-neighbour search by cosine similarity.
//!
//! [`VectorIndex`], its configuration and its public API are here; what lies behind them is split
//! by concern: `arena` (the vectors by slot), `state` (what a search reads, swapped as a whole by
//! a rebuild), `graph` (hnsw_rs's graph), `search` (exact scans, the choice of plan and the graph
//! search), `rebuild` (building, linking and copying the graph in the background) and `files`
//! (dumps and loads: `vectors.bin`, the saved links and hnsw_rs's graph files).

mod arena;
mod files;
mod graph;
mod rebuild;
mod search;
mod state;
#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex, RwLock, RwLockReadGuard};

use crate::distance::normalised;
use crate::flat::ScratchPool;
use crate::heap::{hash_map_bytes, vec_bytes, IndexMemory};
use crate::IndexError;

pub(crate) use arena::first_chunk_grows;
pub(crate) use files::{SavedGraph, VectorDump};

use graph::Graph;
use rebuild::build;
use search::{graph_search, similarity_of_dot, Plan};
use state::State;

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

/// Read access to an index's stored vectors; see [`VectorIndex::stored`].
pub struct StoredVectors<'a> {
    st: RwLockReadGuard<'a, State>,
}

impl StoredVectors<'_> {
    /// The dot product of the stored (normalised) vector of `id` with `q`: the same bits as
    /// `hindsight_index::dot` of [`VectorIndex::get`]'s copy and `q`.
    pub fn dot(&self, id: u128, q: &[f32]) -> Option<f32> {
        let slot = *self.st.by_id.get(&id)?;
        Some(self.st.arena.dot(slot as usize, q))
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
                if st.arena.holds(slot as usize, &v) {
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
                    if st.arena.holds(slot as usize, v) {
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
        st.by_id.get(&id).map(|&slot| st.arena.get(slot as usize))
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
            .map(|&slot| similarity_of_dot(st.arena.dot(slot as usize, &q))))
    }

    /// Heap bytes of the vectors, their codes, the flat links and hnsw_rs's graph; the other
    /// parts of the result are zero.
    pub fn memory(&self) -> IndexMemory {
        let st = self.shared.state.read();
        let (halves, codes) = st.arena.heap_bytes();
        let vectors = halves + vec_bytes(&st.slots) + hash_map_bytes(&st.by_id);
        IndexMemory {
            vectors,
            codes,
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
