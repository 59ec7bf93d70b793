//! Keyword search latency on a bank shaped like 100,000 short memories.
//!
//! Memories are 10 to 25 words drawn from a Zipf-distributed vocabulary of
//! 20,000 words (a few words occur in most memories, most words are rare);
//! queries are 3 to 8 words from the same distribution, so most of them mix
//! common and rare words the way real recall queries do.

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use hindsight_index::Bm25Index;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const N: usize = 100_000;
const VOCAB: usize = 20_000;
const QUERIES: usize = 500;
/// What recall asks for: `(top_k * 4).max(40)`.
const K: usize = 40;

struct Fixture {
    index: Bm25Index,
    queries: Vec<Vec<String>>,
}

struct Zipf {
    cumulative: Vec<f64>,
}

impl Zipf {
    fn new(n: usize) -> Self {
        let mut acc = 0.0;
        let cumulative = (1..=n)
            .map(|r| {
                acc += 1.0 / r as f64;
                acc
            })
            .collect();
        Zipf { cumulative }
    }

    fn word(&self, rng: &mut StdRng) -> String {
        let x = rng.gen::<f64>() * self.cumulative.last().unwrap();
        let rank = self.cumulative.partition_point(|&c| c < x);
        format!("w{rank}")
    }
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let mut rng = StdRng::seed_from_u64(11);
        let zipf = Zipf::new(VOCAB);
        let index = Bm25Index::new();
        for id in 0..N {
            let len = rng.gen_range(10..=25);
            let words: Vec<String> = (0..len).map(|_| zipf.word(&mut rng)).collect();
            index.upsert(id as u128, &words);
        }
        let queries = (0..QUERIES)
            .map(|_| {
                let len = rng.gen_range(3..=8);
                (0..len).map(|_| zipf.word(&mut rng)).collect()
            })
            .collect();
        eprintln!("index: {:?}", index.stats());
        Fixture { index, queries }
    })
}

fn search(c: &mut Criterion) {
    let f = fixture();
    let next = AtomicUsize::new(0);
    let query = || &f.queries[next.fetch_add(1, Ordering::Relaxed) % QUERIES];
    let mut g = c.benchmark_group("bm25_100k_k40");
    g.sample_size(30).measurement_time(Duration::from_secs(8));
    g.bench_function("all_visible", |b| {
        b.iter(|| black_box(f.index.search(query(), K, &|_| true)))
    });
    g.bench_function("half_visible", |b| {
        b.iter(|| black_box(f.index.search(query(), K, &|id| id.is_multiple_of(2))))
    });
    g.finish();
}

criterion_group!(benches, search);
criterion_main!(benches);
