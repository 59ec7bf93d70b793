use std::fmt;
use std::time::Duration;

use openraft::error::{CheckIsLeaderError, ClientWriteError, Fatal, ForwardToLeader, RaftError};
use openraft::{AnyError, BasicNode, ErrorSubject, ErrorVerb, StorageError, StorageIOError};

/// Why a store operation failed. Cloneable because one failed group-commit entry fails every caller
/// whose command rode in it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StoreError {
    #[error("storage I/O failed while {context}: {message}")]
    Storage { context: String, message: String },

    #[error("could not encode or decode {what}: {message}")]
    Codec { what: String, message: String },

    #[error("{}", NotLeaderMessage { leader_id: *leader_id, leader_addr: leader_addr.as_deref() })]
    NotLeader {
        leader_id: Option<u64>,
        leader_addr: Option<String>,
    },

    #[error("the leader could not reach a quorum: {0}")]
    NoQuorum(String),

    /// This node leads but has not heard from a majority for a while, so it did not propose the
    /// change: nothing of it is in any log, and it may be sent to another node.
    #[error("{0}")]
    NotProposed(String),

    #[error("raft stopped after a fatal error: {0}")]
    RaftFatal(String),

    #[error("the store is shutting down")]
    ShuttingDown,

    #[error("timed out after {} ms waiting for {what}", after.as_millis())]
    Timeout { what: String, after: Duration },

    #[error("invalid store configuration: {0}")]
    Config(String),

    /// A store file failed its checks and what is left cannot stand in for it; the files were
    /// moved aside, not changed.
    #[error("the store cannot recover from corrupt files: {0}")]
    Unrecoverable(String),

    #[error("internal store error: {0}")]
    Internal(String),
}

impl StoreError {
    pub(crate) fn storage(context: impl Into<String>, error: impl fmt::Display) -> Self {
        StoreError::Storage {
            context: context.into(),
            message: error.to_string(),
        }
    }

    pub(crate) fn codec(what: impl Into<String>, error: impl fmt::Display) -> Self {
        StoreError::Codec {
            what: what.into(),
            message: error.to_string(),
        }
    }

    /// True when retrying on another node (or later) may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            StoreError::NotLeader { .. }
                | StoreError::NoQuorum(_)
                | StoreError::NotProposed(_)
                | StoreError::Timeout { .. }
        )
    }

    /// True when the change surely was not proposed, so that sending it to another node cannot
    /// apply it twice.
    pub fn surely_not_proposed(&self) -> bool {
        matches!(
            self,
            StoreError::NotLeader { .. } | StoreError::NotProposed(_)
        )
    }

    /// openraft's form of the error, for the storage traits; openraft stops the node on it.
    pub(crate) fn into_raft(
        self,
        subject: ErrorSubject<u64>,
        verb: ErrorVerb,
    ) -> StorageError<u64> {
        StorageError::IO {
            source: StorageIOError::new(subject, verb, AnyError::new(&self)),
        }
    }

    fn forward(forward: ForwardToLeader<u64, BasicNode>) -> Self {
        StoreError::NotLeader {
            leader_id: forward.leader_id,
            leader_addr: forward.leader_node.map(|n| n.addr),
        }
    }
}

struct NotLeaderMessage<'a> {
    leader_id: Option<u64>,
    leader_addr: Option<&'a str>,
}

impl fmt::Display for NotLeaderMessage<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("this node is not the leader")?;
        match (self.leader_id, self.leader_addr) {
            (Some(id), Some(addr)) if !addr.is_empty() => {
                write!(f, "; the leader is node {id} at {addr}")
            }
            (Some(id), _) => write!(f, "; the leader is node {id}"),
            (None, _) => f.write_str("; no leader is known yet"),
        }
    }
}

impl From<Fatal<u64>> for StoreError {
    fn from(fatal: Fatal<u64>) -> Self {
        match fatal {
            Fatal::Stopped => StoreError::ShuttingDown,
            Fatal::Panicked => StoreError::RaftFatal("the raft core panicked".into()),
            Fatal::StorageError(e) => StoreError::RaftFatal(e.to_string()),
        }
    }
}

impl From<RaftError<u64, ClientWriteError<u64, BasicNode>>> for StoreError {
    fn from(error: RaftError<u64, ClientWriteError<u64, BasicNode>>) -> Self {
        match error {
            RaftError::Fatal(fatal) => fatal.into(),
            RaftError::APIError(ClientWriteError::ForwardToLeader(f)) => StoreError::forward(f),
            RaftError::APIError(ClientWriteError::ChangeMembershipError(e)) => {
                StoreError::Internal(format!("membership change refused: {e}"))
            }
        }
    }
}

impl From<RaftError<u64, CheckIsLeaderError<u64, BasicNode>>> for StoreError {
    fn from(error: RaftError<u64, CheckIsLeaderError<u64, BasicNode>>) -> Self {
        match error {
            RaftError::Fatal(fatal) => fatal.into(),
            RaftError::APIError(CheckIsLeaderError::ForwardToLeader(f)) => StoreError::forward(f),
            RaftError::APIError(CheckIsLeaderError::QuorumNotEnough(e)) => {
                StoreError::NoQuorum(e.to_string())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_leader_names_the_leader_when_known() {
        let known = StoreError::NotLeader {
            leader_id: Some(3),
            leader_addr: Some("10.0.0.3:7400".into()),
        };
        assert_eq!(
            known.to_string(),
            "this node is not the leader; the leader is node 3 at 10.0.0.3:7400"
        );
        let unknown = StoreError::NotLeader {
            leader_id: None,
            leader_addr: None,
        };
        assert_eq!(
            unknown.to_string(),
            "this node is not the leader; no leader is known yet"
        );
        assert!(known.is_retryable());
    }

    #[test]
    fn stopped_raft_reads_as_shutting_down() {
        let error: StoreError = Fatal::<u64>::Stopped.into();
        assert_eq!(error, StoreError::ShuttingDown);
        let timeout = StoreError::Timeout {
            what: "node 1 to become leader".into(),
            after: Duration::from_millis(1500),
        };
        assert_eq!(
            timeout.to_string(),
            "timed out after 1500 ms waiting for node 1 to become leader"
        );
    }
}
