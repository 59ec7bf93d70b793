//! Opening a partition's replica here, and closing it (with its files, once it moved away).

use std::path::PathBuf;
use std::sync::Arc;

use hindsight_cluster::{GrpcLeaderLink, GrpcNetwork, RaftTransportService};
use hindsight_core::placement::{group_of, partition_of, PartitionId, PlacementTable};
use hindsight_store::StoreConfig;

use super::{Partitions, Replica};
use crate::error::NodeError;

impl Partitions {
    pub(super) async fn open(
        &self,
        table: &PlacementTable,
        p: PartitionId,
    ) -> Result<(), NodeError> {
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

    /// Stops serving partition `p` here and closes its store; `delete` also removes its files.
    pub(super) async fn close(&self, p: PartitionId, delete: bool) {
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

    /// The partitions with a replica directory here.
    pub(super) fn on_disk(&self) -> Vec<PartitionId> {
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
