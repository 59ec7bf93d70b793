//! A Hindsight node: the service layer (write, recall, review, banks) over the replicated store, with
//! one supervised actor per bank owning that bank's derived indexes. DESIGN.md describes the
//! folders and the direction of the dependencies between them.

pub mod access;
pub mod allocator;
mod bank;
pub mod config;
pub mod error;
mod metrics;
mod node;
mod recall;
mod review;
mod routing;
pub mod types;
mod write;

pub use bank::integrity;
pub use recall::learning;
pub use review::{conflicts, judging, reflecting};
pub use routing::routes::Peer;
pub use routing::{link, transfer};
pub use write::guarding;

pub use crate::metrics::{
    describe_metrics, memory_breakdown, render_bank_metrics, resident_bytes, MemoryBreakdown,
};
pub use access::rate::RateLimitSection;
pub use bank::partitions::Partitions;
pub use config::{EmbeddingProvider, NodeConfig};
pub use error::NodeError;
pub use learning::FeedbackReport;
pub use node::Node;
pub use types::{BankInfo, BankPatch, NodeStatus, ReviewReport, Trace};
