//! The HTTP/JSON API: each route reads a `hindsight.v1` message as JSON, calls the same service as
//! the gRPC method of the same name (so rights, limits and validation are shared), and answers the
//! reply as JSON. docs/HTTP-API.md has the overview; `/openapi.json` the document generated here.
//! Each tag of that document has its own module, so a route's description sits beside its handler.

mod banks;
mod error;
mod extract;
mod learning;
mod memories;
mod node;
mod openapi;
mod review;

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::routing::get;
use axum::{Json, Router};
use hindsight_node::Node;
use serde_json::Value;
use tonic::{Response, Status};

pub use error::{ErrorBody, HttpError};
use openapi::DocumentedRouter;

use crate::{BankApi, MemoryApi, NodeApi, MAX_MESSAGE_BYTES};

/// The three services the routes call.
#[derive(Clone)]
struct Services {
    memory: MemoryApi,
    bank: BankApi,
    node: NodeApi,
}

type Answer<T> = Result<Json<T>, HttpError>;

fn answer<T>(reply: Result<Response<T>, Status>) -> Answer<T> {
    Ok(Json(reply?.into_inner()))
}

/// The `/v1` routes and `/openapi.json`.
pub fn router(node: Node) -> Router {
    let (routes, document) = documented_routes().finish(env!("CARGO_PKG_VERSION"));
    let document = Arc::new(document);
    let services = Services {
        memory: MemoryApi::new(node.clone()),
        bank: BankApi::new(node.clone()),
        node: NodeApi::new(node),
    };
    routes
        .layer(DefaultBodyLimit::max(MAX_MESSAGE_BYTES))
        .layer(axum::middleware::from_fn(count_request))
        .with_state(services)
        .route(
            "/openapi.json",
            get(move || {
                let document = document.clone();
                async move { Json((*document).clone()) }
            }),
        )
}

/// Request count and latency per route and status, for `/metrics`.
async fn count_request(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let route = request
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".to_string());
    let method = request.method().to_string();
    let started = std::time::Instant::now();
    let response = next.run(request).await;
    let status = response.status().as_u16().to_string();
    let labels = [("method", method), ("route", route), ("status", status)];
    metrics::counter!("hindsight_http_requests_total", &labels).increment(1);
    metrics::histogram!("hindsight_http_request_duration_seconds", &labels)
        .record(started.elapsed().as_secs_f64());
    response
}

/// Answers for paths and methods no route serves, in the same JSON shape as every other error.
pub(crate) async fn no_route(method: axum::http::Method, uri: axum::http::Uri) -> HttpError {
    HttpError::new(
        axum::http::StatusCode::NOT_FOUND,
        "not_found",
        format!("no route for {method} {}", uri.path()),
    )
}

pub(crate) async fn method_not_allowed(
    method: axum::http::Method,
    uri: axum::http::Uri,
) -> HttpError {
    HttpError::new(
        axum::http::StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("{} does not take {method}", uri.path()),
    )
}

/// The OpenAPI document alone, as `/openapi.json` serves it.
pub fn openapi_document() -> Value {
    documented_routes().finish(env!("CARGO_PKG_VERSION")).1
}

fn documented_routes() -> DocumentedRouter<Services> {
    let routes = DocumentedRouter::new();
    let routes = memories::routes(routes);
    let routes = review::routes(routes);
    let routes = learning::routes(routes);
    let routes = banks::routes(routes);
    node::routes(routes)
}

/// Takes a field from the path; a body naming another value is refused rather than silently
/// overridden.
fn from_path(field: &str, path: &str, body: &mut String) -> Result<(), HttpError> {
    if body.is_empty() || body == path {
        *body = path.to_string();
        Ok(())
    } else {
        Err(HttpError::invalid(format!(
            "the body's {field} {body:?} differs from the path's {path:?}"
        )))
    }
}
