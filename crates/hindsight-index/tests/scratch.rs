use hindsight_index::{VectorConfig, VectorIndex};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashSet;
use std::time::{Duration, Instant};

fn gaussian(r: &mut StdRng) -> f32 {
    let u1: f32 = r.gen_range(f32::EPSILON..1.0);
    let u2: f32 = r.gen();
    (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
}
fn latent(n: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut rng = StdRng::seed_from_u64(7);
    let basis: Vec<Vec<f32>> = (0..48)
        .map(|_| (0..512).map(|_| gaussian(&mut rng)).collect())
        .collect();
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let mut v: Vec<f32> = (0..512).map(|_| 0.35 * gaussian(&mut rng)).collect();
            for b in &basis {
                let z = gaussian(&mut rng) / 48f32.sqrt();
                for (x, y) in v.iter_mut().zip(b) {
                    *x += z * y;
                }
            }
            v
        })
        .collect()
}

#[test]
fn scratch() {
    let n = 20_000;
    let data = latent(n, 1);
    let queries = latent(200, 2);
    for (m, efc) in [(16usize, 100usize), (16, 200), (24, 200), (12, 100)] {
        let mut c = VectorConfig::new(512);
        c.exact_threshold = 0;
        c.background_rebuild = false;
        c.max_nb_connection = m;
        c.ef_construction = efc;
        let idx = VectorIndex::new(c);
        let items: Vec<(u128, Vec<f32>)> = data
            .iter()
            .enumerate()
            .map(|(i, v)| (i as u128, v.clone()))
            .collect();
        let t = Instant::now();
        idx.insert_batch(&items).unwrap();
        let b = t.elapsed();
        let t = Instant::now();
        for (i, v) in queries.iter().enumerate().take(100) {
            idx.insert(100_000 + i as u128, v).unwrap();
        }
        println!(
            "m={m} efc={efc}: batch build {:?} ({:.0}/s), single insert {:?}",
            b,
            n as f64 / b.as_secs_f64(),
            t.elapsed() / 100
        );
        for i in 0..100 {
            idx.remove(100_000 + i as u128);
        }
        let truth: Vec<HashSet<u128>> = queries
            .iter()
            .map(|q| {
                idx.search_exact(q, 10, &|_| true)
                    .unwrap()
                    .iter()
                    .map(|h| h.0)
                    .collect()
            })
            .collect();
        for ef in [32usize, 64, 96, 128] {
            idx.set_ef_search(ef);
            let mut found = 0;
            let mut lat: Vec<Duration> = Vec::new();
            for (q, tr) in queries.iter().zip(&truth) {
                let t = Instant::now();
                let h = idx.search(q, 10, &|_| true).unwrap();
                lat.push(t.elapsed());
                found += h.iter().filter(|h| tr.contains(&h.0)).count();
            }
            lat.sort();
            println!(
                "   ef={ef}: recall {:.3}, p50 {:?}",
                found as f64 / 2000.0,
                lat[100]
            );
        }
    }
}
