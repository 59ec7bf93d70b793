//! A client for Hindsight servers that links no engine: the `hindsight.v1` wire types, their
//! conversions to and from the domain model, and [`HindsightClient`] with its TLS and API-key
//! plumbing. A program that only talks to a server depends on this crate and on the domain crates
//! it speaks (`hindsight-core`, `hindsight-review`), not on the node with its Raft log, store,
//! indexes and embedder. The server (`hindsight-api`) builds on the same types and conversions, so
//! both ends read the wire alike.

mod client;
pub mod convert;
mod error;
mod server_status;
pub mod status;

/// Types generated from `proto/hindsight/v1`.
pub mod pb {
    tonic::include_proto!("hindsight.v1");

    /// The encoded descriptors of every `hindsight.v1` file, as served by gRPC reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/hindsight_descriptor.bin"));
}

/// Batch writes and recalls with full records exceed tonic's 4 MiB default; both ends send and
/// accept messages up to this size.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

pub use client::{
    ApiKeyHeader, AuthedChannel, ClientTls, HindsightClient, DEFAULT_CONNECT_TIMEOUT,
};
pub use error::ClientError;
pub use server_status::ServerStatus;
