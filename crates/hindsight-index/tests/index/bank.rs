use std::fs;
use std::sync::Arc;
use std::thread;

use hindsight_index::{BankIndex, BankIndexConfig, IndexDoc, IndexError};

use crate::common::{unit_vectors, words};

const MODEL: &str = "model-a";
const VOCAB: [&str; 12] = [
    "coffee", "tea", "meeting", "deploy", "bug", "rust", "paris", "budget", "report", "lunch",
    "release", "review",
];

fn cfg(dim: usize) -> BankIndexConfig {
    let mut c = BankIndexConfig::new(dim);
    c.vector.max_nb_connection = 12;
    c.vector.ef_construction = 64;
    c.vector.exact_threshold = 0;
    c.vector.background_rebuild = false;
    c.vector.rebuild_tombstone_ratio = 1.0;
    c
}

fn doc(i: usize, v: &[f32]) -> IndexDoc {
    IndexDoc {
        id: i as u128,
        vector: v.to_vec(),
        terms: (0..1 + i % 5)
            .map(|j| VOCAB[(i * 7 + j * 3) % VOCAB.len()].to_owned())
            .collect(),
        entities: vec![format!("e{}", i % 97), format!("f{}", i % 13)],
        occurred_at_ms: (i as i64) * 60_000,
    }
}

fn filled(n: usize, dim: usize) -> (BankIndex, Vec<Vec<f32>>) {
    let vecs = unit_vectors(21, n, dim);
    let bank = BankIndex::new(MODEL, cfg(dim));
    bank.upsert_batch(vecs.iter().enumerate().map(|(i, v)| doc(i, v)).collect())
        .unwrap();
    (bank, vecs)
}

fn odd(id: u128) -> bool {
    id % 2 == 1
}

fn assert_same_results(a: &BankIndex, b: &BankIndex, dim: usize) {
    for (i, q) in unit_vectors(22, 40, dim).iter().enumerate() {
        assert_eq!(
            a.vectors().search(q, 10, &odd).unwrap(),
            b.vectors().search(q, 10, &odd).unwrap()
        );
        let terms = words(&format!("{} {}", VOCAB[i % 12], VOCAB[(i * 5) % 12]));
        assert_eq!(
            a.bm25().search(&terms, 10, &odd),
            b.bm25().search(&terms, 10, &odd)
        );
        let ents = [format!("e{}", i % 97)];
        assert_eq!(
            a.entities().search(&ents, 2, 10, &odd),
            b.entities().search(&ents, 2, 10, &odd)
        );
        let start = (i as i64) * 3_600_000;
        assert_eq!(
            a.time().search(start, start + 7_200_000, 10, &odd),
            b.time().search(start, start + 7_200_000, 10, &odd)
        );
    }
}

#[test]
fn dump_and_load_round_trip_identically() {
    let dim = 32;
    let (bank, _) = filled(2_000, dim);
    for id in (0..2_000u128).step_by(9) {
        assert!(bank.remove(id));
    }
    bank.set_applied_index(77);
    let dir = tempfile::tempdir().unwrap();
    bank.dump(dir.path()).unwrap();
    let loaded = BankIndex::load_with_config(dir.path(), MODEL, cfg(dim)).unwrap();
    assert_eq!(loaded.meta(), bank.meta());
    assert_eq!(loaded.meta().applied_index, 77);
    assert_eq!(loaded.len(), 2_000 - 223);
    // Same tombstones: the saved graph was loaded, not rebuilt.
    assert_eq!(loaded.vectors().stats(), bank.vectors().stats());
    assert_same_results(&bank, &loaded, dim);
    assert_eq!(BankIndex::read_meta(dir.path()).unwrap(), bank.meta());

    // The loaded index keeps working as a live one.
    let v = unit_vectors(23, 1, dim).remove(0);
    loaded.upsert(doc(5_000, &v)).unwrap();
    assert_eq!(
        loaded.vectors().search(&v, 1, &|_| true).unwrap()[0].0,
        5_000
    );
}

#[test]
fn small_bank_without_graph_round_trips() {
    let dim = 8;
    let bank = BankIndex::new(MODEL, BankIndexConfig::new(dim));
    let vecs = unit_vectors(24, 50, dim);
    for (i, v) in vecs.iter().enumerate() {
        bank.upsert(doc(i, v)).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    bank.dump(dir.path()).unwrap();
    let loaded = BankIndex::load(dir.path(), MODEL, dim).unwrap();
    assert_eq!(loaded.vectors().stats().graph_points, None);
    assert_same_results(&bank, &loaded, dim);
}

#[test]
fn model_or_dimension_mismatch_is_reported() {
    let dim = 16;
    let (bank, _) = filled(100, dim);
    let dir = tempfile::tempdir().unwrap();
    bank.dump(dir.path()).unwrap();
    match BankIndex::load(dir.path(), "model-b", dim) {
        Err(IndexError::ModelMismatch {
            expected_model,
            found_model,
            ..
        }) => {
            assert_eq!(expected_model, "model-b");
            assert_eq!(found_model, MODEL);
        }
        other => panic!("expected ModelMismatch, got {other:?}"),
    }
    let err = BankIndex::load(dir.path(), MODEL, 32).unwrap_err();
    assert!(matches!(
        err,
        IndexError::ModelMismatch {
            expected_dim: 32,
            found_dim: 16,
            ..
        }
    ));
    assert!(err.to_string().contains("re-embed"), "{err}");
}

#[test]
fn missing_dump_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        BankIndex::load(dir.path(), MODEL, 8),
        Err(IndexError::NotFound(_))
    ));
}

#[test]
fn a_new_dump_replaces_the_old_one() {
    let dim = 16;
    let (bank, vecs) = filled(200, dim);
    let dir = tempfile::tempdir().unwrap();
    bank.dump(dir.path()).unwrap();
    bank.remove(3);
    bank.upsert(doc(999, &vecs[0])).unwrap();
    bank.set_applied_index(5);
    bank.dump(dir.path()).unwrap();
    let generations: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("gen-"))
        .collect();
    assert_eq!(generations.len(), 1, "{generations:?}");
    let loaded = BankIndex::load_with_config(dir.path(), MODEL, cfg(dim)).unwrap();
    assert!(!loaded.contains(3));
    assert!(loaded.contains(999));
    assert_eq!(loaded.applied_index(), 5);
}

#[test]
fn a_damaged_graph_is_rebuilt_from_the_saved_vectors() {
    let dim = 16;
    let (bank, vecs) = filled(1_500, dim);
    bank.remove(10);
    let dir = tempfile::tempdir().unwrap();
    bank.dump(dir.path()).unwrap();
    let generation = fs::read_to_string(dir.path().join("CURRENT")).unwrap();
    let graph = dir
        .path()
        .join(generation.trim())
        .join("vector/graph.hnsw.graph");
    let bytes = fs::read(&graph).unwrap();
    fs::write(&graph, &bytes[..bytes.len() / 2]).unwrap();
    let loaded = BankIndex::load_with_config(dir.path(), MODEL, cfg(dim)).unwrap();
    let found_all = |bank: &BankIndex| {
        for i in (0..1_500).step_by(50).filter(|&i| i != 10) {
            assert_eq!(
                bank.vectors().search(&vecs[i], 1, &|_| true).unwrap()[0].0,
                i as u128
            );
        }
    };
    // Searched through the saved copy of its links until a write needs hnsw_rs's graph.
    found_all(&loaded);
    loaded.upsert(doc(5_000, &vecs[1])).unwrap();
    let stats = loaded.vectors().stats();
    assert_eq!(stats.tombstones, 0, "rebuilt graphs are compacted");
    assert_eq!(stats.graph_points, Some(1_500));
    found_all(&loaded);

    // Without the saved links either, the graph is rebuilt as the bank loads.
    fs::remove_file(graph.with_file_name("links.bin")).unwrap();
    let loaded = BankIndex::load_with_config(dir.path(), MODEL, cfg(dim)).unwrap();
    assert_eq!(loaded.vectors().stats().graph_points, Some(1_499));
    found_all(&loaded);
}

#[test]
fn a_graph_built_after_a_load_is_counted_until_dumped_and_one_read_back_is_not() {
    let dim = 16;
    let vecs = unit_vectors(23, 301, dim);
    let mut below_threshold = cfg(dim);
    below_threshold.vector.exact_threshold = 1_000;
    let bank = BankIndex::new(MODEL, below_threshold);
    bank.upsert_batch(
        vecs[..300]
            .iter()
            .enumerate()
            .map(|(i, v)| doc(i, v))
            .collect(),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    bank.dump(dir.path()).unwrap();
    assert_eq!(bank.vectors().graphs_built(), 0);

    // Loaded where the bank is past the threshold: the dump has no graph, so one is built.
    let loaded = BankIndex::load_with_config(dir.path(), MODEL, cfg(dim)).unwrap();
    assert_eq!(loaded.vectors().stats().graph_points, Some(300));
    assert_eq!(loaded.vectors().graphs_built(), 1);

    // Dumped with that graph, the next load reads it back and builds nothing, a write included.
    loaded.dump(dir.path()).unwrap();
    let again = BankIndex::load_with_config(dir.path(), MODEL, cfg(dim)).unwrap();
    again.upsert(doc(300, &vecs[300])).unwrap();
    again.vectors().wait_for_rebuild();
    assert_eq!(again.vectors().stats().graph_points, Some(301));
    assert_eq!(again.vectors().graphs_built(), 0);
}

#[test]
fn damaged_index_files_are_reported_as_corrupt() {
    let (bank, _) = filled(50, 8);
    let dir = tempfile::tempdir().unwrap();
    bank.dump(dir.path()).unwrap();
    let generation = fs::read_to_string(dir.path().join("CURRENT")).unwrap();
    let bm25 = dir.path().join(generation.trim()).join("bm25.bin");
    fs::write(&bm25, b"garbage").unwrap();
    assert!(matches!(
        BankIndex::load_with_config(dir.path(), MODEL, cfg(8)),
        Err(IndexError::Corrupt(_))
    ));
}

#[test]
fn invalid_vector_changes_nothing_and_empty_vector_skips_the_vector_arm() {
    let bank = BankIndex::new(MODEL, BankIndexConfig::new(4));
    let mut bad = doc(1, &[1.0, 0.0, 0.0, 0.0]);
    bad.vector.push(1.0);
    assert!(matches!(
        bank.upsert(bad.clone()),
        Err(IndexError::DimensionMismatch { .. })
    ));
    assert!(bank
        .upsert_batch(vec![doc(2, &[0.0, 1.0, 0.0, 0.0]), bad])
        .is_err());
    assert!(bank.is_empty());
    assert!(bank.bm25().is_empty());

    bank.upsert(doc(3, &[0.0, 1.0, 0.0, 0.0])).unwrap();
    bank.upsert(doc(3, &[])).unwrap();
    assert!(bank.contains(3));
    assert!(!bank.vectors().contains(3));
    assert!(bank.bm25().contains(3));
    assert!(bank.remove(3));
    assert!(!bank.remove(3));
    assert!(bank.is_empty() && bank.entities().is_empty() && bank.bm25().is_empty());
}

#[test]
fn batch_with_repeated_ids_keeps_the_last_entry() {
    let bank = BankIndex::new(MODEL, BankIndexConfig::new(4));
    let mut first = doc(1, &[1.0, 0.0, 0.0, 0.0]);
    first.terms = words("old");
    let mut second = doc(1, &[0.0, 1.0, 0.0, 0.0]);
    second.terms = words("new");
    bank.upsert_batch(vec![first, second]).unwrap();
    assert_eq!(bank.len(), 1);
    assert_eq!(bank.vectors().get(1), Some(vec![0.0, 1.0, 0.0, 0.0]));
    assert!(bank.bm25().search(&words("old"), 5, &|_| true).is_empty());
}

#[test]
fn searchers_share_the_bank_with_a_writer() {
    let dim = 16;
    let (bank, _) = filled(500, dim);
    let bank = Arc::new(bank);
    let dir = tempfile::tempdir().unwrap();
    let writer = {
        let bank = Arc::clone(&bank);
        let path = dir.path().to_path_buf();
        thread::spawn(move || {
            let vecs = unit_vectors(25, 500, dim);
            for (i, v) in vecs.iter().enumerate() {
                bank.upsert(doc(1_000 + i, v)).unwrap();
                if i == 250 {
                    bank.dump(&path).unwrap();
                }
            }
        })
    };
    let reader = {
        let bank = Arc::clone(&bank);
        thread::spawn(move || {
            for q in unit_vectors(26, 200, dim) {
                assert_eq!(bank.vectors().search(&q, 5, &|_| true).unwrap().len(), 5);
                assert!(!bank
                    .bm25()
                    .search(&words("coffee"), 5, &|_| true)
                    .is_empty());
            }
        })
    };
    writer.join().unwrap();
    reader.join().unwrap();
    assert_eq!(bank.len(), 1_000);
    let loaded = BankIndex::load_with_config(dir.path(), MODEL, cfg(dim)).unwrap();
    assert_eq!(loaded.len(), 751);
}

/// Every dump taken while a writer writes loads whole: its parts agree, its graph matches its
/// vectors, and each memory it holds is found by its own vector.
#[test]
fn dumps_taken_while_a_writer_writes_load_whole() {
    let dim = 16;
    let (bank, first) = filled(600, dim);
    let bank = Arc::new(bank);
    let later = unit_vectors(27, 900, dim);
    let writer = {
        let bank = Arc::clone(&bank);
        let later = later.clone();
        thread::spawn(move || {
            for (i, v) in later.iter().enumerate() {
                bank.upsert(doc(1_000 + i, v)).unwrap();
            }
        })
    };
    let dirs: Vec<tempfile::TempDir> = (0..4).map(|_| tempfile::tempdir().unwrap()).collect();
    for dir in &dirs {
        bank.dump(dir.path()).unwrap();
    }
    writer.join().unwrap();
    for dir in &dirs {
        let loaded = BankIndex::load_with_config(dir.path(), MODEL, cfg(dim)).unwrap();
        let n = loaded.len();
        assert!((600..=1_500).contains(&n), "{n} memories");
        // Writes land in order, so a dump holds the first 600 and a prefix of the rest.
        let held = first.iter().enumerate().map(|(i, v)| (i as u128, v)).chain(
            later[..n - 600]
                .iter()
                .enumerate()
                .map(|(i, v)| (1_000 + i as u128, v)),
        );
        for (id, v) in held {
            let hits = loaded.vectors().search(v, 1, &|_| true).unwrap();
            assert_eq!(hits.first().map(|h| h.0), Some(id), "{n} memories");
        }
    }
}

#[test]
fn a_bank_read_only_lets_its_graph_rest_on_the_dump_and_a_write_brings_it_back() {
    let dim = 16;
    let (bank, vecs) = filled(1_500, dim);
    assert!(!bank.rest_graph(), "nothing dumped yet to rest on");
    assert!(bank.graph_newer_than_dump(), "a whole graph no dump holds");
    let dir = tempfile::tempdir().unwrap();
    bank.dump(dir.path()).unwrap();
    assert!(!bank.graph_newer_than_dump());
    let graph_heap = bank.memory().graph;
    assert!(graph_heap > 0);

    assert!(bank.rest_graph());
    assert_eq!(bank.memory().graph, 0, "hnsw_rs's graph left memory");
    for i in (0..1_500).step_by(37) {
        assert_eq!(
            bank.vectors().search(&vecs[i], 1, &|_| true).unwrap()[0].0,
            i as u128
        );
    }

    // A write reads the graph back from the dump and links the new vector into it.
    bank.upsert(doc(9_000, &vecs[3])).unwrap();
    bank.vectors().wait_for_rebuild();
    assert!(bank.memory().graph > 0);
    assert_eq!(bank.vectors().stats().graph_points, Some(1_501));
    assert!(bank.graph_newer_than_dump(), "the new link is in no dump");
    assert!(!bank.rest_graph());

    // A newer dump in the same directory holds it, and the graph rests on that one.
    bank.dump(dir.path()).unwrap();
    assert!(bank.rest_graph());
    bank.upsert(doc(9_001, &vecs[4])).unwrap();
    bank.vectors().wait_for_rebuild();
    assert_eq!(bank.vectors().stats().graph_points, Some(1_502));
}
