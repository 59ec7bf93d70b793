//! Answering a search: exact scans, the choice between a scan and the graph, and the graph
//! search with its post-filtering.

use std::sync::Arc;

use super::graph::Graph;
use super::state::State;
use super::VectorIndex;
use crate::codes::{products, Coded, QueryCodes};
use crate::flat::{distance, ScratchPool};
use crate::topk::{sort_hits, TopK};

/// Live vectors sampled to estimate how selective a filter is.
const FILTER_SAMPLE: usize = 64;

/// Slots an exact scan scores at once against all its queries: a multiple of the distance
/// kernel's block of three vectors, and few enough that their scores stay in cache.
const SCAN_CHUNK: usize = 96;

/// Upper bound for the candidate list when retrying a graph search.
const MAX_EF: usize = 4096;

impl State {
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

    pub(super) fn exact(
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

    pub(super) fn exact_many(
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
                    let score = similarity_of_dot(self.arena.dot(slot, qs[i]));
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

/// How a search is answered; see [`VectorIndex::plan`].
pub(super) enum Plan {
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

/// Same arithmetic as `1 - flat::distance`, so exact and graph searches report bit-identical
/// scores.
#[inline]
pub(super) fn similarity_of_dot(dot: f32) -> f32 {
    1.0 - (1.0 - dot).clamp(0.0, 2.0)
}

impl VectorIndex {
    /// How a search of `k` under `filter` is answered: by the graph when one is built and the
    /// index is above the exact threshold, unless scanning just the vectors that pass the filter is
    /// estimated to be cheaper.
    pub(super) fn plan(
        &self,
        st: &State,
        k: usize,
        ef: usize,
        filter: &dyn Fn(u128) -> bool,
    ) -> Plan {
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
pub(super) fn graph_search(
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
                // The graph ranks by its codes; the scores are the float ones, as everywhere.
                let found = graph.search(q, ef);
                hits.extend(found.iter().filter_map(|n| {
                    let s = st.slots[..covered].get(n.d_id)?;
                    (s.live && filter(s.id))
                        .then(|| (s.id, 1.0 - distance(q, st.arena.halves(n.d_id))))
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
