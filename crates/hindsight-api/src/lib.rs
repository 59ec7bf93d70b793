//! The network face of a Hindsight node: the gRPC services (`hindsight.v1` plus the standard health
//! and reflection services) and the HTTP probes. The wire types and the client are
//! `hindsight-client`'s, re-exported here under their old paths.

mod access;
mod bank_service;
mod console;
mod error;
mod gateway;
mod grpc_metrics;
pub mod http;
mod memory_service;
mod node_service;
mod recall_across;
pub mod rest;
mod server;
pub mod status;
mod tls;

pub use bank_service::BankApi;
pub use error::ApiError;
pub use hindsight_client::{
    pb, ApiKeyHeader, AuthedChannel, ClientError, ClientTls, HindsightClient, ServerStatus,
    DEFAULT_CONNECT_TIMEOUT,
};
pub use memory_service::MemoryApi;
pub use node_service::NodeApi;
pub use server::{
    bind_listeners, serve, serve_with_listeners, serve_with_options, serve_with_routes,
    ServeOptions, MAX_MESSAGE_BYTES,
};
pub use tls::ServerTls;
