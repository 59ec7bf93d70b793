//! Tests of the vector index: graph searches against exact scans, filters and tombstones, the
//! linker, rebuilds, and dumps and loads.

use std::collections::{HashMap, HashSet};

use super::files::{VectorDump, LINKS_FILE};
use super::rebuild::{link_next, LINK_BATCH};
use super::state::REFRESH_MIN;
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
    let filters: [&dyn Fn(u128) -> bool; 3] = [&|_| true, &|id| id % 3 == 0, &|id| id % 50 == 1];
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

const LOADED_POINTS: usize = 10_000;

#[test]
fn a_dump_without_its_graph_loads_at_once_and_builds_the_graph_behind_searches() {
    let dim = 16;
    let mut cfg = VectorConfig::new(dim);
    cfg.background_rebuild = false;
    cfg.exact_threshold = 4 * LOADED_POINTS;
    let scanned = VectorIndex::new(cfg.clone());
    // Enough points that linking them takes far longer than a busy machine's pause between the
    // load's return and the look at its state (2,000 were linked in that pause under load).
    insert_all(&scanned, 0, &vectors(10, LOADED_POINTS, dim));
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
    // Linking them takes far longer than returning from the load did.
    // The linker may already have swapped in its (still nearly empty) graph by now.
    let stats = loaded.stats();
    assert!(
        stats.graph_points.unwrap_or(0) < LOADED_POINTS && stats.rebuilding,
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
    assert_eq!(loaded.stats().graph_points, Some(LOADED_POINTS));
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

#[test]
fn a_graph_whose_first_slots_died_before_their_turn_is_linked_and_copied_all_the_same() {
    let dim = 16;
    let idx = graph_index(dim);
    let vecs = vectors(31, 2_000, dim);
    {
        let mut st = idx.shared.state.write();
        for (i, v) in vecs.iter().enumerate() {
            st.push(i as u128, &normalised(v, dim).unwrap());
        }
        st.graph = Some(Arc::new(Graph::new(idx.config(), 2_000)));
        // Removed after the graph was started and before the linker reached them.
        for slot in 0..(2 * LINK_BATCH) as u32 {
            st.kill(slot);
        }
    }
    assert_eq!(link_next(&idx.shared), LINK_BATCH);
    {
        let st = idx.shared.state.read();
        assert_eq!(st.graph.as_ref().unwrap().hnsw.get_nb_point(), 0);
        assert!(
            !st.needs_refresh(),
            "no links to copy yet: a copy would come back empty and be asked for again"
        );
        assert!(st.needs_link());
    }
    // The next write runs the maintenance to its end: it links the rest and copies the links.
    idx.insert(5_000, &vectors(32, 1, dim)[0]).unwrap();
    let stats = idx.stats();
    assert_eq!(stats.unsearched, 0, "{stats:?}");
    assert_eq!(
        stats.graph_points,
        Some(2_000 - 2 * LINK_BATCH + 1),
        "{stats:?}"
    );
    for i in (2 * LINK_BATCH..2_000).step_by(101) {
        assert_eq!(idx.search(&vecs[i], 1, &|_| true).unwrap()[0].0, i as u128);
    }
}

#[test]
fn a_graph_saved_over_floats_by_an_earlier_build_is_rebuilt_over_codes() {
    use hnsw_rs::api::AnnT;
    use hnsw_rs::hnsw::Hnsw;

    use crate::distance::UnitCosine;

    let dim = 16;
    let (original, dir, dump) = dumped_graph(dim, 2_000);
    let basename = dump.graph_basename.clone().expect("a graph was dumped");
    // Earlier builds linked the float vectors themselves; their files name that distance.
    let floats: Hnsw<'static, f32, UnitCosine> = Hnsw::new(8, 4_096, 16, 32, UnitCosine);
    let vecs = vectors(13, dump.graph_points, dim);
    for (slot, v) in vecs.iter().enumerate() {
        floats.insert_slice((v.as_slice(), slot));
    }
    for suffix in ["hnsw.graph", "hnsw.data"] {
        std::fs::remove_file(dir.path().join(format!("{basename}.{suffix}"))).unwrap();
    }
    let written = floats.file_dump(dir.path(), &basename).unwrap();
    assert_eq!(written, basename);
    let cfg = original.config().clone();
    let loaded = VectorIndex::load_from(dir.path(), cfg, dump.saved()).unwrap();
    // Reading the graph back fails on its distance; the graph is then built from the vectors.
    loaded.maybe_rebuild();
    loaded.wait_for_rebuild();
    // Built anew from the live vectors: the dumped graph also held the removed ones.
    assert!(loaded.len() < dump.graph_points);
    assert_eq!(loaded.stats().graph_points, Some(loaded.len()));
    loaded.set_ef_search(64);
    let r = recall(&loaded, &vectors(19, 40, dim), &|_| true);
    assert!(r >= 0.95, "recall@10 after the rebuild = {r}");
}

#[test]
fn a_graph_at_rest_answers_as_before_and_comes_back_at_the_next_write() {
    let dim = 16;
    let (original, dir, dump) = dumped_graph(dim, 2_000);
    let points = dump.graph_points;
    let queries = vectors(31, 25, dim);
    let before: Vec<_> = queries
        .iter()
        .map(|q| original.search(q, 10, &|_| true).unwrap())
        .collect();
    assert!(original.memory().graph > 0);

    assert!(original.rest_graph(dir.path(), &dump));
    assert_eq!(original.memory().graph, 0, "hnsw_rs's graph left memory");
    assert!(!original.graph_newer_than(Some(&dump)));
    for (q, expected) in queries.iter().zip(&before) {
        assert_eq!(&original.search(q, 10, &|_| true).unwrap(), expected);
    }
    assert!(!original.rest_graph(dir.path(), &dump), "already at rest");

    // A write reads the graph back from the dump and is linked into it.
    let late = vectors(32, 5, dim);
    insert_all(&original, 90_000, &late);
    original.wait_for_rebuild();
    {
        let st = original.shared.state.read();
        assert!(st.pending.is_none());
        assert_eq!(
            st.graph.as_ref().map(|g| g.hnsw.get_nb_point()),
            Some(points + late.len())
        );
    }
    for (i, v) in late.iter().enumerate() {
        let hits = original.search(v, 1, &|_| true).unwrap();
        assert_eq!(hits[0].0, 90_000 + i as u128);
    }
    // The index changed since that dump: it neither rests on it nor counts as dumped.
    assert!(!original.rest_graph(dir.path(), &dump));
    assert!(original.graph_newer_than(Some(&dump)));
}

#[test]
fn a_graph_changed_since_its_dump_does_not_rest() {
    let dim = 16;
    let (original, dir, dump) = dumped_graph(dim, 1_000);
    original.insert(77_777, &vectors(33, 1, dim)[0]).unwrap();
    assert!(!original.rest_graph(dir.path(), &dump));
    assert!(original.memory().graph > 0);
}
