//! The plain HTTP/1 side of the node: probes now; metrics and the JSON API attach to this router.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use hindsight_node::Node;

/// Routes served on the HTTP address. Further routes can be merged into the returned router.
pub fn router(node: Node) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/ready", get(ready))
        .merge(crate::console::router())
        .with_state(node)
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
