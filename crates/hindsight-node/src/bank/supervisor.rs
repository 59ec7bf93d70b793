use std::collections::HashMap;
use std::sync::Arc;

use hindsight_core::BankName;
use ractor::{
    Actor, ActorId, ActorProcessingErr, ActorRef, ActorStatus, RpcReplyPort, SupervisionEvent,
};

use crate::bank::actor::{BankActor, BankMsg};
use crate::bank::context::BankContext;
use crate::bank::residency::UnloadReason;
use crate::bank::view::BankView;

#[derive(ractor_cluster::RactorMessage)]
pub enum SupervisorMsg {
    /// Starts the bank's actor unless it runs, and answers with its view.
    Ensure(BankName, RpcReplyPort<BankStart>),
    /// Stops the bank's actor (bank deleted, or state replaced by a snapshot).
    Stop(BankName),
    /// Dumps the bank's indexes and stops its actor, to free its memory; the next request loads
    /// it again from the dump.
    Unload(BankName, UnloadReason),
    /// An unloading bank's dump is written and its actor stopped.
    Unloaded(BankName),
    /// Dumps every bank's indexes; answers when all are written.
    DumpAll(RpcReplyPort<()>),
    /// A bank's actor finished starting (its view is loaded and registered), or failed to.
    Started(BankName, Result<ActorRef<BankMsg>, String>),
}

/// How long an unloading bank's dump may take before its actor is stopped anyway.
const UNLOAD_DUMP_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// A started bank's view, or why it did not start.
pub type BankStart = Result<Arc<BankView>, String>;

pub struct BankSupervisor {
    pub context: Arc<BankContext>,
}

#[derive(Default)]
pub struct SupervisorState {
    actors: HashMap<ActorId, BankName>,
    /// Banks whose actors are loading their views, with the requests waiting for them.
    starting: HashMap<BankName, Starting>,
    /// Banks being dumped before their actors stop, with the requests that asked for them
    /// meanwhile: those load them again from the new dump once it is written.
    unloading: HashMap<BankName, Vec<RpcReplyPort<BankStart>>>,
}

#[derive(Default)]
struct Starting {
    waiting: Vec<RpcReplyPort<BankStart>>,
    /// Stopped while loading: stopped again as soon as it has started.
    stop: bool,
}

impl BankSupervisor {
    /// Starts the bank's actor in a task of its own, which reports back with `Started`. Loading a
    /// large bank takes seconds (its index dump and its records); done inside this actor's
    /// handler, it would hold up every other bank's start behind it, and a node asked for many
    /// banks after a restart would time out requests for the last ones.
    fn start_bank(
        &self,
        myself: &ActorRef<SupervisorMsg>,
        state: &mut SupervisorState,
        bank: &BankName,
        waiting: Option<RpcReplyPort<BankStart>>,
    ) {
        if let Some(starting) = state.starting.get_mut(bank) {
            starting.waiting.extend(waiting);
            return;
        }
        if let Some(queued) = state.unloading.get_mut(bank) {
            queued.extend(waiting);
            return;
        }
        let starting = Starting {
            waiting: waiting.into_iter().collect(),
            stop: false,
        };
        state.starting.insert(bank.clone(), starting);
        let actor = BankActor {
            context: self.context.clone(),
        };
        let cell = myself.get_cell();
        let supervisor = myself.clone();
        let bank = bank.clone();
        tokio::spawn(async move {
            let started = cell
                .spawn_linked(None, actor, bank.clone())
                .await
                .map(|(actor, _)| actor)
                .map_err(|e| format!("cannot start bank {bank}: {e}"));
            if let Err(e) = supervisor.cast(SupervisorMsg::Started(bank.clone(), started)) {
                tracing::error!(%bank, error = %e, "bank supervisor gone while a bank started");
            }
        });
    }

    /// Takes the bank out of the registry first, so that no further effect is sent to its actor,
    /// then has the actor dump what it holds (effects already in its mailbox included) and stops
    /// it, in a task of its own so that other banks' starts do not wait behind the dump.
    fn unload_bank(
        &self,
        myself: &ActorRef<SupervisorMsg>,
        state: &mut SupervisorState,
        bank: BankName,
        reason: UnloadReason,
    ) {
        if state.starting.contains_key(&bank) || state.unloading.contains_key(&bank) {
            return;
        }
        let Some(handle) = self.context.registry.get(&bank) else {
            return;
        };
        let id = handle.actor.get_id();
        if !self.context.registry.remove_actor(&bank, id) {
            return;
        }
        state.actors.remove(&id);
        state.unloading.insert(bank.clone(), vec![]);
        crate::metrics::bank_unloaded(reason.label());
        let supervisor = myself.clone();
        tokio::spawn(async move {
            let dumped = handle
                .actor
                .call(|port| BankMsg::Dump(Some(port)), Some(UNLOAD_DUMP_WAIT))
                .await;
            if !matches!(dumped, Ok(ractor::rpc::CallResult::Success(()))) {
                // The next load reads what the dump lacks from the store of record.
                tracing::warn!(%bank, "bank dump before unloading did not finish");
            }
            handle.actor.stop(Some("unloaded".into()));
            if let Err(e) = supervisor.cast(SupervisorMsg::Unloaded(bank.clone())) {
                tracing::error!(%bank, error = %e, "bank supervisor gone while a bank unloaded");
            }
        });
    }

    fn unloaded(
        &self,
        myself: &ActorRef<SupervisorMsg>,
        state: &mut SupervisorState,
        bank: BankName,
    ) {
        let waiting = state.unloading.remove(&bank).unwrap_or_default();
        if waiting.is_empty() {
            return;
        }
        let mut waiting = waiting.into_iter();
        self.start_bank(myself, state, &bank, waiting.next());
        if let Some(starting) = state.starting.get_mut(&bank) {
            starting.waiting.extend(waiting);
        }
    }

    fn started(
        &self,
        state: &mut SupervisorState,
        bank: BankName,
        result: Result<ActorRef<BankMsg>, String>,
    ) {
        let starting = state.starting.remove(&bank).unwrap_or_default();
        let answer = result.and_then(|actor| {
            let id = actor.get_id();
            // A failure between the start and this message was not seen as this bank's. (The
            // status turns from starting to running in the actor's own task, a little later.)
            let running = matches!(
                actor.get_status(),
                ActorStatus::Starting | ActorStatus::Running
            );
            if starting.stop || !running {
                self.context.registry.remove_actor(&bank, id);
                actor.stop(Some("stopped while starting".into()));
                return Err(format!("bank {bank} stopped while starting"));
            }
            state.actors.insert(id, bank.clone());
            self.context
                .registry
                .get(&bank)
                .map(|h| h.view)
                .ok_or_else(|| format!("bank {bank} stopped while starting"))
        });
        if let Err(e) = &answer {
            tracing::warn!(%bank, error = %e, "bank did not start");
        }
        for reply in starting.waiting {
            let _ = reply.send(answer.clone());
        }
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
            SupervisorMsg::Ensure(bank, reply) => match self.context.registry.get(&bank) {
                Some(handle) if handle.is_ready() => {
                    let _ = reply.send(Ok(handle.view));
                }
                // Not running, or still loading (a restart after a failure): the request waits
                // with the others for the start to finish.
                _ => self.start_bank(&myself, state, &bank, Some(reply)),
            },
            SupervisorMsg::Started(bank, result) => self.started(state, bank, result),
            SupervisorMsg::Unload(bank, reason) => self.unload_bank(&myself, state, bank, reason),
            SupervisorMsg::Unloaded(bank) => self.unloaded(&myself, state, bank),
            SupervisorMsg::Stop(bank) => {
                if let Some(starting) = state.starting.get_mut(&bank) {
                    starting.stop = true;
                }
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
                // If the restart fails the bank is left stopped, and the next request for it
                // starts it again.
                self.start_bank(&myself, state, &bank, None);
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
