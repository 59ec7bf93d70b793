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
    /// The request must run where the group of its bank is led, and another node leads it now:
    /// the caller may send the same request to `leader_address`.
    #[error("{reason}: node {leader_id} leads, at {leader_address}")]
    NotLeader {
        reason: String,
        leader_id: u64,
        leader_address: String,
    },
    #[error("configuration error: {0}")]
    Config(String),
    /// A fault of this node or a part it relies on, with the error that caused it when there was
    /// one, so that a log of the chain shows where it came from.
    #[error("internal error: {0}")]
    Internal(#[source] BoxError),
}

/// The cause an internal error keeps: any error, or a message when there was no error value.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

impl NodeError {
    /// An internal error caused by `e`: an error value, kept as the source, or a message.
    pub fn internal(e: impl Into<BoxError>) -> Self {
        NodeError::Internal(e.into())
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
