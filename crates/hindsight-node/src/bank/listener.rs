use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use hindsight_core::apply::Effect;
use hindsight_core::BankName;
use hindsight_store::ApplyListener;
use ractor::ActorRef;

use crate::bank::erasure::RecallErasure;
use crate::bank::{BankMsg, BankRegistry, SupervisorMsg};

/// Routes applied effects to the bank actors that own the affected indexes. Runs inside the state
/// machine's apply, so it only records and sends; it never waits.
pub struct EffectRouter {
    pub registry: Arc<BankRegistry>,
    /// Set once the supervisor runs; effects before that are covered by the actors' initial load.
    pub supervisor: OnceLock<ActorRef<SupervisorMsg>>,
    /// Removed records leave the retrieval log too.
    pub erasure: RecallErasure,
}

impl ApplyListener for EffectRouter {
    fn on_apply(&self, log_index: u64, effects: &[Effect]) {
        let mut by_bank: HashMap<BankName, Vec<Effect>> = HashMap::new();
        for effect in effects {
            let bank = match effect {
                Effect::MemoryUpserted(m) => m.bank.clone(),
                Effect::VectorCarried { bank, .. } => bank.clone(),
                Effect::MemoryRemoved { bank, id } => {
                    self.erasure.erase_memory(*id);
                    bank.clone()
                }
                Effect::BankChanged(bank) => bank.clone(),
                Effect::BankRemoved(bank) => {
                    self.erasure.erase_bank(bank.clone());
                    if let Some(supervisor) = self.supervisor.get() {
                        let _ = supervisor.send_message(SupervisorMsg::Stop(bank.clone()));
                    }
                    continue;
                }
            };
            by_bank.entry(bank).or_default().push(effect.clone());
        }
        for (bank, effects) in by_bank {
            self.registry.note_effect(&bank, log_index);
            if let Some(handle) = self.registry.get(&bank) {
                let _ = handle
                    .actor
                    .send_message(BankMsg::Applied { log_index, effects });
            }
        }
    }

    fn on_snapshot_installed(&self) {
        // The whole state was replaced: every bank reloads from the store on its next use.
        self.stop_banks(|_| true);
    }
}

impl EffectRouter {
    /// Stops the actors of the running banks `which` picks; each reloads on its next use.
    pub fn stop_banks(&self, which: impl Fn(&BankName) -> bool) {
        if let Some(supervisor) = self.supervisor.get() {
            for handle in self.registry.handles() {
                if which(&handle.view.name) {
                    let _ = supervisor.send_message(SupervisorMsg::Stop(handle.view.name.clone()));
                }
            }
        }
    }
}
