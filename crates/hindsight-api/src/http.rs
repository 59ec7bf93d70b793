//! The plain HTTP/1 side of the node: probes, metrics, the JSON API and the web console.

use std::sync::OnceLock;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use hindsight_node::Node;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

/// Routes served on the HTTP address. Further routes can be merged into the returned router.
pub fn router(node: Node) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/ready", get(ready))
        .route("/metrics", get(metrics))
        .merge(crate::console::router())
        .with_state(node.clone())
        .merge(crate::rest::router(node))
        .fallback(crate::rest::no_route)
        .method_not_allowed_fallback(crate::rest::method_not_allowed)
}

/// Liveness: the process answers, whatever the node's state.
async fn health() -> &'static str {
    "ok"
}

/// Readiness: 503 until the node serves, so orchestrators hold traffic back while it starts.
async fn ready(State(node): State<Node>) -> (StatusCode, &'static str) {
    if node.is_ready() {
        (StatusCode::OK, "ready")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready")
    }
}

/// The process's Prometheus recorder. Installed on first use: one per process, however many
/// servers it runs (tests run several).
fn recorder() -> Option<&'static PrometheusHandle> {
    static RECORDER: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    RECORDER
        .get_or_init(|| match PrometheusBuilder::new().install_recorder() {
            Ok(handle) => Some(handle),
            Err(e) => {
                tracing::warn!(error = %e, "metrics recorder not installed; /metrics answers 503");
                None
            }
        })
        .as_ref()
}

/// Installs the metrics recorder, so that what happens before the first scrape is counted too.
pub fn install_metrics() {
    recorder();
}

async fn metrics() -> impl IntoResponse {
    match recorder() {
        Some(handle) => {
            handle.run_upkeep();
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
                handle.render(),
            )
        }
        None => (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "another metrics recorder owns this process".to_string(),
        ),
    }
}
