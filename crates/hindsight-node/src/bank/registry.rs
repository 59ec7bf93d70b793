use std::collections::HashMap;
use std::sync::Arc;

use hindsight_core::BankName;
use parking_lot::{Mutex, RwLock};
use ractor::ActorRef;

use crate::bank::actor::BankMsg;
use crate::bank::view::BankView;

#[derive(Clone)]
pub struct BankHandle {
    pub actor: ActorRef<BankMsg>,
    pub view: Arc<BankView>,
}

/// The banks whose actors run on this node, and the last log index that touched each bank.
#[derive(Default)]
pub struct BankRegistry {
    running: RwLock<HashMap<BankName, BankHandle>>,
    last_effect: Mutex<HashMap<BankName, u64>>,
}

impl BankRegistry {
    pub fn get(&self, bank: &BankName) -> Option<BankHandle> {
        self.running.read().get(bank).cloned()
    }

    pub fn insert(&self, bank: BankName, handle: BankHandle) {
        self.running.write().insert(bank, handle);
    }

    /// Removes the entry only if it still belongs to `actor` (a restarted actor may have replaced it).
    pub fn remove_actor(&self, bank: &BankName, actor: ractor::ActorId) {
        let mut running = self.running.write();
        if running.get(bank).is_some_and(|h| h.actor.get_id() == actor) {
            running.remove(bank);
        }
    }

    pub fn handles(&self) -> Vec<BankHandle> {
        self.running.read().values().cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.running.read().len()
    }

    pub fn note_effect(&self, bank: &BankName, log_index: u64) {
        self.last_effect.lock().insert(bank.clone(), log_index);
    }

    /// The log index a reader must wait for to see every applied change to `bank`.
    pub fn last_effect(&self, bank: &BankName) -> u64 {
        self.last_effect.lock().get(bank).copied().unwrap_or(0)
    }
}
