//! TLS for both ports from one set of PEM files: tonic's acceptor for gRPC, a rustls acceptor in
//! front of the HTTP router, and optionally client certificates (mutual TLS) on both.

use std::path::Path;
use std::sync::Arc;

use axum::Router;
use hindsight_node::config::TlsSection;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;
use tonic::transport::{Certificate, Identity, ServerTlsConfig};

use crate::error::ApiError;

/// The server side of TLS, read once at start.
#[derive(Clone)]
pub struct ServerTls {
    grpc: ServerTlsConfig,
    http: Arc<rustls::ServerConfig>,
    mutual: bool,
}

impl ServerTls {
    /// Reads the files a `[tls]` section names; `None` when TLS is off.
    pub fn from_section(section: &TlsSection) -> Result<Option<ServerTls>, ApiError> {
        if !section.enabled() {
            return Ok(None);
        }
        let cert_pem = read(&section.cert_file, "tls.cert_file")?;
        let key_pem = read(&section.key_file, "tls.key_file")?;
        let client_ca_pem = match section.client_ca_file.as_str() {
            "" => None,
            path => Some(read(path, "tls.client_ca_file")?),
        };
        Self::from_pem(&cert_pem, &key_pem, client_ca_pem.as_deref()).map(Some)
    }

    pub fn from_pem(
        cert_pem: &[u8],
        key_pem: &[u8],
        client_ca_pem: Option<&[u8]>,
    ) -> Result<ServerTls, ApiError> {
        let bad = |what: &str, e: &dyn std::fmt::Display| ApiError::Tls(format!("{what}: {e}"));
        let chain = CertificateDer::pem_slice_iter(cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad("the certificate file", &e))?;
        if chain.is_empty() {
            return Err(ApiError::Tls(
                "the certificate file holds no certificate".into(),
            ));
        }
        let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| bad("the key file", &e))?;
        // tonic builds its server configuration from the process's default provider, and with
        // more than one compiled in (ractor_cluster's TLS brings aws-lc-rs) rustls will not pick
        // one itself. A provider installed earlier stays.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| bad("protocol versions", &e))?;
        let mut grpc = ServerTlsConfig::new().identity(Identity::from_pem(cert_pem, key_pem));
        let builder = match client_ca_pem {
            Some(ca_pem) => {
                let mut roots = rustls::RootCertStore::empty();
                for ca in CertificateDer::pem_slice_iter(ca_pem) {
                    let ca = ca.map_err(|e| bad("the client CA file", &e))?;
                    roots.add(ca).map_err(|e| bad("the client CA file", &e))?;
                }
                if roots.is_empty() {
                    return Err(ApiError::Tls(
                        "the client CA file holds no certificate".into(),
                    ));
                }
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    Arc::new(roots),
                    provider,
                )
                .build()
                .map_err(|e| bad("client verification", &e))?;
                grpc = grpc.client_ca_root(Certificate::from_pem(ca_pem));
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        let mut http = builder
            .with_single_cert(chain, key)
            .map_err(|e| bad("the certificate and key", &e))?;
        // The HTTP side speaks HTTP/1.1 only (probes, JSON, console, MCP).
        http.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(ServerTls {
            grpc,
            http: Arc::new(http),
            mutual: client_ca_pem.is_some(),
        })
    }

    pub(crate) fn grpc(&self) -> ServerTlsConfig {
        self.grpc.clone()
    }

    pub fn mutual(&self) -> bool {
        self.mutual
    }
}

fn read(path: &str, key: &str) -> Result<Vec<u8>, ApiError> {
    std::fs::read(Path::new(path)).map_err(|e| ApiError::Tls(format!("{key} {path:?}: {e}")))
}

/// Serves `router` over TLS on `listener` until `stop` turns true. A client that fails the
/// handshake (no certificate under mutual TLS, plaintext, a wrong name) costs one log line.
pub(crate) async fn serve_https(
    listener: TcpListener,
    router: Router,
    tls: &ServerTls,
    mut stop: watch::Receiver<bool>,
) -> Result<(), ApiError> {
    let acceptor = TlsAcceptor::from(tls.http.clone());
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: back off rather than spin.
                    tracing::warn!(error = %e, "HTTPS accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = stopped(&mut stop) => break,
        };
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let service = TowerToHyperService::new(router.clone());
        let mut stop = stop.clone();
        connections.spawn(async move {
            let stream = match acceptor.accept(tcp).await {
                Ok(stream) => stream,
                Err(e) => {
                    tracing::debug!(%peer, error = %e, "TLS handshake refused");
                    return;
                }
            };
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                _ = stopped(&mut stop) => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        });
        while connections.try_join_next().is_some() {}
    }
    // Requests in flight finish; idle connections close.
    while connections.join_next().await.is_some() {}
    Ok(())
}

async fn stopped(stop: &mut watch::Receiver<bool>) {
    // An error means the sender is gone, which also means stop.
    let _ = stop.wait_for(|stop| *stop).await;
}
