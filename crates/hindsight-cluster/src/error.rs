use hindsight_store::StoreError;

/// Why a cluster operation failed; mapped to a gRPC status at the edge.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("{0}")]
    InvalidArgument(String),

    #[error("{0}")]
    PermissionDenied(String),

    /// Not the leader; `leader` says where it is when known.
    #[error("{message}")]
    NotLeader { message: String },

    #[error("{0}")]
    Unavailable(String),

    #[error("{0}")]
    Internal(String),
}

impl From<ClusterError> for tonic::Status {
    fn from(error: ClusterError) -> Self {
        let message = error.to_string();
        match error {
            ClusterError::InvalidArgument(_) => tonic::Status::invalid_argument(message),
            ClusterError::PermissionDenied(_) => tonic::Status::permission_denied(message),
            ClusterError::NotLeader { .. } => {
                let mut status = tonic::Status::failed_precondition(message);
                status
                    .metadata_mut()
                    .insert(crate::peers::NOT_LEADER_HEADER, "1".parse().expect("ascii"));
                status
            }
            ClusterError::Unavailable(_) => tonic::Status::unavailable(message),
            ClusterError::Internal(_) => tonic::Status::internal(message),
        }
    }
}

impl From<StoreError> for ClusterError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::NotLeader { .. } => ClusterError::NotLeader {
                message: error.to_string(),
            },
            StoreError::Config(m) => ClusterError::InvalidArgument(m),
            e @ (StoreError::NoQuorum(_)
            | StoreError::NotProposed(_)
            | StoreError::Timeout { .. }
            | StoreError::ShuttingDown) => ClusterError::Unavailable(e.to_string()),
            e => ClusterError::Internal(e.to_string()),
        }
    }
}
