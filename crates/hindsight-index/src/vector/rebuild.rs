//! The background work: reading back a dumped graph, building a graph (the first, or a
//! compacted one), linking new slots into it and copying its links for searching.

use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::files::load_graph;
use super::graph::Graph;
use super::state::{PendingGraph, State, REFRESH_MIN};
use super::{graph_from, Shared, VectorIndex};
use crate::background::run_build;
use crate::flat::FlatGraph;

/// Slots copied per read-lock acquisition while a rebuild snapshots the index.
const COPY_BATCH: usize = 8192;

/// Graph inserts per batch while rebuilding; the shutdown flag is checked
/// between batches.
const BUILD_BATCH: usize = 4096;

/// Slots the linker takes into the graph at a time. A dump waits for the batch in hand, so it is
/// kept to a fraction of a second of linking; large enough for both of rayon's threads to share.
pub(super) const LINK_BATCH: usize = 512;

/// Marks a slot that was dead when a rebuild copied it.
const NO_SLOT: u32 = u32::MAX;

impl VectorIndex {
    pub(super) fn maybe_rebuild(&self) {
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
pub(super) fn link_next(shared: &Shared) -> usize {
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
            .map(|i| (st.arena.get(i), i))
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
            fresh.push(s.id, &old.arena.get(i))
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
        let vectors: Vec<(Vec<f32>, usize)> = (start..end)
            .filter(|&i| fresh.slots[i].live)
            .map(|i| (fresh.arena.get(i), i))
            .collect();
        let items: Vec<(&[f32], usize)> = vectors.iter().map(|(v, i)| (v.as_slice(), *i)).collect();
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

/// Builds a compacted state (and graph) from the live vectors while searches and writes continue
/// on the current one, then swaps: the slots written meanwhile are copied over unlinked, and the
/// linker links them next.
pub(super) fn build(shared: &Shared) {
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
