use std::collections::HashMap;
use std::sync::Arc;

use hindsight_core::BankName;
use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};

use crate::bank::actor::{BankActor, BankMsg};
use crate::bank::context::BankContext;
use crate::bank::view::BankView;

pub enum SupervisorMsg {
    /// Starts the bank's actor unless it runs, and answers with its view.
    Ensure(BankName, RpcReplyPort<Result<Arc<BankView>, String>>),
    /// Stops the bank's actor (bank deleted, or state replaced by a snapshot).
    Stop(BankName),
    /// Dumps every bank's indexes; answers when all are written.
    DumpAll(RpcReplyPort<()>),
}

pub struct BankSupervisor {
    pub context: Arc<BankContext>,
}

#[derive(Default)]
pub struct SupervisorState {
    actors: HashMap<ActorId, BankName>,
}

impl BankSupervisor {
    async fn start_bank(
        &self,
        myself: &ActorRef<SupervisorMsg>,
        state: &mut SupervisorState,
        bank: &BankName,
    ) -> Result<Arc<BankView>, String> {
        if let Some(handle) = self.context.registry.get(bank) {
            return Ok(handle.view);
        }
        let actor = BankActor {
            context: self.context.clone(),
        };
        let (actor_ref, _) = myself
            .get_cell()
            .spawn_linked(None, actor, bank.clone())
            .await
            .map_err(|e| format!("cannot start bank {bank}: {e}"))?;
        state.actors.insert(actor_ref.get_id(), bank.clone());
        self.context
            .registry
            .get(bank)
            .map(|h| h.view)
            .ok_or_else(|| format!("bank {bank} stopped while starting"))
    }
}

impl Actor for BankSupervisor {
    type Msg = SupervisorMsg;
    type State = SupervisorState;
    type Arguments = ();

    async fn pre_start(
        &self,
        _myself: ActorRef<SupervisorMsg>,
        _: (),
    ) -> Result<SupervisorState, ActorProcessingErr> {
        Ok(SupervisorState::default())
    }

    async fn handle(
        &self,
        myself: ActorRef<SupervisorMsg>,
        message: SupervisorMsg,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            SupervisorMsg::Ensure(bank, reply) => {
                let result = self.start_bank(&myself, state, &bank).await;
                let _ = reply.send(result);
            }
            SupervisorMsg::Stop(bank) => {
                if let Some(handle) = self.context.registry.get(&bank) {
                    self.context
                        .registry
                        .remove_actor(&bank, handle.actor.get_id());
                    state.actors.remove(&handle.actor.get_id());
                    handle.actor.stop(Some("stopped by supervisor".into()));
                }
            }
            SupervisorMsg::DumpAll(reply) => {
                for handle in self.context.registry.handles() {
                    let _ = handle
                        .actor
                        .call(|port| BankMsg::Dump(Some(port)), None)
                        .await;
                }
                let _ = reply.send(());
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<SupervisorMsg>,
        event: SupervisionEvent,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        match event {
            SupervisionEvent::ActorFailed(cell, error) => {
                let Some(bank) = state.actors.remove(&cell.get_id()) else {
                    return Ok(());
                };
                self.context.registry.remove_actor(&bank, cell.get_id());
                tracing::error!(%bank, %error, "bank actor failed; restarting it from the store");
                if let Err(e) = self.start_bank(&myself, state, &bank).await {
                    // Left stopped; the next request for the bank starts it again.
                    tracing::error!(%bank, error = %e, "bank actor restart failed");
                }
            }
            SupervisionEvent::ActorTerminated(cell, _, _) => {
                if let Some(bank) = state.actors.remove(&cell.get_id()) {
                    self.context.registry.remove_actor(&bank, cell.get_id());
                }
            }
            _ => {}
        }
        Ok(())
    }
}
