//! One reviewer actor per bank (docs/DESIGN.md, "Review"). A bank's cycles run one at a time through
//! its actor's mailbox, whoever asks for them: the periodic schedule, a write that looked like a
//! conflict, or a client's `review` request. Scheduled and event cycles run only on the node that
//! leads the Raft group; the watermark they continue from is replicated, so a new leader's
//! reviewers pick up where the old one's stopped. A follower that takes a write which looks like a
//! conflict passes the hint to the leader (over the actor link, see link.rs).

use std::collections::HashMap;
use std::time::Duration;

use hindsight_core::review::ReviewState;
use hindsight_core::{BankName, Timestamp};
use hindsight_store::StateReader;
use parking_lot::Mutex;
use ractor::{Actor, ActorProcessingErr, ActorRef, ActorStatus, RpcReplyPort};

use super::Node;
use crate::error::NodeError;
use crate::metrics;
use crate::review::cycle;
use crate::types::ReviewReport;

#[derive(ractor_cluster::RactorMessage)]
pub enum ReviewerMsg {
    /// A cycle on request; answers with its report.
    Run {
        as_of: Option<Timestamp>,
        reply: RpcReplyPort<Result<ReviewReport, NodeError>>,
    },
    /// The periodic schedule came round.
    Tick,
    /// A write looked like it contradicts something; a cycle follows after a short delay, so
    /// that a burst of such writes costs one cycle.
    Hint,
    /// The delay after the first hint is over.
    HintDue,
}

pub struct Reviewer;

pub struct ReviewerState {
    node: Node,
    bank: BankName,
    hint_pending: bool,
}

impl Actor for Reviewer {
    type Msg = ReviewerMsg;
    type State = ReviewerState;
    type Arguments = (Node, BankName);

    async fn pre_start(
        &self,
        _myself: ActorRef<ReviewerMsg>,
        (node, bank): (Node, BankName),
    ) -> Result<ReviewerState, ActorProcessingErr> {
        Ok(ReviewerState {
            node,
            bank,
            hint_pending: false,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<ReviewerMsg>,
        message: ReviewerMsg,
        state: &mut ReviewerState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            ReviewerMsg::Run { as_of, reply } => {
                let report = cycle::review(&state.node, state.bank.clone(), as_of).await;
                match &report {
                    Ok(report) => metrics::review_cycle(report, "request"),
                    Err(NodeError::NotFound(_)) => {}
                    Err(_) => metrics::review_failed("request"),
                }
                let backlog = report.as_ref().map_or(0, |r| r.backlog);
                let _ = reply.send(report);
                continue_backlog(&myself, backlog);
            }
            ReviewerMsg::Tick => background_cycle(&myself, state, "periodic").await,
            ReviewerMsg::Hint => {
                if !state.hint_pending {
                    state.hint_pending = true;
                    let delay = Duration::from_millis(state.node.config().review.hint_delay_ms);
                    myself.send_after(delay, || ReviewerMsg::HintDue);
                }
            }
            ReviewerMsg::HintDue => {
                state.hint_pending = false;
                background_cycle(&myself, state, "write hint").await;
            }
        }
        Ok(())
    }
}

async fn background_cycle(
    myself: &ActorRef<ReviewerMsg>,
    state: &mut ReviewerState,
    trigger: &'static str,
) {
    if !state.node.leads_bank(&state.bank) {
        return;
    }
    match cycle::review(&state.node, state.bank.clone(), None).await {
        Ok(report) => {
            metrics::review_cycle(&report, trigger);
            continue_backlog(myself, report.backlog)
        }
        Err(NodeError::NotFound(_)) => {
            // The bank is gone; so is its reviewer.
            state.node.forget_reviewer(&state.bank);
            myself.stop(None);
        }
        Err(e) => {
            metrics::review_failed(trigger);
            tracing::warn!(bank = %state.bank, trigger, error = %e, "review failed")
        }
    }
}

/// A cycle that left changes for later is followed by the next one straight away, behind
/// whatever already waits in the mailbox.
fn continue_backlog(myself: &ActorRef<ReviewerMsg>, backlog: u64) {
    if backlog > 0 {
        let _ = myself.cast(ReviewerMsg::Tick);
    }
}

/// Whether the periodic schedule rings `bank`'s reviewer: when something was applied to it since
/// its last cycle's watermark, when pairs wait from a cycle that ran out of budget, or when its
/// last cycle is older than `unchanged_every` (decay and expiry are all a quiet bank needs). A
/// bank never reviewed is due once it holds a memory.
pub fn periodic_review_due(
    reader: &StateReader,
    bank: &BankName,
    last_effect: u64,
    now: Timestamp,
    unchanged_every: Duration,
) -> bool {
    match reader.review_state(bank) {
        Ok(Some(state)) => review_state_due(&state, last_effect, now, unchanged_every),
        Ok(None) => reader.bank_memory_count(bank).is_ok_and(|n| n > 0),
        // A cycle reports the store's failure better than a skipped one would.
        Err(_) => true,
    }
}

fn review_state_due(
    state: &ReviewState,
    last_effect: u64,
    now: Timestamp,
    unchanged_every: Duration,
) -> bool {
    if last_effect > state.watermark || !state.deferred.is_empty() {
        return true;
    }
    state.last.as_ref().is_none_or(|last| {
        let since = now.millis().saturating_sub(last.started_at.millis());
        since >= unchanged_every.as_millis() as i64
    })
}

/// The node's reviewers by bank, started on first use.
#[derive(Default)]
pub struct Reviewers {
    actors: Mutex<HashMap<BankName, ActorRef<ReviewerMsg>>>,
}

impl Reviewers {
    /// The bank's reviewer, started (or restarted after a failure) as needed.
    pub async fn get(
        &self,
        node: &Node,
        bank: &BankName,
    ) -> Result<ActorRef<ReviewerMsg>, NodeError> {
        if let Some(actor) = self.running(bank) {
            return Ok(actor);
        }
        let (actor, _) = Actor::spawn(None, Reviewer, (node.clone(), bank.clone()))
            .await
            .map_err(|e| {
                NodeError::internal(format!("cannot start the reviewer of {bank}: {e}"))
            })?;
        let mut actors = self.actors.lock();
        if let Some(existing) = actors.get(bank).filter(|a| is_running(a)) {
            // Another caller started one meanwhile; keep that one.
            actor.stop(None);
            return Ok(existing.clone());
        }
        actors.insert(bank.clone(), actor.clone());
        Ok(actor)
    }

    fn running(&self, bank: &BankName) -> Option<ActorRef<ReviewerMsg>> {
        self.actors
            .lock()
            .get(bank)
            .filter(|a| is_running(a))
            .cloned()
    }

    pub fn remove(&self, bank: &BankName) {
        if let Some(actor) = self.actors.lock().remove(bank) {
            actor.stop(None);
        }
    }

    pub fn stop_all(&self) {
        for (_, actor) in self.actors.lock().drain() {
            actor.stop(None);
        }
    }
}

fn is_running(actor: &ActorRef<ReviewerMsg>) -> bool {
    matches!(
        actor.get_status(),
        ActorStatus::Running | ActorStatus::Starting | ActorStatus::Upgrading
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use hindsight_core::review::CycleReport;
    use hindsight_core::MemoryId;

    const DAY: Duration = Duration::from_secs(24 * 3600);

    fn reviewed(watermark: u64, at_millis: i64) -> ReviewState {
        ReviewState {
            watermark,
            last: Some(CycleReport {
                started_at: Timestamp(at_millis),
                ..CycleReport::default()
            }),
            ..ReviewState::default()
        }
    }

    #[test]
    fn a_bank_written_since_its_last_cycle_is_due() {
        let state = reviewed(40, 1_000);
        assert!(review_state_due(&state, 41, Timestamp(2_000), DAY));
        assert!(!review_state_due(&state, 40, Timestamp(2_000), DAY));
    }

    #[test]
    fn a_quiet_bank_is_due_once_its_last_cycle_is_older_than_the_unchanged_interval() {
        let state = reviewed(40, 0);
        let day = DAY.as_millis() as i64;
        assert!(!review_state_due(&state, 0, Timestamp(day - 1), DAY));
        assert!(review_state_due(&state, 0, Timestamp(day), DAY));
    }

    #[test]
    fn pairs_left_by_a_cycle_out_of_budget_make_it_due() {
        let mut state = reviewed(40, 1_000);
        state.deferred = vec![(MemoryId(1), MemoryId(2))];
        assert!(review_state_due(&state, 0, Timestamp(2_000), DAY));
    }
}
