//! A real node on a temporary data directory behind the real gRPC and HTTP servers on loopback,
//! with a client of it: the harness the API's and MCP's integration tests share, so that what they
//! start is the server a deployment runs. Used only as a dev-dependency.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use hindsight_api::ApiError;
use hindsight_client::{pb, AuthedChannel, HindsightClient};
use hindsight_core::BankName;
use hindsight_node::{EmbeddingProvider, Node, NodeConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::Code;

/// One node and its servers; [`Harness::stop`] drains them and shuts the node down.
pub struct Harness {
    pub node: Node,
    pub client: HindsightClient,
    pub grpc: SocketAddr,
    pub http: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<Result<(), ApiError>>>,
    _dir: tempfile::TempDir,
}

impl Harness {
    pub async fn start() -> Harness {
        Self::start_with(|_| {}).await
    }

    /// A node whose configuration `adjust` changes last.
    pub async fn start_with(adjust: impl FnOnce(&mut NodeConfig)) -> Harness {
        Self::start_with_routes(adjust, |_, _| Router::new()).await
    }

    /// As [`Harness::start_with`], with the router `routes` builds (from the node and the HTTP
    /// address) merged into the HTTP server, as an edge such as MCP mounts itself.
    pub async fn start_with_routes(
        adjust: impl FnOnce(&mut NodeConfig),
        routes: impl FnOnce(&Node, SocketAddr) -> Router,
    ) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let mut config = NodeConfig::default();
        config.node.data_dir = dir.path().join("data");
        // No model to load, and no review running on its own while a test counts what it did.
        config.embedding.provider = EmbeddingProvider::Hashing;
        config.review.interval_secs = 0;
        config.review.on_likely_conflict = false;
        adjust(&mut config);
        let node = Node::start(config).await.expect("node starts");
        let grpc_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let http_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let grpc = grpc_listener.local_addr().unwrap();
        let http = http_listener.local_addr().unwrap();
        let extra_routes = routes(&node, http);
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(hindsight_api::serve_with_routes(
            node.clone(),
            grpc_listener,
            http_listener,
            extra_routes,
            async {
                let _ = stopped.await;
            },
        ));
        let client = HindsightClient::connect(&grpc.to_string())
            .await
            .expect("client connects");
        Harness {
            node,
            client,
            grpc,
            http,
            stop: Some(stop),
            server: Some(server),
            _dir: dir,
        }
    }

    /// A node with auth on whose admin key is `admin_key`, read from `key_env`: a variable of the
    /// calling test's own, since other tests run alongside in this process.
    pub async fn start_secured(
        key_env: &str,
        admin_key: &str,
        adjust: impl FnOnce(&mut NodeConfig),
    ) -> Harness {
        std::env::set_var(key_env, admin_key);
        Self::start_with(|c| {
            c.auth.enabled = true;
            c.auth.admin_key_env = key_env.into();
            adjust(c);
        })
        .await
    }

    /// Stops the servers, which must drain in time and stop cleanly, then the node.
    pub async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        let served = tokio::time::timeout(Duration::from_secs(10), self.server.take().unwrap())
            .await
            .expect("servers drain in time")
            .unwrap();
        served.expect("servers stop cleanly");
        self.node.shutdown().await;
    }

    pub fn memory(&self) -> pb::memory_service_client::MemoryServiceClient<AuthedChannel> {
        self.client.memory_client()
    }

    pub fn banks(&self) -> pb::bank_service_client::BankServiceClient<AuthedChannel> {
        self.client.bank_client()
    }
}

pub fn bank(name: &str) -> BankName {
    name.parse().unwrap()
}

/// The number of memories stored in `name`, with a bank that was never created counting as empty.
pub async fn stored(h: &Harness, name: &str) -> u64 {
    match h.client.get_bank(bank(name)).await {
        Ok(info) => info.memory_count,
        Err(e) if e.code() == Some(Code::NotFound) => 0,
        Err(e) => panic!("get_bank failed: {e}"),
    }
}

/// A minimal HTTP/1.1 GET; returns the status code and the body.
pub async fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    http_send(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
    )
    .await
}

/// A minimal HTTP/1.1 POST of a JSON body; returns the status code and the body.
pub async fn http_post_json(addr: SocketAddr, path: &str, body: &str) -> (u16, String) {
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    http_send(addr, &request).await
}

/// Sends one whole HTTP/1.1 request as written (it should ask `Connection: close`); returns the
/// status code and the body.
pub async fn http_send(addr: SocketAddr, request: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default();
    (status, body)
}
