use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use hindsight_core::BankName;
use parking_lot::{Mutex, RwLock};
use ractor::ActorRef;

use crate::bank::actor::BankMsg;
use crate::bank::view::BankView;

#[derive(Clone)]
pub struct BankHandle {
    pub actor: ActorRef<BankMsg>,
    pub view: Arc<BankView>,
    /// When a request last asked for the bank ([`uptime_millis`]); what idle unloading and the
    /// least-recently-used order go by. Applying replicated effects does not count as use.
    last_used: Arc<AtomicU64>,
    /// The view holds every record of the bank. A bank is registered before its records are
    /// read, so that effects applied meanwhile reach its actor's mailbox; until then requests
    /// wait for the load instead of reading a view that holds only part of the bank.
    ready: Arc<AtomicBool>,
}

impl BankHandle {
    /// A bank whose view is still being loaded: see [`BankHandle::mark_ready`].
    pub fn loading(actor: ActorRef<BankMsg>, view: Arc<BankView>) -> Self {
        BankHandle {
            actor,
            view,
            last_used: Arc::new(AtomicU64::new(uptime_millis())),
            ready: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The view holds the whole bank: requests may read it.
    pub fn mark_ready(&self) {
        self.ready.store(true, Ordering::Release);
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    pub fn last_used_millis(&self) -> u64 {
        self.last_used.load(Ordering::Relaxed)
    }

    fn touch(&self) {
        self.last_used.store(uptime_millis(), Ordering::Relaxed);
    }
}

/// Milliseconds since the process first asked: a clock that never goes back, unlike the wall's.
pub fn uptime_millis() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as u64
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

    /// The bank's handle for a request, which marks the bank as used now; `None` while the bank
    /// is not loaded whole (the request then waits for the load through the supervisor).
    pub fn use_bank(&self, bank: &BankName) -> Option<BankHandle> {
        let handle = self.get(bank).filter(BankHandle::is_ready)?;
        handle.touch();
        Some(handle)
    }

    pub fn insert(&self, bank: BankName, handle: BankHandle) {
        self.running.write().insert(bank, handle);
    }

    /// Removes the entry only if it still belongs to `actor` (a restarted actor may have replaced it).
    pub fn remove_actor(&self, bank: &BankName, actor: ractor::ActorId) -> bool {
        let mut running = self.running.write();
        if running.get(bank).is_some_and(|h| h.actor.get_id() == actor) {
            running.remove(bank);
            return true;
        }
        false
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
