use std::path::PathBuf;
use std::sync::Arc;

use openraft::{ErrorSubject, ErrorVerb, RaftSnapshotBuilder, Snapshot, StorageError};
use sled::Tree;

use crate::error::StoreError;
use crate::snapshot_capture::Capture;
use crate::snapshot_format;
use crate::snapshot_store::{Built, Meta, SnapshotStore};
use crate::type_config::TypeConfig;

/// Writes a snapshot of the state as it was when openraft asked for the builder, and makes it the
/// current snapshot.
///
/// openraft runs `build_snapshot` on its own task while applies go on. The state machine started
/// the [`Capture`] between two applies and records before-images from then on, so the tree is read
/// here, on a blocking thread, as it was at `meta`'s last log id (see `snapshot_capture`).
pub struct StateSnapshotBuilder {
    pending: Option<Pending>,
    snapshots: SnapshotStore,
}

/// A capture that was started, or the error that kept it from starting.
pub(crate) enum Pending {
    Capture {
        group: u64,
        meta: Meta,
        tree: Tree,
        capture: Arc<Capture>,
        path: PathBuf,
    },
    Failed(StoreError),
}

impl StateSnapshotBuilder {
    pub(crate) fn new(pending: Pending, snapshots: SnapshotStore) -> Self {
        StateSnapshotBuilder {
            pending: Some(pending),
            snapshots,
        }
    }

    pub(crate) async fn build(&mut self) -> Result<(Meta, Built), StoreError> {
        let (group, meta, tree, capture, path) = match self.pending.take() {
            Some(Pending::Capture {
                group,
                meta,
                tree,
                capture,
                path,
            }) => (group, meta, tree, capture, path),
            Some(Pending::Failed(e)) => return Err(e),
            None => return Err(StoreError::Internal("snapshot builder used twice".into())),
        };
        let reading = capture.clone();
        let (done, written) = tokio::sync::oneshot::channel();
        // A thread of its own, at a lower priority: it is the one long piece of work here that
        // no request waits for, and on a busy machine it should take only what requests leave
        // (every replica builds at the same log index, so all of them read at once).
        let spawned = std::thread::Builder::new()
            .name("hindsight-snapshot".into())
            .spawn(move || {
                lower_priority_of_this_thread();
                let written = snapshot_format::write_file(group, reading.pairs(&tree), &path)
                    .map(|w| (path, w));
                reading.finish();
                let _ = done.send(written);
            });
        let written = match spawned {
            Ok(_) => written.await.map_err(|_| {
                StoreError::Internal("the snapshot's writer stopped without an answer".into())
            }),
            Err(e) => Err(StoreError::storage("starting the snapshot's writer", e)),
        };
        // A writer that failed to start or panicked must not leave applies recording for ever.
        capture.finish();
        let (path, written) = written??;
        Ok((meta, Built::written(path, written)))
    }
}

impl Drop for StateSnapshotBuilder {
    /// A builder dropped unused ends its capture, so that applies stop recording before-images.
    fn drop(&mut self) {
        if let Some(Pending::Capture { capture, .. }) = &self.pending {
            capture.finish();
        }
    }
}

impl RaftSnapshotBuilder<TypeConfig> for StateSnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError<u64>> {
        let raft_err = |e: StoreError| e.into_raft(ErrorSubject::Snapshot(None), ErrorVerb::Write);
        let (meta, built) = self.build().await.map_err(raft_err)?;
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

/// How much lower than the serving threads the snapshot's writer runs: `nice` 10 gets about a
/// tenth of the CPU a `nice` 0 thread gets when both want it, and all of an idle one.
const WRITER_NICENESS: i32 = 10;

/// On Linux a thread's nice value is its own. Failing to lower it is harmless (the writer only
/// competes harder), so it is not reported.
#[cfg(target_os = "linux")]
fn lower_priority_of_this_thread() {
    // SAFETY: gettid has no preconditions; getpriority and setpriority only read their arguments.
    unsafe {
        let tid = libc::gettid() as libc::id_t;
        if libc::getpriority(libc::PRIO_PROCESS, tid) < WRITER_NICENESS {
            libc::setpriority(libc::PRIO_PROCESS, tid, WRITER_NICENESS);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_priority_of_this_thread() {}
