use std::time::Duration;

/// Everything that can go wrong talking to a chat endpoint.
///
/// Answers that arrive but do not pass the pair judge's schema are not errors: those items come
/// back as [`Deferred`](crate::Deferred) with the reason.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChatError {
    /// No complete answer arrived within the configured timeout, on every attempt.
    #[error(
        "the chat server at {url} did not answer within {} s ({attempts} attempt(s)); \
         the model may be overloaded or the timeout too short",
        timeout.as_secs_f64()
    )]
    Timeout {
        url: String,
        timeout: Duration,
        attempts: u32,
    },
    /// The server kept answering HTTP 429 Too Many Requests.
    #[error(
        "the chat server at {url} is rate limiting requests (HTTP 429 on {attempts} attempt(s){})",
        retry_hint(*retry_after)
    )]
    RateLimited {
        url: String,
        retry_after: Option<Duration>,
        attempts: u32,
    },
    /// The server answered with an error status; `body` is the most useful part of its message.
    #[error("the chat server returned HTTP {status}: {body}")]
    Http { status: u16, body: String },
    /// The server answered 200 but not with a chat completion.
    #[error("the chat server's answer is not a usable chat completion: {reason}")]
    Malformed { reason: String },
    /// The server could not be reached, or the connection broke.
    #[error("could not talk to the chat server at {url}: {reason}")]
    Transport { url: String, reason: String },
    /// The client was configured in a way that cannot work.
    #[error("chat client configuration: {0}")]
    Config(String),
    /// A judge call was given a batch it cannot send.
    #[error("invalid judge batch: {0}")]
    InvalidBatch(String),
}

impl ChatError {
    /// Whether the same request may succeed if sent again after a pause.
    pub fn is_transient(&self) -> bool {
        match self {
            ChatError::Timeout { .. } | ChatError::RateLimited { .. } => true,
            ChatError::Transport { .. } => true,
            ChatError::Http { status, .. } => *status >= 500,
            ChatError::Malformed { .. } | ChatError::Config(_) | ChatError::InvalidBatch(_) => {
                false
            }
        }
    }

    /// Records how many attempts were made before giving up.
    pub(crate) fn after_attempts(mut self, n: u32) -> Self {
        if let ChatError::Timeout { attempts, .. } | ChatError::RateLimited { attempts, .. } =
            &mut self
        {
            *attempts = n;
        }
        self
    }
}

fn retry_hint(retry_after: Option<Duration>) -> String {
    match retry_after {
        Some(d) => format!("; it asked to wait {} s", d.as_secs_f64()),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_read_well() {
        let e = ChatError::RateLimited {
            url: "http://h/v1/chat/completions".into(),
            retry_after: Some(Duration::from_secs(2)),
            attempts: 4,
        };
        assert_eq!(
            e.to_string(),
            "the chat server at http://h/v1/chat/completions is rate limiting requests \
             (HTTP 429 on 4 attempt(s); it asked to wait 2 s)"
        );
        let e = ChatError::Timeout {
            url: "u".into(),
            timeout: Duration::from_millis(1500),
            attempts: 1,
        };
        assert_eq!(
            e.to_string(),
            "the chat server at u did not answer within 1.5 s (1 attempt(s)); \
             the model may be overloaded or the timeout too short"
        );
        assert!(ChatError::Http {
            status: 503,
            body: String::new()
        }
        .is_transient());
        assert!(!ChatError::Http {
            status: 401,
            body: String::new()
        }
        .is_transient());
    }
}
