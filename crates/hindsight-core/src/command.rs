use serde::{Deserialize, Serialize};

use crate::auth::ApiKey;
use crate::bank::{BankConfig, BankName};
use crate::history::HistoryEntry;
use crate::id::MemoryId;
use crate::memory::Memory;
use crate::retrieval::{FeedbackOutcome, RecallId};
use crate::review::{
    Conflict, ConflictResolution, CycleReport, DerivedMemory, MemoryChange, QuarantineCheck,
};
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
    /// One review cycle's decisions for a bank, with its report and the watermark it reached.
    Review {
        bank: BankName,
        changes: Vec<MemoryChange>,
        conflicts: Vec<Conflict>,
        report: CycleReport,
        watermark: u64,
        /// Pairs left for the next cycle; replaces the bank's previous list.
        deferred: Vec<(MemoryId, MemoryId)>,
        /// Rules distilled in this cycle.
        created: Vec<DerivedMemory>,
        /// Archived records past their retention, deleted for good (nothing derived from them
        /// goes with them, unlike a hard forget).
        purged: Vec<MemoryId>,
    },
    /// A person's (or a stronger judge's) answer to a queued conflict.
    ResolveConflict {
        bank: BankName,
        id: u64,
        resolution: ConflictResolution,
        changes: Vec<MemoryChange>,
    },
    // New variants go last: log entries are bincode, which numbers variants by position.
    /// Feedback on a memory a recall returned: its confidence moves by `delta` (within 0..=1);
    /// `wrong` and `harmful` make it news for the next review, `harmful` quarantines it.
    Feedback {
        id: MemoryId,
        recall: RecallId,
        outcome: FeedbackOutcome,
        delta: f32,
        at: Timestamp,
        principal: String,
    },
    /// A new API key (its secret's hash only).
    CreateApiKey {
        key: ApiKey,
    },
    /// The key stops working from `at` on; the record stays, for the audit trail.
    RevokeApiKey {
        id: String,
        at: Timestamp,
    },
    /// Records exported from a bank, put back as they were (history included). With `config` the
    /// bank is created and must not exist; without, the records join a bank an earlier import
    /// created. An id already present refuses the whole command.
    ImportBank {
        bank: BankName,
        config: Option<BankConfig>,
        memories: Vec<Memory>,
        history: Vec<HistoryEntry>,
        conflicts: Vec<Conflict>,
    },
    /// A model's second look at quarantined memories of `bank` (the review's LLM check): a
    /// confirmed one stays quarantined, a released one becomes active; either way its history
    /// records the judge and the reason. A memory no longer quarantined, or already checked, is
    /// left as it is.
    QuarantineChecked {
        bank: BankName,
        checks: Vec<QuarantineCheck>,
        at: Timestamp,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccessHit {
    pub id: MemoryId,
    pub count: u64,
    pub at: Timestamp,
    /// The caller asked for archived memories and got this one: it comes back to the live set.
    pub restore: bool,
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
    Reviewed {
        changed: Vec<MemoryId>,
        conflicts: Vec<u64>,
        cycle: u64,
        created: Vec<MemoryId>,
        purged: Vec<MemoryId>,
    },
    ConflictResolved {
        changed: Vec<MemoryId>,
    },
    ApiKeyCreated,
    ApiKeyRevoked,
    FeedbackApplied {
        confidence_before: f32,
        confidence_after: f32,
    },
    /// Nothing changed; the reason is for the caller.
    Rejected {
        reason: String,
        not_found: bool,
    },
    Imported {
        memories: usize,
        conflicts: usize,
    },
    QuarantineChecked {
        confirmed: Vec<MemoryId>,
        released: Vec<MemoryId>,
    },
}
