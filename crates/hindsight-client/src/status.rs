//! What both ends of the wire agree on besides the messages: metadata names and the names of gRPC
//! codes as people read them.

/// The metadata key a client sends its key under, as `Bearer <key>`.
pub const AUTHORIZATION: &str = "authorization";

/// Set on an unavailable answer whose request was not carried out at all: a node that handed the
/// request over may send it to the next owner.
pub const NOT_TAKEN_HEADER: &str = "x-hindsight-not-taken";

/// Set on a resource-exhausted answer whose limit lets the request through after a known wait:
/// the milliseconds to wait (a rate limit's bucket, a key's lockout). The HTTP edge sends it as
/// `Retry-After`.
pub const RETRY_AFTER_MS_HEADER: &str = "x-hindsight-retry-after-ms";

/// Set on an unavailable answer to a request that must run where its bank's group is led, when
/// another node leads it: that node's gRPC address, to send the same request to.
pub const LEADER_ADDRESS_HEADER: &str = "x-hindsight-leader-address";

/// A gRPC code's name as HTTP errors and the CLI print it (`not_found`, `invalid_argument` …).
pub fn code_name(code: tonic::Code) -> &'static str {
    use tonic::Code;
    match code {
        Code::Ok => "ok",
        Code::Cancelled => "cancelled",
        Code::Unknown => "unknown",
        Code::InvalidArgument => "invalid_argument",
        Code::DeadlineExceeded => "deadline_exceeded",
        Code::NotFound => "not_found",
        Code::AlreadyExists => "already_exists",
        Code::PermissionDenied => "permission_denied",
        Code::ResourceExhausted => "resource_exhausted",
        Code::FailedPrecondition => "failed_precondition",
        Code::Aborted => "aborted",
        Code::OutOfRange => "out_of_range",
        Code::Unimplemented => "unimplemented",
        Code::Internal => "internal",
        Code::Unavailable => "unavailable",
        Code::DataLoss => "data_loss",
        Code::Unauthenticated => "unauthenticated",
    }
}
