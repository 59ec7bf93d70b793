use std::sync::Arc;

use openraft::{BasicNode, LogId, SnapshotMeta};
use sled::{Batch, Db, Tree};
use tokio::sync::Mutex;

use crate::codec::{decode, encode};
use crate::error::StoreError;
use crate::keys;

pub(crate) type Meta = SnapshotMeta<u64, BasicNode>;

/// The persisted current snapshot of a group (meta and data in one batch), so that
/// `get_current_snapshot` still answers after a restart.
///
/// Snapshots are built on a spawned task while the state machine may be installing one received from
/// the leader; the lock plus the "never go backwards" check keep an older build from replacing a newer
/// install.
#[derive(Clone)]
pub(crate) struct SnapshotStore {
    db: Db,
    tree: Tree,
    write_lock: Arc<Mutex<()>>,
}

impl SnapshotStore {
    pub(crate) fn open(db: &Db, group: u64) -> Result<Self, StoreError> {
        let tree = db
            .open_tree(keys::snapshot_tree(group))
            .map_err(|e| StoreError::storage("opening the snapshot tree", e))?;
        Ok(SnapshotStore {
            db: db.clone(),
            tree,
            write_lock: Arc::new(Mutex::new(())),
        })
    }

    pub(crate) fn load(&self) -> Result<Option<(Meta, Vec<u8>)>, StoreError> {
        let read = |key: &[u8]| {
            self.tree
                .get(key)
                .map_err(|e| StoreError::storage("reading the current snapshot", e))
        };
        match (read(keys::SNAPSHOT_META)?, read(keys::SNAPSHOT_DATA)?) {
            (Some(meta), Some(data)) => Ok(Some((decode("snapshot meta", &meta)?, data.to_vec()))),
            _ => Ok(None),
        }
    }

    fn last_log_id(&self) -> Result<Option<LogId<u64>>, StoreError> {
        match self
            .tree
            .get(keys::SNAPSHOT_META)
            .map_err(|e| StoreError::storage("reading the current snapshot", e))?
        {
            Some(bytes) => Ok(decode::<Meta>("snapshot meta", &bytes)?.last_log_id),
            None => Ok(None),
        }
    }

    /// Stores `meta` and `data` as the current snapshot unless a newer one is already stored.
    /// Returns whether it was stored.
    pub(crate) async fn save(&self, meta: &Meta, data: &[u8]) -> Result<bool, StoreError> {
        let _guard = self.write_lock.lock().await;
        if self.last_log_id()? > meta.last_log_id {
            return Ok(false);
        }
        let mut batch = Batch::default();
        batch.insert(keys::SNAPSHOT_META, encode("snapshot meta", meta)?);
        batch.insert(keys::SNAPSHOT_DATA, data);
        crate::sled_gate::exclusively(|| self.tree.apply_batch(batch))
            .map_err(|e| StoreError::storage("saving the snapshot", e))?;
        crate::sled_gate::flush(&self.db)
            .await
            .map_err(|e| StoreError::storage("flushing the snapshot", e))?;
        Ok(true)
    }
}
