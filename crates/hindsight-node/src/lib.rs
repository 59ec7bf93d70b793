//! A Hindsight node: the service layer (write, recall, review, banks) over the replicated store, with
//! one supervised actor per bank owning that bank's derived indexes.

pub mod access;
mod admission;
pub mod allocator;
pub mod config;
pub mod error;
pub mod types;

mod bank;
mod cluster;
pub mod conflicts;
mod embedding;
mod erasure;
pub mod guarding;
mod homes;
pub mod integrity;
pub mod judging;
pub mod learning;
pub mod link;
mod listener;
mod maintenance;
mod node;
mod partitions;
mod quarantine_review;
mod quota;
mod rate;
mod recall;
pub mod reflecting;
mod review;
mod reviewer;
mod telemetry;
mod token_window;
pub mod transfer;
mod writer;

pub use config::{EmbeddingProvider, NodeConfig};
pub use error::NodeError;
pub use learning::FeedbackReport;
pub use node::Node;
pub use partitions::Partitions;
pub use rate::RateLimitSection;
pub use telemetry::{
    describe_metrics, memory_breakdown, render_bank_metrics, resident_bytes, MemoryBreakdown,
};
pub use types::{BankInfo, BankPatch, NodeStatus, ReviewReport, Trace};
