use std::time::Duration;

use hindsight_core::ValidationError;
use thiserror::Error;

/// Errors of the node's service layer. Each maps to one gRPC status at the API edge.
#[derive(Debug, Error)]
pub enum NodeError {
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    AlreadyExists(String),
    /// The request is valid but the state does not allow it now.
    #[error("{0}")]
    FailedPrecondition(String),
    /// The request carries no valid credentials.
    #[error("{0}")]
    Unauthenticated(String),
    /// The caller is known but lacks the right.
    #[error("{0}")]
    PermissionDenied(String),
    /// A rate limit or quota was reached; the caller may retry later, and after `retry_after`
    /// when the limit knows when it will let the request through (a rate limit's bucket, a
    /// lockout), which the API edge passes on as metadata and as HTTP's `Retry-After`.
    #[error("{reason}")]
    ResourceExhausted {
        reason: String,
        retry_after: Option<Duration>,
    },
    /// A stored record failed its integrity check and is withheld.
    #[error("{0}")]
    Corrupted(String),
    /// Not serving right now (starting, shutting down, no leader); the caller may retry.
    #[error("{0}")]
    Unavailable(String),
    /// Not serving right now, and nothing of the request was proposed or carried out: another
    /// node that holds the bank may be sent the same request without applying it twice.
    #[error("{0}")]
    NotTaken(String),
    #[error("configuration error: {0}")]
    Config(String),
    #[error("internal error: {0}")]
    Internal(String),
}

impl NodeError {
    pub fn internal(e: impl std::fmt::Display) -> Self {
        NodeError::Internal(e.to_string())
    }

    /// A limit was reached and waiting alone does not lift it at a known time (a quota, a node
    /// that sheds load).
    pub fn exhausted(reason: impl Into<String>) -> Self {
        NodeError::ResourceExhausted {
            reason: reason.into(),
            retry_after: None,
        }
    }

    /// A limit was reached that lets the same request through after `retry_after`.
    pub fn exhausted_for(reason: impl Into<String>, retry_after: Duration) -> Self {
        NodeError::ResourceExhausted {
            reason: reason.into(),
            retry_after: Some(retry_after),
        }
    }

    /// The error for a command the state machine refused when it applied.
    pub fn refused(reason: String, not_found: bool) -> Self {
        if not_found {
            NodeError::NotFound(reason)
        } else {
            NodeError::FailedPrecondition(reason)
        }
    }
}
