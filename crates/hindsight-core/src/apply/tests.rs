//! The in-memory state the rules' tests apply commands to, the helpers they share, and the tests
//! of the rules the dispatcher applies itself.

use std::collections::{BTreeMap, HashMap};

use super::*;
use crate::command::WriteItem;
use crate::memory::tests::sample;

#[derive(Default)]
pub(super) struct MemState {
    pub(super) memories: BTreeMap<MemoryId, Memory>,
    pub(super) banks: HashMap<BankName, BankConfig>,
    pub(super) history: Vec<HistoryEntry>,
    pub(super) reviews: HashMap<BankName, ReviewState>,
    pub(super) conflicts: BTreeMap<(BankName, u64), Conflict>,
    pub(super) keys: HashMap<String, ApiKey>,
    pub(super) placement: Option<PlacementTable>,
}

impl StateMut for MemState {
    fn memory(&self, id: MemoryId) -> Option<Memory> {
        self.memories.get(&id).cloned()
    }
    fn bank(&self, name: &BankName) -> Option<BankConfig> {
        self.banks.get(name).cloned()
    }
    fn bank_memory_ids(&self, bank: &BankName) -> Vec<MemoryId> {
        self.memories
            .values()
            .filter(|m| &m.bank == bank)
            .map(|m| m.id)
            .collect()
    }
    fn put_memory(&mut self, memory: &Memory) {
        self.memories.insert(memory.id, memory.clone());
    }
    fn remove_memory(&mut self, memory: &Memory) {
        self.memories.remove(&memory.id);
    }
    fn append_history(&mut self, entry: &HistoryEntry) {
        self.history.push(entry.clone());
    }
    fn remove_history(&mut self, id: MemoryId) {
        self.history.retain(|h| h.memory != id);
    }
    fn put_bank(&mut self, config: &BankConfig) {
        self.banks.insert(config.name.clone(), config.clone());
    }
    fn remove_bank(&mut self, name: &BankName) {
        self.banks.remove(name);
    }
    fn review_state(&self, bank: &BankName) -> Option<ReviewState> {
        self.reviews.get(bank).cloned()
    }
    fn put_review_state(&mut self, bank: &BankName, state: &ReviewState) {
        self.reviews.insert(bank.clone(), state.clone());
    }
    fn conflict(&self, bank: &BankName, id: u64) -> Option<Conflict> {
        self.conflicts.get(&(bank.clone(), id)).cloned()
    }
    fn put_conflict(&mut self, conflict: &Conflict) {
        self.conflicts
            .insert((conflict.bank.clone(), conflict.id), conflict.clone());
    }

    fn api_key(&self, id: &str) -> Option<ApiKey> {
        self.keys.get(id).cloned()
    }

    fn put_api_key(&mut self, key: &ApiKey) {
        self.keys.insert(key.id.clone(), key.clone());
    }

    fn placement(&self) -> Option<PlacementTable> {
        self.placement.clone()
    }

    fn put_placement(&mut self, table: &PlacementTable) {
        self.placement = Some(table.clone());
    }
}

pub(super) fn with_bank() -> MemState {
    let mut state = MemState::default();
    let config = BankConfig::new("test/bank".parse().unwrap(), Timestamp(0));
    let mut effects = vec![];
    apply(&mut state, &Command::CreateBank { config }, 1, &mut effects);
    state
}

pub(super) fn run(state: &mut MemState, command: Command) -> CommandOutcome {
    apply(state, &command, 2, &mut vec![])
}

pub(super) fn create(id: u128, content: &str) -> WriteItem {
    WriteItem::Create {
        memory: Box::new(sample(id, content)),
    }
}

#[test]
fn a_placement_table_applies_only_over_an_older_one_and_only_when_valid() {
    let mut state = MemState::default();
    let first = PlacementTable::balanced(&[1, 2, 3], 4, 3).unwrap();
    assert_eq!(
        run(
            &mut state,
            Command::SetPlacement {
                table: first.clone()
            }
        ),
        CommandOutcome::PlacementSet { version: 1 }
    );
    let grown = first.rebalanced(&[1, 2, 3, 4]).unwrap();
    assert!(matches!(
        run(
            &mut state,
            Command::SetPlacement {
                table: grown.clone()
            }
        ),
        CommandOutcome::PlacementSet { version: 2 }
    ));
    // A leader that lost its place proposes an older table: it does not roll back.
    assert!(matches!(
        run(&mut state, Command::SetPlacement { table: first }),
        CommandOutcome::Rejected { reason, .. } if reason.contains("not newer")
    ));
    let mut broken = grown.clone();
    broken.version = 3;
    broken.partitions[0] = vec![1, 1, 2];
    assert!(matches!(
        run(&mut state, Command::SetPlacement { table: broken }),
        CommandOutcome::Rejected { reason, .. } if reason.contains("invalid placement")
    ));
    assert_eq!(state.placement, Some(grown));
}
