//! The plain HTTP/1 side of the node: probes, metrics, the JSON API and the web console.

use std::sync::OnceLock;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use hindsight_core::auth::Right;
use hindsight_node::Node;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

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

/// Buckets of every latency histogram, in seconds: sub-millisecond index searches to slow model
/// calls.
const LATENCY_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0,
];

/// A review cycle judging with a model takes far longer than a request.
const REVIEW_CYCLE_BUCKETS: &[f64] = &[
    0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
];

fn builder() -> Result<PrometheusBuilder, metrics_exporter_prometheus::BuildError> {
    PrometheusBuilder::new()
        .set_buckets(LATENCY_BUCKETS)?
        .set_buckets_for_metric(
            Matcher::Full("hindsight_review_cycle_duration_seconds".to_string()),
            REVIEW_CYCLE_BUCKETS,
        )
}

/// The process's Prometheus recorder. Installed on first use: one per process, however many
/// servers it runs (tests run several).
fn recorder() -> Option<&'static PrometheusHandle> {
    static RECORDER: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    RECORDER
        .get_or_init(|| match builder().and_then(PrometheusBuilder::install_recorder) {
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
    if recorder().is_some() {
        static DESCRIBED: OnceLock<()> = OnceLock::new();
        DESCRIBED.get_or_init(|| {
            hindsight_node::describe_metrics();
            crate::grpc_metrics::describe();
        });
    }
}

/// Whether a scrape may see the series labelled with a bank, which name every tenant's banks
/// and their sizes: always on a node without authentication (or with
/// `auth.public_bank_metrics`), otherwise only for a scrape carrying an admin key for every bank.
fn shows_bank_series(node: &Node, headers: &HeaderMap) -> bool {
    if !node.config().auth.enabled || node.config().auth.public_bank_metrics {
        return true;
    }
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().trim_start_matches("Bearer ").trim());
    token.is_some()
        && node
            .authenticate(token)
            .is_ok_and(|principal| principal.may_everywhere(Right::Admin))
}

async fn metrics(State(node): State<Node>, headers: HeaderMap) -> impl IntoResponse {
    match recorder() {
        Some(handle) => {
            let bank_series = shows_bank_series(&node, &headers);
            // The node's gauges (Raft, store, banks, indexes, disk) are read at scrape time.
            if let Err(e) = tokio::task::spawn_blocking(move || node.refresh_metrics()).await {
                tracing::warn!(error = %e, "refreshing the node's gauges failed");
            }
            handle.run_upkeep();
            let mut body = handle.render();
            // Series labelled with a bank are kept by the node, so that a deleted bank's go.
            if bank_series {
                hindsight_node::render_bank_metrics(&mut body);
            }
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
                body,
            )
        }
        None => (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "another metrics recorder owns this process".to_string(),
        ),
    }
}
