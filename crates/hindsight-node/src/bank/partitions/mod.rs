//! The partitions of a cluster with `cluster.partitions` set (docs/OPERATIONS.md, "Partitions"): Raft
//! groups beside the metadata group, each replicated on the nodes the placement table names.
//!
//! Every node runs the same loop, once a second:
//!
//! - the metadata group's leader keeps the placement table in step with the metadata group's
//!   voters: the first table when there is none, the rebalanced one after a node joined or left
//!   (a crashed node stays a voter, so a crash moves nothing);
//! - a node opens its replica of every partition the table places on it: empty, to be added by
//!   the partition's leader, except in the first table, where the first replica starts the group;
//! - the leader of each partition moves it towards the table: it adds each new replica (as a
//!   learner that catches up, then a voter) before it removes an old one, so the group keeps a
//!   quorum of caught-up replicas throughout;
//! - a node closes, and deletes, its replica of a partition once the table no longer places the
//!   partition here and the group no longer counts this node as a member, and every replica once
//!   it left the metadata group.
//!
//! Banks live in partitions (see [`crate::bank::homes`]): a partition's store holds the records of the
//! banks whose names hash to it, and its applied effects reach the bank actors on this node like
//! the metadata group's do without partitions.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

use hindsight_cluster::pb::AddMemberRequest;
use hindsight_cluster::{
    ClusterStatus, GrpcLeaderLink, GrpcNetwork, Peers, RaftGroups, RaftTransportService,
    ReviewHintSink, TransportAuth,
};
use hindsight_core::command::{Command, CommandOutcome};
use hindsight_core::placement::partition_of;
use hindsight_core::placement::{
    gone_voters, group_of, target_placement, MoveError, PartitionId, PlacementTable,
};
use hindsight_store::{ProposeOutcome, StateReader, StoreConfig, StoreHandle};
use parking_lot::Mutex;

use crate::bank::listener::EffectRouter;
use crate::error::NodeError;

/// How long an operator's move waits for this node's replica of the metadata group to apply it.
const MOVE_APPLY_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
/// How long a partition's leader waits for a new replica to catch up before it tries again.
const MOVE_STEP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// How often a drain looks whether the leaving node's partitions have moved.
const DRAIN_CHECK_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// This node's partition replicas, for the metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PartitionCounts {
    pub hosted: usize,
    pub led: usize,
    pub leaderless: usize,
}

/// One partition's replica on this node.
struct Replica {
    store: Arc<StoreHandle>,
    service: RaftTransportService,
    /// Set while this node, as the partition's leader, is changing its members.
    moving: Arc<AtomicBool>,
}

/// Whether the cluster formed without partitions and its one group holds banks, which then stay
/// there (their memory ids name no partition) whatever `configured` (`cluster.partitions`) says;
/// warns when so.
pub(crate) fn formed_with_one_group(
    metadata: &StateReader,
    placed: Option<&PlacementTable>,
    configured: u32,
) -> bool {
    let one_group = placed.is_none() && metadata.holds_bank_data();
    if one_group {
        tracing::warn!(
            partitions = configured,
            "this cluster formed without partitions and its one group holds banks: they stay there, and cluster.partitions is ignored"
        );
    }
    one_group
}

/// The partition replicas this node hosts, and the loop that keeps them as the table says.
pub struct Partitions {
    node_id: u64,
    /// How many partitions banks hash onto: the placed table's count once there is one (every
    /// node must hash alike, whatever its own `cluster.partitions` says), the configured count
    /// before.
    partitions: AtomicU32,
    /// Set when the cluster formed without partitions and its one group holds banks: those banks
    /// stay there (their memory ids name no partition), so no table is placed and every bank is
    /// the metadata group's.
    single_group: AtomicBool,
    replication: usize,
    root: PathBuf,
    /// Settings every partition's store starts from; each gets its own group id.
    store_config: StoreConfig,
    peers: Peers,
    auth: TransportAuth,
    groups: RaftGroups,
    key_check: String,
    /// Takes every partition's applied effects to the bank actors.
    router: Arc<EffectRouter>,
    /// Where each replica's service hands the review hints sent to it while it leads.
    review_hints: std::sync::OnceLock<ReviewHintSink>,
    replicas: Mutex<BTreeMap<PartitionId, Replica>>,
    /// Opening and closing replicas happen one at a time.
    changing: tokio::sync::Mutex<()>,
    /// How long a voter may go unanswered before its partitions are re-placed; `None`: never.
    replace_after: Option<std::time::Duration>,
    /// Since when this node has led the metadata group, and in which term: the silence of a
    /// member counts from then at most.
    led_since: Mutex<Option<(u64, std::time::Instant)>>,
}

pub(crate) struct PartitionsSetup {
    /// `cluster.partitions`, or the placed table's count when there is one.
    pub partitions: u32,
    /// The metadata group holds banks and no table (see [`Partitions::single_group`]).
    pub single_group: bool,
    pub replication: usize,
    pub root: PathBuf,
    pub store_config: StoreConfig,
    pub peers: Peers,
    pub auth: TransportAuth,
    pub groups: RaftGroups,
    pub key_check: String,
    pub router: Arc<EffectRouter>,
    /// `cluster.replace_after_secs`; 0: never.
    pub replace_after_secs: u64,
}

impl Partitions {
    pub(crate) fn new(setup: PartitionsSetup) -> Partitions {
        Partitions {
            node_id: setup.store_config.node_id,
            partitions: AtomicU32::new(setup.partitions),
            single_group: AtomicBool::new(setup.single_group),
            replication: setup.replication,
            root: setup.root,
            store_config: setup.store_config,
            peers: setup.peers,
            auth: setup.auth,
            groups: setup.groups,
            key_check: setup.key_check,
            router: setup.router,
            review_hints: std::sync::OnceLock::new(),
            replicas: Mutex::default(),
            changing: tokio::sync::Mutex::new(()),
            replace_after: (setup.replace_after_secs > 0)
                .then(|| std::time::Duration::from_secs(setup.replace_after_secs)),
            led_since: Mutex::default(),
        }
    }

    /// How many partitions the cluster's banks hash onto.
    pub fn count(&self) -> u32 {
        self.partitions.load(Ordering::Acquire)
    }

    /// Whether banks live in partitions: false in a cluster that formed with one group and keeps
    /// its banks there.
    pub fn active(&self) -> bool {
        !self.single_group.load(Ordering::Acquire)
    }

    /// This node's replica of partition `p`'s store, if it holds one.
    pub(crate) fn store(&self, p: PartitionId) -> Option<Arc<StoreHandle>> {
        self.replicas.lock().get(&p).map(|r| r.store.clone())
    }

    /// This node's replica of partition `p`'s node-to-node service, if it holds one.
    pub(crate) fn service(&self, p: PartitionId) -> Option<RaftTransportService> {
        self.replicas.lock().get(&p).map(|r| r.service.clone())
    }

    /// Where review hints for banks of the partitions led here go.
    pub(crate) fn on_review_hint(&self, sink: ReviewHintSink) {
        for replica in self.replicas.lock().values() {
            replica.service.on_review_hint(sink.clone());
        }
        let _ = self.review_hints.set(sink);
    }

    /// The partitions this node holds a replica of, in order.
    pub fn hosted(&self) -> Vec<PartitionId> {
        self.replicas.lock().keys().copied().collect()
    }

    /// How many replicas this node hosts, leads, and sees without a leader.
    pub fn counts(&self) -> PartitionCounts {
        let statuses: Vec<ClusterStatus> = self
            .replicas
            .lock()
            .values()
            .map(|r| r.service.status())
            .collect();
        PartitionCounts {
            hosted: statuses.len(),
            led: statuses.iter().filter(|s| self.leads(s)).count(),
            leaderless: statuses.iter().filter(|s| s.leader_id.is_none()).count(),
        }
    }

    /// Why a replica's store stopped, if one stopped on a fatal error (a full disk, say).
    pub(crate) fn failure(&self) -> Option<String> {
        self.replicas.lock().iter().find_map(|(p, replica)| {
            replica
                .store
                .failure()
                .map(|reason| format!("partition {p}: {reason}"))
        })
    }

    /// Partition `p`'s group as this node's replica sees it.
    pub fn status(&self, p: PartitionId) -> Option<ClusterStatus> {
        self.replicas.lock().get(&p).map(|r| r.service.status())
    }

    /// Whether partition `p` is moving as this node's replica sees it: its group's members differ
    /// from the replicas the table names, or this node, leading it, is changing them. `None` when
    /// this node holds no replica of it.
    pub fn moving(&self, p: PartitionId, table: &PlacementTable) -> Option<bool> {
        let (status, changing) = {
            let replicas = self.replicas.lock();
            let replica = replicas.get(&p)?;
            (
                replica.service.status(),
                replica.moving.load(Ordering::SeqCst),
            )
        };
        let members: BTreeSet<u64> = status.members.iter().map(|m| m.node_id).collect();
        let voters = status.voters();
        let placed: BTreeSet<u64> = table.replicas(p).iter().copied().collect();
        Some(changing || members != placed || voters != placed)
    }

    /// An operator's move of partition `p`'s replica from node `from` to node `to`: the table
    /// with that change, checked against the newest table and the metadata group's voters and
    /// proposed through the metadata group. The partition's leader then carries the move out as
    /// for any table change. Nothing changes when the move is refused.
    pub(crate) async fn move_replica(
        &self,
        metadata: &StoreHandle,
        cluster: &RaftTransportService,
        p: PartitionId,
        from: u64,
        to: u64,
    ) -> Result<PlacementTable, NodeError> {
        metadata
            .ensure_linearizable()
            .await
            .map_err(|e| NodeError::Unavailable(format!("reading the placement table: {e}")))?;
        let table = metadata
            .reader()
            .placement()
            .map_err(NodeError::internal)?
            .ok_or_else(|| {
                NodeError::Unavailable(
                    "the cluster has not placed its partitions yet; try again in a moment".into(),
                )
            })?;
        let voters: Vec<u64> = cluster.status().voters().into_iter().collect();
        let moved = table.with_move(p, from, to, &voters).map_err(|e| match e {
            MoveError::UnknownPartition { .. } | MoveError::UnknownNode(_) => {
                NodeError::NotFound(e.to_string())
            }
            MoveError::SameNode(_)
            | MoveError::AlreadyHosts { .. }
            | MoveError::NotHosting { .. }
            | MoveError::WouldEmpty(_) => NodeError::FailedPrecondition(e.to_string()),
        })?;
        let proposed = metadata
            .propose(Command::SetPlacement {
                table: moved.clone(),
            })
            .await
            .map_err(|e| {
                NodeError::Unavailable(format!("the placement table was not changed: {e}"))
            })?;
        match proposed.outcome {
            CommandOutcome::PlacementSet { .. } => {
                // A forwarded proposal is answered once the leader applied it; the caller reads
                // the table here next, so this replica must hold the change too.
                if let Err(e) = metadata
                    .wait_applied_within(proposed.log_index, MOVE_APPLY_WAIT)
                    .await
                {
                    tracing::warn!(error = %e, "the moved table is not applied here yet");
                }
                tracing::info!(
                    partition = p,
                    from,
                    to,
                    version = moved.version,
                    "placement changed by an operator"
                );
                Ok(moved)
            }
            // Another change of the table won the race: nothing of this one was applied.
            CommandOutcome::Rejected { reason, .. } => Err(NodeError::Unavailable(format!(
                "the placement table changed meanwhile ({reason}); nothing was moved: look at \
                 `hindsight partition list` and ask again"
            ))),
            other => Err(NodeError::internal(format!("unexpected outcome {other:?}"))),
        }
    }

    /// Proposes `command` to partition `p` through this node's replica (which forwards it to the
    /// partition's leader when it does not lead).
    pub async fn propose(
        &self,
        p: PartitionId,
        command: Command,
    ) -> Result<CommandOutcome, NodeError> {
        let store = self
            .replicas
            .lock()
            .get(&p)
            .map(|r| r.store.clone())
            .ok_or_else(|| {
                NodeError::NotTaken(format!(
                    "node {} holds no replica of partition {p}",
                    self.node_id
                ))
            })?;
        let ProposeOutcome { outcome, .. } = store.propose(command).await.map_err(|e| {
            if e.surely_not_proposed() {
                NodeError::NotTaken(format!("partition {p}: {e}"))
            } else {
                NodeError::Unavailable(format!("partition {p}: {e}"))
            }
        })?;
        Ok(outcome)
    }

    /// One round of the loop described in the module's documentation.
    pub(crate) async fn reconcile(&self, metadata: &StoreHandle, cluster: &RaftTransportService) {
        if !self.hosted().is_empty() && self.left_cluster(cluster).await {
            // This node left the cluster, and hears of no table after that. Its replicas go, so
            // that a partition it led elects a leader among the nodes still in the cluster,
            // which then moves the partition as the newest table says.
            let _changing = self.changing.lock().await;
            for p in self.hosted() {
                self.close(p, true).await;
            }
            return;
        }
        if !self.active() {
            return;
        }
        // A node that joined such a cluster with cluster.partitions set learns it here.
        if let Ok(placed) = metadata.reader().placement() {
            if formed_with_one_group(metadata.reader(), placed.as_ref(), self.count()) {
                self.single_group.store(true, Ordering::Release);
                return;
            }
        }
        if let Err(e) = self.keep_placement(metadata, cluster).await {
            tracing::warn!(error = %e, "could not update the placement table");
        }
        let table = match metadata.reader().placement() {
            Ok(Some(table)) => table,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(error = %e, "could not read the placement table");
                return;
            }
        };
        let placed = table.partition_count();
        if self.partitions.swap(placed, Ordering::AcqRel) != placed {
            tracing::warn!(
                placed,
                "cluster.partitions differs from the placed table's; banks hash onto the table's partitions"
            );
        }
        let _changing = self.changing.lock().await;
        // A replica on disk that the table no longer places here may still be a voter (the table
        // changed while this node was down): it serves until its partition lets it go.
        let mut wanted: BTreeSet<PartitionId> =
            table.partitions_of(self.node_id).into_iter().collect();
        wanted.extend(self.on_disk());
        for p in wanted {
            if !self.replicas.lock().contains_key(&p) {
                if let Err(e) = self.open(&table, p).await {
                    tracing::warn!(partition = p, error = %e, "could not open a partition replica");
                }
            }
        }
        let addresses = member_addresses(cluster);
        for p in self.hosted() {
            // The leader moves its partition even when the table moves it off this node: it
            // removes itself last, once the new replicas vote.
            let leading = self.move_if_leading(&table, p, &addresses);
            if !leading && !table.hosts(self.node_id, p) && self.departed(&table, p).await {
                self.close(p, true).await;
            }
        }
    }

    /// Whether this node is no longer in the metadata group. Its own replica may not know: a
    /// leader sends a node nothing once it removed it, so the node may never receive its removal,
    /// and would go on leading its partitions by an old table. The metadata leader it knows of
    /// (or the one that leader names) settles it: the leader's membership is the newest.
    async fn left_cluster(&self, cluster: &RaftTransportService) -> bool {
        let counted =
            |status: &ClusterStatus| status.members.iter().any(|m| m.node_id == self.node_id);
        let own = cluster.status();
        if !counted(&own) {
            return true;
        }
        let (mut leader, mut members) = (own.leader_id, own.members);
        for _hop in 0..2 {
            let Some(leader_id) = leader.filter(|id| *id != self.node_id) else {
                return false;
            };
            let Some(address) = members
                .iter()
                .find(|m| m.node_id == leader_id)
                .map(|m| m.address.clone())
            else {
                return false;
            };
            match cluster.status_at(&address).await {
                Ok(theirs) if theirs.leader_id == Some(theirs.node_id) => return !counted(&theirs),
                // A deposed leader names its successor: ask that one.
                Ok(theirs) => (leader, members) = (theirs.leader_id, theirs.members),
                Err(_) => return false,
            }
        }
        false
    }

    /// Waits until node `id`, a learner of the metadata group now (so the placement leaves it
    /// out), holds no partition any more: the table places none on it and every partition's
    /// group, asked through a replica the table names, no longer counts it. Its replicas
    /// move one by one (a new replica added and caught up before the old is removed), so every
    /// partition keeps its replication while the node leaves. A dead node drains the same way:
    /// the moves need the remaining replicas only.
    pub(crate) async fn drain(
        &self,
        metadata: &StoreHandle,
        cluster: &RaftTransportService,
        id: u64,
        timeout: std::time::Duration,
    ) -> Result<(), NodeError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let Some(waiting_for) = self.holds_any(metadata, cluster, id).await else {
                return Ok(());
            };
            if tokio::time::Instant::now() >= deadline {
                return Err(NodeError::Unavailable(format!(
                    "node {id} no longer votes, but its partitions did not move off it within {} s \
                     (waiting for {waiting_for}); it stays a learner: ask again to finish removing it",
                    timeout.as_secs()
                )));
            }
            tokio::time::sleep(DRAIN_CHECK_EVERY).await;
        }
    }

    /// `None` once node `id` holds no partition; otherwise what the drain still waits for.
    async fn holds_any(
        &self,
        metadata: &StoreHandle,
        cluster: &RaftTransportService,
        id: u64,
    ) -> Option<String> {
        let table = match metadata.reader().placement() {
            Ok(Some(table)) => table,
            Ok(None) => return None,
            Err(e) => return Some(format!("the placement table to be readable ({e})")),
        };
        let addresses = member_addresses(cluster);
        for p in 0..table.partition_count() {
            if table.replicas(p).contains(&id) {
                return Some(format!("the placement table to move partition {p} off it"));
            }
            let peers = self.peers.for_group(group_of(p));
            let mut seen = None;
            for replica in table.replicas(p) {
                let Some(address) = addresses.get(replica) else {
                    continue;
                };
                if let Ok(status) = hindsight_cluster::group_status_at(&peers, address).await {
                    if status.leader_id.is_some() {
                        seen = Some(status);
                        break;
                    }
                }
            }
            match seen {
                None => return Some(format!("a replica of partition {p} with a leader")),
                Some(status) if status.members.iter().any(|m| m.node_id == id) => {
                    return Some(format!("partition {p}'s group to remove it"));
                }
                Some(_) => {}
            }
        }
        None
    }

    /// On the metadata group's leader: the table its voters call for, leaving out the voters
    /// unanswered for longer than `cluster.replace_after_secs`, proposed when it differs from the
    /// one in force ([`target_placement`]).
    async fn keep_placement(
        &self,
        metadata: &StoreHandle,
        cluster: &RaftTransportService,
    ) -> Result<(), NodeError> {
        let status = cluster.status();
        if !self.leads(&status) {
            *self.led_since.lock() = None;
            return Ok(());
        }
        let led_for = {
            let mut since = self.led_since.lock();
            match *since {
                Some((term, at)) if term == status.term => at.elapsed(),
                _ => {
                    *since = Some((status.term, std::time::Instant::now()));
                    std::time::Duration::ZERO
                }
            }
        };
        let voters: Vec<u64> = status.voters().into_iter().collect();
        let silence: BTreeMap<u64, std::time::Duration> = status
            .members
            .iter()
            .filter(|m| m.voter && m.node_id != self.node_id)
            .filter_map(|m| {
                Some((
                    m.node_id,
                    std::time::Duration::from_millis(m.millis_since_ack?),
                ))
            })
            .collect();
        let gone = gone_voters(&silence, led_for, self.replace_after);
        let current = metadata.reader().placement().map_err(NodeError::internal)?;
        let target = target_placement(
            current.as_ref(),
            &voters,
            &gone,
            self.count(),
            self.replication,
        )
        .map_err(|e| NodeError::internal(format!("placing partitions: {e}")))?;
        if current.as_ref() == Some(&target) {
            return Ok(());
        }
        if let Some(table) = &current {
            let placed_before: BTreeSet<u64> = table.partitions.iter().flatten().copied().collect();
            for node in gone.intersection(&placed_before) {
                if target.partitions_of(*node).is_empty() {
                    tracing::warn!(
                        node,
                        after_secs = self.replace_after.map_or(0, |d| d.as_secs()),
                        "a node has not answered for longer than cluster.replace_after_secs; its partitions are re-placed on the other nodes"
                    );
                }
            }
        }
        let version = target.version;
        match metadata
            .propose(Command::SetPlacement { table: target })
            .await
            .map_err(|e| NodeError::Unavailable(e.to_string()))?
            .outcome
        {
            CommandOutcome::PlacementSet { .. } => {
                tracing::info!(version, "placement table updated");
                Ok(())
            }
            CommandOutcome::Rejected { reason, .. } => Err(NodeError::internal(reason)),
            other => Err(NodeError::internal(format!("unexpected outcome {other:?}"))),
        }
    }

    async fn open(&self, table: &PlacementTable, p: PartitionId) -> Result<(), NodeError> {
        let group = group_of(p);
        let peers = self.peers.for_group(group);
        // Only the first table creates groups; a replica placed later starts empty and waits
        // for the partition's leader to add it.
        let first = table.version == 1 && table.replicas(p).first() == Some(&self.node_id);
        let config = StoreConfig {
            group_id: group,
            initialize_if_empty: first,
            // The group may have moved off this node while it was down: the placement then
            // closes the replica, or its leader adds it back.
            open_when_removed: true,
            ..self.store_config.clone()
        };
        let store = hindsight_store::open_cluster(
            &self.dir(p),
            config,
            self.router.clone(),
            GrpcNetwork::new(peers.clone()),
            Arc::new(GrpcLeaderLink::new(peers.clone())),
        )
        .await
        .map_err(|e| NodeError::Unavailable(format!("partition {p}'s store: {e}")))?;
        let service = RaftTransportService::new(
            store.raft().clone(),
            store.proposer().clone(),
            self.node_id,
            peers,
            self.auth.clone(),
        );
        service.set_key_check(self.key_check.clone());
        if let Some(sink) = self.review_hints.get() {
            service.on_review_hint(sink.clone());
        }
        self.groups.insert(service.clone());
        self.replicas.lock().insert(
            p,
            Replica {
                store: Arc::new(store),
                service,
                moving: Arc::default(),
            },
        );
        tracing::info!(partition = p, group, "opened a partition replica");
        Ok(())
    }

    /// On partition `p`'s leader: adds the replicas the table names and the group lacks, then
    /// removes the ones it no longer names, this node last. Runs in the background, since adding
    /// a replica waits for it to catch up; one change of a partition at a time. Returns whether
    /// this node leads the partition.
    fn move_if_leading(
        &self,
        table: &PlacementTable,
        p: PartitionId,
        addresses: &BTreeMap<u64, String>,
    ) -> bool {
        let (service, moving) = {
            let replicas = self.replicas.lock();
            let Some(replica) = replicas.get(&p) else {
                return false;
            };
            (replica.service.clone(), replica.moving.clone())
        };
        let status = service.status();
        if !self.leads(&status) {
            return false;
        }
        let voters = status.voters();
        let members: BTreeSet<u64> = status.members.iter().map(|m| m.node_id).collect();
        let target: BTreeSet<u64> = table.replicas(p).iter().copied().collect();
        if (voters == target && members == target) || moving.swap(true, Ordering::SeqCst) {
            return true;
        }
        let additions: Vec<(u64, String)> = target
            .difference(&voters)
            .filter_map(|id| addresses.get(id).map(|a| (*id, a.clone())))
            .collect();
        let me = self.node_id;
        // Learners too: one added for a table that has changed since would go on receiving the
        // log.
        let mut removals: Vec<u64> = members.difference(&target).copied().collect();
        removals.sort_by_key(|id| *id == me);
        let key_check = self.key_check.clone();
        tokio::spawn(async move {
            let group = service.group_id();
            let requests: Vec<AddMemberRequest> = additions
                .iter()
                .map(|(id, address)| AddMemberRequest {
                    node_id: *id,
                    address: address.clone(),
                    key_check: key_check.clone(),
                    group_id: group,
                })
                .collect();
            // All of a round's newcomers join in one membership change: a group growing from one
            // voter to two, one newcomer at a time, would stall if that newcomer died while the
            // change waited for its vote. A newcomer that is down does not catch up: it stays a
            // learner and is tried again on a later round, which may also follow a newer table.
            if !requests.is_empty() {
                match service.add_members_here(&requests, MOVE_STEP_TIMEOUT).await {
                    Ok(voting) => {
                        let added: Vec<u64> = voting.difference(&voters).copied().collect();
                        if !added.is_empty() {
                            tracing::info!(partition = p, nodes = ?added, "added partition replicas");
                        }
                        if additions.iter().any(|(id, _)| !voting.contains(id)) {
                            moving.store(false, Ordering::SeqCst);
                            return;
                        }
                    }
                    Err(e) => {
                        tracing::warn!(partition = p, error = %e, "could not add partition replicas yet");
                        moving.store(false, Ordering::SeqCst);
                        return;
                    }
                }
            }
            // Removing waits until every addition is a voter, so the group never shrinks below
            // the replicas the table asks for.
            for id in removals {
                match service.remove_member(id).await {
                    Ok(_) => {
                        tracing::info!(partition = p, node = id, "removed a partition replica")
                    }
                    Err(e) => {
                        tracing::warn!(partition = p, node = id, error = %e, "could not remove a partition replica yet");
                        break;
                    }
                }
            }
            moving.store(false, Ordering::SeqCst);
        });
        true
    }

    /// Whether partition `p`, which the table no longer places here, has let this replica go: the
    /// group does not count this node any more, as this replica or a replica the table names sees
    /// it. Until then this replica keeps serving, since the move may still need it.
    async fn departed(&self, table: &PlacementTable, p: PartitionId) -> bool {
        let Some(service) = self.replicas.lock().get(&p).map(|r| r.service.clone()) else {
            return false;
        };
        let member =
            |status: &ClusterStatus| status.members.iter().any(|m| m.node_id == self.node_id);
        let status = service.status();
        if !member(&status) {
            return true;
        }
        let addresses: Vec<String> = status
            .members
            .iter()
            .filter(|m| table.replicas(p).contains(&m.node_id))
            .map(|m| m.address.clone())
            .collect();
        for address in addresses {
            if let Ok(status) = service.status_at(&address).await {
                if status.leader_id.is_some() {
                    return !member(&status);
                }
            }
        }
        false
    }

    /// Stops serving partition `p` here and closes its store; `delete` also removes its files.
    async fn close(&self, p: PartitionId, delete: bool) {
        self.groups.remove(group_of(p));
        let Some(replica) = self.replicas.lock().remove(&p) else {
            return;
        };
        replica.store.begin_shutdown();
        if let Err(e) = replica.store.shutdown().await {
            tracing::warn!(partition = p, error = %e, "partition store shutdown");
        }
        drop(replica);
        // Banks of the partition had actors here that read its store: they stop, and a bank
        // used again later starts from wherever it then lives.
        let count = self.count();
        self.router
            .stop_banks(|bank| partition_of(bank.as_str(), count) == p);
        if delete {
            match std::fs::remove_dir_all(self.dir(p)) {
                Ok(()) => tracing::info!(partition = p, "moved away; its replica here was deleted"),
                Err(e) => {
                    tracing::warn!(partition = p, error = %e, "could not delete a partition replica moved away")
                }
            }
        }
    }

    /// Closes every replica, for the node's shutdown.
    pub(crate) async fn close_all(&self) {
        let _changing = self.changing.lock().await;
        for p in self.hosted() {
            self.close(p, false).await;
        }
    }

    /// Whether this node leads the group `status` describes. A leader that removed itself still
    /// names itself as the leader, as a learner, until it hears of another.
    fn leads(&self, status: &ClusterStatus) -> bool {
        status.leader_id == Some(self.node_id) && status.state == "Leader"
    }

    /// The partitions with a replica directory here.
    fn on_disk(&self) -> Vec<PartitionId> {
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return vec![];
        };
        entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                e.file_name()
                    .to_str()?
                    .strip_prefix("partition-")?
                    .parse()
                    .ok()
            })
            .collect()
    }

    fn dir(&self, p: PartitionId) -> PathBuf {
        self.root.join(format!("partition-{p}"))
    }
}

/// Every metadata member's address, as this node's replica of the group knows them.
fn member_addresses(cluster: &RaftTransportService) -> BTreeMap<u64, String> {
    cluster
        .status()
        .members
        .into_iter()
        .map(|m| (m.node_id, m.address))
        .collect()
}
