use std::io::Cursor;

use openraft::{ErrorSubject, ErrorVerb, RaftSnapshotBuilder, Snapshot, StorageError};

use crate::error::StoreError;
use crate::snapshot_store::{Meta, SnapshotStore};
use crate::type_config::TypeConfig;

/// Finishes a snapshot whose bytes were captured when openraft asked for the builder.
///
/// openraft runs `build_snapshot` on its own task, concurrently with further applies, and sled has
/// no point-in-time view; so the state is serialised in `get_snapshot_builder`, which runs between
/// applies, and this builder only persists and returns it.
pub struct StateSnapshotBuilder {
    captured: Option<Result<(Meta, Vec<u8>), StoreError>>,
    snapshots: SnapshotStore,
}

impl StateSnapshotBuilder {
    pub(crate) fn new(
        captured: Result<(Meta, Vec<u8>), StoreError>,
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
        let (meta, data) = self
            .captured
            .take()
            .unwrap_or_else(|| Err(StoreError::Internal("snapshot builder used twice".into())))
            .map_err(raft_err)?;
        self.snapshots.save(&meta, &data).await.map_err(raft_err)?;
        tracing::info!(snapshot = %meta, bytes = data.len(), "built snapshot");
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        })
    }
}
