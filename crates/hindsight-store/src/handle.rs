use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hindsight_core::Command;
use openraft::error::{Fatal, InitializeError, RaftError};
use openraft::metrics::WaitError;
use openraft::{BasicNode, Raft, RaftMetrics, RaftNetworkFactory, ServerState};
use sled::Db;

use crate::config::StoreConfig;
use crate::error::StoreError;
use crate::leader_link::LeaderLink;
use crate::listener::ApplyListener;
use crate::log_store::LogStore;
use crate::majority_contact::{cut_off, lost_majority, unanswered_leader};
use crate::metrics::StoreMetrics;
use crate::network::NoPeersNetwork;
use crate::proposer::{BatchLimits, LeaderRoute, ProposeOutcome, Proposer};
use crate::reader::StateReader;
use crate::release::ReleaseWatch;
use crate::seal::Seal;
use crate::state_machine::StateMachineStore;
use crate::type_config::TypeConfig;

/// What a cut-off leader tells a linearizable read.
const READ_ELSEWHERE: &str = "read on another member";

/// How long `shutdown` waits for openraft's tasks to drop the stores.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens the store under `dir` (`raft-log/` and `state/` inside it) and starts its Raft node.
/// See [`StoreHandle::open`].
pub async fn open(
    dir: &Path,
    config: StoreConfig,
    listener: Arc<dyn ApplyListener>,
) -> Result<StoreHandle, StoreError> {
    StoreHandle::open(dir, config, listener).await
}

/// Opens the store as a member of a cluster: Raft talks to peers through `network`, and proposals
/// and linearizable reads on a follower go to the leader through `link`.
pub async fn open_cluster<N>(
    dir: &Path,
    config: StoreConfig,
    listener: Arc<dyn ApplyListener>,
    network: N,
    link: Arc<dyn LeaderLink>,
) -> Result<StoreHandle, StoreError>
where
    N: RaftNetworkFactory<TypeConfig>,
{
    StoreHandle::open_with(dir, config, listener, network, Some(link)).await
}

/// A running store: the Raft node, its group-commit proposer and a reader of the applied state.
pub struct StoreHandle {
    config: StoreConfig,
    raft: Raft<TypeConfig>,
    reader: StateReader,
    proposer: Proposer,
    log_db: Db,
    state_db: Db,
    /// The directories of `log_db` and `state_db`, sealed at a clean shutdown.
    db_dirs: [PathBuf; 2],
    release: ReleaseWatch,
    link: Option<Arc<dyn LeaderLink>>,
    /// Set once the node stops taking Raft traffic: waiting to catch up would be in vain.
    stopping: tokio::sync::watch::Sender<bool>,
}

impl StoreHandle {
    /// Opens the store and starts Raft.
    ///
    /// `listener` is registered before Raft starts, so it also hears the entries re-applied from the
    /// log at start-up. On a fresh directory the node initialises a one-member cluster of itself;
    /// on restart it keeps its log and membership and never re-initialises. When this node is the
    /// only voter, `open` returns once it leads and every earlier entry is applied, or fails with
    /// `Timeout` after `startup_timeout`.
    ///
    /// sled locks the directory while open: to open it again, call [`StoreHandle::shutdown`] and
    /// drop the handle and every reader cloned from it.
    pub async fn open(
        dir: &Path,
        config: StoreConfig,
        listener: Arc<dyn ApplyListener>,
    ) -> Result<StoreHandle, StoreError> {
        StoreHandle::open_with(dir, config, listener, NoPeersNetwork, None).await
    }

    async fn open_with<N>(
        dir: &Path,
        config: StoreConfig,
        listener: Arc<dyn ApplyListener>,
        network: N,
        link: Option<Arc<dyn LeaderLink>>,
    ) -> Result<StoreHandle, StoreError>
    where
        N: RaftNetworkFactory<TypeConfig>,
    {
        let raft_config = config.raft_config()?;
        std::fs::create_dir_all(dir)
            .map_err(|e| StoreError::storage(format!("creating {}", dir.display()), e))?;
        let db_dirs = [dir.join("raft-log"), dir.join("state")];
        let mut log = LogStore::open(&db_dirs[0], config.group_id, config.cache_capacity_bytes)?;
        let mut state = StateMachineStore::open(
            &db_dirs[1],
            config.group_id,
            config.cache_capacity_bytes,
            listener,
        )?;
        crate::recovery::recover(&mut log, &mut state, config.node_id).await?;
        let release = ReleaseWatch::new();
        log.hold(release.token());
        state.hold(release.token());
        let reader = state.reader();
        reader.count_size_of(log.db().clone());
        let (log_db, state_db) = (log.db().clone(), state.db().clone());
        let raft = Raft::new(config.node_id, raft_config, network, log, state).await?;
        let proposer = Proposer::start(
            raft.clone(),
            BatchLimits {
                max_commands: config.max_batch_commands,
                max_bytes: config.max_batch_bytes,
                max_in_flight: config.max_in_flight_entries,
            },
            link.clone().map(|link| LeaderRoute {
                node_id: config.node_id,
                link,
                leader_wait: config.leader_wait,
            }),
        );
        let handle = StoreHandle {
            config,
            raft,
            reader,
            proposer,
            log_db,
            state_db,
            db_dirs,
            release,
            link,
            stopping: tokio::sync::watch::Sender::new(false),
        };
        if let Err(e) = handle.start().await {
            if let Err(stop) = handle.shutdown().await {
                tracing::warn!(error = %stop, "could not stop the store after a failed start");
            }
            return Err(e);
        }
        Ok(handle)
    }

    async fn start(&self) -> Result<(), StoreError> {
        let id = self.config.node_id;
        if !self.raft.is_initialized().await? && self.config.initialize_if_empty {
            let members = BTreeMap::from([(id, BasicNode::new(&self.config.advertise_addr))]);
            match self.raft.initialize(members).await {
                Ok(()) => tracing::info!(node = id, "initialised a one-member cluster"),
                // Someone else initialised it between the check and the call.
                Err(RaftError::APIError(InitializeError::NotAllowed(_))) => {}
                Err(RaftError::APIError(e)) => {
                    return Err(StoreError::Internal(format!(
                        "could not initialise the cluster: {e}"
                    )))
                }
                Err(RaftError::Fatal(fatal)) => return Err(fatal.into()),
            }
        }
        let voters: Vec<u64> = self
            .raft
            .with_raft_state(|st| st.membership_state.effective().voter_ids().collect())
            .await?;
        match voters.as_slice() {
            [] => {
                tracing::info!(
                    node = id,
                    "no cluster yet: waiting to be added to one (or initialised)"
                );
                return Ok(());
            }
            [only] if *only == id => {}
            [only] if self.config.open_when_removed => {
                tracing::info!(
                    node = id,
                    group = self.config.group_id,
                    voter = only,
                    "this node was removed from the group while it was down; waiting to be added back"
                );
                return Ok(());
            }
            [only] => {
                return Err(StoreError::Config(format!(
                    "this data directory belongs to node {only}, but node_id is {id}"
                )))
            }
            _ => {
                tracing::info!(
                    node = id,
                    ?voters,
                    "multi-member cluster; not waiting to lead"
                );
                return Ok(());
            }
        }
        let timeout = self.config.startup_timeout;
        self.raft
            .wait(Some(timeout))
            .metrics(
                |m| m.state == ServerState::Leader && m.current_leader == Some(id),
                "startup",
            )
            .await
            .map_err(|e| wait_error(e, format!("node {id} to become leader"), timeout))?;
        // Entries of earlier terms are applied once the new term's first entry is.
        tokio::time::timeout(timeout, self.ensure_linearizable())
            .await
            .map_err(|_| StoreError::Timeout {
                what: format!("node {id} to apply its log"),
                after: timeout,
            })??;
        Ok(())
    }

    /// Proposes one command through group commit and waits until it is applied.
    pub async fn propose(&self, command: Command) -> Result<ProposeOutcome, StoreError> {
        self.proposer.propose(command).await
    }

    /// A proposer handle for components that propose on their own.
    pub fn proposer(&self) -> &Proposer {
        &self.proposer
    }

    pub fn reader(&self) -> &StateReader {
        &self.reader
    }

    pub fn raft(&self) -> &Raft<TypeConfig> {
        &self.raft
    }

    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// Confirms with a quorum that the leader still leads and waits until this node's state
    /// reflects every entry committed before the call; reads made afterwards are linearizable.
    /// Returns the log index the reads are at least as fresh as.
    ///
    /// On the leader this is openraft's own check. A follower in a cluster asks the leader for its
    /// read index and waits until it has applied that far; a follower without a link to its leader
    /// gets `NotLeader`.
    pub async fn ensure_linearizable(&self) -> Result<u64, StoreError> {
        if *self.stopping.borrow() {
            return Err(StoreError::ShuttingDown);
        }
        let Some(link) = &self.link else {
            let read_log_id = self.raft.ensure_linearizable().await?;
            return Ok(read_log_id.map_or(0, |l| l.index));
        };
        let wait = self.config.leader_wait;
        let deadline = Instant::now() + wait;
        loop {
            let (leader, addr) = known_leader(&self.raft, deadline).await?;
            let attempt = if leader == self.config.node_id {
                // No majority will confirm it before it hears from them again: the caller may
                // read on another member rather than wait.
                if let Some(ms) = unanswered_leader(&self.raft) {
                    return Err(cut_off(self.config.node_id, ms, READ_ELSEWHERE));
                }
                let confirmed = tokio::select! {
                    confirmed = tokio::time::timeout(wait, self.raft.ensure_linearizable()) => confirmed,
                    ms = lost_majority(&self.raft) => return Err(cut_off(self.config.node_id, ms, READ_ELSEWHERE)),
                };
                match confirmed {
                    Ok(result) => result
                        .map(|l| l.map_or(0, |l| l.index))
                        .map_err(StoreError::from),
                    Err(_) => Err(StoreError::NoQuorum(format!(
                        "no quorum confirmed this node's leadership within {} ms",
                        wait.as_millis()
                    ))),
                }
            } else {
                link.read_index(leader, addr).await
            };
            match attempt {
                Ok(index) => {
                    self.wait_applied(index, deadline).await?;
                    return Ok(index);
                }
                // Leadership moved, or this leader lost its quorum: a read may wait for the next.
                Err(StoreError::NotLeader { .. } | StoreError::NoQuorum(_))
                    if Instant::now() < deadline =>
                {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Waits, up to `timeout`, until this replica has applied log index `index` (a proposal a
    /// follower forwarded is answered once the leader applied it, maybe before this replica did).
    pub async fn wait_applied_within(
        &self,
        index: u64,
        timeout: Duration,
    ) -> Result<(), StoreError> {
        self.wait_applied(index, Instant::now() + timeout).await
    }

    async fn wait_applied(&self, index: u64, deadline: Instant) -> Result<(), StoreError> {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let mut stopping = self.stopping.subscribe();
        let wait = self
            .raft
            .wait(Some(remaining.max(Duration::from_millis(1))));
        let applied = wait.applied_index_at_least(Some(index), "read index");
        tokio::select! {
            result = applied => result.map(|_| ()).map_err(|e| {
                wait_error(e, format!("this node to apply log index {index}"), remaining)
            }),
            _ = stopping.wait_for(|stopping| *stopping) => Err(StoreError::ShuttingDown),
        }
    }

    /// Fails reads that wait for this replica to catch up, from now on: the node is about to stop
    /// taking Raft traffic.
    pub fn begin_shutdown(&self) {
        self.stopping.send_replace(true);
    }

    /// Why Raft stopped, once it stopped on a fatal error (a full disk, say): the store then
    /// takes no writes until the node is restarted.
    pub fn failure(&self) -> Option<String> {
        failure_of(&self.raft.metrics().borrow())
    }

    /// Completes when Raft stops on a fatal error, with the reason; never for a store that is
    /// shut down on purpose.
    pub async fn failed(&self) -> String {
        let mut metrics = self.raft.metrics();
        loop {
            if let Some(reason) = failure_of(&metrics.borrow_and_update()) {
                return reason;
            }
            if metrics.changed().await.is_err() {
                // Raft is gone; its last metrics say whether it failed.
                match failure_of(&metrics.borrow()) {
                    Some(reason) => return reason,
                    None => return std::future::pending().await,
                }
            }
        }
    }

    /// Whether [`StoreHandle::begin_shutdown`] was called.
    pub fn is_stopping(&self) -> bool {
        *self.stopping.borrow()
    }

    /// Builds a snapshot of everything applied so far and waits for it (up to `snapshot_timeout`).
    /// Returns the last log index it covers. The log behind it is purged according to
    /// `max_in_snapshot_log_to_keep`.
    pub async fn trigger_snapshot(&self) -> Result<u64, StoreError> {
        let target = self.raft.metrics().borrow().last_applied.map(|l| l.index);
        let timeout = self.config.snapshot_timeout;
        let deadline = Instant::now() + timeout;
        loop {
            // openraft ignores a trigger while a build is running, and that build may stop short of
            // `target`; so trigger again until a snapshot covers it.
            self.raft.trigger().snapshot().await?;
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Err(StoreError::Timeout {
                    what: "a snapshot to be built".into(),
                    after: timeout,
                });
            }
            let built = self
                .raft
                .wait(Some(remaining.min(Duration::from_secs(1))))
                .metrics(|m| m.snapshot.map(|s| s.index) >= target, "snapshot")
                .await;
            match built {
                Ok(metrics) => return Ok(metrics.snapshot.map_or(0, |s| s.index)),
                Err(WaitError::Timeout(..)) => continue,
                Err(WaitError::ShuttingDown) => return Err(StoreError::ShuttingDown),
            }
        }
    }

    pub fn metrics(&self) -> StoreMetrics {
        let raft = self.raft.metrics().borrow().clone();
        let counts = self.proposer.counts();
        StoreMetrics {
            node_id: self.config.node_id,
            group_id: self.config.group_id,
            term: raft.current_term,
            leader: raft.current_leader,
            is_leader: raft.state == ServerState::Leader,
            last_log_index: raft.last_log_index,
            applied_index: raft.last_applied.map(|l| l.index),
            snapshot_index: raft.snapshot.map(|l| l.index),
            purged_index: raft.purged.map(|l| l.index),
            entries_proposed: counts.entries,
            commands_proposed: counts.commands,
            size_on_disk_bytes: self.reader.size_on_disk(),
        }
    }

    /// Stops proposing (queued commands get `ShuttingDown`), stops Raft, waits until Raft has let go
    /// of the databases, flushes them and seals them (see `seal`). Idempotent. Dropping the handle
    /// afterwards closes the databases.
    pub async fn shutdown(&self) -> Result<(), StoreError> {
        self.proposer.stop().await;
        self.raft.shutdown().await.map_err(|e| {
            StoreError::Internal(format!("the raft core did not stop cleanly: {e}"))
        })?;
        let released = tokio::time::timeout(RELEASE_TIMEOUT, self.release.released())
            .await
            .is_ok();
        if !released {
            tracing::warn!(
                "raft still holds the stores after shutdown; the directory stays locked"
            );
        }
        for (db, what) in [(&self.log_db, "the log"), (&self.state_db, "the state")] {
            crate::sled_gate::flush(db)
                .await
                .map_err(|e| StoreError::storage(format!("flushing {what} at shutdown"), e))?;
        }
        // Raft may still write through stores it has not let go of; a seal must describe files
        // nobody writes any more, or the next start would take them for corrupt.
        if released {
            let dirs = self.db_dirs.clone();
            tokio::task::spawn_blocking(move || {
                dirs.iter().try_for_each(|dir| {
                    Seal::write(dir)
                        .map_err(|e| StoreError::storage(format!("sealing {}", dir.display()), e))
                })
            })
            .await
            .map_err(|e| StoreError::Internal(format!("the sealing thread failed: {e}")))??;
        }
        Ok(())
    }
}

/// The current leader and its address from the membership, waiting until `deadline` for an
/// election to produce one.
pub(crate) async fn known_leader(
    raft: &Raft<TypeConfig>,
    deadline: Instant,
) -> Result<(u64, String), StoreError> {
    let remaining = deadline.saturating_duration_since(Instant::now());
    let metrics = raft
        .wait(Some(remaining.max(Duration::from_millis(1))))
        .metrics(|m| m.current_leader.is_some(), "a leader")
        .await
        .map_err(|e| match e {
            WaitError::ShuttingDown => StoreError::ShuttingDown,
            WaitError::Timeout(..) => StoreError::NotLeader {
                leader_id: None,
                leader_addr: None,
            },
        })?;
    let leader = metrics.current_leader.expect("waited for a leader");
    let addr = metrics
        .membership_config
        .membership()
        .get_node(&leader)
        .map(|n| n.addr.clone())
        .unwrap_or_default();
    Ok((leader, addr))
}

/// The fatal error Raft stopped on; a shutdown on purpose (`Stopped`) is not a failure.
fn failure_of(metrics: &RaftMetrics<u64, BasicNode>) -> Option<String> {
    match &metrics.running_state {
        Ok(()) | Err(Fatal::Stopped) => None,
        Err(fatal) => Some(fatal.to_string()),
    }
}

fn wait_error(error: WaitError, what: String, after: Duration) -> StoreError {
    match error {
        WaitError::Timeout(..) => StoreError::Timeout { what, after },
        WaitError::ShuttingDown => StoreError::ShuttingDown,
    }
}
