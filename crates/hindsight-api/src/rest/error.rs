//! How a refused or failed call reaches an HTTP client: a status that follows the gRPC code, and a
//! JSON body with the code's name and a message a person can act on.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use schemars::JsonSchema;
use serde::Serialize;
use tonic::Code;

/// The body of every 4xx and 5xx answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ErrorBody {
    /// The gRPC status name in snake case (`invalid_argument`, `not_found` …), or
    /// `payload_too_large` / `unsupported_media_type` for bodies refused before they are read.
    pub code: String,
    /// What was wrong, for a person.
    pub message: String,
}

/// An error answer, ready to be sent.
#[derive(Debug)]
pub struct HttpError {
    status: StatusCode,
    body: ErrorBody,
    /// Whole seconds after which the same request may pass, sent as `Retry-After`.
    retry_after_secs: Option<u64>,
}

impl HttpError {
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> Self {
        HttpError {
            status,
            body: ErrorBody {
                code: code.to_string(),
                message: message.into(),
            },
            retry_after_secs: None,
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        HttpError::new(StatusCode::BAD_REQUEST, "invalid_argument", message)
    }

    pub fn status(&self) -> StatusCode {
        self.status
    }

    pub fn message(&self) -> &str {
        &self.body.message
    }
}

impl From<tonic::Status> for HttpError {
    fn from(status: tonic::Status) -> Self {
        let (http, name) = http_status(status.code());
        let mut error = HttpError::new(http, name, status.message());
        error.retry_after_secs = retry_after_secs(&status);
        error
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let retry_after = self.retry_after_secs;
        let mut response = (self.status, Json(self.body)).into_response();
        if let Some(secs) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

/// The whole seconds to wait that a resource-exhausted answer carries
/// ([`crate::status::RETRY_AFTER_MS_HEADER`]), rounded up: never too early.
fn retry_after_secs(status: &tonic::Status) -> Option<u64> {
    if status.code() != Code::ResourceExhausted {
        return None;
    }
    let millis: u64 = status
        .metadata()
        .get(crate::status::RETRY_AFTER_MS_HEADER)?
        .to_str()
        .ok()?
        .parse()
        .ok()?;
    Some(millis.div_ceil(1000).max(1))
}

/// The HTTP status and name of a gRPC code (the mapping of Google's API design guide, except that
/// `failed_precondition` is a 409: the request was well formed, the state refused it).
fn http_status(code: Code) -> (StatusCode, &'static str) {
    let http = match code {
        Code::Ok => StatusCode::OK,
        Code::InvalidArgument | Code::OutOfRange => StatusCode::BAD_REQUEST,
        Code::Unauthenticated => StatusCode::UNAUTHORIZED,
        Code::PermissionDenied => StatusCode::FORBIDDEN,
        Code::NotFound => StatusCode::NOT_FOUND,
        Code::AlreadyExists | Code::FailedPrecondition | Code::Aborted => StatusCode::CONFLICT,
        Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
        Code::Unavailable | Code::Cancelled => StatusCode::SERVICE_UNAVAILABLE,
        Code::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
        Code::Unimplemented => StatusCode::NOT_IMPLEMENTED,
        Code::DataLoss | Code::Internal | Code::Unknown => StatusCode::INTERNAL_SERVER_ERROR,
    };
    (http, crate::status::code_name(code))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_mistakes_are_4xx_and_server_faults_5xx() {
        for (code, http) in [
            (Code::InvalidArgument, 400),
            (Code::Unauthenticated, 401),
            (Code::PermissionDenied, 403),
            (Code::NotFound, 404),
            (Code::AlreadyExists, 409),
            (Code::ResourceExhausted, 429),
            (Code::Unavailable, 503),
            (Code::Internal, 500),
        ] {
            let error = HttpError::from(tonic::Status::new(code, "why"));
            assert_eq!(error.status().as_u16(), http, "{code:?}");
            assert_eq!(error.body.message, "why");
        }
    }

    #[test]
    fn a_rate_limited_answer_says_when_to_come_back() {
        let limited = hindsight_node::NodeError::exhausted_for(
            "rate limit of 5 requests/s (burst 5) for key k exceeded",
            std::time::Duration::from_millis(1954),
        );
        let response = HttpError::from(crate::status::from_node(limited)).into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[header::RETRY_AFTER], "2");
        let brief =
            hindsight_node::NodeError::exhausted_for("k", std::time::Duration::from_millis(1));
        let response = HttpError::from(crate::status::from_node(brief)).into_response();
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
    }

    #[test]
    fn a_limit_that_waiting_does_not_lift_names_no_time() {
        let over = hindsight_node::NodeError::exhausted("bank over its quota of 10 memories");
        let response = HttpError::from(crate::status::from_node(over)).into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert!(response.headers().get(header::RETRY_AFTER).is_none());
    }
}
