//! Reaching the server: an unreachable address named with the reason, TLS, and mutual TLS.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hindsight_api::{ApiError, ClientError, ClientTls, HindsightClient, ServeOptions, ServerTls};
use hindsight_core::RecallRequest;
use hindsight_node::{EmbeddingProvider, Node, NodeConfig};
use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

use crate::support::{bank, http_get, write_request};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_is_named_with_the_reason() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let addr = format!("127.0.0.1:{port}");
    let error = HindsightClient::connect(&addr).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "cannot reach the Hindsight server at {addr}: connection refused (is `hindsight serve` running?)"
        )
    );
    assert!(matches!(
        HindsightClient::connect("no port here").await,
        Err(ClientError::InvalidAddress { .. })
    ));
}

/// A CA, a server certificate for localhost and a client certificate, all signed by the CA.
struct Pki {
    ca: String,
    server: (String, String),
    client: (String, String),
}

fn new_pki() -> Pki {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let leaf = |names: Vec<String>| {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(names)
            .unwrap()
            .signed_by(&key, &ca, &ca_key)
            .unwrap();
        (cert.pem(), key.serialize_pem())
    };
    Pki {
        ca: ca.pem(),
        server: leaf(vec!["localhost".into()]),
        client: leaf(vec!["agent-7".into()]),
    }
}

struct Secure {
    node: Node,
    grpc: SocketAddr,
    http: SocketAddr,
    stop: oneshot::Sender<()>,
    server: JoinHandle<Result<(), ApiError>>,
    _dir: tempfile::TempDir,
}

async fn start(pki: &Pki, mutual: bool) -> Secure {
    let dir = tempfile::tempdir().unwrap();
    let mut config = NodeConfig::default();
    config.node.data_dir = dir.path().join("data");
    config.embedding.provider = EmbeddingProvider::Hashing;
    config.review.interval_secs = 0;
    let node = Node::start(config).await.unwrap();
    let tls = ServerTls::from_pem(
        pki.server.0.as_bytes(),
        pki.server.1.as_bytes(),
        mutual.then_some(pki.ca.as_bytes()),
    )
    .unwrap();
    let grpc_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let http_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let grpc = grpc_listener.local_addr().unwrap();
    let http = http_listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let options = ServeOptions {
        tls: Some(tls),
        ..ServeOptions::default()
    };
    let server = tokio::spawn(hindsight_api::serve_with_options(
        node.clone(),
        grpc_listener,
        http_listener,
        options,
        async {
            let _ = stopped.await;
        },
    ));
    Secure {
        node,
        grpc,
        http,
        stop,
        server,
        _dir: dir,
    }
}

impl Secure {
    async fn stop(self) {
        let _ = self.stop.send(());
        tokio::time::timeout(Duration::from_secs(10), self.server)
            .await
            .expect("servers drain in time")
            .unwrap()
            .expect("servers stop cleanly");
        self.node.shutdown().await;
    }

    async fn client(&self, tls: Option<ClientTls>) -> Result<HindsightClient, ClientError> {
        let addr = format!("localhost:{}", self.grpc.port());
        HindsightClient::connect_with(&addr, Duration::from_secs(5), tls).await
    }
}

fn client_tls(pki: &Pki, with_identity: bool) -> ClientTls {
    ClientTls {
        ca_pem: pki.ca.clone().into_bytes(),
        identity: with_identity.then(|| {
            (
                pki.client.0.clone().into_bytes(),
                pki.client.1.clone().into_bytes(),
            )
        }),
        domain: None,
    }
}

/// GET over HTTPS with rustls, trusting `ca`; the status code, or the TLS or I/O error.
async fn https_get(
    addr: SocketAddr,
    path: &str,
    ca: &str,
    identity: Option<&(String, String)>,
) -> Result<u16, String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match identity {
        Some((cert, key)) => builder
            .with_client_auth_cert(
                CertificateDer::pem_slice_iter(cert.as_bytes())
                    .map(Result::unwrap)
                    .collect(),
                PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap(),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let name = ServerName::try_from("localhost").unwrap();
    let mut stream = connector
        .connect(name, tcp)
        .await
        .map_err(|e| e.to_string())?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut response = Vec::new();
    stream
        .read_to_end(&mut response)
        .await
        .map_err(|e| e.to_string())?;
    let response = String::from_utf8_lossy(&response);
    response
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("no HTTP answer: {response:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_ports_speak_tls_and_refuse_plaintext() {
    let pki = new_pki();
    let s = start(&pki, false).await;
    let client = s.client(Some(client_tls(&pki, false))).await.unwrap();
    let written = client
        .write(write_request(
            "tls/demo",
            "The VPN certificate renews in March",
        ))
        .await
        .unwrap();
    let recalled = client
        .recall(RecallRequest::new(
            vec![bank("tls/demo")],
            "VPN certificate",
            5,
        ))
        .await
        .unwrap();
    assert_eq!(recalled.hits[0].memory.id, written.id);

    // A plaintext client cannot talk to the TLS port.
    let plain = match s.client(None).await {
        Ok(plain) => plain.status().await.map(|_| ()),
        Err(e) => Err(e),
    };
    assert!(plain.is_err(), "a plaintext client was served");
    // Nor can a client that does not trust the server's CA.
    let stranger = new_pki();
    let untrusted = match s.client(Some(client_tls(&stranger, false))).await {
        Ok(client) => client.status().await.map(|_| ()),
        Err(e) => Err(e),
    };
    assert!(
        untrusted.is_err(),
        "a certificate from another CA was accepted"
    );

    assert_eq!(https_get(s.http, "/ready", &pki.ca, None).await, Ok(200));
    let (status, _) = http_get(s.http, "/ready").await;
    assert_eq!(status, 0, "plaintext HTTP gets no answer from the TLS port");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_admits_only_clients_with_a_certificate_from_the_ca() {
    let pki = new_pki();
    let s = start(&pki, true).await;
    let anonymous = match s.client(Some(client_tls(&pki, false))).await {
        Ok(client) => client.status().await.map(|_| ()),
        Err(e) => Err(e),
    };
    assert!(
        anonymous.is_err(),
        "a client without a certificate was served"
    );
    let known = s.client(Some(client_tls(&pki, true))).await.unwrap();
    assert!(known.status().await.unwrap().ready);

    assert!(https_get(s.http, "/ready", &pki.ca, None).await.is_err());
    assert_eq!(
        https_get(s.http, "/ready", &pki.ca, Some(&pki.client)).await,
        Ok(200)
    );
    s.stop().await;
}
