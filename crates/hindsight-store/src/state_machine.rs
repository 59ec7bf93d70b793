use std::fs::File;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use hindsight_core::apply::apply;
use openraft::storage::RaftStateMachine;
use openraft::{
    BasicNode, EntryPayload, ErrorSubject, ErrorVerb, LogId, OptionalSend, Snapshot, StorageError,
    StoredMembership,
};
use serde::de::DeserializeOwned;
use sled::{Batch, Db, Tree};

use crate::checked_db::CheckedDb;
use crate::codec::{decode, encode};
use crate::error::StoreError;
use crate::keys;
use crate::listener::ApplyListener;
use crate::overlay::Overlay;
use crate::reader::{SharedState, StateReader};
use crate::release::ReleaseToken;
use crate::response::CommandResponse;
use crate::snapshot_builder::{Pending, StateSnapshotBuilder};
use crate::snapshot_capture::Capture;
use crate::snapshot_format;
use crate::snapshot_store::{blocking, Meta, SnapshotStore};
use crate::type_config::TypeConfig;

type Entry = openraft::Entry<TypeConfig>;

/// The Raft state machine of one group: core commands applied to a sled tree.
///
/// Each log entry is applied through `hindsight_core::apply::apply` against an [`Overlay`] and
/// committed, together with the new last-applied id (and membership), as one sled batch: after a
/// crash an entry is either wholly applied or not at all, and openraft re-applies the rest from the
/// log. Applies are not flushed one by one; the log is the durable record until a snapshot, and
/// building a snapshot flushes first so the log can be purged behind it.
///
/// A snapshot install loads a new generation of the state tree beside the live one, flushes, then
/// flips the generation pointer (one key, flushed) and drops the old tree. A crash before the flip
/// leaves the old state; after it, the new one; a half-loaded generation is dropped on open.
pub struct StateMachineStore {
    group: u64,
    db: Db,
    shared: Arc<SharedState>,
    generation: u64,
    last_applied: Option<LogId<u64>>,
    membership: StoredMembership<u64, BasicNode>,
    snapshots: SnapshotStore,
    listener: Arc<dyn ApplyListener>,
    release: Option<ReleaseToken>,
    /// Where the database found corrupt at open was moved; this one then started empty.
    moved_aside: Option<PathBuf>,
    /// The snapshot being read while applies go on, which each apply tells what it changes.
    capture: Option<Arc<Capture>>,
}

impl StateMachineStore {
    /// Opens (or creates) the state database at `path` and the state of `group` inside it; the
    /// current snapshot is kept in a file of its own in `<path>.snapshots/`.
    /// `listener` hears about every entry applied from here on, including re-applies at start-up.
    ///
    /// A database that fails its checks is moved aside untouched and an empty one takes its place
    /// (see `checked_db`); [`StateMachineStore::moved_aside`] then says where it went.
    pub fn open(
        path: &Path,
        group: u64,
        cache_capacity_bytes: u64,
        listener: Arc<dyn ApplyListener>,
    ) -> Result<Self, StoreError> {
        let checked = CheckedDb::open(path, cache_capacity_bytes, "the state database")?;
        let mut state = Self::with_db(checked.db, group, &snapshot_dir_of(path), listener)?;
        state.moved_aside = checked.moved_aside;
        Ok(state)
    }

    /// Uses an already open database, so several groups can share one; each group's snapshot is a
    /// file in `snapshot_dir`.
    pub fn with_db(
        db: Db,
        group: u64,
        snapshot_dir: &Path,
        listener: Arc<dyn ApplyListener>,
    ) -> Result<Self, StoreError> {
        let generation: u64 =
            read(&db, "state generation", &keys::active_generation(group))?.unwrap_or(0);
        for name in db.tree_names() {
            match keys::state_tree_generation(group, &name) {
                Some(g) if g != generation => {
                    tracing::info!(group, generation = g, "dropping a stale state generation");
                    db.drop_tree(&name)
                        .map_err(|e| StoreError::storage("dropping a stale state tree", e))?;
                }
                _ => {}
            }
        }
        let tree = db
            .open_tree(keys::state_tree(group, generation))
            .map_err(|e| StoreError::storage("opening the state tree", e))?;
        let last_applied: Option<LogId<u64>> = read(&tree, "last applied", keys::LAST_APPLIED)?;
        let membership = read(&tree, "membership", keys::MEMBERSHIP)?.unwrap_or_default();
        let snapshots = SnapshotStore::open(snapshot_dir, group, &db)?;
        let shared = SharedState::new(tree, last_applied.map(|l| l.index), db.clone());
        Ok(StateMachineStore {
            group,
            db,
            shared,
            generation,
            last_applied,
            membership,
            snapshots,
            listener,
            release: None,
            moved_aside: None,
            capture: None,
        })
    }

    /// Where the state database was moved when it was found corrupt at open.
    pub fn moved_aside(&self) -> Option<&Path> {
        self.moved_aside.as_deref()
    }

    pub(crate) fn last_applied(&self) -> Option<LogId<u64>> {
        self.last_applied
    }

    /// Loads the current snapshot into the state when the state is behind it, which happens only
    /// when the state database was lost (or rolled back) and replaced: the log behind the snapshot
    /// may be purged, so it could not replay what the snapshot holds. Returns the snapshot's last
    /// log id when it loaded it.
    pub(crate) async fn catch_up_with_snapshot(
        &mut self,
    ) -> Result<Option<LogId<u64>>, StoreError> {
        let Some((meta, data)) = self.snapshots.current().await? else {
            return Ok(None);
        };
        if meta.last_log_id <= self.last_applied {
            return Ok(None);
        }
        self.replace_state(&meta, data).await?;
        tracing::warn!(snapshot = %meta, "restored the state from the current snapshot");
        self.notify_snapshot_installed();
        Ok(meta.last_log_id)
    }

    /// Builds and stores a snapshot of the state as it is, so that the log may start after it.
    pub(crate) async fn snapshot_now(&mut self) -> Result<(), StoreError> {
        let pending = self.start_capture().await;
        let (meta, built) = StateSnapshotBuilder::new(pending, self.snapshots.clone())
            .build()
            .await?;
        let bytes = built.len();
        self.snapshots.save(&meta, built).await?;
        tracing::info!(snapshot = %meta, bytes, "built snapshot");
        Ok(())
    }

    fn notify_snapshot_installed(&self) {
        if catch_unwind(AssertUnwindSafe(|| self.listener.on_snapshot_installed())).is_err() {
            tracing::error!("apply listener panicked on snapshot install");
        }
    }

    pub fn reader(&self) -> StateReader {
        StateReader::new(self.shared.clone())
    }

    pub(crate) fn db(&self) -> &Db {
        &self.db
    }

    pub(crate) fn hold(&mut self, token: ReleaseToken) {
        self.release = Some(token);
    }

    fn apply_entry(&mut self, tree: &Tree, entry: Entry) -> Result<CommandResponse, StoreError> {
        let started = Instant::now();
        let log_id = entry.log_id;
        let mut effects = Vec::new();
        let mut overlay = Overlay::new(tree);
        let mut membership = None;
        let outcome = match &entry.payload {
            EntryPayload::Blank => None,
            EntryPayload::Normal(command) => {
                Some(apply(&mut overlay, command, log_id.index, &mut effects))
            }
            EntryPayload::Membership(m) => {
                membership = Some(StoredMembership::new(Some(log_id), m.clone()));
                None
            }
        };
        if let Some(capture) = self.capture.clone() {
            if capture.is_finished() {
                self.capture = None;
            } else {
                // The membership key is recorded whether or not this entry changes it: an image of
                // an unchanged key is its value.
                let meta = [keys::LAST_APPLIED, keys::MEMBERSHIP];
                capture.before_write(tree, overlay.keys().chain(meta))?;
            }
        }
        let mut batch = overlay.into_batch()?;
        batch.insert(keys::LAST_APPLIED, encode("last applied", &log_id)?);
        if let Some(m) = &membership {
            batch.insert(keys::MEMBERSHIP, encode("membership", m)?);
        }
        crate::sled_gate::exclusively(|| tree.apply_batch(batch))
            .map_err(|e| StoreError::storage(format!("applying entry {log_id}"), e))?;

        self.last_applied = Some(log_id);
        if let Some(m) = membership {
            self.membership = m;
        }
        self.shared.set_applied(Some(log_id.index));
        // A listener bug must not stop the store of record; derived state can be rebuilt.
        if catch_unwind(AssertUnwindSafe(|| {
            self.listener.on_apply(log_id.index, &effects)
        }))
        .is_err()
        {
            tracing::error!(index = log_id.index, "apply listener panicked");
        }
        metrics::histogram!("hindsight_store_apply_duration_seconds")
            .record(started.elapsed().as_secs_f64());
        Ok(CommandResponse { outcome })
    }

    /// Starts a snapshot of the state as it is: flushed first, then read by the builder while
    /// applies go on (see `snapshot_capture`). Runs between applies.
    async fn start_capture(&mut self) -> Pending {
        // Durable before the snapshot exists: openraft purges the log behind a snapshot, and
        // re-applying after a crash needs either the state on disk or the log.
        let flushing = Instant::now();
        match crate::sled_gate::flush(&self.db).await {
            Ok(bytes) => tracing::info!(
                group = self.group,
                bytes,
                took_ms = flushing.elapsed().as_millis() as u64,
                "state flushed for a snapshot"
            ),
            Err(e) => {
                return Pending::Failed(StoreError::storage("flushing state before a snapshot", e))
            }
        }
        if let Some(earlier) = self.capture.take() {
            // openraft builds one snapshot at a time; an earlier capture still reading would
            // miss the before-images of the applies from here on.
            earlier.finished().await;
        }
        let capture = Arc::new(Capture::default());
        self.capture = Some(capture.clone());
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let at = self.last_applied.map_or_else(
            || "none".to_string(),
            |l| format!("{}-{}", l.leader_id.term, l.index),
        );
        Pending::Capture {
            group: self.group,
            meta: Meta {
                last_log_id: self.last_applied,
                last_membership: self.membership.clone(),
                snapshot_id: format!("g{}-{at}-{millis}", self.group),
            },
            tree: self.shared.tree().clone(),
            capture,
            path: self.snapshots.building_path(),
        }
    }

    /// Keeps a copy of the received snapshot, loads the state from the copy, and makes it the
    /// current snapshot.
    async fn install(&mut self, meta: &Meta, received: File) -> Result<(), StoreError> {
        let mut received = received;
        let built = blocking(|| self.snapshots.copy_in(&mut received))?;
        drop(received);
        let copy = File::open(built.path())
            .map_err(|e| StoreError::storage("reading the received snapshot's copy", e))?;
        self.replace_state(meta, copy).await?;
        self.snapshots.save(meta, built).await?;
        tracing::info!(snapshot = %meta, "installed snapshot");
        self.notify_snapshot_installed();
        Ok(())
    }

    /// Replaces the state with the snapshot's: loaded into the next generation, flushed, then
    /// switched to in one flushed key (see the type's comment).
    async fn replace_state(&mut self, meta: &Meta, data: File) -> Result<(), StoreError> {
        if let Some(capture) = self.capture.take() {
            // The tree being read is about to be dropped.
            capture.finished().await;
        }
        let next = self.generation + 1;
        let name = keys::state_tree(self.group, next);
        let storage = |what: &'static str| move |e| StoreError::storage(what, e);
        self.db
            .drop_tree(&name)
            .map_err(storage("clearing the next state generation"))?;
        let tree = self
            .db
            .open_tree(&name)
            .map_err(storage("creating the next state generation"))?;
        if let Err(e) = blocking(|| load_pairs(self.group, data, &tree)) {
            drop(tree);
            let _ = self.db.drop_tree(&name);
            return Err(e);
        }
        let mut batch = Batch::default();
        // The snapshot's meta is authoritative over whatever the data says.
        match meta.last_log_id {
            Some(id) => batch.insert(keys::LAST_APPLIED, encode("last applied", &id)?),
            None => batch.remove(keys::LAST_APPLIED),
        }
        batch.insert(
            keys::MEMBERSHIP,
            encode("membership", &meta.last_membership)?,
        );
        crate::sled_gate::exclusively(|| tree.apply_batch(batch))
            .map_err(storage("loading the snapshot"))?;
        crate::sled_gate::flush(&self.db)
            .await
            .map_err(storage("flushing the loaded snapshot"))?;

        self.db
            .insert(
                keys::active_generation(self.group),
                encode("state generation", &next)?,
            )
            .map_err(storage("switching the state generation"))?;
        crate::sled_gate::flush(&self.db)
            .await
            .map_err(storage("flushing the state generation switch"))?;

        let previous = std::mem::replace(&mut *self.shared.tree_mut(), tree);
        drop(previous);
        let old_name = keys::state_tree(self.group, self.generation);
        if let Err(e) = self.db.drop_tree(&old_name) {
            // Harmless: open drops every generation but the live one.
            tracing::warn!(error = %e, "could not drop the replaced state generation");
        }
        self.generation = next;
        self.last_applied = meta.last_log_id;
        self.membership = meta.last_membership.clone();
        self.shared.set_applied(meta.last_log_id.map(|l| l.index));
        Ok(())
    }
}

/// Loads the pairs of snapshot `data` into `tree`, in batches so that no more than one batch is
/// held at a time. The checksum is only known to match once every pair is read, so `tree` must
/// not be used when this fails.
fn load_pairs(group: u64, data: File, tree: &Tree) -> Result<(), StoreError> {
    const BATCH_BYTES: usize = 8 << 20;
    let mut batch = Batch::default();
    let mut held = 0;
    for pair in snapshot_format::Pairs::new(group, data)? {
        let (key, value) = pair?;
        held += key.len() + value.len();
        batch.insert(key, value);
        if held >= BATCH_BYTES {
            crate::sled_gate::exclusively(|| tree.apply_batch(std::mem::take(&mut batch)))
                .map_err(|e| StoreError::storage("loading the snapshot", e))?;
            held = 0;
        }
    }
    crate::sled_gate::exclusively(|| tree.apply_batch(batch))
        .map_err(|e| StoreError::storage("loading the snapshot", e))
}

/// The directory of the snapshot files that belong to the state database at `state_path`:
/// `<state_path>.snapshots`, beside the database, so that losing one never loses the other.
pub(crate) fn snapshot_dir_of(state_path: &Path) -> PathBuf {
    let mut name = state_path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_else(|| "state".into());
    name.push(".snapshots");
    state_path.with_file_name(name)
}

fn read<T: DeserializeOwned>(tree: &Tree, what: &str, key: &[u8]) -> Result<Option<T>, StoreError> {
    match tree
        .get(key)
        .map_err(|e| StoreError::storage(format!("reading {what}"), e))?
    {
        Some(bytes) => decode(what, &bytes).map(Some),
        None => Ok(None),
    }
}

fn sm_err(verb: ErrorVerb) -> impl FnOnce(StoreError) -> StorageError<u64> {
    move |e| e.into_raft(ErrorSubject::StateMachine, verb)
}

impl RaftStateMachine<TypeConfig> for StateMachineStore {
    type SnapshotBuilder = StateSnapshotBuilder;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<u64>>, StoredMembership<u64, BasicNode>), StorageError<u64>> {
        Ok((self.last_applied, self.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<CommandResponse>, StorageError<u64>>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let tree = self.shared.tree().clone();
        let mut responses = Vec::new();
        for entry in entries {
            let log_id = entry.log_id;
            let response = self
                .apply_entry(&tree, entry)
                .map_err(|e| e.into_raft(ErrorSubject::Apply(log_id), ErrorVerb::Write))?;
            responses.push(response);
        }
        Ok(responses)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        let pending = self.start_capture().await;
        StateSnapshotBuilder::new(pending, self.snapshots.clone())
    }

    async fn begin_receiving_snapshot(
        &mut self,
    ) -> Result<Box<tokio::fs::File>, StorageError<u64>> {
        let file = self
            .snapshots
            .receiving_file()
            .map_err(sm_err(ErrorVerb::Write))?;
        Ok(Box::new(tokio::fs::File::from_std(file)))
    }

    async fn install_snapshot(
        &mut self,
        meta: &Meta,
        snapshot: Box<tokio::fs::File>,
    ) -> Result<(), StorageError<u64>> {
        let received = snapshot.into_std().await;
        self.install(meta, received).await.map_err(|e| {
            e.into_raft(
                ErrorSubject::Snapshot(Some(meta.signature())),
                ErrorVerb::Write,
            )
        })
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<TypeConfig>>, StorageError<u64>> {
        let current = self
            .snapshots
            .current()
            .await
            .map_err(sm_err(ErrorVerb::Read))?;
        Ok(current.map(|(meta, data)| Snapshot {
            meta,
            snapshot: Box::new(tokio::fs::File::from_std(data)),
        }))
    }
}

#[cfg(test)]
mod tests {
    use hindsight_core::{BankConfig, Command, Timestamp};
    use openraft::{CommittedLeaderId, RaftSnapshotBuilder};

    use super::*;
    use crate::listener::NoopListener;
    use crate::test_support::once_unlocked;

    fn create_bank(index: u64, name: &str) -> Entry {
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
            payload: EntryPayload::Normal(Arc::new(Command::CreateBank {
                config: BankConfig::new(name.parse().unwrap(), Timestamp(1)),
            })),
        }
    }

    #[tokio::test]
    async fn a_half_loaded_generation_is_dropped_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state");
        let mut sm = StateMachineStore::open(&path, 0, 1 << 20, Arc::new(NoopListener)).unwrap();
        sm.apply([create_bank(1, "kept")]).await.unwrap();
        drop(sm);

        // What a crash between loading a snapshot and switching to it leaves behind.
        let db = once_unlocked(|| {
            sled::open(&path).map_err(|e| crate::StoreError::storage("opening the state", e))
        })
        .unwrap();
        let stale = db.open_tree(keys::state_tree(0, 1)).unwrap();
        stale
            .insert(keys::bank(&"stale".parse().unwrap()), &b"x"[..])
            .unwrap();
        db.flush().unwrap();
        drop((stale, db));

        let sm =
            once_unlocked(|| StateMachineStore::open(&path, 0, 1 << 20, Arc::new(NoopListener)))
                .unwrap();
        let reader = sm.reader();
        let names: Vec<String> = reader
            .banks()
            .unwrap()
            .into_iter()
            .map(|b| b.name.to_string())
            .collect();
        assert_eq!(names, vec!["kept".to_string()]);
        assert_eq!(reader.last_applied_index(), 1);
        let stale_name = keys::state_tree(0, 1);
        assert!(!sm
            .db()
            .tree_names()
            .iter()
            .any(|n| n == stale_name.as_bytes()));
    }

    fn delete_bank(index: u64, name: &str) -> Entry {
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
            payload: EntryPayload::Normal(Arc::new(Command::DeleteBank {
                name: name.parse().unwrap(),
            })),
        }
    }

    fn bank_names(sm: &StateMachineStore) -> Vec<String> {
        let mut names: Vec<String> = sm
            .reader()
            .banks()
            .unwrap()
            .into_iter()
            .map(|b| b.name.to_string())
            .collect();
        names.sort();
        names
    }

    #[tokio::test]
    async fn a_snapshot_holds_the_state_it_was_asked_at_while_later_entries_apply() {
        let dir = tempfile::tempdir().unwrap();
        let mut sm =
            StateMachineStore::open(&dir.path().join("a"), 0, 1 << 20, Arc::new(NoopListener))
                .unwrap();
        sm.apply([
            create_bank(1, "a"),
            create_bank(2, "b"),
            create_bank(3, "c"),
        ])
        .await
        .unwrap();
        let mut builder = sm.get_snapshot_builder().await;
        // Applied before the builder reads anything: a deletion, a new key ahead of every other,
        // a key deleted and created again.
        sm.apply([
            delete_bank(4, "b"),
            create_bank(5, "zz"),
            delete_bank(6, "c"),
            create_bank(7, "c"),
        ])
        .await
        .unwrap();
        let snapshot = builder.build_snapshot().await.unwrap();
        assert_eq!(snapshot.meta.last_log_id.map(|l| l.index), Some(3));
        assert_eq!(bank_names(&sm), ["a", "c", "zz"]);

        let mut other =
            StateMachineStore::open(&dir.path().join("b"), 0, 1 << 20, Arc::new(NoopListener))
                .unwrap();
        other
            .install_snapshot(&snapshot.meta, snapshot.snapshot)
            .await
            .unwrap();
        assert_eq!(bank_names(&other), ["a", "b", "c"]);
        assert_eq!(other.reader().last_applied_index(), 3);
        let (applied, _) = other.applied_state().await.unwrap();
        assert_eq!(applied.map(|l| l.index), Some(3));

        // The capture ended with the build: later applies record nothing more.
        sm.apply([create_bank(8, "late")]).await.unwrap();
        assert!(sm.capture.is_none());
    }

    #[tokio::test]
    async fn groups_sharing_a_database_do_not_see_each_other() {
        let db = sled::Config::new().temporary(true).open().unwrap();
        let snapshots = tempfile::tempdir().unwrap();
        let open = |db, group| {
            StateMachineStore::with_db(db, group, snapshots.path(), Arc::new(NoopListener)).unwrap()
        };
        let mut zero = open(db.clone(), 0);
        let mut one = open(db, 1);
        zero.apply([create_bank(1, "zero")]).await.unwrap();
        one.apply([create_bank(1, "one"), create_bank(2, "two")])
            .await
            .unwrap();
        assert_eq!(zero.reader().banks().unwrap().len(), 1);
        assert_eq!(one.reader().banks().unwrap().len(), 2);
        assert_eq!(zero.reader().last_applied_index(), 1);
        assert_eq!(one.reader().last_applied_index(), 2);
    }
}
