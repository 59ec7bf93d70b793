//! Centring: another model's cosines put on the default model's scale.
//!
//! Models differ in how alike they find texts that have nothing in common. The default model
//! (USE-multilingual v3) gives two unrelated sentences a cosine near 0.1; multilingual-e5
//! gives them about 0.8, because its vectors share one large component. The node's thresholds
//! (duplicates, changes, the relevance floor) are cosines on the default model's scale, so
//! such a model would have unrelated memories merged and every query found relevant.
//!
//! Write a unit vector as `v = m + r`, where `m` is the model's mean vector over ordinary text
//! and `r` what sets one text apart. Since the `r` of unrelated texts are nearly orthogonal, the
//! mean cosine of unrelated texts is `b = |m|²`, and `cos(v, w) ≈ b + (1 - b) cos(r, r')`.
//! [`CentredEmbedder`] removes `m`, keeps the direction of `r`, and adds back a component of
//! weight [`REFERENCE_BASELINE`] in one extra dimension that every vector shares, so that
//! `cos' = REFERENCE_BASELINE + (1 - REFERENCE_BASELINE) cos(r, r')`: the model's own order of
//! similarity, on the scale the thresholds were chosen for.
//!
//! The means are measured on first use from a fixed corpus of ordinary sentences in English and
//! Chinese (`probe.txt`, 240 lines on unrelated topics), one per script ([`Centre`]) and apart
//! for search queries; a deterministic model gives the same means, hence the same vectors,
//! every time, which the model id (`…+centred`) stands for.

use std::sync::{Arc, Mutex};

use crate::{EmbedError, Embedder};

/// The mean cosine of unrelated texts under the default model, the scale the node's thresholds
/// are set on: `|m|²` of USE-multilingual v3 over `probe.txt` (checked by a test against the
/// real model).
pub const REFERENCE_BASELINE: f32 = 0.067;

const PROBE: &str = include_str!("probe.txt");

/// The corpus the mean vector is measured on, one text per line.
pub fn probe_texts() -> Vec<&'static str> {
    PROBE
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect()
}

/// A model's mean vectors over the probe corpus: one for Chinese text and one for the rest.
///
/// Texts of one script share more than the model's overall mean: under multilingual-e5, after
/// the overall mean is removed, unrelated Chinese texts still score about 0.34 and English ones
/// 0.17. A text is centred on the mean of its script, or between the two by its share of Han
/// characters, so that both languages sit at the reference.
#[derive(Debug, Clone)]
pub struct Centre {
    han: Vec<f32>,
    other: Vec<f32>,
    overall: Vec<f32>,
}

impl Centre {
    /// Embeds the probe corpus with `model` and averages it.
    pub fn measure(model: &dyn Embedder) -> Result<Centre, EmbedError> {
        let texts = probe_texts();
        Centre::average(&texts, model.embed(&texts)?)
    }

    /// Embeds the probe corpus as search queries and averages it: a model that embeds queries
    /// apart (with a prefix) gives them means of their own.
    pub fn measure_queries(model: &dyn Embedder) -> Result<Centre, EmbedError> {
        let texts = probe_texts();
        Centre::average(&texts, model.embed_queries(&texts)?)
    }

    fn average(texts: &[&str], vectors: Vec<Vec<f32>>) -> Result<Centre, EmbedError> {
        let dim = vectors.first().map_or(0, Vec::len);
        if dim == 0 || vectors.len() != texts.len() {
            return Err(EmbedError::Shape {
                expected: format!("{} vectors for the calibration corpus", texts.len()),
                got: format!("{} vectors of {dim} dimensions", vectors.len()),
            });
        }
        let mut sums = [vec![0.0f64; dim], vec![0.0f64; dim]];
        let mut counts = [0usize; 2];
        for (text, v) in texts.iter().zip(&vectors) {
            if v.len() != dim {
                return Err(EmbedError::Shape {
                    expected: format!("{dim} dimensions"),
                    got: format!("{} dimensions", v.len()),
                });
            }
            let side = usize::from(han_share(text) < 0.5);
            counts[side] += 1;
            for (m, x) in sums[side].iter_mut().zip(v) {
                *m += f64::from(*x);
            }
        }
        if counts.contains(&0) {
            return Err(EmbedError::Config(
                "the calibration corpus needs Chinese and other texts".into(),
            ));
        }
        let mean = |side: usize| -> Vec<f32> {
            sums[side]
                .iter()
                .map(|m| (m / counts[side] as f64) as f32)
                .collect()
        };
        let overall = (0..dim)
            .map(|i| ((sums[0][i] + sums[1][i]) / vectors.len() as f64) as f32)
            .collect();
        Ok(Centre {
            han: mean(0),
            other: mean(1),
            overall,
        })
    }

    /// The mean cosine of two unrelated texts under the measured model, `|m|²` of the overall
    /// mean.
    pub fn baseline(&self) -> f32 {
        self.overall.iter().map(|x| x * x).sum()
    }

    /// [`Self::apply`] to each text and its vector.
    fn apply_all(&self, texts: &[&str], vectors: &[Vec<f32>]) -> Vec<Vec<f32>> {
        vectors
            .iter()
            .zip(texts)
            .map(|(v, text)| self.apply(text, v))
            .collect()
    }

    /// `v`, the vector of `text`, without the mean of its script, on the reference scale, one
    /// dimension longer.
    fn apply(&self, text: &str, v: &[f32]) -> Vec<f32> {
        let w = han_share(text);
        let mut out: Vec<f32> = v
            .iter()
            .zip(self.han.iter().zip(&self.other))
            .map(|(x, (h, o))| x - (w * h + (1.0 - w) * o))
            .collect();
        let norm = out.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm.is_nan() || norm <= 1e-6 {
            // A text at the mean itself is equally unlike everything: only the shared part.
            out.iter_mut().for_each(|x| *x = 0.0);
            out.push(1.0);
            return out;
        }
        // To unit length, then to the share of the text's own part.
        let scale = (1.0 - REFERENCE_BASELINE).sqrt() / norm;
        out.iter_mut().for_each(|x| *x *= scale);
        out.push(REFERENCE_BASELINE.sqrt());
        out
    }
}

/// The share of Han characters among a text's letters; 0 for a text without letters.
fn han_share(text: &str) -> f32 {
    let (mut letters, mut han) = (0u32, 0u32);
    for c in text.chars().filter(|c| c.is_alphabetic()) {
        letters += 1;
        if matches!(c, '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}' | '\u{f900}'..='\u{faff}')
        {
            han += 1;
        }
    }
    if letters == 0 {
        0.0
    } else {
        han as f32 / letters as f32
    }
}

/// Any embedder, centred on its mean and put on the default model's scale (module docs).
/// Texts and queries are centred on their own means, since a model may embed them apart.
pub struct CentredEmbedder<E> {
    inner: E,
    model_id: String,
    texts: Mutex<Option<Arc<Centre>>>,
    queries: Mutex<Option<Arc<Centre>>>,
}

impl<E: Embedder> CentredEmbedder<E> {
    /// Wraps `inner`; the means are measured on the first call that needs them, so that a
    /// remote model that is not up yet does not keep the node from starting.
    pub fn new(inner: E) -> Self {
        CentredEmbedder {
            model_id: format!("{}+centred", inner.model_id()),
            inner,
            texts: Mutex::new(None),
            queries: Mutex::new(None),
        }
    }

    /// The centre of stored texts, measured first if needed.
    pub fn centre(&self) -> Result<Arc<Centre>, EmbedError> {
        self.measured(&self.texts, "texts", Centre::measure)
    }

    /// The centre of search queries, measured first if needed.
    pub fn query_centre(&self) -> Result<Arc<Centre>, EmbedError> {
        self.measured(&self.queries, "queries", Centre::measure_queries)
    }

    fn measured(
        &self,
        slot: &Mutex<Option<Arc<Centre>>>,
        side: &str,
        measure: fn(&dyn Embedder) -> Result<Centre, EmbedError>,
    ) -> Result<Arc<Centre>, EmbedError> {
        if let Some(centre) = slot.lock().expect("centre lock").as_ref() {
            return Ok(centre.clone());
        }
        // Measured outside the lock: two first callers may both measure, and get the same.
        let centre = Arc::new(measure(&self.inner)?);
        tracing::info!(
            model = self.inner.model_id(),
            side,
            baseline = centre.baseline(),
            reference = REFERENCE_BASELINE,
            "embedding model centred: its mean cosine of unrelated texts is mapped to the reference"
        );
        *slot.lock().expect("centre lock") = Some(centre.clone());
        Ok(centre)
    }
}

impl<E: Embedder> Embedder for CentredEmbedder<E> {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dim(&self) -> usize {
        match self.inner.dim() {
            0 => 0,
            d => d + 1,
        }
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(self.centre()?.apply_all(texts, &self.inner.embed(texts)?))
    }

    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(self
            .query_centre()?
            .apply_all(texts, &self.inner.embed_queries(texts)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{l2_normalize, HashingEmbedder};

    /// A model whose vectors share one large component, as multilingual-e5's do: the hashing
    /// embedder's vector mixed with a fixed direction, so that unrelated texts score about 0.8.
    /// Optionally queries are pushed along a second shared direction, as a query prefix does,
    /// and Chinese texts along a third, as a multilingual model places each language in a
    /// region of its own.
    struct Skewed {
        hashing: HashingEmbedder,
        query_push: f32,
        han_push: f32,
    }

    impl Skewed {
        fn new() -> Self {
            Skewed {
                hashing: HashingEmbedder::new(256),
                query_push: 0.0,
                han_push: 0.0,
            }
        }

        fn skew(&self, texts: &[&str], query: bool) -> Result<Vec<Vec<f32>>, EmbedError> {
            Ok(self
                .hashing
                .embed(texts)?
                .into_iter()
                .zip(texts)
                .map(|(mut v, text)| {
                    v.iter_mut().for_each(|x| *x *= 0.45);
                    v[0] += 0.9;
                    if query {
                        v[1] += self.query_push;
                    }
                    if han_share(text) > 0.5 {
                        v[2] += self.han_push;
                    }
                    l2_normalize(&mut v);
                    v
                })
                .collect())
        }
    }

    impl Embedder for Skewed {
        fn model_id(&self) -> &str {
            "skewed"
        }
        fn dim(&self) -> usize {
            self.hashing.dim()
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.skew(texts, false)
        }
        fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.skew(texts, true)
        }
    }

    #[test]
    fn queries_are_centred_on_their_own_mean() {
        let centred = CentredEmbedder::new(Skewed {
            query_push: 0.5,
            ..Skewed::new()
        });
        let texts = centred.embed(&UNRELATED).unwrap();
        let queries = centred.embed_queries(&UNRELATED).unwrap();
        for (i, q) in queries.iter().enumerate() {
            for (j, t) in texts.iter().enumerate() {
                let c = cosine(q, t);
                if i == j {
                    assert!(c > 0.8, "a query finds its own text, got {c}");
                } else {
                    assert!(
                        (c - REFERENCE_BASELINE).abs() < 0.2,
                        "a query and an unrelated text near the reference baseline, got {c}"
                    );
                }
            }
        }
    }

    #[test]
    fn each_script_is_centred_on_its_own_mean() {
        let centred = CentredEmbedder::new(Skewed {
            han_push: 0.6,
            ..Skewed::new()
        });
        let chinese = centred
            .embed(&[
                "周末带孩子去动物园",
                "这台打印机又卡纸了",
                "下个月房租要涨两百",
            ])
            .unwrap();
        for (i, a) in chinese.iter().enumerate() {
            for b in &chinese[i + 1..] {
                let c = cosine(a, b);
                assert!(
                    (c - REFERENCE_BASELINE).abs() < 0.2,
                    "unrelated Chinese texts near the reference baseline, got {c}"
                );
            }
        }
    }

    #[test]
    fn han_share_counts_letters_only() {
        assert_eq!(han_share("今天下雨"), 1.0);
        assert_eq!(han_share("it rains, 2 mm"), 0.0);
        assert!((han_share("用 Rust 写") - 2.0 / 6.0).abs() < 1e-6);
        assert_eq!(han_share("42 !"), 0.0);
    }

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    const UNRELATED: [&str; 4] = [
        "the boiler needs a service before winter",
        "我们下周三去看牙医",
        "merge conflicts again in the parser module",
        "a kilo of plums and some rye bread",
    ];

    #[test]
    fn unrelated_texts_move_from_the_models_baseline_to_the_reference() {
        let raw = Skewed::new();
        let before = raw.embed(&UNRELATED).unwrap();
        assert!(
            cosine(&before[0], &before[1]) > 0.6,
            "the fake model is anisotropic"
        );

        let centred = CentredEmbedder::new(Skewed::new());
        assert!(centred.centre().unwrap().baseline() > 0.6);
        let after = centred.embed(&UNRELATED).unwrap();
        for (i, a) in after.iter().enumerate() {
            assert_eq!(a.len(), 257);
            assert!((cosine(a, a) - 1.0).abs() < 1e-4, "unit length");
            for b in &after[i + 1..] {
                let c = cosine(a, b);
                assert!(
                    (c - REFERENCE_BASELINE).abs() < 0.2,
                    "unrelated texts near the reference baseline, got {c}"
                );
            }
        }
    }

    #[test]
    fn centring_keeps_the_models_order_of_similarity() {
        let centred = CentredEmbedder::new(Skewed::new());
        let v = centred
            .embed(&[
                "walk the dog before breakfast",
                "walk the dog after breakfast",
                "quarterly tax return is due",
            ])
            .unwrap();
        assert!(cosine(&v[0], &v[1]) > cosine(&v[0], &v[2]) + 0.2);
        let again = centred.embed(&["walk the dog before breakfast"]).unwrap();
        assert_eq!(again[0], v[0], "the same text gets the same vector");
    }

    #[test]
    fn the_id_and_dimension_say_the_vectors_are_centred() {
        let centred = CentredEmbedder::new(HashingEmbedder::new(64));
        assert_eq!(
            centred.model_id(),
            format!("{}+centred", HashingEmbedder::new(64).model_id())
        );
        assert_eq!(centred.dim(), 65);
    }

    #[test]
    fn the_probe_corpus_is_large_and_bilingual() {
        let texts = probe_texts();
        assert!(texts.len() >= 200);
        let chinese = texts.iter().filter(|t| han_share(t) >= 0.5).count();
        assert!(chinese >= 60 && texts.len() - chinese >= 100);
    }
}
