use hindsight_core::ValidationError;
use thiserror::Error;

/// Why a client call failed.
#[derive(Debug, Error)]
pub enum ClientError {
    #[error("invalid server address {addr:?}: {reason} (expected HOST:PORT)")]
    InvalidAddress { addr: String, reason: String },
    #[error(
        "cannot reach the Hindsight server at {addr}: {reason} (is `hindsight serve` running?)"
    )]
    Unreachable { addr: String, reason: String },
    /// The server answered with an error; its message is meant for the person who sent the request.
    #[error("{}", .0.message())]
    Status(#[from] tonic::Status),
    /// The server's answer does not read as the domain type it should be (a version mismatch).
    #[error("the server sent a malformed answer: {0}")]
    Malformed(#[from] ValidationError),
}

impl ClientError {
    /// The gRPC code the server answered with, if it answered.
    pub fn code(&self) -> Option<tonic::Code> {
        match self {
            ClientError::Status(status) => Some(status.code()),
            _ => None,
        }
    }
}
