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
    /// A rate limit or quota was reached; the caller may retry later.
    #[error("{0}")]
    ResourceExhausted(String),
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

    /// The error for a command the state machine refused when it applied.
    pub fn refused(reason: String, not_found: bool) -> Self {
        if not_found {
            NodeError::NotFound(reason)
        } else {
            NodeError::FailedPrecondition(reason)
        }
    }
}
