use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use hindsight_core::apply::StateMut;
use hindsight_core::auth::ApiKey;
use hindsight_core::placement::PlacementTable;
use hindsight_core::{BankConfig, BankName, Conflict, HistoryEntry, Memory, MemoryId, ReviewState};
use serde::de::DeserializeOwned;
use serde::Serialize;
use sled::{Batch, Tree};

use crate::codec::{decode, encode};
use crate::error::StoreError;
use crate::keys;

/// The writes of one log entry, staged in memory over the state tree so that apply sees its own
/// earlier writes and the whole entry lands in sled as one atomic batch.
///
/// `StateMut` cannot fail, but a replica that silently read "missing" after an I/O or decode error
/// would diverge from the others; so the first error is kept (reads take `&self`, hence the cell),
/// the rest of the apply runs against empty answers, and [`Overlay::into_batch`] refuses to commit.
pub(crate) struct Overlay<'a> {
    tree: &'a Tree,
    writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    error: RefCell<Option<StoreError>>,
}

impl<'a> Overlay<'a> {
    pub(crate) fn new(tree: &'a Tree) -> Self {
        Overlay {
            tree,
            writes: BTreeMap::new(),
            error: RefCell::new(None),
        }
    }

    /// The staged writes, or the first error met while staging them.
    pub(crate) fn into_batch(self) -> Result<Batch, StoreError> {
        if let Some(error) = self.error.into_inner() {
            return Err(error);
        }
        let mut batch = Batch::default();
        for (key, value) in self.writes {
            match value {
                Some(value) => batch.insert(key, value),
                None => batch.remove(key),
            }
        }
        Ok(batch)
    }

    /// The keys the staged writes change.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &[u8]> {
        self.writes.keys().map(Vec::as_slice)
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }

    fn fail(&self, error: StoreError) {
        self.error.borrow_mut().get_or_insert(error);
    }

    fn get_raw(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        if let Some(staged) = self.writes.get(key) {
            return Ok(staged.clone());
        }
        self.tree
            .get(key)
            .map(|v| v.map(|v| v.to_vec()))
            .map_err(|e| StoreError::storage("reading state during apply", e))
    }

    fn get<T: DeserializeOwned>(&self, what: &str, key: &[u8]) -> Result<Option<T>, StoreError> {
        match self.get_raw(key)? {
            Some(bytes) => decode(what, &bytes).map(Some),
            None => Ok(None),
        }
    }

    /// Reads that cannot report an error record it instead.
    fn get_or_record<T: DeserializeOwned>(&self, what: &str, key: &[u8]) -> Option<T> {
        match self.get(what, key) {
            Ok(value) => value,
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }

    fn put<T: Serialize + ?Sized>(&mut self, what: &str, key: Vec<u8>, value: &T) {
        match encode(what, value) {
            Ok(bytes) => {
                self.writes.insert(key, Some(bytes));
            }
            Err(e) => self.fail(e),
        }
    }

    fn delete(&mut self, key: Vec<u8>) {
        self.writes.insert(key, None);
    }

    /// Keys under `prefix` as they will be after the staged writes.
    fn keys_with_prefix(&self, prefix: &[u8]) -> Result<BTreeSet<Vec<u8>>, StoreError> {
        let mut found = BTreeSet::new();
        for key in self.tree.scan_prefix(prefix).keys() {
            let key = key.map_err(|e| StoreError::storage("scanning state during apply", e))?;
            found.insert(key.to_vec());
        }
        let staged = self
            .writes
            .range::<[u8], _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix));
        for (key, value) in staged {
            match value {
                Some(_) => found.insert(key.clone()),
                None => found.remove(key),
            };
        }
        Ok(found)
    }

    fn adjust_count(&mut self, bank: &BankName, delta: i64) {
        let key = keys::bank_count(bank);
        let current: u64 = self.get_or_record("bank memory count", &key).unwrap_or(0);
        let next = current.saturating_add_signed(delta);
        self.put("bank memory count", key, &next);
    }
}

impl StateMut for Overlay<'_> {
    fn memory(&self, id: MemoryId) -> Option<Memory> {
        self.get_or_record("memory", &keys::memory(id))
    }

    fn bank(&self, name: &BankName) -> Option<BankConfig> {
        self.get_or_record("bank", &keys::bank(name))
    }

    fn bank_memory_ids(&self, bank: &BankName) -> Vec<MemoryId> {
        match self.keys_with_prefix(&keys::bank_index_prefix(bank)) {
            Ok(found) => found
                .iter()
                .filter_map(|k| keys::bank_index_id(k))
                .collect(),
            Err(e) => {
                self.fail(e);
                vec![]
            }
        }
    }

    fn put_memory(&mut self, memory: &Memory) {
        match self.memory(memory.id) {
            Some(previous) if previous.bank == memory.bank => {}
            previous => {
                if let Some(previous) = previous {
                    self.delete(keys::bank_index(&previous.bank, previous.id));
                    self.adjust_count(&previous.bank, -1);
                }
                self.put("bank index", keys::bank_index(&memory.bank, memory.id), &());
                self.adjust_count(&memory.bank, 1);
            }
        }
        self.put("memory", keys::memory(memory.id), memory);
    }

    fn remove_memory(&mut self, memory: &Memory) {
        let Some(stored) = self.memory(memory.id) else {
            return;
        };
        self.delete(keys::memory(stored.id));
        self.delete(keys::bank_index(&stored.bank, stored.id));
        self.adjust_count(&stored.bank, -1);
    }

    fn append_history(&mut self, entry: &HistoryEntry) {
        self.put(
            "history entry",
            keys::history(entry.memory, entry.version),
            entry,
        );
    }

    fn remove_history(&mut self, id: MemoryId) {
        match self.keys_with_prefix(&keys::history_prefix(id)) {
            Ok(found) => found.into_iter().for_each(|key| self.delete(key)),
            Err(e) => self.fail(e),
        }
    }

    fn put_bank(&mut self, config: &BankConfig) {
        self.put("bank", keys::bank(&config.name), config);
    }

    fn remove_bank(&mut self, name: &BankName) {
        self.delete(keys::bank(name));
        self.delete(keys::bank_count(name));
        self.delete(keys::review_state(name));
        match self.keys_with_prefix(&keys::conflict_prefix(name)) {
            Ok(conflicts) => conflicts.into_iter().for_each(|k| self.delete(k)),
            Err(e) => self.fail(e),
        }
    }

    fn review_state(&self, bank: &BankName) -> Option<ReviewState> {
        self.get_or_record("review state", &keys::review_state(bank))
    }

    fn put_review_state(&mut self, bank: &BankName, state: &ReviewState) {
        self.put("review state", keys::review_state(bank), state);
    }

    fn conflict(&self, bank: &BankName, id: u64) -> Option<Conflict> {
        self.get_or_record("conflict", &keys::conflict(bank, id))
    }

    fn put_conflict(&mut self, conflict: &Conflict) {
        self.put(
            "conflict",
            keys::conflict(&conflict.bank, conflict.id),
            conflict,
        );
    }

    fn api_key(&self, id: &str) -> Option<ApiKey> {
        self.get_or_record("API key", &keys::api_key(id))
    }

    fn put_api_key(&mut self, key: &ApiKey) {
        self.put("API key", keys::api_key(&key.id), key);
    }

    fn placement(&self) -> Option<PlacementTable> {
        self.get_or_record("placement table", keys::PLACEMENT)
    }

    fn put_placement(&mut self, table: &PlacementTable) {
        self.put("placement table", keys::PLACEMENT.to_vec(), table);
    }
}

#[cfg(test)]
mod tests {
    use hindsight_core::apply::apply;
    use hindsight_core::{Command, CommandOutcome, Timestamp, WriteItem};

    use super::*;
    use crate::test_support::memory;

    fn tree() -> (sled::Db, Tree) {
        let db = sled::Config::new().temporary(true).open().unwrap();
        let tree = db.open_tree("t").unwrap();
        (db, tree)
    }

    #[test]
    fn reads_see_the_entry_s_own_earlier_writes() {
        let (_db, tree) = tree();
        let bank: BankName = "acme".parse().unwrap();
        let mut overlay = Overlay::new(&tree);
        let command = Command::Batch(vec![
            Command::CreateBank {
                config: BankConfig::new(bank.clone(), Timestamp(1)),
            },
            Command::Write {
                items: vec![WriteItem::Create {
                    memory: Box::new(memory(1, "acme", "tea")),
                }],
            },
            Command::Forget {
                id: MemoryId(1),
                hard: true,
                at: Timestamp(2),
                reason: "test".into(),
            },
        ]);
        let outcome = apply(&mut overlay, &command, 5, &mut vec![]);
        let CommandOutcome::Batch(outcomes) = outcome else {
            panic!("{outcome:?}")
        };
        assert_eq!(
            outcomes[2],
            CommandOutcome::Forgotten {
                ids: vec![MemoryId(1)]
            }
        );
        assert!(overlay.bank_memory_ids(&bank).is_empty());
        assert!(tree.is_empty(), "nothing reaches sled before the batch");
        tree.apply_batch(overlay.into_batch().unwrap()).unwrap();
        assert!(tree.get(keys::bank(&bank)).unwrap().is_some());
        assert!(tree.get(keys::memory(MemoryId(1))).unwrap().is_none());
        assert!(tree.scan_prefix(keys::HISTORY_PREFIX).next().is_none());
        let count: u64 = decode(
            "count",
            &tree.get(keys::bank_count(&bank)).unwrap().unwrap(),
        )
        .unwrap();
        assert_eq!(count, 0);
    }

    #[test]
    fn a_rejected_command_stages_nothing() {
        let (_db, tree) = tree();
        let mut overlay = Overlay::new(&tree);
        let outcome = apply(
            &mut overlay,
            &Command::Write {
                items: vec![WriteItem::Create {
                    memory: Box::new(memory(1, "nowhere", "x")),
                }],
            },
            1,
            &mut vec![],
        );
        assert!(matches!(outcome, CommandOutcome::Written(_)));
        assert!(overlay.is_empty());
    }

    #[test]
    fn a_corrupt_record_fails_the_entry_instead_of_reading_as_missing() {
        let (_db, tree) = tree();
        tree.insert(keys::memory(MemoryId(1)), &b"garbage"[..])
            .unwrap();
        let mut overlay = Overlay::new(&tree);
        overlay.remove_memory(&memory(1, "acme", "x"));
        assert!(matches!(
            overlay.into_batch(),
            Err(StoreError::Codec { .. })
        ));
    }
}
