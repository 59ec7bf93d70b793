//! Why a tool call failed, worded for the agent that made it: it reads the message and decides
//! what to do next, so each says what went wrong and, where it can, what to pass instead.

use thiserror::Error;
use tonic::Code;

#[derive(Debug, Error)]
pub enum ToolError {
    #[error("no bank given and no default bank configured: pass `bank`, e.g. \"acme/agent-7\"")]
    NoBank,
    #[error(
        "no recall_id given: pass the `recall_id` of the memory_search result the memory came \
         from (a search answers with none when the node keeps no retrieval log)"
    )]
    NoRecallId,
    #[error(
        "invalid argument: `{field}` must be an RFC 3339 timestamp such as \
         \"2026-03-04T10:00:00Z\", not {value:?}"
    )]
    NotATimestamp { field: &'static str, value: String },
    /// The node's own answer.
    #[error("{}: {}", code_name(.0.code()), .0.message())]
    Status(#[from] tonic::Status),
}

/// The gRPC code in the words an agent (and the person reading over its shoulder) understands.
fn code_name(code: Code) -> &'static str {
    match code {
        Code::InvalidArgument | Code::OutOfRange => "invalid argument",
        Code::NotFound => "not found",
        Code::AlreadyExists => "already exists",
        Code::PermissionDenied => "permission denied",
        Code::Unauthenticated => "unauthenticated (send an API key)",
        Code::FailedPrecondition => "failed precondition",
        Code::ResourceExhausted => "resource exhausted",
        Code::Unavailable => "unavailable, try again later",
        Code::DeadlineExceeded => "timed out",
        Code::Cancelled | Code::Aborted => "aborted, try again",
        Code::DataLoss => "data loss",
        Code::Ok | Code::Unknown | Code::Unimplemented | Code::Internal => "server error",
    }
}

/// Which failures are the Hindsight server's, not the agent's (worth a warning in the log).
impl ToolError {
    pub fn is_server_fault(&self) -> bool {
        matches!(
            self,
            ToolError::Status(s) if matches!(
                s.code(),
                Code::Internal | Code::Unknown | Code::DataLoss | Code::Unavailable
            )
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_errors_read_with_their_kind() {
        let e = ToolError::from(tonic::Status::not_found("memory 01J not found"));
        assert_eq!(e.to_string(), "not found: memory 01J not found");
        assert!(!e.is_server_fault());
        assert!(ToolError::from(tonic::Status::internal("disk")).is_server_fault());
    }

    #[test]
    fn a_malformed_time_names_its_field() {
        let e = ToolError::NotATimestamp {
            field: "as_of",
            value: "yesterday".into(),
        };
        assert_eq!(
            e.to_string(),
            "invalid argument: `as_of` must be an RFC 3339 timestamp such as \
             \"2026-03-04T10:00:00Z\", not \"yesterday\""
        );
        assert!(!e.is_server_fault());
    }
}
