//! The per-bank vector index on a fixed data set, for bench/hnsw-vs-hnswlib: builds a
//! [`VectorIndex`] from `base.f32` and prints a JSON line with the build time; then, for each
//! candidate list size (ef) read from stdin, one per line, searches every vector of `queries.f32`
//! for its 10 nearest neighbours and prints a JSON line with recall@10 against `truth.u32` and the
//! seconds the pass took. An empty line or end of input stops it.
//!
//! Run single-threaded (the graph build inserts large batches through rayon):
//!   RAYON_NUM_THREADS=1 cargo run --release -p hindsight-index --example hnsw_bench -- \
//!     DIR M EF_CONSTRUCTION
//!
//! With `HNSW_BENCH_CACHE=DIR` the built index is dumped under DIR (one subdirectory per data set
//! and parameters) and later runs load it instead of building, as a bank does when it restarts;
//! the build time printed is then the load time, flagged `"loaded": true`.
//!
//! Files: `base.f32` and `queries.f32` hold `u32 n, u32 dim` then `n × dim` little-endian f32;
//! `truth.u32` holds `u32 n, u32 k` then `n × k` ids (row numbers of `base.f32`), nearest first.

use std::collections::HashSet;
use std::fs;
use std::path::Path;
use std::time::Instant;

use hindsight_index::{BankIndex, BankIndexConfig, IndexDoc, VectorConfig};

const K: usize = 10;
/// Vectors per insert call, as a bank's index receives them when it loads from the store.
const BATCH: usize = 1000;

fn read_matrix<T>(path: &Path, decode: fn([u8; 4]) -> T) -> (usize, Vec<Vec<T>>) {
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let word = |i: usize| -> [u8; 4] { bytes[i * 4..i * 4 + 4].try_into().expect("4 bytes") };
    let n = u32::from_le_bytes(word(0)) as usize;
    let cols = u32::from_le_bytes(word(1)) as usize;
    assert_eq!(bytes.len(), 8 + n * cols * 4, "{}: size", path.display());
    let rows = (0..n)
        .map(|r| (0..cols).map(|c| decode(word(2 + r * cols + c))).collect())
        .collect();
    (cols, rows)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() != 3 {
        eprintln!("usage: hnsw_bench DIR M EF_CONSTRUCTION  (then EF lines on stdin)");
        std::process::exit(2);
    }
    let dir = Path::new(&args[0]);
    let m: usize = args[1].parse().expect("M");
    let ef_construction: usize = args[2].parse().expect("EF_CONSTRUCTION");

    let (dim, base) = read_matrix(&dir.join("base.f32"), f32::from_le_bytes);
    let (_, queries) = read_matrix(&dir.join("queries.f32"), f32::from_le_bytes);
    let (k, truth) = read_matrix(&dir.join("truth.u32"), u32::from_le_bytes);
    assert!(
        k >= K,
        "truth holds {k} neighbours per query, fewer than {K}"
    );

    // The index's defaults but for the graph's parameters; the graph from the first vector on
    // (a bank below `exact_threshold` is scanned exactly, which is no graph to compare), and
    // rebuilds inside the inserting call so that the build is timed whole.
    let config = VectorConfig {
        max_nb_connection: m,
        ef_construction,
        exact_threshold: 0,
        background_rebuild: false,
        ..VectorConfig::new(dim)
    };
    let cache = std::env::var_os("HNSW_BENCH_CACHE").map(|root| {
        // Keyed by the parameters and a fingerprint of the data, so another data set never loads it.
        let fingerprint = base
            .iter()
            .step_by((base.len() / 64).max(1))
            .flat_map(|v| v.iter().take(4))
            .fold(0u64, |h, x| {
                (h ^ u64::from(x.to_bits())).wrapping_mul(0x100_0000_01b3)
            });
        Path::new(&root).join(format!(
            "{}x{dim}-m{m}-efc{ef_construction}-{fingerprint:016x}",
            base.len()
        ))
    });
    let bank_config = BankIndexConfig {
        vector: config,
        ..BankIndexConfig::new(dim)
    };
    let started = Instant::now();
    let loaded = cache
        .as_deref()
        .and_then(|dir| BankIndex::load_with_config(dir, "hnsw_bench", bank_config.clone()).ok());
    let is_loaded = loaded.is_some();
    let bank = loaded.unwrap_or_else(|| {
        let bank = BankIndex::new("hnsw_bench", bank_config);
        for (first, chunk) in base.chunks(BATCH).enumerate() {
            let docs: Vec<IndexDoc> = chunk
                .iter()
                .enumerate()
                .map(|(i, v)| IndexDoc {
                    id: (first * BATCH + i) as u128,
                    vector: v.clone(),
                    ..IndexDoc::default()
                })
                .collect();
            bank.upsert_batch(docs).expect("insert");
        }
        bank.vectors().wait_for_rebuild();
        bank
    });
    let index = bank.vectors();
    let build_secs = started.elapsed().as_secs_f64();
    if let (Some(dir), false) = (&cache, is_loaded) {
        bank.dump(dir).expect("dump to the cache");
    }
    let stats = index.stats();
    assert!(
        stats.graph_points.is_some(),
        "no graph was built: {stats:?}"
    );

    let everything = |_: u128| true;
    // One pass to warm caches before anything is timed.
    for q in &queries {
        index.search(q, K, &everything).expect("search");
    }
    println!(
        "{{\"library\": \"hindsight-index\", \"n\": {}, \"dim\": {dim}, \"m\": {m}, \
         \"ef_construction\": {ef_construction}, \"build_secs\": {build_secs:.2}, \
         \"graph_points\": {}, \"loaded\": {is_loaded}}}",
        base.len(),
        stats.graph_points.unwrap_or(0),
    );
    // Then one timed pass over every query per line "EF" read, answered with a line of JSON, so
    // that the caller can interleave these passes with another library's under the same load.
    let mut found = Vec::with_capacity(queries.len());
    for line in std::io::stdin().lines() {
        let line = line.expect("stdin");
        let Ok(ef) = line.trim().parse::<usize>() else {
            break;
        };
        index.set_ef_search(ef);
        found.clear();
        let started = Instant::now();
        for q in &queries {
            found.push(index.search(q, K, &everything).expect("search"));
        }
        let secs = started.elapsed().as_secs_f64();
        let hits: usize = found
            .iter()
            .zip(&truth)
            .map(|(found, want)| {
                let want: HashSet<u32> = want[..K].iter().copied().collect();
                found
                    .iter()
                    .filter(|(id, _)| want.contains(&(*id as u32)))
                    .count()
            })
            .sum();
        println!(
            "{{\"ef\": {ef}, \"recall\": {:.4}, \"secs\": {secs:.6}}}",
            hits as f64 / (queries.len() * K) as f64
        );
    }
}
