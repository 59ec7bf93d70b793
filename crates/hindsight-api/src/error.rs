use std::net::SocketAddr;

use thiserror::Error;

/// Why the API server could not start or stopped with a failure.
#[derive(Debug, Error)]
pub enum ApiError {
    #[error("cannot listen for {protocol} on {addr}: {source}")]
    Bind {
        protocol: &'static str,
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot read a listener's local address: {0}")]
    LocalAddr(std::io::Error),
    #[error("gRPC server failed: {0}")]
    Grpc(#[from] tonic::transport::Error),
    #[error("HTTP server failed: {0}")]
    Http(std::io::Error),
    #[error("TLS: {0}")]
    Tls(String),
    #[error("cannot set up gRPC reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
}
