use serde::{Deserialize, Serialize};

use crate::id::MemoryId;
use crate::time::Timestamp;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum HistoryKind {
    Created,
    /// A duplicate write was merged into this record.
    Merged,
    StatusChanged,
    Updated,
    Expired,
    Archived,
}

impl HistoryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            HistoryKind::Created => "created",
            HistoryKind::Merged => "merged",
            HistoryKind::StatusChanged => "status_changed",
            HistoryKind::Updated => "updated",
            HistoryKind::Expired => "expired",
            HistoryKind::Archived => "archived",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FieldChange {
    pub field: String,
    pub old: String,
    pub new: String,
}

impl FieldChange {
    pub fn new(field: &str, old: impl ToString, new: impl ToString) -> Self {
        FieldChange {
            field: field.to_string(),
            old: old.to_string(),
            new: new.to_string(),
        }
    }
}

/// One change to a record: what changed, who or what changed it, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryEntry {
    pub memory: MemoryId,
    /// The record's version after this change; history keys sort by it.
    pub version: u64,
    pub kind: HistoryKind,
    /// Event time the change takes effect from (a review's `as_of`, a write's `occurred_at`).
    pub effective_at: Timestamp,
    /// Wall-clock time the change was proposed.
    pub recorded_at: Timestamp,
    /// The Raft log index of the command that made the change.
    pub log_index: u64,
    /// `write`, `forget`, `review`, `api` …
    pub actor: String,
    pub reason: String,
    pub changes: Vec<FieldChange>,
}
