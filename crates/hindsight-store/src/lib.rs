//! Hindsight's replicated store of record: an openraft 0.9 Raft group whose log and state machine
//! live in sled. Every state change is a `hindsight_core::Command` applied by the pure rules of
//! `hindsight_core::apply`; this crate supplies the I/O around them — the durable log, atomic
//! per-entry apply, snapshots, group commit and read access. See `DESIGN.md` for the key layout and
//! the durability points.

mod checked_db;
mod codec;
mod config;
mod error;
mod file_digest;
mod handle;
mod keys;
mod leader_link;
mod listener;
mod log_store;
mod majority_contact;
mod metrics;
mod move_aside;
pub mod network;
mod overlay;
mod proposer;
mod reader;
mod recent_entries;
mod recovery;
mod release;
mod response;
mod retrieval_log;
mod seal;
mod sled_gate;
mod snapshot_builder;
mod snapshot_capture;
mod snapshot_format;
mod snapshot_store;
mod state_machine;
mod type_config;

#[cfg(test)]
mod test_support;

pub use config::StoreConfig;
pub use error::StoreError;
pub use handle::{open, open_cluster, StoreHandle};
pub use leader_link::{LeaderLink, LinkFuture};
pub use listener::{ApplyListener, NoopListener};
pub use log_store::LogStore;
pub use metrics::StoreMetrics;
pub use proposer::{ProposalCounts, ProposeOutcome, Proposer};
pub use reader::StateReader;
pub use response::CommandResponse;
pub use retrieval_log::{RetrievalLog, RetrievalRetention};
pub use snapshot_builder::StateSnapshotBuilder;
pub use state_machine::StateMachineStore;
pub use type_config::TypeConfig;
