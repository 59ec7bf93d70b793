//! Client for OpenAI-compatible `/v1/embeddings` servers.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::{l2_normalize, EmbedError, Embedder};

/// Settings for [`OpenAiEmbedder`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct OpenAiConfig {
    /// Server URL: `https://api.openai.com/v1`, `http://127.0.0.1:8080` (then
    /// `/v1/embeddings` is appended) or the full `.../embeddings` endpoint.
    pub base_url: String,
    /// Model name sent with each request.
    pub model: String,
    /// Name of the environment variable holding the API key; `None` sends no
    /// `Authorization` header (local servers).
    pub api_key_env: Option<String>,
    /// Per-request timeout in seconds.
    pub timeout_secs: u64,
    /// Expected dimension; when `None` it is learned from the first answer.
    pub dim: Option<usize>,
    /// Most texts sent in one request.
    pub batch_size: usize,
    /// `input_type` sent with texts to store, for servers whose model embeds documents and
    /// queries apart (e.g. "passage" for multilingual-e5); `None` sends none.
    pub input_type: Option<String>,
    /// `input_type` sent with search queries (e.g. "query"); `None` sends none.
    pub query_input_type: Option<String>,
    /// Reuse connections between requests. A remote HTTPS server wants this (no handshake per
    /// request); a local server that answers in two writes without `TCP_NODELAY` (Python's
    /// `http.server`) stalls each answer on a kept-alive connection for the client's delayed
    /// acknowledgement, about 40 ms, which a fresh connection does not.
    pub keep_alive: bool,
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        OpenAiConfig {
            base_url: "https://api.openai.com/v1".into(),
            model: "text-embedding-3-small".into(),
            api_key_env: Some("OPENAI_API_KEY".into()),
            timeout_secs: 60,
            dim: None,
            batch_size: 64,
            input_type: None,
            query_input_type: None,
            keep_alive: true,
        }
    }
}

/// Embeds through an OpenAI-compatible HTTP API and L2-normalises the result.
pub struct OpenAiEmbedder {
    endpoint: String,
    model: String,
    model_id: String,
    api_key: Option<String>,
    batch_size: usize,
    input_type: Option<String>,
    query_input_type: Option<String>,
    /// Configured or learned dimension; 0 until known.
    dim: AtomicUsize,
    agent: ureq::Agent,
}

#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    input: &'a [&'a str],
    #[serde(skip_serializing_if = "Option::is_none")]
    input_type: Option<&'a str>,
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

impl OpenAiEmbedder {
    /// Creates the client; reads the API key now so a missing key is
    /// reported at start-up rather than on the first request.
    pub fn new(config: OpenAiConfig) -> Result<Self, EmbedError> {
        if config.model.trim().is_empty() {
            return Err(EmbedError::Config(
                "OpenAI embedder needs a model name".into(),
            ));
        }
        if config.batch_size == 0 {
            return Err(EmbedError::Config("batch_size must be at least 1".into()));
        }
        let api_key = match &config.api_key_env {
            None => None,
            Some(var) => match std::env::var(var) {
                Ok(key) if !key.trim().is_empty() => Some(key.trim().to_string()),
                _ => {
                    return Err(EmbedError::Config(format!(
                        "environment variable {var} (the embedding API key) is not set"
                    )))
                }
            },
        };
        let mut agent =
            ureq::AgentBuilder::new().timeout(Duration::from_secs(config.timeout_secs.max(1)));
        if !config.keep_alive {
            agent = agent.max_idle_connections(0);
        }
        let agent = agent.build();
        let given = |kind: Option<String>| kind.filter(|t| !t.trim().is_empty());
        let input_type = given(config.input_type);
        Ok(OpenAiEmbedder {
            endpoint: endpoint(&config.base_url),
            // Texts stored with another input_type lie in another space.
            model_id: match &input_type {
                Some(kind) => format!("openai:{}#{kind}", config.model),
                None => format!("openai:{}", config.model),
            },
            model: config.model,
            api_key,
            batch_size: config.batch_size,
            input_type,
            query_input_type: given(config.query_input_type),
            dim: AtomicUsize::new(config.dim.unwrap_or(0)),
            agent,
        })
    }

    /// The URL requests are posted to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Returns the dimension, asking the server with a one-word request if
    /// it is neither configured nor learned yet.
    pub fn discover_dim(&self) -> Result<usize, EmbedError> {
        match self.dim.load(Ordering::Relaxed) {
            0 => Ok(self.embed(&["dimension probe"])?[0].len()),
            d => Ok(d),
        }
    }

    fn request(
        &self,
        texts: &[&str],
        input_type: Option<&str>,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let transport = |reason: String| EmbedError::Transport {
            url: self.endpoint.clone(),
            reason,
        };
        let mut req = self.agent.post(&self.endpoint);
        if let Some(key) = &self.api_key {
            req = req.set("Authorization", &format!("Bearer {key}"));
        }
        let body = Request {
            model: &self.model,
            input: texts,
            input_type,
        };
        let response = match req.send_json(&body) {
            Ok(r) => r,
            Err(ureq::Error::Status(status, r)) => {
                let text = r.into_string().unwrap_or_default();
                return Err(EmbedError::Api {
                    status,
                    message: error_message(&text),
                });
            }
            Err(e) => return Err(transport(e.to_string())),
        };
        let parsed: Response = response
            .into_json()
            .map_err(|e| transport(format!("unexpected response body: {e}")))?;
        if parsed.data.len() != texts.len() {
            return Err(EmbedError::Shape {
                expected: format!("{} texts", texts.len()),
                got: format!("{} embeddings", parsed.data.len()),
            });
        }
        // Servers may answer out of order; `index` says which input each is.
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for (pos, item) in parsed.data.into_iter().enumerate() {
            let i = item.index.unwrap_or(pos);
            match out.get_mut(i) {
                Some(slot @ None) => *slot = Some(item.embedding),
                _ => {
                    return Err(transport(format!(
                        "response has a missing or repeated index {i}"
                    )))
                }
            }
        }
        let mut vectors: Vec<Vec<f32>> = out.into_iter().map(|v| v.unwrap_or_default()).collect();
        for v in &mut vectors {
            self.check_dim(v.len())?;
            l2_normalize(v);
        }
        Ok(vectors)
    }

    fn check_dim(&self, got: usize) -> Result<(), EmbedError> {
        if got == 0 {
            return Err(EmbedError::Shape {
                expected: "a non-empty embedding".into(),
                got: "an empty one".into(),
            });
        }
        match self
            .dim
            .compare_exchange(0, got, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => Ok(()),
            Err(known) if known == got => Ok(()),
            Err(known) => Err(EmbedError::Shape {
                expected: format!("{known} dimensions"),
                got: format!("{got} dimensions"),
            }),
        }
    }
}

impl Embedder for OpenAiEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    /// The configured or learned dimension; 0 before the first successful
    /// call when none was configured (see [`OpenAiEmbedder::discover_dim`]).
    fn dim(&self) -> usize {
        self.dim.load(Ordering::Relaxed)
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_in_batches(texts, self.input_type.as_deref())
    }

    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_in_batches(texts, self.query_input_type.as_deref())
    }
}

impl OpenAiEmbedder {
    fn embed_in_batches(
        &self,
        texts: &[&str],
        input_type: Option<&str>,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.batch_size) {
            out.extend(self.request(batch, input_type)?);
        }
        Ok(out)
    }
}

fn endpoint(base_url: &str) -> String {
    let base = base_url.trim().trim_end_matches('/');
    if base.ends_with("/embeddings") {
        base.to_string()
    } else if base.ends_with("/v1") {
        format!("{base}/embeddings")
    } else {
        format!("{base}/v1/embeddings")
    }
}

/// The most useful part of an error body: OpenAI's `error.message`, other
/// servers' `error`/`message`/`detail`, or the raw text.
fn error_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let from_json = parsed.as_ref().and_then(|v| {
        [
            &v["error"]["message"],
            &v["error"],
            &v["message"],
            &v["detail"],
        ]
        .into_iter()
        .find_map(|f| f.as_str().map(str::to_string))
    });
    let message = from_json.unwrap_or_else(|| body.trim().to_string());
    if message.is_empty() {
        return "(empty response body)".into();
    }
    const LIMIT: usize = 500;
    match message.char_indices().nth(LIMIT) {
        Some((cut, _)) => format!("{}...", &message[..cut]),
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_endpoint_from_base_url() {
        assert_eq!(
            endpoint("https://api.openai.com/v1"),
            "https://api.openai.com/v1/embeddings"
        );
        assert_eq!(
            endpoint("http://127.0.0.1:8080/"),
            "http://127.0.0.1:8080/v1/embeddings"
        );
        assert_eq!(endpoint("http://h/x/embeddings"), "http://h/x/embeddings");
    }

    #[test]
    fn extracts_error_messages() {
        assert_eq!(
            error_message(r#"{"error":{"message":"bad key","type":"auth"}}"#),
            "bad key"
        );
        assert_eq!(
            error_message(r#"{"error":"model not loaded"}"#),
            "model not loaded"
        );
        assert_eq!(error_message(r#"{"detail":"nope"}"#), "nope");
        assert_eq!(error_message("plain text\n"), "plain text");
        assert_eq!(error_message(""), "(empty response body)");
        assert!(error_message(&"x".repeat(2000)).len() < 600);
    }

    #[test]
    fn missing_key_is_a_config_error() {
        let err = OpenAiEmbedder::new(OpenAiConfig {
            api_key_env: Some("HINDSIGHT_TEST_SURELY_UNSET_KEY_VAR".into()),
            ..OpenAiConfig::default()
        })
        .err()
        .unwrap();
        assert!(err
            .to_string()
            .contains("HINDSIGHT_TEST_SURELY_UNSET_KEY_VAR"));
    }
}
