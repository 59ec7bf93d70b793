use serde::{Deserialize, Serialize};

use crate::bank::{BankConfig, BankName};
use crate::id::MemoryId;
use crate::memory::Memory;
use crate::time::Timestamp;

/// A state change, carried by one Raft log entry. Everything a replica needs to apply it
/// deterministically is inside: times, ids and the outcome of approximate searches are decided by the
/// proposer, never by apply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Command {
    CreateBank {
        config: BankConfig,
    },
    UpdateBank {
        config: BankConfig,
    },
    DeleteBank {
        name: BankName,
    },
    Write {
        items: Vec<WriteItem>,
    },
    /// Soft forget archives; hard forget deletes the record, its history and every record derived from it.
    Forget {
        id: MemoryId,
        hard: bool,
        at: Timestamp,
        reason: String,
    },
    /// Marks memories whose TTL passed by `as_of` as expired.
    Expire {
        bank: BankName,
        ids: Vec<MemoryId>,
        as_of: Timestamp,
        at: Timestamp,
    },
    RecordAccess {
        hits: Vec<AccessHit>,
    },
    /// Group commit: several client commands in one log entry, applied in order.
    Batch(Vec<Command>),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccessHit {
    pub id: MemoryId,
    pub count: u64,
    pub at: Timestamp,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum WriteItem {
    Create {
        memory: Box<Memory>,
    },
    /// The proposer found `target` at `similarity` ≥ the bank's dedup threshold. If the target is no
    /// longer active when the entry applies, `memory` is created instead so the write is never lost.
    Merge {
        target: MemoryId,
        similarity: f32,
        memory: Box<Memory>,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum WriteResult {
    Created { id: MemoryId },
    MergedInto { id: MemoryId, target: MemoryId },
    Rejected { id: MemoryId, reason: String },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum CommandOutcome {
    BankCreated,
    BankUpdated,
    BankDeleted {
        memories_removed: usize,
    },
    Written(Vec<WriteResult>),
    Forgotten {
        ids: Vec<MemoryId>,
    },
    Expired {
        ids: Vec<MemoryId>,
    },
    AccessRecorded,
    Batch(Vec<CommandOutcome>),
    /// Nothing changed; the reason is for the caller.
    Rejected {
        reason: String,
        not_found: bool,
    },
}
