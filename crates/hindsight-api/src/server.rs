//! Runs the gRPC and HTTP servers side by side until told to stop.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use hindsight_node::Node;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tonic::server::NamedService;
use tonic::transport::server::TcpIncoming;
use tonic::transport::Server;
use tonic_health::server::HealthReporter;
use tonic_health::ServingStatus;

use crate::bank_service::BankApi;
use crate::error::ApiError;
use crate::memory_service::MemoryApi;
use crate::node_service::NodeApi;
use crate::pb::bank_service_server::BankServiceServer;
use crate::pb::memory_service_server::MemoryServiceServer;
use crate::pb::node_service_server::NodeServiceServer;
use crate::tls::ServerTls;
use crate::{http, pb};

pub use hindsight_client::MAX_MESSAGE_BYTES;

/// How often the health service re-checks the node's readiness.
const READINESS_POLL: Duration = Duration::from_millis(250);

/// How long requests in flight at shutdown get to finish before their connections are dropped.
/// A write forwarded to a leader that lost its quorum would otherwise hold the stop for as long
/// as the forward waits (30 s); its caller hears a broken connection instead, which says the same
/// thing: the outcome is unknown.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// Health-checked service names; "" is the server as a whole.
const SERVICES: &[&str] = &[
    "",
    <MemoryServiceServer<MemoryApi> as NamedService>::NAME,
    <BankServiceServer<BankApi> as NamedService>::NAME,
    <NodeServiceServer<NodeApi> as NamedService>::NAME,
];

/// Serves gRPC on `grpc_addr` and HTTP on `http_addr` until `shutdown` completes, then drains both.
/// The node itself is left running; stopping it is the caller's decision.
pub async fn serve(
    node: Node,
    grpc_addr: SocketAddr,
    http_addr: SocketAddr,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ApiError> {
    let (grpc, http) = bind_listeners(grpc_addr, http_addr).await?;
    serve_with_listeners(node, grpc, http, shutdown).await
}

/// Binds the gRPC and HTTP ports, so that a taken port is reported before a slow node start.
pub async fn bind_listeners(
    grpc_addr: SocketAddr,
    http_addr: SocketAddr,
) -> Result<(TcpListener, TcpListener), ApiError> {
    Ok((
        bind("gRPC", grpc_addr).await?,
        bind("HTTP", http_addr).await?,
    ))
}

async fn bind(protocol: &'static str, addr: SocketAddr) -> Result<TcpListener, ApiError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| ApiError::Bind {
            protocol,
            addr,
            source,
        })
}

/// Like [`serve`], on listeners the caller bound (so that it knows the ports when it asked for 0).
pub async fn serve_with_listeners(
    node: Node,
    grpc: TcpListener,
    http: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ApiError> {
    serve_with_routes(node, grpc, http, Router::new(), shutdown).await
}

/// Like [`serve_with_listeners`], with `extra_routes` merged into the HTTP router: edges built on
/// top of this crate (MCP) mount themselves here without this crate depending on them.
pub async fn serve_with_routes(
    node: Node,
    grpc: TcpListener,
    http: TcpListener,
    extra_routes: Router,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ApiError> {
    let options = ServeOptions {
        extra_routes,
        tls: None,
    };
    serve_with_options(node, grpc, http, options, shutdown).await
}

/// What the servers carry besides the node's own services.
#[derive(Default)]
pub struct ServeOptions {
    /// Merged into the HTTP router.
    pub extra_routes: Router,
    /// TLS (and perhaps mutual TLS) on both ports; `None`: plaintext.
    pub tls: Option<ServerTls>,
}

/// The most general form of [`serve`].
pub async fn serve_with_options(
    node: Node,
    grpc: TcpListener,
    http: TcpListener,
    options: ServeOptions,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ApiError> {
    let ServeOptions { extra_routes, tls } = options;
    if let Some(tls) = &tls {
        tracing::info!(mutual = tls.mutual(), "TLS on the gRPC and HTTP ports");
    }
    let grpc_addr = grpc.local_addr().map_err(ApiError::LocalAddr)?;
    let http_addr = http.local_addr().map_err(ApiError::LocalAddr)?;
    let (stop_tx, stop_rx) = watch::channel(false);
    http::install_metrics();

    let (reporter, health) = tonic_health::server::health_reporter();
    set_health(&reporter, node.is_ready()).await;
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;

    let mut grpc_builder = Server::builder();
    if let Some(tls) = &tls {
        grpc_builder = grpc_builder.tls_config(tls.grpc())?;
    }
    let grpc_server = grpc_builder
        .layer(crate::grpc_metrics::GrpcMetricsLayer)
        .add_service(health)
        .add_service(reflection)
        .add_service(
            MemoryServiceServer::new(MemoryApi::new(node.clone()))
                .max_decoding_message_size(MAX_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_MESSAGE_BYTES),
        )
        .add_service(
            BankServiceServer::new(BankApi::new(node.clone()))
                .max_decoding_message_size(MAX_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_MESSAGE_BYTES),
        )
        .add_service(
            NodeServiceServer::new(NodeApi::new(node.clone()))
                .max_decoding_message_size(MAX_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_MESSAGE_BYTES),
        )
        // Node-to-node Raft traffic shares the port; it authenticates by the cluster secret or
        // mutual TLS, not by API keys.
        .add_service(node.raft_groups().clone().into_server())
        .serve_with_incoming_shutdown(
            TcpIncoming::from(grpc).with_nodelay(Some(true)),
            stopped(stop_rx.clone()),
        );
    let router = http::router(node.clone()).merge(extra_routes);
    let http_server = async {
        match &tls {
            Some(tls) => crate::tls::serve_https(http, router, tls, stop_rx.clone()).await,
            None => axum::serve(http, router)
                .with_graceful_shutdown(stopped(stop_rx.clone()))
                .await
                .map_err(ApiError::Http),
        }
    };

    tracing::info!(grpc = %grpc_addr, http = %http_addr, "serving");
    // Either server failing stops the other, so `serve` never returns with one half still running.
    let grpc_task = async {
        let result = drained(grpc_server, stop_rx.clone(), "gRPC")
            .await
            .map_or(Ok(()), |r| r.map_err(ApiError::Grpc));
        stop_tx.send_replace(true);
        result
    };
    let http_task = async {
        let result = drained(http_server, stop_rx.clone(), "HTTP")
            .await
            .unwrap_or(Ok(()));
        stop_tx.send_replace(true);
        result
    };
    let control_task = async {
        let mut shutdown = std::pin::pin!(shutdown);
        let mut reported = node.is_ready();
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                _ = stopped(stop_rx.clone()) => break,
                _ = tokio::time::sleep(READINESS_POLL) => {}
            }
            let ready = node.is_ready();
            if ready != reported {
                set_health(&reporter, ready).await;
                reported = ready;
            }
        }
        // Report NOT_SERVING before draining, so health-checking balancers stop sending new work.
        set_health(&reporter, false).await;
        // Draining closes the port Raft traffic arrives on too: requests waiting for this node
        // to catch up would wait in vain, so they fail now and the client retries elsewhere.
        node.begin_shutdown();
        stop_tx.send_replace(true);
    };
    let (grpc_result, http_result, ()) = tokio::join!(grpc_task, http_task, control_task);
    grpc_result?;
    http_result
}

/// Runs `server` to its end, or, once a stop is asked for, for at most [`DRAIN_TIMEOUT`] more;
/// `None` when the drain was cut short.
async fn drained<T>(
    server: impl Future<Output = T>,
    stop: watch::Receiver<bool>,
    what: &'static str,
) -> Option<T> {
    let deadline = async {
        stopped(stop).await;
        tokio::time::sleep(DRAIN_TIMEOUT).await;
    };
    tokio::select! {
        result = server => Some(result),
        () = deadline => {
            tracing::warn!(
                server = what,
                after_ms = DRAIN_TIMEOUT.as_millis() as u64,
                "requests still in flight at shutdown; their connections are dropped"
            );
            None
        }
    }
}

async fn stopped(mut stop: watch::Receiver<bool>) {
    // An error means the sender is gone, which also means stop.
    let _ = stop.wait_for(|stop| *stop).await;
}

async fn set_health(reporter: &HealthReporter, ready: bool) {
    let status = if ready {
        ServingStatus::Serving
    } else {
        ServingStatus::NotServing
    };
    for service in SERVICES {
        reporter.set_service_status(service, status).await;
    }
}
