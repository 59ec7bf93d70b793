use super::Node;
use crate::bank::SupervisorMsg;
use crate::types::NodeStatus;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How long a shutdown waits to record the last access statistics: a few seconds
/// of hints are not worth holding up a stop that has no quorum to commit them.
const SHUTDOWN_FLUSH_TIMEOUT: Duration = Duration::from_secs(3);
/// How often a node checks whether a partition replica's store stopped on a fatal error.
const PARTITION_FAILURE_CHECK: Duration = Duration::from_millis(500);

impl Node {
    pub fn status(&self) -> NodeStatus {
        let metrics = self.inner.banks.metadata_store().metrics();
        NodeStatus {
            node_id: self.inner.config.node.id,
            leader_id: metrics.leader,
            term: metrics.term,
            last_log_index: metrics.last_log_index.unwrap_or(0),
            applied_index: metrics.applied_index.unwrap_or(0),
            banks_loaded: self.inner.banks.context().registry.len(),
            embedding_model: self.inner.banks.context().embedder.model_id().to_string(),
            store_bytes_on_disk: self.banks().metadata_reader().size_on_disk()
                + self
                    .banks()
                    .hosted_homes()
                    .iter()
                    .filter(|h| h.partition.is_some())
                    .map(|h| h.reader().size_on_disk())
                    .sum::<u64>(),
        }
    }

    /// True once the node serves requests: started, a member of a cluster (a node waiting to join
    /// has no data to serve yet), and its store still running.
    pub fn is_ready(&self) -> bool {
        self.inner.banks.readiness().load(Ordering::SeqCst)
            && self.is_member()
            && self.inner.banks.metadata_store().failure().is_none()
            && self.partition_failure().is_none()
    }

    /// Completes, with the reason, if a store stops on a fatal error such as a full disk: the
    /// metadata group's or a partition's. The node then takes no writes there; a restart, once
    /// the cause is fixed, recovers it from its log. A partition's store counts as much as the
    /// metadata one: left running, a node would go on answering for the partition from a store
    /// that can no longer read or write.
    pub async fn store_failed(&self) -> String {
        let metadata = self.inner.banks.metadata_store().failed();
        tokio::pin!(metadata);
        loop {
            tokio::select! {
                reason = &mut metadata => return reason,
                _ = tokio::time::sleep(PARTITION_FAILURE_CHECK) => {
                    if let Some(reason) = self.partition_failure() {
                        return reason;
                    }
                }
            }
        }
    }

    fn partition_failure(&self) -> Option<String> {
        self.inner.routes.placed_partitions()?.failure()
    }

    /// Makes requests that wait for this node's replica to catch up fail at once: the node is
    /// about to stop taking Raft traffic, so it would not catch up.
    pub fn begin_shutdown(&self) {
        self.inner.banks.metadata_store().begin_shutdown();
    }

    /// Flushes access statistics, dumps indexes and stops the actors and Raft.
    pub async fn shutdown(&self) {
        if !self.inner.banks.readiness().swap(false, Ordering::SeqCst) {
            return;
        }
        for task in self.inner.tasks.lock().drain(..) {
            task.abort();
        }
        // Access statistics are a hint: without a quorum they are dropped rather than holding
        // the shutdown up.
        let _ = tokio::time::timeout(
            SHUTDOWN_FLUSH_TIMEOUT,
            self.inner.recalling.flush_access(self.banks()),
        )
        .await;
        self.inner.reviewers.stop_all();
        if let Some(link) = self.inner.routes.link() {
            link.stop();
        }
        if let Some(partitions) = self.inner.routes.placed_partitions() {
            partitions.close_all().await;
        }
        let _ = self
            .inner
            .banks
            .supervisor()
            .call(SupervisorMsg::DumpAll, Some(Duration::from_secs(60)))
            .await;
        self.inner.banks.supervisor().stop(None);
        self.inner.recalling.close();
        if let Err(e) = self.inner.banks.metadata_store().shutdown().await {
            tracing::warn!(error = %e, "store shutdown");
        }
        tracing::info!("node {} stopped", self.inner.config.node.id);
    }

    /// Test hook: makes the bank's actor panic, as a bug would. Its supervisor restarts it.
    #[cfg(feature = "test-hooks")]
    pub async fn inject_bank_panic(
        &self,
        bank: &hindsight_core::BankName,
    ) -> Result<(), crate::NodeError> {
        let view = self.banks().bank_view(bank).await?;
        let handle = self
            .inner
            .banks
            .context()
            .registry
            .get(&view.name)
            .ok_or_else(|| crate::NodeError::internal("bank stopped"))?;
        handle
            .actor
            .send_message(crate::bank::BankMsg::InjectPanic)
            .map_err(|e| crate::NodeError::internal(e.to_string()))
    }
}
