//! The shared harness: a real node behind the real servers on loopback, its client, and the
//! helpers every topic uses to build requests and read answers.

use std::net::SocketAddr;
use std::time::Duration;

use hindsight_api::{pb, ApiError, ClientError, HindsightClient};
use hindsight_core::{BankName, MemoryId, Provenance, SourceKind, Timestamp, WriteRequest};
use hindsight_node::{EmbeddingProvider, Node, NodeConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::Code;

#[path = "../../../../hindsight-node/tests/support/http_request.rs"]
pub(crate) mod http_request;

pub(crate) struct Harness {
    pub(crate) node: Node,
    pub(crate) client: HindsightClient,
    pub(crate) grpc: SocketAddr,
    pub(crate) http: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<Result<(), ApiError>>>,
    _dir: tempfile::TempDir,
}

impl Harness {
    pub(crate) async fn start() -> Harness {
        Self::start_with(|_| {}).await
    }

    pub(crate) async fn start_with(adjust: impl FnOnce(&mut NodeConfig)) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let mut config = NodeConfig::default();
        config.node.data_dir = dir.path().join("data");
        config.embedding.provider = EmbeddingProvider::Hashing;
        config.review.interval_secs = 0;
        config.review.on_likely_conflict = false;
        adjust(&mut config);
        let node = Node::start(config).await.expect("node starts");
        let grpc_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let http_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let grpc = grpc_listener.local_addr().unwrap();
        let http = http_listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(hindsight_api::serve_with_listeners(
            node.clone(),
            grpc_listener,
            http_listener,
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
    pub(crate) async fn start_secured(
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

    pub(crate) async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        let served = tokio::time::timeout(Duration::from_secs(10), self.server.take().unwrap())
            .await
            .expect("servers drain in time")
            .unwrap();
        served.expect("servers stop cleanly");
        self.node.shutdown().await;
    }

    pub(crate) fn memory(
        &self,
    ) -> pb::memory_service_client::MemoryServiceClient<hindsight_api::AuthedChannel> {
        self.client.memory_client()
    }

    pub(crate) fn banks(
        &self,
    ) -> pb::bank_service_client::BankServiceClient<hindsight_api::AuthedChannel> {
        self.client.bank_client()
    }
}

pub(crate) fn bank(name: &str) -> BankName {
    name.parse().unwrap()
}

pub(crate) fn write_request(bank_name: &str, content: &str) -> WriteRequest {
    let mut request = WriteRequest::new(
        bank(bank_name),
        content,
        Provenance::from_source(SourceKind::User),
    );
    request.occurred_at = Some(Timestamp::parse_rfc3339("2026-03-02T09:00:00Z").unwrap());
    request
}

pub(crate) fn wire_write(bank_name: &str, content: &str) -> pb::WriteRequest {
    pb::WriteRequest {
        bank: bank_name.to_string(),
        content: content.to_string(),
        provenance: Some(pb::Provenance {
            source: "user".into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub(crate) fn wire_recall(banks: &[&str], query: &str) -> pb::RecallRequest {
    pb::RecallRequest {
        banks: banks.iter().map(|b| b.to_string()).collect(),
        query: query.to_string(),
        ..Default::default()
    }
}

pub(crate) fn code<T: std::fmt::Debug>(result: Result<T, ClientError>) -> Code {
    result
        .expect_err("the call should fail")
        .code()
        .expect("the server answered")
}

pub(crate) fn wire_code<T: std::fmt::Debug>(result: Result<T, tonic::Status>) -> (Code, String) {
    let status = result.expect_err("the call should fail");
    (status.code(), status.message().to_string())
}

/// The number of memories stored in `name`, with a bank that was never created counting as empty.
pub(crate) async fn stored(h: &Harness, name: &str) -> u64 {
    match h.client.get_bank(bank(name)).await {
        Ok(info) => info.memory_count,
        Err(e) if e.code() == Some(Code::NotFound) => 0,
        Err(e) => panic!("get_bank failed: {e}"),
    }
}

pub(crate) fn unknown_id() -> MemoryId {
    MemoryId::new(1_700_000_000_000, 42)
}

/// A minimal HTTP/1.1 GET; returns the status code and the body.
pub(crate) async fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    http_send(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
    )
    .await
}

/// A minimal HTTP/1.1 POST of a JSON body; returns the status code and the body.
pub(crate) async fn http_post_json(addr: SocketAddr, path: &str, body: &str) -> (u16, String) {
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    http_send(addr, &request).await
}

async fn http_send(addr: SocketAddr, request: &str) -> (u16, String) {
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
