//! How request parsing and service-layer errors reach gRPC clients.

use hindsight_core::ValidationError;
use hindsight_node::NodeError;
use tonic::Status;

pub(crate) fn from_node(e: NodeError) -> Status {
    match e {
        NodeError::Invalid(v) => invalid(v),
        NodeError::NotFound(m) => Status::not_found(m),
        NodeError::AlreadyExists(m) => Status::already_exists(m),
        NodeError::FailedPrecondition(m) => Status::failed_precondition(m),
        NodeError::Unavailable(m) => Status::unavailable(m),
        NodeError::Unauthenticated(m) => Status::unauthenticated(m),
        NodeError::PermissionDenied(m) => Status::permission_denied(m),
        NodeError::ResourceExhausted(m) => Status::resource_exhausted(m),
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
