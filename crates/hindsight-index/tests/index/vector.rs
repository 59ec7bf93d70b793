use std::collections::HashSet;
use std::sync::Arc;
use std::thread;

use hindsight_index::{IndexError, VectorConfig, VectorIndex};

use crate::common::{ids, unit_vectors};

/// Graph for every search, no automatic rebuilds, and a cheaper build than
/// the defaults (hnsw_rs inserts dominate the suite's run time).
fn graph_cfg(dim: usize) -> VectorConfig {
    let mut c = VectorConfig::new(dim);
    c.max_nb_connection = 12;
    c.ef_construction = 64;
    c.exact_threshold = 0;
    c.background_rebuild = false;
    c.rebuild_tombstone_ratio = 1.0;
    c
}

fn filled(cfg: VectorConfig, vecs: &[Vec<f32>]) -> VectorIndex {
    let idx = VectorIndex::new(cfg);
    let items: Vec<(u128, Vec<f32>)> = vecs
        .iter()
        .enumerate()
        .map(|(i, v)| (i as u128, v.clone()))
        .collect();
    idx.insert_batch(&items).unwrap();
    idx
}

fn all(_: u128) -> bool {
    true
}

#[test]
fn hnsw_recall_at_10_vs_brute_force() {
    let dim = 64;
    let vecs = unit_vectors(1, 20_000, dim);
    let idx = filled(graph_cfg(dim), &vecs);
    // Uniform random 64-d data is a hard case for HNSW; real embeddings need
    // a far smaller candidate list for the same recall.
    idx.set_ef_search(400);
    assert_eq!(idx.stats().graph_points, Some(20_000));
    let queries = unit_vectors(2, 200, dim);
    let mut found = 0usize;
    for q in &queries {
        let truth: HashSet<u128> = ids(&idx.search_exact(q, 10, &all).unwrap())
            .into_iter()
            .collect();
        let got = idx.search(q, 10, &all).unwrap();
        assert_eq!(got.len(), 10);
        found += got.iter().filter(|h| truth.contains(&h.0)).count();
    }
    let recall = found as f64 / (10 * queries.len()) as f64;
    assert!(recall >= 0.95, "recall@10 = {recall}");
}

#[test]
fn small_index_is_searched_exactly() {
    let dim = 16;
    let vecs = unit_vectors(3, 500, dim);
    let idx = filled(VectorConfig::new(dim), &vecs);
    assert_eq!(idx.stats().graph_points, None, "below threshold: no graph");
    for q in unit_vectors(4, 20, dim) {
        assert_eq!(
            idx.search(&q, 7, &all).unwrap(),
            idx.search_exact(&q, 7, &all).unwrap()
        );
    }
}

#[test]
fn tombstones_are_never_returned() {
    let dim = 32;
    let vecs = unit_vectors(5, 3_000, dim);
    let idx = filled(graph_cfg(dim), &vecs);
    let removed: HashSet<u128> = (0..3_000u128).filter(|i| i.is_multiple_of(3)).collect();
    for &id in &removed {
        assert!(idx.remove(id));
    }
    assert!(!idx.remove(0), "second removal reports absence");
    assert_eq!(idx.stats().tombstones, removed.len());
    assert_eq!(idx.len(), 2_000);
    // A removed vector used as the query would be its own best match.
    for id in removed.iter().take(200) {
        let hits = idx.search(&vecs[*id as usize], 10, &all).unwrap();
        assert_eq!(hits.len(), 10);
        assert!(hits.iter().all(|h| !removed.contains(&h.0)));
        assert!(!idx.contains(*id));
        assert_eq!(idx.get(*id), None);
    }
}

#[test]
fn reinserting_an_id_yields_a_single_result() {
    let dim = 32;
    let vecs = unit_vectors(6, 2_000, dim);
    let idx = filled(graph_cfg(dim), &vecs);
    let fresh = unit_vectors(7, 3, dim);
    for v in &fresh {
        idx.insert(42, v).unwrap();
    }
    assert_eq!(idx.len(), 2_000);
    assert_eq!(idx.stats().tombstones, 3);
    let hits = idx.search(&fresh[2], 10, &all).unwrap();
    assert_eq!(hits.iter().filter(|h| h.0 == 42).count(), 1);
    assert_eq!(hits[0].0, 42);
    // Stored in half precision: a vector's product with itself errs by at most 2^-11.
    assert!((hits[0].1 - 1.0).abs() < 5e-4);
    // The superseded vector no longer matches 42 perfectly.
    let old = idx.search(&vecs[42], 10, &all).unwrap();
    assert!(old.iter().filter(|h| h.0 == 42).all(|h| h.1 < 0.99));
    // Re-inserting the identical vector changes nothing.
    idx.insert(42, &fresh[2]).unwrap();
    assert_eq!(idx.stats().tombstones, 3);
}

#[test]
fn filtered_search_honours_the_filter() {
    let dim = 32;
    let vecs = unit_vectors(8, 4_000, dim);
    let mut cfg = graph_cfg(dim);
    // Keep moderately selective filters on the graph, however small the index.
    cfg.graph_cost_per_ef = 0.0;
    let idx = filled(cfg, &vecs);
    let even = |id: u128| id.is_multiple_of(2);
    let rare = |id: u128| id % 100 == 7;
    let mut found = 0usize;
    for q in unit_vectors(9, 50, dim) {
        let got = idx.search(&q, 10, &even).unwrap();
        assert_eq!(got.len(), 10);
        assert!(got.iter().all(|h| even(h.0)));
        let truth: HashSet<u128> = ids(&idx.search_exact(&q, 10, &even).unwrap())
            .into_iter()
            .collect();
        found += got.iter().filter(|h| truth.contains(&h.0)).count();
        // A very selective filter is answered exactly.
        assert_eq!(
            idx.search(&q, 10, &rare).unwrap(),
            idx.search_exact(&q, 10, &rare).unwrap()
        );
    }
    assert!(
        found as f64 / 500.0 >= 0.9,
        "filtered recall {}",
        found as f64 / 500.0
    );
    assert!(idx.search(&vecs[0], 10, &|_| false).unwrap().is_empty());
    // Fewer matches than k: all of them come back.
    let few = |id: u128| id < 3;
    let mut got = ids(&idx.search(&vecs[100], 10, &few).unwrap());
    got.sort();
    assert_eq!(got, vec![0, 1, 2]);
}

#[test]
fn rebuild_keeps_live_ids_and_drops_tombstones() {
    let dim = 32;
    let vecs = unit_vectors(10, 3_000, dim);
    let idx = filled(graph_cfg(dim), &vecs);
    for id in (0..3_000u128).filter(|i| i.is_multiple_of(4)) {
        idx.remove(id);
    }
    idx.insert(1, &vecs[2]).unwrap();
    let stored = idx.get(1).expect("stored");
    assert!(stored
        .iter()
        .zip(&vecs[2])
        .all(|(a, b)| (a - b).abs() <= b.abs() / 2048.0));
    idx.rebuild_now();
    let s = idx.stats();
    assert_eq!(s.tombstones, 0);
    assert_eq!(s.live, 2_250);
    assert_eq!(s.graph_points, Some(2_250));
    assert_eq!(
        idx.get(1),
        Some(stored),
        "a rebuild keeps the stored vector as it was"
    );
    for id in (0..3_000u128).step_by(7) {
        let hits = idx.search(&vecs[id as usize], 1, &all).unwrap();
        if id.is_multiple_of(4) {
            assert_ne!(hits[0].0, id);
        } else if id != 1 && id != 2 {
            assert_eq!(hits[0].0, id);
        }
    }
}

#[test]
fn background_rebuild_runs_past_threshold_and_loses_no_writes() {
    let dim = 32;
    let mut cfg = graph_cfg(dim);
    cfg.background_rebuild = true;
    cfg.rebuild_tombstone_ratio = 0.2;
    let vecs = unit_vectors(11, 4_500, dim);
    let idx = Arc::new(filled(cfg, &vecs[..3_000]));
    // Crossing 20% tombstones schedules a rebuild on another thread...
    for id in 0..700u128 {
        idx.remove(id);
    }
    // ...while more writes keep arriving from elsewhere.
    let writer = {
        let idx = Arc::clone(&idx);
        let vecs = vecs.clone();
        thread::spawn(move || {
            for id in 3_000..4_500u128 {
                idx.insert(id, &vecs[id as usize]).unwrap();
                if id.is_multiple_of(10) {
                    idx.remove(id - 1);
                }
            }
        })
    };
    // Searches keep working during the rebuild.
    for q in &vecs[700..800] {
        assert_eq!(idx.search(q, 5, &all).unwrap().len(), 5);
    }
    writer.join().unwrap();
    idx.wait_for_rebuild();
    let expected: Vec<u128> = (700..4_500u128)
        .filter(|&id| !(id >= 2_999 && (id + 1).is_multiple_of(10) && id != 4_499))
        .collect();
    assert_eq!(idx.len(), expected.len());
    for &id in &expected {
        assert!(idx.contains(id), "lost {id}");
    }
    idx.rebuild_now();
    let s = idx.stats();
    assert_eq!(s.tombstones, 0);
    assert_eq!(s.graph_points, Some(expected.len()));
    for &id in expected.iter().step_by(13) {
        let hits = idx.search(&vecs[id as usize], 3, &all).unwrap();
        assert_eq!(hits[0].0, id);
    }
    for id in (0..700u128).step_by(11) {
        let hits = idx.search(&vecs[id as usize], 10, &all).unwrap();
        assert!(hits.iter().all(|h| h.0 >= 700));
    }
}

#[test]
fn concurrent_search_and_insert() {
    let dim = 32;
    let vecs = Arc::new(unit_vectors(12, 4_000, dim));
    let idx = Arc::new(filled(graph_cfg(dim), &vecs[..1_000]));
    let mut handles = Vec::new();
    for w in 0..3usize {
        let (idx, vecs) = (Arc::clone(&idx), Arc::clone(&vecs));
        handles.push(thread::spawn(move || {
            for i in (1_000 + w * 1_000)..(2_000 + w * 1_000) {
                idx.insert(i as u128, &vecs[i]).unwrap();
            }
        }));
    }
    for s in 0..2usize {
        let (idx, vecs) = (Arc::clone(&idx), Arc::clone(&vecs));
        handles.push(thread::spawn(move || {
            for i in 0..300 {
                let q = &vecs[(i * 7 + s) % 1_000];
                let hits = idx.search(q, 10, &all).unwrap();
                assert_eq!(hits.len(), 10);
                assert!(hits.windows(2).all(|w| w[0].1 >= w[1].1));
            }
        }));
    }
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(idx.len(), 4_000);
    assert_eq!(idx.stats().graph_points, Some(4_000));
    let mut top1 = 0;
    for i in (0..4_000).step_by(10) {
        top1 += usize::from(idx.search(&vecs[i], 1, &all).unwrap()[0].0 == i as u128);
    }
    assert!(top1 >= 395, "self-retrieval {top1}/400");
}

#[test]
fn graph_is_started_at_half_the_threshold_and_kept_linked_as_the_index_grows() {
    let dim = 16;
    let mut cfg = VectorConfig::new(dim);
    cfg.exact_threshold = 1_000;
    cfg.background_rebuild = false;
    let vecs = unit_vectors(13, 1_200, dim);
    let idx = filled(cfg, &vecs[..499]);
    assert_eq!(idx.stats().graph_points, None);
    assert_eq!(
        idx.stats().unsearched,
        499,
        "no graph: every slot is scanned"
    );
    idx.insert(499, &vecs[499]).unwrap();
    assert_eq!(idx.stats().graph_points, Some(500));
    for (i, v) in vecs.iter().enumerate().take(1_200).skip(500) {
        idx.insert(i as u128, v).unwrap();
    }
    let stats = idx.stats();
    assert_eq!(stats.graph_points, Some(1_200), "every write linked");
    assert!(stats.unsearched < 1_200 / 2, "{stats:?}");
    assert!(idx.searches_quickly());
    let hits = idx.search(&vecs[500], 1, &all).unwrap();
    assert_eq!(hits[0].0, 500);
    let hits = idx.search(&vecs[1_150], 1, &all).unwrap();
    assert_eq!(
        hits[0].0, 1_150,
        "a write past the last copy of the links is found"
    );
}

#[test]
fn invalid_vectors_are_rejected() {
    let idx = VectorIndex::new(VectorConfig::new(4));
    assert!(matches!(
        idx.insert(1, &[1.0, 0.0, 0.0]),
        Err(IndexError::DimensionMismatch {
            expected: 4,
            got: 3
        })
    ));
    assert!(idx.insert(1, &[0.0; 4]).is_err());
    assert!(idx.search(&[f32::NAN, 0.0, 0.0, 1.0], 1, &all).is_err());
    let batch = vec![(1u128, vec![1.0, 0.0, 0.0, 0.0]), (2, vec![1.0])];
    assert!(idx.insert_batch(&batch).is_err());
    assert!(idx.is_empty(), "a failed batch inserts nothing");
    // Vectors are normalised on the way in, and kept in half precision (0.6 and 0.8 are the
    // halves 0.60009766 and 0.79980469).
    idx.insert(3, &[3.0, 4.0, 0.0, 0.0]).unwrap();
    assert_eq!(idx.get(3), Some(vec![0.600_097_66, 0.799_804_7, 0.0, 0.0]));
    let s = idx.similarity(3, &[0.0, 2.0, 0.0, 0.0]).unwrap().unwrap();
    assert_eq!(s, 0.799_804_7);
}

/// The scores of the best `k` of `vecs` for `q` passing `keep`, by a plain f64 dot product.
fn brute_force(vecs: &[Vec<f32>], q: &[f32], k: usize, keep: impl Fn(u128) -> bool) -> Vec<f64> {
    let mut scores: Vec<f64> = vecs
        .iter()
        .enumerate()
        .filter(|(i, _)| keep(*i as u128))
        .map(|(_, v)| true_score(v, q))
        .collect();
    scores.sort_by(|a, b| b.total_cmp(a));
    scores.truncate(k);
    scores
}

fn true_score(v: &[f32], q: &[f32]) -> f64 {
    v.iter()
        .zip(q)
        .map(|(a, b)| f64::from(*a) * f64::from(*b))
        .sum()
}

/// Whether `hits` are the best `k` (scores equal up to float rounding: near-ties may come in
/// either order).
fn assert_best(vecs: &[Vec<f32>], q: &[f32], hits: &[(u128, f32)], best: &[f64], what: &str) {
    assert_eq!(hits.len(), best.len(), "{what}");
    for ((id, score), want) in hits.iter().zip(best) {
        let got = true_score(&vecs[*id as usize], q);
        assert!(
            (got - want).abs() < 1e-5,
            "{what}: {id} scores {got}, the best there {want}"
        );
        assert!(
            (f64::from(*score) - got).abs() < 1e-5,
            "{what}: {id} reported {score}"
        );
    }
}

#[test]
fn exact_scans_find_what_a_brute_force_finds_in_dense_and_clustered_banks() {
    for (dim, clustered) in [(256, false), (256, true), (100, true), (24, false)] {
        let mut vecs = unit_vectors(11, 3_000, dim);
        if clustered {
            // Near-duplicates around a few centres: many scores close to each top k's floor,
            // where the eight-bit codes alone could not tell the order.
            let centres = unit_vectors(12, 5, dim);
            for (i, v) in vecs.iter_mut().enumerate() {
                let centre = &centres[i % centres.len()];
                let mixed: Vec<f32> = centre
                    .iter()
                    .zip(v.iter())
                    .map(|(c, x)| c + 0.08 * x)
                    .collect();
                let norm = mixed.iter().map(|x| x * x).sum::<f32>().sqrt();
                *v = mixed.into_iter().map(|x| x / norm).collect();
            }
        }
        let idx = filled(VectorConfig::new(dim), &vecs);
        // The index stores vectors in half precision; the brute force scores what it stores.
        let vecs: Vec<Vec<f32>> = (0..vecs.len() as u128)
            .map(|id| idx.get(id).expect("stored"))
            .collect();
        let queries = unit_vectors(13, 50, dim);
        let refs: Vec<&[f32]> = queries.iter().map(Vec::as_slice).collect();
        for k in [1, 3, 40] {
            let what = format!("dim {dim}, clustered {clustered}, k {k}");
            let odd = |id: u128| id % 2 == 1;
            for (hits, q) in idx
                .search_batch(&refs, k, 128, &odd)
                .unwrap()
                .iter()
                .zip(&queries)
            {
                assert!(hits.iter().all(|h| odd(h.0)), "{what}: the filter");
                assert_best(&vecs, q, hits, &brute_force(&vecs, q, k, odd), &what);
            }
            let q = &queries[0];
            let one = idx.search(q, k, &all).unwrap();
            assert_best(&vecs, q, &one, &brute_force(&vecs, q, k, all), &what);
        }
    }
}
