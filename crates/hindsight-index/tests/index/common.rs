use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// Uniform on the unit sphere (normalised Gaussian).
pub fn unit_vector(rng: &mut StdRng, dim: usize) -> Vec<f32> {
    let mut v: Vec<f32> = (0..dim)
        .map(|_| {
            // Box–Muller keeps the dependency list to `rand` itself.
            let u1: f32 = rng.gen_range(f32::EPSILON..1.0);
            let u2: f32 = rng.gen();
            (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
        })
        .collect();
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= n);
    v
}

pub fn unit_vectors(seed: u64, n: usize, dim: usize) -> Vec<Vec<f32>> {
    let mut r = rng(seed);
    (0..n).map(|_| unit_vector(&mut r, dim)).collect()
}

pub fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_owned).collect()
}

pub fn ids(hits: &[(u128, f32)]) -> Vec<u128> {
    hits.iter().map(|h| h.0).collect()
}
