//! The bank runtime: where each bank lives (the metadata group or a partition), the actor that
//! publishes its view, and proposing to the group it lives in. The services reach banks through
//! it; it knows none of them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hindsight_core::command::{Command, CommandOutcome};
use hindsight_core::placement::PartitionId;
use hindsight_core::{BankName, Consistency, MemoryId};
use hindsight_store::{StateReader, StoreHandle};
use ractor::ActorRef;

use super::homes::{Home, Homes, NewIds};
use super::{BankContext, BankView, SupervisorMsg};
use crate::error::NodeError;

/// How long a request waits for a bank's indexes to catch up with the log before giving up.
const INDEX_WAIT: Duration = Duration::from_secs(30);
/// How often a waiting request checks whether the bank's actor was replaced.
const VIEW_RECHECK: Duration = Duration::from_millis(200);

pub(crate) struct Banks {
    node_id: u64,
    /// The metadata group's store: API keys, placement, membership; and every bank, without
    /// partitions.
    store: Arc<StoreHandle>,
    /// Where each bank lives.
    homes: Homes,
    context: Arc<BankContext>,
    supervisor: ActorRef<SupervisorMsg>,
    /// Set once the node serves; cleared when it begins to shut down, so that no proposal starts
    /// after that.
    ready: AtomicBool,
}

impl Banks {
    pub(crate) fn new(
        node_id: u64,
        store: Arc<StoreHandle>,
        homes: Homes,
        context: Arc<BankContext>,
        supervisor: ActorRef<SupervisorMsg>,
    ) -> Self {
        Banks {
            node_id,
            store,
            homes,
            context,
            supervisor,
            ready: AtomicBool::new(false),
        }
    }

    pub(crate) fn readiness(&self) -> &AtomicBool {
        &self.ready
    }

    pub(crate) fn supervisor(&self) -> &ActorRef<SupervisorMsg> {
        &self.supervisor
    }

    /// The metadata group's records: API keys and the placement table (and, without partitions,
    /// every bank). A bank's records are read through [`Banks::home_of_bank`].
    pub(crate) fn metadata_reader(&self) -> &StateReader {
        self.store.reader()
    }

    pub(crate) fn metadata_store(&self) -> &Arc<StoreHandle> {
        &self.store
    }

    /// Where `bank` lives on this node; an error when this node holds no replica of it.
    pub(crate) fn home_of_bank(&self, bank: &BankName) -> Result<Home, NodeError> {
        self.homes.of_bank(bank)
    }

    /// Where memory `id` lives on this node; an error when this node holds no replica of it.
    pub(crate) fn home_of_memory(&self, id: MemoryId) -> Result<Home, NodeError> {
        self.homes.of_memory(id)
    }

    /// Every group holding banks that this node has a replica of.
    pub(crate) fn hosted_homes(&self) -> Vec<Home> {
        self.homes.hosted()
    }

    /// The partition `bank` lives in; `None` without partitions.
    pub(crate) fn partition_of_bank(&self, bank: &BankName) -> Option<PartitionId> {
        self.homes.partition_of_bank(bank)
    }

    /// The partition memory `id` lives in; `None` without partitions.
    pub(crate) fn partition_of_memory(&self, id: MemoryId) -> Option<PartitionId> {
        self.homes.partition_of_memory(id)
    }

    /// Ids for new memories of `bank`.
    pub(crate) fn new_ids(&self, bank: &BankName) -> NewIds {
        self.homes.new_ids(bank)
    }

    pub(crate) fn context(&self) -> &Arc<BankContext> {
        &self.context
    }

    /// Whether this node belongs to a cluster (as a voter or a learner).
    pub(crate) fn is_member(&self) -> bool {
        let id = self.node_id;
        self.store
            .raft()
            .metrics()
            .borrow()
            .membership_config
            .membership()
            .get_node(&id)
            .is_some()
    }

    /// Proposes `command` to the metadata group (API keys; every bank without partitions).
    pub(crate) async fn propose_metadata(
        &self,
        command: Command,
    ) -> Result<(u64, CommandOutcome), NodeError> {
        let home = self.homes.metadata_home();
        self.propose_to(&home, command).await
    }

    /// Proposes `command`, which changes only what lives in `home`, to `home`'s group. The log
    /// index returned is that group's.
    pub(crate) async fn propose_to(
        &self,
        home: &Home,
        command: Command,
    ) -> Result<(u64, CommandOutcome), NodeError> {
        if !self.ready.load(Ordering::SeqCst)
            || self.store.is_stopping()
            || home.store.is_stopping()
        {
            return Err(NodeError::NotTaken("the node is shutting down".into()));
        }
        self.await_membership().await?;
        let proposed = home.store.propose(command).await.map_err(|e| {
            if e.surely_not_proposed() {
                NodeError::NotTaken(format!("the write was not proposed: {e}"))
            } else {
                NodeError::Unavailable(format!("the write was not acknowledged: {e}"))
            }
        })?;
        Ok((proposed.log_index, proposed.outcome))
    }

    /// Waits until this node's replica of `home` has applied `log_index`.
    pub(crate) async fn wait_applied(&self, home: &Home, log_index: u64) -> Result<(), NodeError> {
        home.store
            .wait_applied_within(log_index, INDEX_WAIT)
            .await
            .map_err(|e| NodeError::Unavailable(e.to_string()))
    }

    /// Proposes `command`, which changes only `bank`, to the group `bank` lives in.
    pub(crate) async fn propose_for_bank(
        &self,
        bank: &BankName,
        command: Command,
    ) -> Result<(u64, CommandOutcome), NodeError> {
        let home = self.home_of_bank(bank)?;
        self.propose_to(&home, command).await
    }

    /// A node that has just joined learns that it is a member from the leader's next entries; a
    /// write sent to it in between waits for that instead of failing.
    async fn await_membership(&self) -> Result<(), NodeError> {
        if self.is_member() {
            return Ok(());
        }
        let id = self.node_id;
        let wait = self.store.config().leader_wait;
        self.store
            .raft()
            .wait(Some(wait))
            .metrics(
                |m| m.membership_config.membership().get_node(&id).is_some(),
                "this node is a member",
            )
            .await
            .map(|_| ())
            .map_err(|_| {
                NodeError::Unavailable(format!(
                    "node {id} is not a member of a cluster: it has not finished joining one, or it was removed"
                ))
            })
    }

    /// The bank's published view, starting its actor if needed.
    pub(crate) async fn bank_view(&self, bank: &BankName) -> Result<Arc<BankView>, NodeError> {
        if let Some(handle) = self.context.registry.use_bank(bank) {
            return Ok(handle.view);
        }
        if self
            .home_of_bank(bank)?
            .reader()
            .bank(bank)
            .map_err(NodeError::internal)?
            .is_none()
        {
            return Err(NodeError::NotFound(format!("bank {bank} does not exist")));
        }
        let bank = bank.clone();
        self.supervisor
            .call(|port| SupervisorMsg::Ensure(bank, port), Some(INDEX_WAIT))
            .await
            .map_err(|e| NodeError::Unavailable(format!("bank supervisor unavailable: {e}")))?
            .success_or(NodeError::Unavailable("bank start timed out".into()))?
            .map_err(NodeError::Unavailable)
    }

    /// The views of `banks` to read, showing every write acknowledged before the call when asked to
    /// be linearizable. The barrier comes before the banks are looked up: a follower that has not
    /// yet applied a bank's creation must not answer that the bank does not exist.
    pub(crate) async fn read_barrier(
        &self,
        banks: &[BankName],
        consistency: Consistency,
    ) -> Result<Vec<Arc<BankView>>, NodeError> {
        if consistency == Consistency::Linearizable {
            // Each group the banks live in, once.
            let mut barriers: Vec<Option<PartitionId>> = vec![];
            for bank in banks {
                let home = self.home_of_bank(bank)?;
                if barriers.contains(&home.partition) {
                    continue;
                }
                barriers.push(home.partition);
                home.store
                    .ensure_linearizable()
                    .await
                    .map_err(|e| NodeError::Unavailable(e.to_string()))?;
            }
        }
        let mut caught_up = Vec::with_capacity(banks.len());
        for bank in banks {
            let view = self.bank_view(bank).await?;
            let needed = self.context.registry.last_effect(bank);
            caught_up.push(self.wait_indexed(view, needed).await?);
        }
        Ok(caught_up)
    }

    /// Waits until the bank's view shows every effect through `log_index`, and returns that view. A
    /// view whose actor failed never catches up; its replacement, loaded from the store, does.
    pub(crate) async fn wait_indexed(
        &self,
        view: Arc<BankView>,
        log_index: u64,
    ) -> Result<Arc<BankView>, NodeError> {
        let deadline = tokio::time::Instant::now() + INDEX_WAIT;
        let mut view = view;
        loop {
            if view.indexed_through() >= log_index
                || tokio::time::timeout(VIEW_RECHECK, view.wait_indexed(log_index))
                    .await
                    .is_ok()
            {
                return Ok(view);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(NodeError::Unavailable(format!(
                    "bank {} indexes did not catch up with log index {log_index}",
                    view.name
                )));
            }
            // A stopping node takes no more Raft traffic, so it would not catch up.
            if self.store.is_stopping() {
                return Err(NodeError::Unavailable(format!(
                    "this node is shutting down before its replica reached log index {log_index}; ask another node"
                )));
            }
            view = self.bank_view(&view.name).await?;
        }
    }
}
