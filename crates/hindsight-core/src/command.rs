use serde::{Deserialize, Serialize};

use crate::auth::ApiKey;
use crate::bank::{BankConfig, BankName};
use crate::history::HistoryEntry;
use crate::id::MemoryId;
use crate::memory::Memory;
use crate::placement::PlacementTable;
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
    /// A write with the embedding of each item's content, as the proposer computed it: a replica
    /// applying it indexes these vectors instead of embedding the contents again. Applies exactly
    /// as [`Command::Write`] does (which stays for entries written before this variant existed,
    /// and reads as a write whose replicas embed).
    WriteEmbedded {
        items: Vec<WriteItem>,
        vectors: ItemVectors,
    },
    /// Which nodes replicate each partition, decided by the metadata group's leader. Applies only
    /// over an older version, so a leader that lost its place cannot roll back a newer table.
    SetPlacement {
        table: PlacementTable,
    },
    /// An admin's release of a quarantined memory: it becomes active, and its history names the
    /// admin and the reason. Refused for a memory that is not held in quarantine.
    ReleaseQuarantine {
        id: MemoryId,
        at: Timestamp,
        principal: String,
        reason: String,
    },
    /// The guard holds a stored memory after the fact (the first half of an instruction split
    /// over two writes). A memory gone, deleted or held already is left as it is.
    Quarantine {
        id: MemoryId,
        at: Timestamp,
        reason: String,
    },
    /// Part of a review cycle's changes to memories and purges, proposed before the cycle's
    /// [`Command::Review`], which carries the rest with its conflicts, rules, report and watermark.
    /// Entries apply one after another, so a cycle of a thousand changes in one entry held up the
    /// writes behind it for as long as it took; in parts, writes go in between. It moves no
    /// watermark and counts no cycle: a cycle cut short after some parts is planned again from
    /// the same watermark, and changes already made are then no change.
    ReviewPart {
        bank: BankName,
        changes: Vec<MemoryChange>,
        purged: Vec<MemoryId>,
        /// When the cycle started: the changed records' `updated_at`, as in the closing command.
        at: Timestamp,
    },
}

/// The vectors of a write's items, carried in its log entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ItemVectors {
    /// The embedding model that made them (`Embedder::model_id`, e.g. `use-multilingual-v3@…`).
    /// A replica whose model differs embeds the contents itself instead of mixing two spaces.
    pub model: String,
    /// One per item, in item order; an empty vector means that item carries none.
    pub vectors: Vec<Vec<f32>>,
}

impl ItemVectors {
    /// The vector of item `i`, if it carries one.
    pub fn get(&self, i: usize) -> Option<&[f32]> {
        self.vectors
            .get(i)
            .filter(|v| !v.is_empty())
            .map(Vec::as_slice)
    }
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
    PlacementSet {
        version: u64,
    },
    Released {
        memory: Box<Memory>,
    },
    Quarantined {
        id: MemoryId,
    },
    /// The memories a [`Command::ReviewPart`] changed and purged.
    ReviewPartApplied {
        changed: Vec<MemoryId>,
        purged: Vec<MemoryId>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::tests::sample;

    /// `bincode::serialize` of a `Command::Batch` holding one `Command::Write` (a create and a
    /// merge), made by the release before writes carried their vectors.
    const PLAIN_WRITE: &str = "07000000010000000000000003000000020000000000000000000000010100000000000000000000000000000900000000000000746573742f62616e6b0200000001000000001b000000000000004465706c6f79732068617070656e206f6e2054687572736461797300000000000000000000000000000000000040420f000000000040420f000000000040420f000000000000006666663f0000003f0000000000010000000000000040420f000000000000000000016666663f01000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010000000000000040420f0000000000000000000000000001000000ff0000000000000000000000000000000000703f020100000000000000000000000000000900000000000000746573742f62616e6b0200000001000000001a000000000000005468652075736572207072656665727320677265656e2074656100000000000000000000000000000000000040420f000000000040420f000000000040420f000000000000006666663f0000003f0000000000010000000000000040420f000000000000000000016666663f0100000000000000000000000000000000000000000000000000000000010000000000000006000000000000006472696e6b73000000000000000000010000000000000040420f00000000000000000000000000";

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn items() -> Vec<WriteItem> {
        let mut merged = sample(0x0102, "The user prefers green tea");
        merged.tags = vec!["drinks".into()];
        vec![
            WriteItem::Create {
                memory: Box::new(sample(0x0101, "Deploys happen on Thursdays")),
            },
            WriteItem::Merge {
                target: MemoryId(0x00ff),
                similarity: 0.9375,
                memory: Box::new(merged),
            },
        ]
    }

    #[test]
    fn a_write_logged_before_vectors_were_carried_still_reads() {
        let command: Command = bincode::deserialize(&unhex(PLAIN_WRITE)).unwrap();
        assert_eq!(
            command,
            Command::Batch(vec![Command::Write { items: items() }])
        );
        // And this release writes a plain write exactly as that one did.
        assert_eq!(bincode::serialize(&command).unwrap(), unhex(PLAIN_WRITE));
    }

    #[test]
    fn an_embedded_write_is_a_new_last_variant_holding_the_plain_items_then_the_vectors() {
        let vectors = ItemVectors {
            model: "use-multilingual-v3@0.2.1".into(),
            vectors: vec![vec![0.25; 512], vec![]],
        };
        let command = Command::WriteEmbedded {
            items: items(),
            vectors: vectors.clone(),
        };
        let bytes = bincode::serialize(&command).unwrap();
        assert_eq!(bincode::deserialize::<Command>(&bytes).unwrap(), command);
        // bincode numbers variants by position: the fifteen before it keep their numbers.
        assert_eq!(&bytes[..4], &15u32.to_le_bytes());
        let plain = bincode::serialize(&Command::Write { items: items() }).unwrap();
        assert_eq!(&plain[..4], &3u32.to_le_bytes());
        assert_eq!(
            &bytes[4..plain.len()],
            &plain[4..],
            "items encoded as in a plain write"
        );
        assert_eq!(
            &bytes[plain.len()..],
            &bincode::serialize(&vectors).unwrap()[..]
        );
        // Compact: 4 bytes a dimension, 8 a vector and the model id once per entry.
        let model = 8 + vectors.model.len();
        assert_eq!(bytes.len() - plain.len(), model + 8 + (8 + 512 * 4) + 8);
        assert_eq!(vectors.get(0).map(<[f32]>::len), Some(512));
        assert_eq!(vectors.get(1), None, "an empty vector is none");
        assert_eq!(vectors.get(2), None);
    }
}
