//! Exact scans of a bank below the graph threshold: a batch of writes' duplicate check (50
//! queries, k 3, one pass over the bank) and one recall's semantic arm (k 40), at 19,000 × 256,
//! the size of a bank just before it gets a graph.
//!
//! Vectors are uniform on the sphere: an exact scan's cost does not depend on where they lie.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use hindsight_index::{VectorConfig, VectorIndex};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const N: usize = 19_000;
const DIM: usize = 256;
const BATCH: usize = 50;

fn unit(rng: &mut StdRng) -> Vec<f32> {
    let v: Vec<f32> = (0..DIM).map(|_| rng.gen_range(-1.0f32..1.0)).collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / norm).collect()
}

fn scan(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(7);
    let index = VectorIndex::new(VectorConfig::new(DIM));
    for id in 0..N {
        index.insert(id as u128, &unit(&mut rng)).unwrap();
    }
    let queries: Vec<Vec<f32>> = (0..BATCH).map(|_| unit(&mut rng)).collect();
    let batch: Vec<&[f32]> = queries.iter().map(Vec::as_slice).collect();
    let ef = index.ef_search();

    let mut g = c.benchmark_group("exact_scan_19k_256d");
    g.sample_size(20).measurement_time(Duration::from_secs(6));
    g.bench_function("duplicate_check_batch_50_k3", |b| {
        b.iter(|| black_box(index.search_batch(&batch, 3, ef, &|_| true).unwrap()))
    });
    g.bench_function("duplicate_check_batch_50_k3_filter_half", |b| {
        b.iter(|| {
            black_box(
                index
                    .search_batch(&batch, 3, ef, &|id| id.is_multiple_of(2))
                    .unwrap(),
            )
        })
    });
    g.bench_function("recall_one_query_k40", |b| {
        b.iter(|| black_box(index.search(&queries[0], 40, &|_| true).unwrap()))
    });
    g.finish();
}

criterion_group!(benches, scan);
criterion_main!(benches);
