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

use hindsight_cluster::{
    ClusterStatus, Peers, RaftGroups, RaftTransportService, ReviewHintSink, TransportAuth,
};
use hindsight_core::command::{Command, CommandOutcome};
use hindsight_core::placement::{PartitionId, PlacementTable};
use hindsight_store::{ProposeOutcome, StateReader, StoreConfig, StoreHandle};
use parking_lot::Mutex;

use crate::bank::listener::EffectRouter;
use crate::error::NodeError;

mod moves;
mod reconcile;
mod replicas;

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

    /// Whether this node leads the group `status` describes. A leader that removed itself still
    /// names itself as the leader, as a learner, until it hears of another.
    fn leads(&self, status: &ClusterStatus) -> bool {
        status.leader_id == Some(self.node_id) && status.state == "Leader"
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
