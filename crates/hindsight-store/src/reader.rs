use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use hindsight_core::auth::ApiKey;
use hindsight_core::placement::PlacementTable;
use hindsight_core::{BankConfig, BankName, Conflict, HistoryEntry, Memory, MemoryId, ReviewState};
use serde::de::DeserializeOwned;
use sled::{Db, Tree};

use crate::codec::decode;
use crate::error::StoreError;
use crate::keys;

/// What the state machine shares with its readers.
pub(crate) struct SharedState {
    /// The live state tree. Readers hold the read lock for the whole of a read, so a snapshot install
    /// that swaps the tree (write lock) knows nobody still reads the old one when it drops it.
    tree: RwLock<Tree>,
    /// Last applied log index plus one; zero means nothing applied.
    applied: AtomicU64,
    /// Databases counted by `size_on_disk`.
    dbs: RwLock<Vec<Db>>,
    /// Whole-bank reads under way: the cores are shared among them.
    bank_reads: AtomicUsize,
}

impl SharedState {
    pub(crate) fn new(tree: Tree, applied: Option<u64>, db: Db) -> Arc<Self> {
        Arc::new(SharedState {
            tree: RwLock::new(tree),
            applied: AtomicU64::new(applied.map_or(0, |i| i + 1)),
            dbs: RwLock::new(vec![db]),
            bank_reads: AtomicUsize::new(0),
        })
    }

    pub(crate) fn tree(&self) -> RwLockReadGuard<'_, Tree> {
        self.tree.read().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn tree_mut(&self) -> RwLockWriteGuard<'_, Tree> {
        self.tree.write().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn set_applied(&self, index: Option<u64>) {
        self.applied
            .store(index.map_or(0, |i| i + 1), Ordering::Release);
    }

    pub(crate) fn count_size_of(&self, db: Db) {
        self.dbs.write().unwrap_or_else(|p| p.into_inner()).push(db);
    }
}

/// Read-only access to the applied state of one group, for the node's request paths and for
/// rebuilding derived indexes. Cheap to clone; clones see the same live state.
///
/// Reads see every entry whose `propose` has returned (apply commits before it answers), but they
/// do not confirm leadership: call `StoreHandle::ensure_linearizable` first for a linearizable read.
#[derive(Clone)]
pub struct StateReader {
    shared: Arc<SharedState>,
}

impl StateReader {
    pub(crate) fn new(shared: Arc<SharedState>) -> Self {
        StateReader { shared }
    }

    pub(crate) fn count_size_of(&self, db: Db) {
        self.shared.count_size_of(db);
    }

    pub fn memory(&self, id: MemoryId) -> Result<Option<Memory>, StoreError> {
        get(&self.shared.tree(), "memory", &keys::memory(id))
    }

    /// Every recorded change of a memory, oldest version first. Empty for unknown or hard-deleted
    /// memories.
    pub fn history(&self, id: MemoryId) -> Result<Vec<HistoryEntry>, StoreError> {
        let tree = self.shared.tree();
        tree.scan_prefix(keys::history_prefix(id))
            .values()
            .map(|v| {
                let bytes = v.map_err(|e| StoreError::storage("reading history", e))?;
                decode("history entry", &bytes)
            })
            .collect()
    }

    pub fn bank(&self, name: &BankName) -> Result<Option<BankConfig>, StoreError> {
        get(&self.shared.tree(), "bank", &keys::bank(name))
    }

    /// Every bank, ordered by name.
    pub fn banks(&self) -> Result<Vec<BankConfig>, StoreError> {
        let tree = self.shared.tree();
        tree.scan_prefix(keys::BANK_PREFIX)
            .values()
            .map(|v| {
                let bytes = v.map_err(|e| StoreError::storage("listing banks", e))?;
                decode("bank", &bytes)
            })
            .collect()
    }

    /// Whether this group holds any bank or memory: a cluster that formed without partitions
    /// keeps such banks in its one group.
    pub fn holds_bank_data(&self) -> bool {
        let tree = self.shared.tree();
        [keys::BANK_PREFIX, keys::MEMORY_PREFIX]
            .iter()
            .any(|prefix| tree.scan_prefix(prefix).next().is_some())
    }

    /// The bank's review progress; `None` before its first cycle.
    pub fn review_state(&self, bank: &BankName) -> Result<Option<ReviewState>, StoreError> {
        get(
            &self.shared.tree(),
            "review state",
            &keys::review_state(bank),
        )
    }

    pub fn api_key(&self, id: &str) -> Result<Option<ApiKey>, StoreError> {
        get(&self.shared.tree(), "API key", &keys::api_key(id))
    }

    /// Which nodes replicate each partition; `None` until the metadata group first decides.
    pub fn placement(&self) -> Result<Option<PlacementTable>, StoreError> {
        get(&self.shared.tree(), "placement table", keys::PLACEMENT)
    }

    /// Every API key, revoked ones included, by id.
    pub fn api_keys(&self) -> Result<Vec<ApiKey>, StoreError> {
        self.shared
            .tree()
            .scan_prefix(keys::API_KEY_PREFIX)
            .values()
            .map(|v| {
                let bytes = v.map_err(|e| StoreError::storage("listing API keys", e))?;
                decode("API key", &bytes)
            })
            .collect()
    }

    /// The bank's conflict queue, oldest first, resolved ones included.
    pub fn conflicts(&self, bank: &BankName) -> Result<Vec<Conflict>, StoreError> {
        self.shared
            .tree()
            .scan_prefix(keys::conflict_prefix(bank))
            .values()
            .map(|v| {
                let bytes = v.map_err(|e| StoreError::storage("listing conflicts", e))?;
                decode("conflict", &bytes)
            })
            .collect()
    }

    pub fn conflict(&self, bank: &BankName, id: u64) -> Result<Option<Conflict>, StoreError> {
        get(&self.shared.tree(), "conflict", &keys::conflict(bank, id))
    }

    /// Ids of every memory in a bank (any status), in id order, which is creation-time order.
    pub fn bank_memory_ids(&self, bank: &BankName) -> Result<Vec<MemoryId>, StoreError> {
        ids_after(&self.shared.tree(), bank, None, usize::MAX)
    }

    /// Every memory in a bank (any status), in id order. Loads the whole bank; use
    /// [`StateReader::bank_memories_after`] to page through a large one.
    pub fn bank_memories(&self, bank: &BankName) -> Result<Vec<Memory>, StoreError> {
        self.bank_memories_after(bank, None, usize::MAX)
    }

    /// Up to `limit` memories of a bank with ids greater than `after`, in id order.
    pub fn bank_memories_after(
        &self,
        bank: &BankName,
        after: Option<MemoryId>,
        limit: usize,
    ) -> Result<Vec<Memory>, StoreError> {
        let tree = self.shared.tree();
        let ids = ids_after(&tree, bank, after, limit)?;
        if ids.len() < PARALLEL_READ_MIN {
            return read_memories(&tree, bank, &ids);
        }
        // A bank's records lie apart in the tree (keyed by id across all banks), so reading a big
        // bank is one random lookup per record: on a cold start that is most of a bank's load.
        // Ordered chunks read side by side keep the result in id order. Banks loading together
        // (a node's restart) already keep the cores busy, so they share them instead.
        let reading = BankRead::start(&self.shared.bank_reads);
        let under_way = reading.under_way;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = (cores / under_way).clamp(1, PARALLEL_READ_THREADS);
        if threads == 1 {
            return read_memories(&tree, bank, &ids);
        }
        let chunk = ids.len().div_ceil(threads);
        let parts: Vec<Result<Vec<Memory>, StoreError>> = std::thread::scope(|scope| {
            let readers: Vec<_> = ids
                .chunks(chunk)
                .map(|part| scope.spawn(|| read_memories(&tree, bank, part)))
                .collect();
            readers
                .into_iter()
                .map(|reader| {
                    reader.join().unwrap_or_else(|_| {
                        Err(StoreError::Internal("a bank read panicked".into()))
                    })
                })
                .collect()
        });
        let mut memories = Vec::with_capacity(ids.len());
        for part in parts {
            memories.extend(part?);
        }
        Ok(memories)
    }

    /// Memories in a bank (any status), from a maintained counter.
    pub fn bank_memory_count(&self, bank: &BankName) -> Result<u64, StoreError> {
        Ok(get(
            &self.shared.tree(),
            "bank memory count",
            &keys::bank_count(bank),
        )?
        .unwrap_or(0))
    }

    /// The index of the last applied log entry; 0 before anything was applied (the first entry,
    /// the cluster's initial membership, is index 0 too).
    pub fn last_applied_index(&self) -> u64 {
        self.shared
            .applied
            .load(Ordering::Acquire)
            .saturating_sub(1)
    }

    /// Bytes the store's sled databases occupy on disk (state, and the log when opened through
    /// `open`). Unreadable sizes count as zero.
    pub fn size_on_disk(&self) -> u64 {
        let dbs = self.shared.dbs.read().unwrap_or_else(|p| p.into_inner());
        dbs.iter()
            .map(|db| {
                db.size_on_disk().unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "could not read the store's size on disk");
                    0
                })
            })
            .sum()
    }
}

fn get<T: DeserializeOwned>(tree: &Tree, what: &str, key: &[u8]) -> Result<Option<T>, StoreError> {
    match tree
        .get(key)
        .map_err(|e| StoreError::storage(format!("reading {what}"), e))?
    {
        Some(bytes) => decode(what, &bytes).map(Some),
        None => Ok(None),
    }
}

/// Below this many records a bank is read on the calling thread: starting threads costs more.
const PARALLEL_READ_MIN: usize = 2048;
/// At most this many threads read one bank.
const PARALLEL_READ_THREADS: usize = 4;

/// One whole-bank read counted in `bank_reads` until dropped.
struct BankRead<'a> {
    reads: &'a AtomicUsize,
    /// Reads under way when this one started, itself included.
    under_way: usize,
}

impl<'a> BankRead<'a> {
    fn start(reads: &'a AtomicUsize) -> Self {
        let under_way = reads.fetch_add(1, Ordering::AcqRel) + 1;
        BankRead { reads, under_way }
    }
}

impl Drop for BankRead<'_> {
    fn drop(&mut self) {
        self.reads.fetch_sub(1, Ordering::AcqRel);
    }
}

fn read_memories(
    tree: &Tree,
    bank: &BankName,
    ids: &[MemoryId],
) -> Result<Vec<Memory>, StoreError> {
    ids.iter()
        .map(|&id| {
            // The index and the record are written in one batch, so a miss means corruption.
            get(tree, "memory", &keys::memory(id))?.ok_or_else(|| {
                StoreError::Internal(format!("bank {bank} indexes memory {id}, which is missing"))
            })
        })
        .collect()
}

fn ids_after(
    tree: &Tree,
    bank: &BankName,
    after: Option<MemoryId>,
    limit: usize,
) -> Result<Vec<MemoryId>, StoreError> {
    let prefix = keys::bank_index_prefix(bank);
    let start = match after {
        // Strictly after: the key of `after` with one more byte sorts right behind it.
        Some(id) => {
            let mut key = keys::bank_index(bank, id);
            key.push(0);
            key
        }
        None => prefix.clone(),
    };
    tree.range(start..)
        .keys()
        .take_while(|k| k.as_ref().map_or(true, |k| k.starts_with(&prefix)))
        .take(limit)
        .map(|k| {
            let key = k.map_err(|e| StoreError::storage("reading a bank index", e))?;
            keys::bank_index_id(&key)
                .ok_or_else(|| StoreError::Internal("malformed bank index key".into()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use hindsight_core::apply::StateMut;

    use super::*;
    use crate::overlay::Overlay;
    use crate::test_support::memory;

    fn assert_shareable<T: Clone + Send + Sync + 'static>() {}

    #[test]
    fn is_cheap_to_share_across_tasks() {
        assert_shareable::<StateReader>();
    }

    #[test]
    fn pages_through_a_bank_in_id_order() {
        let db = sled::Config::new().temporary(true).open().unwrap();
        let tree = db.open_tree("state").unwrap();
        let mut overlay = Overlay::new(&tree);
        for id in [5u128, 1, 3, 4, 2] {
            overlay.put_memory(&memory(id, "acme", "x"));
        }
        overlay.put_memory(&memory(9, "acme.other", "x"));
        tree.apply_batch(overlay.into_batch().unwrap()).unwrap();
        let reader = StateReader::new(SharedState::new(tree, Some(1), db));
        let bank: BankName = "acme".parse().unwrap();
        let ids = |after, limit| -> Vec<u128> {
            reader
                .bank_memories_after(&bank, after, limit)
                .unwrap()
                .iter()
                .map(|m| m.id.0)
                .collect()
        };
        assert_eq!(ids(None, 2), vec![1, 2]);
        assert_eq!(ids(Some(MemoryId(2)), 2), vec![3, 4]);
        assert_eq!(ids(Some(MemoryId(4)), 10), vec![5]);
        assert!(ids(Some(MemoryId(5)), 10).is_empty());
        assert_eq!(reader.bank_memory_count(&bank).unwrap(), 5);
        assert_eq!(reader.last_applied_index(), 1);
    }
}
