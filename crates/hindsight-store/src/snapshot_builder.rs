use openraft::{ErrorSubject, ErrorVerb, RaftSnapshotBuilder, Snapshot, StorageError};

use crate::error::StoreError;
use crate::snapshot_store::{Built, Meta, SnapshotStore};
use crate::type_config::TypeConfig;

/// Finishes a snapshot whose bytes were captured when openraft asked for the builder.
///
/// openraft runs `build_snapshot` on its own task, concurrently with further applies, and sled has
/// no point-in-time view; so the state is serialised in `get_snapshot_builder`, which runs between
/// applies, into a file of its own, and this builder only makes it the current snapshot.
pub struct StateSnapshotBuilder {
    captured: Option<Result<(Meta, Built), StoreError>>,
    snapshots: SnapshotStore,
}

impl StateSnapshotBuilder {
    pub(crate) fn new(
        captured: Result<(Meta, Built), StoreError>,
        snapshots: SnapshotStore,
    ) -> Self {
        StateSnapshotBuilder {
            captured: Some(captured),
            snapshots,
        }
    }
}

impl RaftSnapshotBuilder<TypeConfig> for StateSnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError<u64>> {
        let raft_err = |e: StoreError| e.into_raft(ErrorSubject::Snapshot(None), ErrorVerb::Write);
        let (meta, built) = self
            .captured
            .take()
            .unwrap_or_else(|| Err(StoreError::Internal("snapshot builder used twice".into())))
            .map_err(raft_err)?;
        // Opened before it is saved: the handle reads the data even if a newer snapshot
        // replaces it meanwhile.
        let data = std::fs::File::open(built.path())
            .map_err(|e| raft_err(StoreError::storage("opening the built snapshot", e)))?;
        let bytes = built.len();
        self.snapshots.save(&meta, built).await.map_err(raft_err)?;
        tracing::info!(snapshot = %meta, bytes, "built snapshot");
        Ok(Snapshot {
            meta,
            snapshot: Box::new(tokio::fs::File::from_std(data)),
        })
    }
}
