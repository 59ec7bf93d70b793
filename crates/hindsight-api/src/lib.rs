//! The network face of a Hindsight node: the gRPC services (`hindsight.v1` plus the standard health
//! and reflection services), the HTTP probes, and a client for them.

mod access;
mod bank_service;
mod client;
mod client_error;
mod console;
mod convert;
mod error;
mod gateway;
mod grpc_metrics;
pub mod http;
mod memory_service;
mod node_service;
mod recall_across;
pub mod rest;
mod server;
mod server_status;
pub mod status;
mod tls;

/// Types generated from `proto/hindsight/v1`.
pub mod pb {
    tonic::include_proto!("hindsight.v1");

    /// The encoded descriptors of every `hindsight.v1` file, as served by gRPC reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/hindsight_descriptor.bin"));
}

pub use bank_service::BankApi;
pub use client::{
    ApiKeyHeader, AuthedChannel, ClientTls, HindsightClient, DEFAULT_CONNECT_TIMEOUT,
};
pub use client_error::ClientError;
pub use error::ApiError;
pub use memory_service::MemoryApi;
pub use node_service::NodeApi;
pub use server::{
    bind_listeners, serve, serve_with_listeners, serve_with_options, serve_with_routes,
    ServeOptions, MAX_MESSAGE_BYTES,
};
pub use server_status::ServerStatus;
pub use tls::ServerTls;
