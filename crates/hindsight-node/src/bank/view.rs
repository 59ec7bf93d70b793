use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use hindsight_core::{BankConfig, BankName, Memory, MemoryId};
use hindsight_index::heap::hash_map_bytes;
use hindsight_index::{BankIndex, IndexDoc};
use parking_lot::{Mutex, RwLock};
use tokio::sync::watch;

use super::changes::Changes;

/// What a bank actor publishes for concurrent readers: the bank's records and derived indexes. The
/// actor is the only writer; searches run on any number of tasks at once.
pub struct BankView {
    pub name: BankName,
    pub index: BankIndex,
    records: RwLock<HashMap<MemoryId, Arc<Memory>>>,
    config: RwLock<BankConfig>,
    /// The sum of the records' [`Memory::quota_bytes`], kept with every put and remove so that a
    /// write checks the byte quota without walking the bank.
    held_bytes: AtomicU64,
    /// What the records hold on the heap ([`record_heap_bytes`]), kept with every put and remove
    /// so that a scrape reads it without walking the bank.
    record_bytes: AtomicU64,
    /// The last log index whose effects on this bank are visible here.
    indexed: watch::Sender<u64>,
    /// Tokens in each recalled record's content, by id and version: counting with a real BPE
    /// costs tens of microseconds a text, and the same memories are recalled again and again.
    tokens: Mutex<HashMap<MemoryId, (u64, u32)>>,
    /// The changes the user announced, kept with every put and remove under the records' lock.
    changes: Mutex<Changes>,
}

/// A record's heap bytes: its `Arc` (two counts and the record) and the buffers it owns.
fn record_heap_bytes(memory: &Memory) -> u64 {
    (16 + std::mem::size_of::<Memory>() + memory.heap_bytes()) as u64
}

fn adjust(total: &AtomicU64, before: u64, after: u64) {
    if after >= before {
        total.fetch_add(after - before, Ordering::AcqRel);
    } else {
        total.fetch_sub(before - after, Ordering::AcqRel);
    }
}

impl BankView {
    pub fn new(config: BankConfig, index: BankIndex, applied_index: u64) -> Self {
        BankView {
            name: config.name.clone(),
            index,
            records: RwLock::new(HashMap::new()),
            config: RwLock::new(config),
            held_bytes: AtomicU64::new(0),
            record_bytes: AtomicU64::new(0),
            indexed: watch::Sender::new(applied_index),
            tokens: Mutex::new(HashMap::new()),
            changes: Mutex::new(Changes::default()),
        }
    }

    pub fn config(&self) -> BankConfig {
        self.config.read().clone()
    }

    pub fn set_config(&self, config: BankConfig) {
        *self.config.write() = config;
    }

    pub fn record(&self, id: MemoryId) -> Option<Arc<Memory>> {
        self.records.read().get(&id).cloned()
    }

    pub fn len(&self) -> usize {
        self.records.read().len()
    }

    /// Content bytes the bank's records count against its byte quota.
    pub fn held_bytes(&self) -> u64 {
        self.held_bytes.load(Ordering::Acquire)
    }

    /// The changes the user announced after `after`, oldest first (see [`Changes`]).
    pub(crate) fn changes_after(&self, after: hindsight_core::Timestamp) -> Vec<MemoryId> {
        self.changes.lock().after(after)
    }

    /// What `change` replaces: the user's nearest earlier statement whatever its status, worked
    /// out by `nearest` the first time and kept until a write could move it. Call it with the
    /// records' read lock held (inside [`Self::with_records`]), so that no write slips between
    /// the search and its keeping.
    pub(crate) fn replaced_by_change(
        &self,
        change: &Memory,
        nearest: impl FnOnce() -> Option<MemoryId>,
    ) -> Option<MemoryId> {
        if let Some(known) = self.changes.lock().replaced(change.id) {
            return known;
        }
        let replaced = nearest();
        self.changes.lock().remember_replaced(change, replaced);
        replaced
    }

    /// Runs `f` with a consistent view of the records (one read lock for the whole search).
    pub fn with_records<R>(&self, f: impl FnOnce(&HashMap<MemoryId, Arc<Memory>>) -> R) -> R {
        f(&self.records.read())
    }

    /// Puts a record whose derived index entry already exists or is added by `doc`. Older versions
    /// never replace newer ones, so replays after a restart are harmless.
    pub fn put(&self, memory: Memory, doc: Option<IndexDoc>) {
        if let Some(doc) = doc {
            if let Err(e) = self.index.upsert(doc) {
                // The record stays visible to get/trace; only its search entries are missing.
                tracing::error!(bank = %self.name, id = %memory.id, error = %e, "indexing failed");
            }
        }
        let mut records = self.records.write();
        let existing = records.get(&memory.id);
        let (before, heap_before) = match existing {
            Some(existing) if existing.version > memory.version => return,
            Some(existing) => (existing.quota_bytes(), record_heap_bytes(existing)),
            None => (0, 0),
        };
        // Updated under the records' write lock, so the totals always match the records.
        adjust(&self.held_bytes, before, memory.quota_bytes());
        adjust(&self.record_bytes, heap_before, record_heap_bytes(&memory));
        self.changes.lock().put(existing.map(Arc::as_ref), &memory);
        records.insert(memory.id, Arc::new(memory));
    }

    pub fn remove(&self, id: MemoryId) {
        let mut records = self.records.write();
        if let Some(gone) = records.remove(&id) {
            adjust(&self.held_bytes, gone.quota_bytes(), 0);
            adjust(&self.record_bytes, record_heap_bytes(&gone), 0);
            self.changes.lock().remove(&gone);
        }
        drop(records);
        self.tokens.lock().remove(&id);
        self.index.remove(id.0);
    }

    /// `memory`'s content in `cl100k_base` tokens, counted once per version.
    pub fn token_count(&self, memory: &Memory) -> u32 {
        if let Some(&(version, tokens)) = self.tokens.lock().get(&memory.id) {
            if version == memory.version {
                return tokens;
            }
        }
        let tokens = hindsight_text::count_tokens(&memory.content) as u32;
        self.tokens
            .lock()
            .insert(memory.id, (memory.version, tokens));
        tokens
    }

    /// Heap bytes of the bank on this node, by part: its records, then its indexes' parts.
    pub fn heap_parts(&self) -> Vec<(&'static str, u64)> {
        let mut parts = vec![(
            "records",
            self.records_heap_bytes() + self.changes.lock().heap_bytes(),
        )];
        parts.extend(self.index.memory().parts());
        parts
    }

    /// Heap bytes of the bank's records: each record, its table entry and its cached token count.
    fn records_heap_bytes(&self) -> u64 {
        let table = hash_map_bytes(&self.records.read());
        let tokens = hash_map_bytes(&self.tokens.lock());
        self.record_bytes.load(Ordering::Acquire) + table + tokens
    }

    pub fn indexed_through(&self) -> u64 {
        *self.indexed.borrow()
    }

    pub fn mark_indexed(&self, log_index: u64) {
        self.indexed.send_if_modified(|current| {
            if log_index > *current {
                *current = log_index;
                true
            } else {
                false
            }
        });
    }

    /// Waits until effects through `log_index` are visible.
    pub async fn wait_indexed(&self, log_index: u64) {
        let mut rx = self.indexed.subscribe();
        // The sender lives as long as the view, so the wait ends either way.
        let _ = rx.wait_for(|v| *v >= log_index).await;
    }
}
