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
    /// The status is not this error's source: its text repeats the message, and printing the
    /// cause chain would show it twice.
    #[error("{} ({})", .0.message(), crate::status::code_name(.0.code()))]
    Status(tonic::Status),
    /// The server's answer does not read as the domain type it should be (a version mismatch).
    #[error("the server sent a malformed answer: {0}")]
    Malformed(#[from] ValidationError),
}

impl From<tonic::Status> for ClientError {
    fn from(status: tonic::Status) -> Self {
        ClientError::Status(status)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_reads_as_its_message_and_code_name_once() {
        let error = ClientError::from(tonic::Status::not_found(
            "conflict 3 not found in bank acme/agent-7",
        ));
        assert_eq!(
            error.to_string(),
            "conflict 3 not found in bank acme/agent-7 (not_found)"
        );
        // Callers that print the cause chain (anyhow's `{:#}`) must not get the message again.
        assert!(std::error::Error::source(&error).is_none());
    }
}
