//! What the service layer answers beyond the records themselves: a traced record, a review's report,
//! a bank with its size, a settings patch, a node's status, what feedback did. Plain data, here so
//! that a client can speak them without linking the engine that produces them.

use serde::{Deserialize, Serialize};

use crate::bank::{BankConfig, ScoringWeights};
use crate::history::HistoryEntry;
use crate::id::MemoryId;
use crate::memory::Memory;
use crate::review::CycleReport;
use crate::strategy::Strategies;
use crate::time::Timestamp;

/// A record with everything needed to explain it: its history and the records it links to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    pub memory: Memory,
    /// Oldest first.
    pub history: Vec<HistoryEntry>,
    /// Records this one links to (what superseded it, what it was derived from) that still exist.
    pub related: Vec<Memory>,
    /// The record's signature check: verified (with the key id), unsigned, or FAILED and why.
    pub integrity: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReviewReport {
    pub bank: String,
    pub as_of: Timestamp,
    /// Memories the review looked at.
    pub considered: usize,
    pub expired: Vec<MemoryId>,
    /// Memories the cycle's decisions changed.
    pub updated: Vec<MemoryId>,
    /// Conflict-queue entries the cycle opened.
    pub conflicts_opened: Vec<u64>,
    /// Rules the cycle distilled from repeated episodes.
    pub created: Vec<MemoryId>,
    /// Archived memories past their retention, deleted for good.
    pub purged: Vec<MemoryId>,
    /// Changed memories left for the next cycles because this one took its maximum.
    pub backlog: u64,
    pub cycle: CycleReport,
    /// Wall-clock microseconds of the cycle's steps on the node that ran it, in order: what a slow
    /// cycle spent its time on. Local to that node; not carried over the API.
    #[serde(default)]
    pub phases: Vec<(String, u64)>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BankInfo {
    pub config: BankConfig,
    /// Records in the bank, whatever their status.
    pub memory_count: u64,
}

/// Changes to a bank's settings; `None` leaves a field as it is.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BankPatch {
    pub description: Option<String>,
    pub min_confidence: Option<f32>,
    pub dedup_threshold: Option<f32>,
    pub working_ttl_secs: Option<u64>,
    pub collapse_threshold: Option<f32>,
    pub weights: Option<ScoringWeights>,
    pub max_memories: Option<u64>,
    /// Replaces the bank's strategies as a whole.
    pub strategies: Option<Strategies>,
    pub require_corroboration: Option<bool>,
    pub max_bytes: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeStatus {
    pub node_id: u64,
    pub leader_id: Option<u64>,
    pub term: u64,
    pub last_log_index: u64,
    pub applied_index: u64,
    pub banks_loaded: usize,
    pub embedding_model: String,
    pub store_bytes_on_disk: u64,
}

/// What feedback did to a memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FeedbackReport {
    /// The memory after the feedback.
    pub memory: Memory,
    pub confidence_before: f32,
    pub confidence_after: f32,
    /// False when the same feedback on this recall and memory came before: nothing changed.
    pub applied: bool,
}
