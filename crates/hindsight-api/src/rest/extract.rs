//! Request extractors whose refusals are JSON [`HttpError`]s, not axum's plain-text rejections.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use serde::de::DeserializeOwned;
use tonic::metadata::MetadataValue;

use super::error::HttpError;
use crate::access::AUTHORIZATION;

/// A JSON body. An empty body reads as the message's defaults, so `{}` may be left out.
pub struct JsonBody<T>(pub T);

impl<S, T> FromRequest<S> for JsonBody<T>
where
    S: Send + Sync,
    T: DeserializeOwned + Default,
{
    type Rejection = HttpError;

    async fn from_request(request: Request, state: &S) -> Result<Self, HttpError> {
        let json_type = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(|v| {
                let v = v.trim().to_ascii_lowercase();
                v == "application/json" || v.ends_with("+json")
            });
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| {
                if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    HttpError::new(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "payload_too_large",
                        format!(
                            "the request body is over {} bytes",
                            crate::MAX_MESSAGE_BYTES
                        ),
                    )
                } else {
                    HttpError::invalid(format!(
                        "reading the request body: {}",
                        rejection.body_text()
                    ))
                }
            })?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(JsonBody(T::default()));
        }
        if json_type == Some(false) {
            return Err(HttpError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "the request body must be JSON (content-type: application/json)",
            ));
        }
        serde_json::from_slice(&bytes)
            .map(JsonBody)
            .map_err(|e| HttpError::invalid(format!("request body: {e}")))
    }
}

/// Query parameters.
pub struct QueryArgs<T>(pub T);

impl<S, T> FromRequestParts<S> for QueryArgs<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, HttpError> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(args)| QueryArgs(args))
            .map_err(|e| HttpError::invalid(format!("query string: {}", e.body_text())))
    }
}

/// Path parameters, percent-decoded (a bank name's `/` arrives as `%2F`).
pub struct PathArgs<T>(pub T);

impl<S, T> FromRequestParts<S> for PathArgs<T>
where
    S: Send + Sync,
    T: DeserializeOwned + Send,
{
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, HttpError> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(args)| PathArgs(args))
            .map_err(|e| HttpError::invalid(format!("path: {}", e.body_text())))
    }
}

/// The caller's credentials, handed to the service layer the way a gRPC client sends them.
pub struct Caller {
    authorization: Option<MetadataValue<tonic::metadata::Ascii>>,
}

impl Caller {
    /// `message` as a service-layer request from this caller.
    pub fn request<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        if let Some(value) = &self.authorization {
            request.metadata_mut().insert(AUTHORIZATION, value.clone());
        }
        request
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, HttpError> {
        let authorization = match parts.headers.get(header::AUTHORIZATION) {
            None => None,
            Some(value) => Some(MetadataValue::try_from(value.as_bytes()).map_err(|_| {
                HttpError::new(
                    StatusCode::UNAUTHORIZED,
                    "unauthenticated",
                    "the authorization header is not printable ASCII",
                )
            })?),
        };
        Ok(Caller { authorization })
    }
}
