//! Blocking client for OpenAI-compatible `/chat/completions` endpoints.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::backoff::{backoff_delay, retry_after_delay};
use crate::usage::{count_prompt_tokens, count_tokens};
use crate::{ChatCompletion, ChatConfig, ChatError, ChatMessage, ChatRequest, TokenUsage};

/// Sends chat completion requests, retrying what is worth retrying.
///
/// Retried, with exponential backoff: timeouts, connection failures, HTTP 5xx and 429 (waiting
/// for `Retry-After` when the server gives it, up to `max_backoff`). Other 4xx answers are
/// returned at once: sending the same request again cannot fix them. The one exception is a
/// 400/422 to a request carrying `response_format`, which is sent once more without it, since
/// many compatible servers do not know that field.
///
/// The client is `Send + Sync`; share one per endpoint.
pub struct ChatClient {
    config: ChatConfig,
    endpoint: String,
    api_key: Option<String>,
    agent: ureq::Agent,
    /// Cleared once the server has refused `response_format`, so later requests skip the
    /// attempt that is bound to fail.
    json_mode: AtomicBool,
}

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    messages: &'a [ChatMessage],
    temperature: f32,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat>,
}

#[derive(Serialize)]
struct ResponseFormat {
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Deserialize)]
struct WireResponse {
    #[serde(default)]
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WireChoice {
    #[serde(default)]
    message: Option<WireMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

impl ChatClient {
    /// Creates the client; reads the API key now so a missing key is reported at start-up
    /// rather than on the first review cycle.
    pub fn new(config: ChatConfig) -> Result<Self, ChatError> {
        if config.model.trim().is_empty() {
            return Err(ChatError::Config(
                "the chat client needs a model name".into(),
            ));
        }
        if config.base_url.trim().is_empty() {
            return Err(ChatError::Config("the chat client needs a base_url".into()));
        }
        if config.timeout.is_zero() {
            return Err(ChatError::Config("timeout must be longer than zero".into()));
        }
        if config.max_output_tokens == 0 {
            return Err(ChatError::Config(
                "max_output_tokens must be at least 1".into(),
            ));
        }
        if !config.temperature.is_finite() || config.temperature < 0.0 {
            return Err(ChatError::Config(format!(
                "temperature {} must be a number of at least 0",
                config.temperature
            )));
        }
        // An empty variable name means a server that needs no key (a local llama.cpp, vLLM…).
        let api_key = match &config.api_key_env {
            None => None,
            Some(var) if var.trim().is_empty() => None,
            Some(var) => match std::env::var(var) {
                Ok(key) if !key.trim().is_empty() => Some(key.trim().to_string()),
                _ => {
                    return Err(ChatError::Config(format!(
                        "environment variable {var} (the chat API key) is not set"
                    )))
                }
            },
        };
        let agent = ureq::AgentBuilder::new().timeout(config.timeout).build();
        Ok(ChatClient {
            endpoint: endpoint(&config.base_url),
            api_key,
            agent,
            json_mode: AtomicBool::new(true),
            config,
        })
    }

    pub fn config(&self) -> &ChatConfig {
        &self.config
    }

    /// The URL requests are posted to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    pub fn model(&self) -> &str {
        &self.config.model
    }

    /// False once the server has refused `response_format`.
    pub fn json_mode(&self) -> bool {
        self.json_mode.load(Ordering::Relaxed)
    }

    /// Asks for one completion.
    pub fn complete(&self, request: &ChatRequest) -> Result<ChatCompletion, ChatError> {
        let json_mode = request.json_object && self.json_mode();
        match self.send_with_retries(request, json_mode) {
            Err(ChatError::Http { status, body }) if json_mode && matches!(status, 400 | 422) => {
                tracing::warn!(
                    endpoint = %self.endpoint,
                    status,
                    %body,
                    "chat server refused the request with response_format; asking again without it"
                );
                let completion = self.send_with_retries(request, false)?;
                self.json_mode.store(false, Ordering::Relaxed);
                Ok(completion)
            }
            other => other,
        }
    }

    fn send_with_retries(
        &self,
        request: &ChatRequest,
        json_mode: bool,
    ) -> Result<ChatCompletion, ChatError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let error = match self.send_once(request, json_mode) {
                Ok(completion) => return Ok(completion),
                Err(e) => e,
            };
            if !error.is_transient() || attempt > self.config.max_retries {
                return Err(error.after_attempts(attempt));
            }
            let wait = match &error {
                ChatError::RateLimited {
                    retry_after: Some(asked),
                    ..
                } => retry_after_delay(*asked, self.config.max_backoff),
                _ => backoff_delay(
                    self.config.initial_backoff,
                    self.config.max_backoff,
                    attempt,
                ),
            };
            tracing::warn!(
                endpoint = %self.endpoint,
                attempt,
                wait_ms = wait.as_millis() as u64,
                error = %error,
                "chat request failed; retrying"
            );
            std::thread::sleep(wait);
        }
    }

    fn send_once(
        &self,
        request: &ChatRequest,
        json_mode: bool,
    ) -> Result<ChatCompletion, ChatError> {
        let body = WireRequest {
            model: &self.config.model,
            messages: &request.messages,
            temperature: request.temperature.unwrap_or(self.config.temperature),
            max_tokens: self.config.max_output_tokens,
            response_format: json_mode.then_some(ResponseFormat {
                kind: "json_object",
            }),
        };
        let mut http = self.agent.post(&self.endpoint);
        if let Some(key) = &self.api_key {
            http = http.set("Authorization", &format!("Bearer {key}"));
        }
        let response = match http.send_json(&body) {
            Ok(response) => response,
            Err(ureq::Error::Status(429, response)) => {
                let retry_after = response.header("Retry-After").and_then(parse_retry_after);
                // Read the body so the connection can be reused.
                let _ = response.into_string();
                return Err(ChatError::RateLimited {
                    url: self.endpoint.clone(),
                    retry_after,
                    attempts: 1,
                });
            }
            Err(ureq::Error::Status(status, response)) => {
                let text = response.into_string().unwrap_or_default();
                return Err(ChatError::Http {
                    status,
                    body: error_message(&text),
                });
            }
            Err(ureq::Error::Transport(transport)) => return Err(self.transport_error(&transport)),
        };
        let text = response
            .into_string()
            .map_err(|e| self.io_error(&e, "reading the answer"))?;
        let parsed: WireResponse =
            serde_json::from_str(&text).map_err(|e| ChatError::Malformed {
                reason: format!(
                    "the body is not chat completion JSON ({e}); it starts with {:?}",
                    excerpt(&text, 200)
                ),
            })?;
        let Some(choice) = parsed.choices.into_iter().next() else {
            return Err(ChatError::Malformed {
                reason: "the completion has no choices".into(),
            });
        };
        let Some(content) = choice.message.and_then(|m| m.content) else {
            return Err(ChatError::Malformed {
                reason: format!(
                    "the first choice has no message content (finish_reason: {})",
                    choice.finish_reason.as_deref().unwrap_or("none")
                ),
            });
        };
        let usage = match parsed.usage {
            Some(WireUsage {
                prompt_tokens: Some(prompt_tokens),
                completion_tokens: Some(completion_tokens),
            }) => TokenUsage {
                prompt_tokens,
                completion_tokens,
                estimated: false,
            },
            _ => TokenUsage {
                prompt_tokens: count_prompt_tokens(&request.messages),
                completion_tokens: count_tokens(&content),
                estimated: true,
            },
        };
        tracing::debug!(
            endpoint = %self.endpoint,
            prompt_tokens = usage.prompt_tokens,
            completion_tokens = usage.completion_tokens,
            "chat completion received"
        );
        Ok(ChatCompletion {
            content,
            finish_reason: choice.finish_reason,
            usage,
            json_mode,
        })
    }

    fn transport_error(&self, transport: &ureq::Transport) -> ChatError {
        use ureq::ErrorKind;
        let io_source =
            std::error::Error::source(transport).and_then(|s| s.downcast_ref::<io::Error>());
        if let Some(e) = io_source {
            if is_timeout(e) {
                return self.timeout();
            }
        }
        match transport.kind() {
            ErrorKind::InvalidUrl
            | ErrorKind::UnknownScheme
            | ErrorKind::InsecureRequestHttpsOnly
            | ErrorKind::InvalidProxyUrl => {
                ChatError::Config(format!("cannot send to {}: {transport}", self.endpoint))
            }
            _ => ChatError::Transport {
                url: self.endpoint.clone(),
                reason: transport.to_string(),
            },
        }
    }

    fn io_error(&self, e: &io::Error, doing: &str) -> ChatError {
        if is_timeout(e) {
            return self.timeout();
        }
        ChatError::Transport {
            url: self.endpoint.clone(),
            reason: format!("{doing}: {e}"),
        }
    }

    fn timeout(&self) -> ChatError {
        ChatError::Timeout {
            url: self.endpoint.clone(),
            timeout: self.config.timeout,
            attempts: 1,
        }
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
    )
}

fn endpoint(base_url: &str) -> String {
    let base = base_url.trim().trim_end_matches('/');
    if base.ends_with("/chat/completions") {
        base.to_string()
    } else {
        format!("{base}/chat/completions")
    }
}

/// `Retry-After` in its delay-seconds form. The HTTP-date form is rare from API servers and
/// falls back to ordinary backoff.
fn parse_retry_after(value: &str) -> Option<Duration> {
    let secs: f64 = value.trim().parse().ok()?;
    Duration::try_from_secs_f64(secs).ok()
}

/// The most useful part of an error body: OpenAI's `error.message`, other servers'
/// `error`/`message`/`detail`, or the raw text.
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
    excerpt(&message, 500)
}

fn excerpt(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_endpoint_from_base_url() {
        assert_eq!(
            endpoint("https://api.openai.com/v1"),
            "https://api.openai.com/v1/chat/completions"
        );
        assert_eq!(
            endpoint("http://127.0.0.1:8080/v1/"),
            "http://127.0.0.1:8080/v1/chat/completions"
        );
        assert_eq!(
            endpoint("http://h/x/chat/completions"),
            "http://h/x/chat/completions"
        );
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
    fn parses_retry_after_seconds() {
        assert_eq!(parse_retry_after(" 2 "), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }

    #[test]
    fn rejects_unusable_config() {
        let bad = |config: ChatConfig| ChatClient::new(config).err().unwrap().to_string();
        let local = ChatConfig {
            api_key_env: None,
            ..ChatConfig::default()
        };
        assert!(bad(ChatConfig {
            model: " ".into(),
            ..local.clone()
        })
        .contains("model"));
        assert!(bad(ChatConfig {
            timeout: Duration::ZERO,
            ..local.clone()
        })
        .contains("timeout"));
        assert!(bad(ChatConfig {
            api_key_env: Some("HINDSIGHT_TEST_SURELY_UNSET_CHAT_KEY".into()),
            ..local
        })
        .contains("HINDSIGHT_TEST_SURELY_UNSET_CHAT_KEY"));
    }
}
