use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hindsight_core::{Command, CommandOutcome};
use openraft::error::{ClientWriteError, RaftError};
use openraft::raft::ClientWriteResult;
use openraft::Raft;
use tokio::sync::{mpsc, oneshot, watch, Semaphore};
use tokio::task::{JoinHandle, JoinSet};

use crate::codec::encoded_len;
use crate::error::StoreError;
use crate::handle::known_leader;
use crate::leader_link::LeaderLink;
use crate::majority_contact::{cut_off, cut_off_message, lost_majority, unanswered_leader};
use crate::type_config::TypeConfig;

/// What one proposed command did once applied.
#[derive(Clone, Debug, PartialEq)]
pub struct ProposeOutcome {
    /// The log entry that carried the command (shared with the other commands of its batch).
    pub log_index: u64,
    pub outcome: CommandOutcome,
}

/// Log entries proposed versus the commands they carried; their ratio is the group-commit factor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProposalCounts {
    pub entries: u64,
    pub commands: u64,
}

/// Where a cluster member's proposals go when it does not lead.
#[derive(Clone)]
pub(crate) struct LeaderRoute {
    pub node_id: u64,
    pub link: Arc<dyn LeaderLink>,
    pub leader_wait: Duration,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct BatchLimits {
    pub max_commands: usize,
    pub max_bytes: usize,
    pub max_in_flight: usize,
}

/// Group commit: callers queue commands, and one task proposes everything waiting as a single
/// `Command::Batch` entry, so one log fsync and one apply batch serve many writers.
///
/// Under light load a command goes out alone and unwrapped, with no added latency; the batches grow
/// on their own while earlier entries are in flight (at most `max_in_flight` at once). Each caller
/// gets the outcome of its own command, by position in the batch. Commands of one batch are applied
/// in queue order and independently: a rejected command changes nothing and does not affect the
/// others.
#[derive(Clone)]
pub struct Proposer {
    queue: mpsc::Sender<Pending>,
    counts: Arc<Counts>,
    stop: Arc<watch::Sender<bool>>,
    task: Arc<Mutex<Option<JoinHandle<()>>>>,
}

struct Pending {
    command: Command,
    bytes: usize,
    reply: oneshot::Sender<Result<ProposeOutcome, StoreError>>,
}

#[derive(Default)]
struct Counts {
    entries: AtomicU64,
    commands: AtomicU64,
}

impl Proposer {
    pub(crate) fn start(
        raft: Raft<TypeConfig>,
        limits: BatchLimits,
        route: Option<LeaderRoute>,
    ) -> Proposer {
        let (queue, rx) = mpsc::channel(limits.max_commands.saturating_mul(4).max(64));
        let counts = Arc::new(Counts::default());
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(run(raft, rx, counts.clone(), limits, route, stopped));
        Proposer {
            queue,
            counts,
            stop: Arc::new(stop),
            task: Arc::new(Mutex::new(Some(task))),
        }
    }

    /// Proposes `command` and waits until it is committed and applied.
    pub async fn propose(&self, command: Command) -> Result<ProposeOutcome, StoreError> {
        let (reply, answer) = oneshot::channel();
        let bytes = encoded_len(&command);
        self.queue
            .send(Pending {
                command,
                bytes,
                reply,
            })
            .await
            .map_err(|_| StoreError::ShuttingDown)?;
        answer.await.map_err(|_| StoreError::ShuttingDown)?
    }

    pub fn counts(&self) -> ProposalCounts {
        ProposalCounts {
            entries: self.counts.entries.load(Ordering::Relaxed),
            commands: self.counts.commands.load(Ordering::Relaxed),
        }
    }

    /// Stops taking commands and waits for the entries already proposed to be answered. Commands
    /// still queued are answered with `ShuttingDown`.
    pub(crate) async fn stop(&self) {
        self.stop.send_replace(true);
        let task = self.task.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(task) = task {
            if let Err(e) = task.await {
                tracing::error!(error = %e, "the proposer task failed");
            }
        }
    }
}

async fn run(
    raft: Raft<TypeConfig>,
    mut queue: mpsc::Receiver<Pending>,
    counts: Arc<Counts>,
    limits: BatchLimits,
    route: Option<LeaderRoute>,
    mut stop: watch::Receiver<bool>,
) {
    let in_flight = Arc::new(Semaphore::new(limits.max_in_flight));
    let mut waiters = JoinSet::new();
    loop {
        // Taking the permit before the first command lets the queue fill while entries are in flight.
        let permit = tokio::select! {
            biased;
            _ = stop.wait_for(|stopped| *stopped) => break,
            permit = in_flight.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
        };
        let first = tokio::select! {
            biased;
            _ = stop.wait_for(|stopped| *stopped) => break,
            next = queue.recv() => match next {
                Some(pending) => pending,
                None => break,
            },
        };
        let mut bytes = first.bytes;
        let mut batch = vec![first];
        while batch.len() < limits.max_commands && bytes < limits.max_bytes {
            match queue.try_recv() {
                Ok(pending) => {
                    bytes = bytes.saturating_add(pending.bytes);
                    batch.push(pending);
                }
                Err(_) => break,
            }
        }
        let (mut commands, replies): (Vec<Command>, Vec<_>) =
            batch.into_iter().map(|p| (p.command, p.reply)).unzip();
        let command = match commands.len() {
            1 => commands.pop().expect("one command"),
            _ => Command::Batch(commands),
        };
        if let Some(route) = &route {
            // In a cluster the leader may be this node or another, and may change under the
            // proposal; `submit` follows it.
            counts.entries.fetch_add(1, Ordering::Relaxed);
            counts
                .commands
                .fetch_add(replies.len() as u64, Ordering::Relaxed);
            let (raft, route) = (raft.clone(), route.clone());
            waiters.spawn(async move {
                let _permit = permit;
                let n = replies.len();
                let result =
                    submit(&raft, &route, command)
                        .await
                        .and_then(|(log_index, outcome)| {
                            split(Some(outcome), n).map(|outcomes| (log_index, outcomes))
                        });
                reply_each(result, replies);
            });
            while waiters.try_join_next().is_some() {}
            continue;
        }
        match raft.client_write_ff(Arc::new(command)).await {
            Ok(answer) => {
                counts.entries.fetch_add(1, Ordering::Relaxed);
                counts
                    .commands
                    .fetch_add(replies.len() as u64, Ordering::Relaxed);
                waiters.spawn(async move {
                    let _permit = permit;
                    deliver(answer.await.ok(), replies);
                });
            }
            Err(fatal) => {
                let error = StoreError::from(fatal);
                for reply in replies {
                    let _ = reply.send(Err(error.clone()));
                }
            }
        }
        while waiters.try_join_next().is_some() {}
    }
    // Dropping the queue answers everything still waiting in it with `ShuttingDown`.
    drop(queue);
    let drained = tokio::time::timeout(IN_FLIGHT_GRACE, async {
        while waiters.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        // An entry this node appended as leader but that was neither committed nor truncated
        // before it lost the leadership (or its membership) is answered only when this replica
        // applies it, which a removed node never does. Its caller hears `ShuttingDown`.
        tracing::warn!(
            in_flight = waiters.len(),
            "proposals still unanswered at shutdown; their outcome is unknown to their callers"
        );
        waiters.shutdown().await;
    }
}

/// How long stopping waits for proposals already handed to Raft to be answered.
const IN_FLIGHT_GRACE: Duration = Duration::from_secs(5);

/// How long this node, as the leader of a cluster, waits for a quorum to commit a proposal: as long
/// as a follower waits for a forwarded one.
const LOCAL_COMMIT_TIMEOUT: Duration = Duration::from_secs(30);

type Reply = oneshot::Sender<Result<ProposeOutcome, StoreError>>;

/// Proposes `command` wherever the leader is, following it across elections until
/// `leader_wait` runs out. A proposal is retried only when it surely was not taken (this node or
/// the target said it does not lead, or the target could not be reached), so nothing is applied
/// twice.
async fn submit(
    raft: &Raft<TypeConfig>,
    route: &LeaderRoute,
    command: Command,
) -> Result<(u64, CommandOutcome), StoreError> {
    let command = Arc::new(command);
    let deadline = Instant::now() + route.leader_wait;
    loop {
        let (leader, addr) = known_leader(raft, deadline).await?;
        let attempt = if leader == route.node_id {
            // Not proposed: the caller may retry on another node, which may lead by now.
            if let Some(ms) = unanswered_leader(raft) {
                return Err(StoreError::NotProposed(cut_off_message(
                    route.node_id,
                    ms,
                    "the change was not proposed",
                )));
            }
            // A leader that lost its quorum (or its place in the membership) would wait for a
            // commit forever; the caller hears, within a bound, that the outcome is unknown.
            let written = tokio::select! {
                written = tokio::time::timeout(LOCAL_COMMIT_TIMEOUT, raft.client_write(command.clone())) => written,
                ms = lost_majority(raft) => {
                    return Err(cut_off(route.node_id, ms, "the change may or may not be applied"));
                }
            };
            let Ok(written) = written else {
                return Err(StoreError::NoQuorum(format!(
                    "no quorum committed the change within {} s; it may or may not be applied",
                    LOCAL_COMMIT_TIMEOUT.as_secs()
                )));
            };
            match written {
                Ok(response) => {
                    let outcome = response.data.outcome.ok_or_else(|| {
                        StoreError::Internal("an applied entry came back with no outcome".into())
                    })?;
                    return Ok((response.log_id.index, outcome));
                }
                Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f))) => {
                    Err(StoreError::NotLeader {
                        leader_id: f.leader_id,
                        leader_addr: f.leader_node.map(|n| n.addr),
                    })
                }
                Err(e) => Err(StoreError::from(e)),
            }
        } else {
            route.link.propose(leader, addr, command.clone()).await
        };
        match attempt {
            Err(StoreError::NotLeader { .. }) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => return other,
        }
    }
}

fn reply_each(result: Result<(u64, Vec<CommandOutcome>), StoreError>, replies: Vec<Reply>) {
    match result {
        Ok((log_index, outcomes)) => {
            for (reply, outcome) in replies.into_iter().zip(outcomes) {
                let _ = reply.send(Ok(ProposeOutcome { log_index, outcome }));
            }
        }
        Err(error) => {
            for reply in replies {
                let _ = reply.send(Err(error.clone()));
            }
        }
    }
}

/// Hands each caller its own outcome. `answer` is `None` when Raft stopped before answering.
fn deliver(answer: Option<ClientWriteResult<TypeConfig>>, replies: Vec<Reply>) {
    let result = match answer {
        None => Err(StoreError::ShuttingDown),
        Some(Err(e)) => Err(StoreError::from(RaftError::APIError(e))),
        Some(Ok(response)) => split(response.data.outcome, replies.len())
            .map(|outcomes| (response.log_id.index, outcomes)),
    };
    reply_each(result, replies);
}

/// The per-command outcomes of an entry that carried `n` commands: a single command was proposed
/// unwrapped, several as one `Batch`.
fn split(outcome: Option<CommandOutcome>, n: usize) -> Result<Vec<CommandOutcome>, StoreError> {
    match (n, outcome) {
        (1, Some(outcome)) => Ok(vec![outcome]),
        (n, Some(CommandOutcome::Batch(outcomes))) if outcomes.len() == n => Ok(outcomes),
        (n, other) => Err(StoreError::Internal(format!(
            "an entry of {n} commands was answered with {other:?}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_command_keeps_its_own_outcome_even_when_it_is_a_batch() {
        let inner = CommandOutcome::Batch(vec![CommandOutcome::BankCreated]);
        assert_eq!(split(Some(inner.clone()), 1).unwrap(), vec![inner]);
    }

    #[test]
    fn batch_outcomes_map_by_position_and_mismatches_are_errors() {
        let outcomes = vec![CommandOutcome::BankCreated, CommandOutcome::AccessRecorded];
        assert_eq!(
            split(Some(CommandOutcome::Batch(outcomes.clone())), 2).unwrap(),
            outcomes
        );
        assert!(split(Some(CommandOutcome::Batch(outcomes)), 3).is_err());
        assert!(split(None, 1).is_err());
    }
}
