//! Settings for [`ChatClient`](crate::ChatClient).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How to reach an OpenAI-compatible chat endpoint and how hard to try.
///
/// Durations are written in seconds (fractions allowed) so configuration files stay readable:
/// `timeout = 60`, `initial_backoff = 0.5`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChatConfig {
    /// API root including its version path; requests go to `{base_url}/chat/completions`.
    /// Examples: `https://api.openai.com/v1`, `https://api.deepseek.com/v1`,
    /// `http://127.0.0.1:11434/v1` (Ollama), `http://127.0.0.1:8080/v1` (llama.cpp, vLLM).
    /// A URL that already ends in `/chat/completions` is used as is.
    /// Default: `https://api.openai.com/v1`.
    pub base_url: String,
    /// Model name sent with each request. Default: `gpt-4o-mini`.
    pub model: String,
    /// Name of the environment variable holding the API key; `None` sends no `Authorization`
    /// header (local servers). Default: `OPENAI_API_KEY`.
    pub api_key_env: Option<String>,
    /// Limit for one HTTP exchange, from connecting to the last byte of the answer.
    /// Default: 60 s.
    #[serde(with = "seconds")]
    pub timeout: Duration,
    /// Extra attempts after the first one. The client retries timeouts, connection failures,
    /// HTTP 5xx and 429; the pair judge also re-asks when an answer fails validation.
    /// Default: 3.
    pub max_retries: u32,
    /// Sampling temperature. Judging wants repeatable answers. Default: 0.0.
    pub temperature: f32,
    /// Cap on generated tokens per request (`max_tokens`). Ten verdicts with short reasons fit
    /// comfortably. Default: 1024.
    pub max_output_tokens: u32,
    /// Wait before the first retry; it doubles on each further retry. Default: 0.5 s.
    #[serde(with = "seconds")]
    pub initial_backoff: Duration,
    /// Longest wait between attempts, also the cap on a server's `Retry-After`. Default: 30 s.
    #[serde(with = "seconds")]
    pub max_backoff: Duration,
}

impl Default for ChatConfig {
    fn default() -> Self {
        ChatConfig {
            base_url: "https://api.openai.com/v1".into(),
            model: "gpt-4o-mini".into(),
            api_key_env: Some("OPENAI_API_KEY".into()),
            timeout: Duration::from_secs(60),
            max_retries: 3,
            temperature: 0.0,
            max_output_tokens: 1024,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
        }
    }
}

/// Durations as a number of seconds.
mod seconds {
    use std::time::Duration;

    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(value.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(deserializer)?;
        Duration::try_from_secs_f64(secs).map_err(|_| {
            D::Error::custom(format!(
                "{secs} is not a usable number of seconds (it must be finite and not negative)"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_read_as_seconds() {
        let config: ChatConfig =
            serde_json::from_str(r#"{"model":"m","timeout":1.5,"max_backoff":2}"#).unwrap();
        assert_eq!(config.timeout, Duration::from_millis(1500));
        assert_eq!(config.max_backoff, Duration::from_secs(2));
        assert_eq!(config.max_retries, 3, "unset fields keep their defaults");
        let back: ChatConfig =
            serde_json::from_value(serde_json::to_value(&config).unwrap()).unwrap();
        assert_eq!(back, config);
        assert!(serde_json::from_str::<ChatConfig>(r#"{"timeout":-1}"#).is_err());
    }
}
