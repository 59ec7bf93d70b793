//! How request parsing and service-layer errors reach gRPC clients.

use hindsight_core::ValidationError;
use hindsight_node::NodeError;
use tonic::Status;

// Clients read these names too; `from_node` below sets the headers.
pub use hindsight_client::status::{
    code_name, LEADER_ADDRESS_HEADER, NOT_TAKEN_HEADER, RETRY_AFTER_MS_HEADER,
};

pub(crate) fn from_node(e: NodeError) -> Status {
    match e {
        NodeError::Invalid(v) => invalid(v),
        NodeError::NotFound(m) => Status::not_found(m),
        NodeError::AlreadyExists(m) => Status::already_exists(m),
        NodeError::FailedPrecondition(m) => Status::failed_precondition(m),
        NodeError::Unavailable(m) => Status::unavailable(m),
        NodeError::NotTaken(m) => {
            let mut status = Status::unavailable(m);
            status
                .metadata_mut()
                .insert(NOT_TAKEN_HEADER, tonic::metadata::MetadataValue::from(1u64));
            status
        }
        ref e @ NodeError::NotLeader {
            ref leader_address, ..
        } => {
            let mut status = Status::unavailable(e.to_string());
            if let Ok(value) = tonic::metadata::MetadataValue::try_from(leader_address.as_str()) {
                status.metadata_mut().insert(LEADER_ADDRESS_HEADER, value);
            }
            status
        }
        NodeError::Unauthenticated(m) => Status::unauthenticated(m),
        NodeError::PermissionDenied(m) => Status::permission_denied(m),
        NodeError::ResourceExhausted {
            reason,
            retry_after,
        } => {
            let mut status = Status::resource_exhausted(reason);
            if let Some(wait) = retry_after {
                let millis = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX).max(1);
                status.metadata_mut().insert(
                    RETRY_AFTER_MS_HEADER,
                    tonic::metadata::MetadataValue::from(millis),
                );
            }
            status
        }
        NodeError::Corrupted(m) => Status::data_loss(m),
        e @ (NodeError::Config(_) | NodeError::Internal(_)) => {
            // The client sees the message; the log keeps it for whoever runs the node.
            tracing::error!(error = %e, "request failed");
            Status::internal(e.to_string())
        }
    }
}

pub(crate) fn invalid(e: ValidationError) -> Status {
    Status::invalid_argument(e.to_string())
}

/// Reads a wire value into its domain type; anything malformed is the caller's INVALID_ARGUMENT.
pub(crate) fn parse<T, W>(wire: W) -> Result<T, Status>
where
    T: TryFrom<W, Error = ValidationError>,
{
    T::try_from(wire).map_err(invalid)
}
