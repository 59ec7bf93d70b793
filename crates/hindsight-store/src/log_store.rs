use std::fmt::Debug;
use std::io;
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{ErrorSubject, ErrorVerb, LogId, OptionalSend, RaftLogReader, StorageError, Vote};
use serde::de::DeserializeOwned;
use serde::Serialize;
use sled::transaction::ConflictableTransactionError;
use sled::{Batch, Db, Transactional, Tree};

use crate::checked_db::CheckedDb;
use crate::codec::{decode, encode};
use crate::error::StoreError;
use crate::keys;
use crate::recent_entries::RecentEntries;
use crate::release::ReleaseToken;
use crate::type_config::TypeConfig;

type Entry = openraft::Entry<TypeConfig>;

/// How many of the newest entries, and about how many bytes of them, each group keeps decoded
/// beside its log (see [`RecentEntries`]): a few seconds of a busy group's writes.
const RECENT_ENTRIES: usize = 1024;
const RECENT_ENTRIES_BYTES: usize = 16 << 20;

/// An entry is stored in pieces of at most this many bytes, each under its own key.
///
/// sled keeps a page whose encoding exceeds a quarter of its segment (128 KiB by default) as a
/// blob, and its cache then counts only the blob's pointer: such pages never leave memory, so a
/// log of group-commit entries (often hundreds of KiB each) held every entry written since the
/// last purge in memory, whatever the cache size. A leaf holds at most 17 keys, so 17 pieces
/// stay under the blob size and the cache bound holds.
const PIECE_BYTES: usize = 6 * 1024;

/// The Raft log of one group, in its own sled database so that log fsyncs do not also flush the state
/// machine's pages.
///
/// Durability: `append` reports entries flushed only after `flush_async` returned, and the vote, the
/// committed index and the purge mark are flushed before their calls return. Cheap to clone; clones
/// share the database (openraft's replication tasks read through clones).
#[derive(Clone)]
pub struct LogStore {
    db: Db,
    /// The entries.
    tree: Tree,
    /// The vote, the committed index and the purge mark.
    meta: Tree,
    /// Shared by the clones, like the trees.
    recent: Arc<parking_lot::Mutex<RecentEntries>>,
    release: Option<ReleaseToken>,
    /// Where the database found corrupt at open was moved; this one then started empty.
    moved_aside: Option<PathBuf>,
}

impl LogStore {
    /// Opens (or creates) the log database at `path` and the tree of `group` inside it.
    ///
    /// A database that fails its checks is moved aside untouched and an empty one takes its place
    /// (see `checked_db`); [`LogStore::moved_aside`] then says where it went.
    pub fn open(path: &Path, group: u64, cache_capacity_bytes: u64) -> Result<Self, StoreError> {
        let checked = CheckedDb::open(path, cache_capacity_bytes, "the Raft log")?;
        let mut log = Self::with_db(checked.db, group)?;
        log.moved_aside = checked.moved_aside;
        Ok(log)
    }

    /// Uses an already open database, so several groups can share one.
    pub fn with_db(db: Db, group: u64) -> Result<Self, StoreError> {
        let tree = db
            .open_tree(keys::log_tree(group))
            .map_err(|e| StoreError::storage("opening the log tree", e))?;
        let meta = db
            .open_tree(keys::log_meta_tree(group))
            .map_err(|e| StoreError::storage("opening the log's bookkeeping tree", e))?;
        move_meta_out_of_entries(&db, &tree, &meta)?;
        Ok(LogStore {
            db,
            tree,
            meta,
            recent: Arc::new(parking_lot::Mutex::new(RecentEntries::new(
                RECENT_ENTRIES,
                RECENT_ENTRIES_BYTES,
            ))),
            release: None,
            moved_aside: None,
        })
    }

    /// Where the log database was moved when it was found corrupt at open.
    pub fn moved_aside(&self) -> Option<&Path> {
        self.moved_aside.as_deref()
    }

    /// Brings the vote and committed index of a log that ends before the applied state (it started
    /// empty in place of a corrupt one, or lost its newest entries) up to what the applied state
    /// `applied` implies, so that Raft starts from the state instead of from an older past. A vote
    /// behind `applied`'s term becomes a vote for this node in that term, not committed: a node that
    /// applied an entry of that term had voted in it, and an uncommitted vote yields to that term's
    /// real leader; elections then run in later terms.
    pub(crate) async fn resume_after(
        &mut self,
        applied: LogId<u64>,
        node_id: u64,
    ) -> Result<(), StoreError> {
        let vote: Option<Vote<u64>> = self.read_meta(keys::LOG_VOTE)?;
        if vote.is_none_or(|v| v.leader_id.term < applied.leader_id.term) {
            let vote = Vote::new(applied.leader_id.term, node_id);
            self.write_meta(keys::LOG_VOTE, &vote).await?;
        }
        let committed: Option<LogId<u64>> = self
            .read_meta::<Option<LogId<u64>>>(keys::LOG_COMMITTED)?
            .flatten();
        if committed < Some(applied) {
            self.write_meta(keys::LOG_COMMITTED, &Some(applied)).await?;
        }
        Ok(())
    }

    pub(crate) fn db(&self) -> &Db {
        &self.db
    }

    pub(crate) fn hold(&mut self, token: ReleaseToken) {
        self.release = Some(token);
    }

    fn read_meta<T: DeserializeOwned>(&self, key: &[u8]) -> Result<Option<T>, StoreError> {
        let what = String::from_utf8_lossy(key);
        match self
            .meta
            .get(key)
            .map_err(|e| StoreError::storage(format!("reading {what}"), e))?
        {
            Some(bytes) => decode(&what, &bytes).map(Some),
            None => Ok(None),
        }
    }

    async fn write_meta<T: Serialize>(&self, key: &[u8], value: &T) -> Result<(), StoreError> {
        let what = String::from_utf8_lossy(key);
        self.meta
            .insert(key, encode(&what, value)?)
            .map_err(|e| StoreError::storage(format!("writing {what}"), e))?;
        self.flush().await
    }

    async fn flush(&self) -> Result<(), StoreError> {
        crate::sled_gate::flush(&self.db)
            .await
            .map(drop)
            .map_err(|e| StoreError::storage("flushing the log", e))
    }

    fn last_entry_log_id(&self) -> Result<Option<LogId<u64>>, StoreError> {
        let last = self
            .tree
            .range(keys::log_entry(0).to_vec()..=keys::log_entry_end(u64::MAX).to_vec())
            .keys()
            .next_back()
            .transpose()
            .map_err(|e| StoreError::storage("reading the last log entry", e))?;
        let Some(index) = last.as_deref().and_then(keys::log_index_of) else {
            return Ok(None);
        };
        let last = read_entries(
            self.tree
                .range(keys::log_entry(index).to_vec()..=keys::log_entry_end(index).to_vec()),
        )?;
        Ok(last.last().map(|entry| entry.log_id))
    }

    /// Keys of every entry at or after `index`, all their pieces.
    fn keys_from(&self, index: u64) -> impl Iterator<Item = sled::Result<sled::IVec>> {
        self.tree
            .range(keys::log_entry(index).to_vec()..=keys::log_entry_end(u64::MAX).to_vec())
            .keys()
    }

    /// Stores `entries` (encoded in pieces) and flushes them to disk.
    async fn write_entries(
        &self,
        entries: impl IntoIterator<Item = Entry>,
    ) -> Result<(), StoreError> {
        let mut batch = Batch::default();
        let mut appended = Vec::new();
        for entry in entries {
            let bytes = encode("log entry", &entry)?;
            for (piece, part) in bytes.chunks(PIECE_BYTES).enumerate() {
                let piece = u32::try_from(piece).map_err(|_| {
                    StoreError::storage("appending log entries", "an entry of over 16 TiB")
                })?;
                batch.insert(&keys::log_entry_piece(entry.log_id.index, piece), part);
            }
            appended.push((entry, bytes.len()));
        }
        crate::sled_gate::exclusively(|| self.tree.apply_batch(batch))
            .map_err(|e| StoreError::storage("appending log entries", e))?;
        {
            let mut recent = self.recent.lock();
            for (entry, size) in appended {
                recent.appended(entry, size);
            }
        }
        crate::sled_gate::flush(&self.db)
            .await
            .map(drop)
            .map_err(|e| StoreError::storage("flushing appended log entries", &e))
    }

    fn entries<RB: RangeBounds<u64>>(&self, range: RB) -> Result<Vec<Entry>, StoreError> {
        let start = match range.start_bound() {
            Bound::Included(&i) => i,
            Bound::Excluded(&i) => match i.checked_add(1) {
                Some(next) => next,
                None => return Ok(vec![]),
            },
            Bound::Unbounded => 0,
        };
        // Exclusive; none when the range runs to the end of the log.
        let end = match range.end_bound() {
            Bound::Included(&i) => i.checked_add(1),
            Bound::Excluded(&i) => Some(i),
            Bound::Unbounded => None,
        };
        if let Some(held) = end.and_then(|end| self.recent.lock().get(start, end)) {
            return Ok(held);
        }
        let end = match end {
            Some(i) => Bound::Excluded(keys::log_entry(i).to_vec()),
            None => Bound::Included(keys::log_entry_end(u64::MAX).to_vec()),
        };
        read_entries(
            self.tree
                .range((Bound::Included(keys::log_entry(start).to_vec()), end)),
        )
    }
}

/// Decodes the entries stored under `keys` in order, each joined from its pieces (or whole, as an
/// older layout stored it).
fn read_entries(
    keys: impl Iterator<Item = sled::Result<(sled::IVec, sled::IVec)>>,
) -> Result<Vec<Entry>, StoreError> {
    let mut entries = Vec::new();
    let mut current: Option<(u64, Vec<sled::IVec>)> = None;
    let finish = |pieces: Vec<sled::IVec>| -> Result<Entry, StoreError> {
        match pieces.as_slice() {
            [whole] => decode("log entry", whole),
            pieces => decode("log entry", &pieces.concat()),
        }
    };
    for item in keys {
        let (key, value) = item.map_err(|e| StoreError::storage("reading log entries", e))?;
        let index = keys::log_index_of(&key).ok_or_else(|| {
            StoreError::storage("reading log entries", "a key that names no entry")
        })?;
        match &mut current {
            Some((at, pieces)) if *at == index => pieces.push(value),
            _ => {
                if let Some((_, pieces)) = current.replace((index, vec![value])) {
                    entries.push(finish(pieces)?);
                }
            }
        }
    }
    if let Some((_, pieces)) = current {
        entries.push(finish(pieces)?);
    }
    Ok(entries)
}

fn logs_err(verb: ErrorVerb) -> impl FnOnce(StoreError) -> StorageError<u64> {
    move |e| e.into_raft(ErrorSubject::Logs, verb)
}

fn vote_err(verb: ErrorVerb) -> impl FnOnce(StoreError) -> StorageError<u64> {
    move |e| e.into_raft(ErrorSubject::Vote, verb)
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError<u64>> {
        self.entries(range).map_err(logs_err(ErrorVerb::Read))
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError<u64>> {
        let last_purged_log_id: Option<LogId<u64>> = self
            .read_meta(keys::LOG_LAST_PURGED)
            .map_err(logs_err(ErrorVerb::Read))?;
        // Entries a purge interrupted by a crash left behind its mark do not count.
        let last_log_id = self
            .last_entry_log_id()
            .map_err(logs_err(ErrorVerb::Read))?
            .max(last_purged_log_id);
        Ok(LogState {
            last_purged_log_id,
            last_log_id,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<u64>) -> Result<(), StorageError<u64>> {
        self.write_meta(keys::LOG_VOTE, vote)
            .await
            .map_err(vote_err(ErrorVerb::Write))
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<u64>>, StorageError<u64>> {
        self.read_meta(keys::LOG_VOTE)
            .map_err(vote_err(ErrorVerb::Read))
    }

    async fn save_committed(
        &mut self,
        committed: Option<LogId<u64>>,
    ) -> Result<(), StorageError<u64>> {
        self.write_meta(keys::LOG_COMMITTED, &committed)
            .await
            .map_err(logs_err(ErrorVerb::Write))
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<u64>>, StorageError<u64>> {
        Ok(self
            .read_meta::<Option<LogId<u64>>>(keys::LOG_COMMITTED)
            .map_err(logs_err(ErrorVerb::Read))?
            .flatten())
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError<u64>>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        // Raft may count an entry towards a quorum as soon as the callback fires, so the fsync must
        // come first.
        match self.write_entries(entries).await {
            Ok(()) => {
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(error) => {
                callback.log_io_completed(Err(io::Error::other(error.to_string())));
                Err(logs_err(ErrorVerb::Write)(error))
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId<u64>) -> Result<(), StorageError<u64>> {
        self.recent.lock().truncated(log_id.index);
        let mut batch = Batch::default();
        for key in self.keys_from(log_id.index) {
            let key = key
                .map_err(|e| StoreError::storage("listing log entries to truncate", e))
                .map_err(logs_err(ErrorVerb::Delete))?;
            batch.remove(key);
        }
        crate::sled_gate::exclusively(|| self.tree.apply_batch(batch))
            .map_err(|e| StoreError::storage("truncating the log", e))
            .map_err(logs_err(ErrorVerb::Delete))?;
        self.flush().await.map_err(logs_err(ErrorVerb::Delete))
    }

    async fn purge(&mut self, log_id: LogId<u64>) -> Result<(), StorageError<u64>> {
        // The mark is flushed before any entry goes, so a crash in between leaves entries behind
        // the mark (removed by the next purge, never read: reads start after the mark), never a
        // log that looks like it has a hole. Not one transaction: sled's transactions keep every
        // value they remove in memory until they commit, which for a purge is the whole log
        // behind a snapshot.
        self.recent.lock().purged(log_id.index);
        self.write_meta(keys::LOG_LAST_PURGED, &log_id)
            .await
            .map_err(logs_err(ErrorVerb::Delete))?;
        let purged = self
            .tree
            .range(keys::log_entry(0).to_vec()..=keys::log_entry_end(log_id.index).to_vec())
            .keys();
        let mut batch = Batch::default();
        let mut in_batch = 0;
        for key in purged {
            let key = key
                .map_err(|e| StoreError::storage("listing log entries to purge", e))
                .map_err(logs_err(ErrorVerb::Delete))?;
            batch.remove(key);
            in_batch += 1;
            if in_batch == PURGE_BATCH_KEYS {
                self.remove(std::mem::take(&mut batch))
                    .map_err(logs_err(ErrorVerb::Delete))?;
                in_batch = 0;
            }
        }
        self.remove(batch).map_err(logs_err(ErrorVerb::Delete))?;
        self.flush().await.map_err(logs_err(ErrorVerb::Delete))
    }
}

/// Keys removed per batch when purging, so that writes to other trees wait for sled's gate no
/// longer than one batch at a time.
const PURGE_BATCH_KEYS: usize = 4096;

impl LogStore {
    fn remove(&self, batch: Batch) -> Result<(), StoreError> {
        crate::sled_gate::exclusively(|| self.tree.apply_batch(batch))
            .map_err(|e| StoreError::storage("purging the log", e))
    }
}

/// Moves bookkeeping that an older layout kept among the entries into its own tree, in one
/// transaction so that a crash leaves it in one place or the other, and flushes before the log is
/// used.
fn move_meta_out_of_entries(db: &Db, tree: &Tree, meta: &Tree) -> Result<(), StoreError> {
    let old: Vec<(sled::IVec, sled::IVec)> = tree
        .scan_prefix(keys::LOG_META_PREFIX)
        .collect::<Result<_, _>>()
        .map_err(|e| StoreError::storage("reading the log's bookkeeping", e))?;
    if old.is_empty() {
        return Ok(());
    }
    crate::sled_gate::exclusively(|| {
        (tree, meta).transaction(|(entries, meta)| {
            for (key, value) in &old {
                entries.remove(key)?;
                meta.insert(key, value)?;
            }
            Ok::<_, ConflictableTransactionError<()>>(())
        })
    })
    .map_err(|e| StoreError::storage("moving the log's bookkeeping", format!("{e:?}")))?;
    crate::sled_gate::flush_now(db)
        .map_err(|e| StoreError::storage("flushing the log's bookkeeping", e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use hindsight_core::{BankConfig, Command, Timestamp};
    use openraft::{BasicNode, CommittedLeaderId, EntryPayload, Membership};

    use super::*;
    use crate::test_support::once_unlocked;

    fn log_id(term: u64, index: u64) -> LogId<u64> {
        LogId::new(CommittedLeaderId::new(term, 1), index)
    }

    #[tokio::test]
    async fn bookkeeping_kept_among_the_entries_by_an_older_layout_moves_to_its_own_tree() {
        let dir = tempfile::tempdir().unwrap();
        let vote = Vote::new_committed(3, 2);
        let committed = Some(log_id(3, 7));
        let purged = log_id(2, 4);
        {
            let db = sled::open(dir.path()).unwrap();
            let entries = db.open_tree(keys::log_tree(0)).unwrap();
            let entry = Entry {
                log_id: log_id(3, 7),
                payload: EntryPayload::Blank,
            };
            let bytes = encode("entry", &entry).unwrap();
            entries.insert(keys::log_entry(7), bytes).unwrap();
            let vote_bytes = encode("vote", &vote).unwrap();
            entries.insert(keys::LOG_VOTE, vote_bytes).unwrap();
            let committed_bytes = encode("committed", &committed).unwrap();
            entries
                .insert(keys::LOG_COMMITTED, committed_bytes)
                .unwrap();
            let purged_bytes = encode("purged", &purged).unwrap();
            entries.insert(keys::LOG_LAST_PURGED, purged_bytes).unwrap();
            db.flush().unwrap();
        }
        let open = || once_unlocked(|| LogStore::open(dir.path(), 0, 1 << 20)).unwrap();
        let mut log = open();
        assert_eq!(log.read_vote().await.unwrap(), Some(vote));
        assert_eq!(log.read_committed().await.unwrap(), committed);
        let state = log.get_log_state().await.unwrap();
        assert_eq!(state.last_purged_log_id, Some(purged));
        assert_eq!(state.last_log_id, Some(log_id(3, 7)));
        assert_eq!(log.tree.scan_prefix(keys::LOG_META_PREFIX).count(), 0);
        assert_eq!(log.tree.len(), 1, "the entry stays where it was");

        // The bookkeeping now lives apart from the entries and survives a reopen.
        log.purge(log_id(3, 7)).await.unwrap();
        drop(log);
        let mut log = open();
        let state = log.get_log_state().await.unwrap();
        assert_eq!(state.last_purged_log_id, Some(log_id(3, 7)));
        assert_eq!(state.last_log_id, Some(log_id(3, 7)));
        assert!(log.tree.is_empty());
        assert_eq!(log.read_vote().await.unwrap(), Some(vote));
    }

    /// A normal entry whose command encodes to a little over `bytes`.
    fn entry_of_about(index: u64, bytes: usize) -> Entry {
        Entry {
            log_id: log_id(1, index),
            payload: EntryPayload::Normal(Arc::new(Command::Forget {
                id: hindsight_core::MemoryId(index.into()),
                hard: false,
                at: Timestamp(0),
                reason: "r".repeat(bytes),
            })),
        }
    }

    fn reason_len(entry: &Entry) -> usize {
        match &entry.payload {
            EntryPayload::Normal(command) => match &**command {
                Command::Forget { reason, .. } => reason.len(),
                other => panic!("unexpected command {other:?}"),
            },
            other => panic!("unexpected payload {other:?}"),
        }
    }

    fn stored_indexes(log: &LogStore) -> BTreeSet<u64> {
        log.tree
            .iter()
            .keys()
            .map(|k| keys::log_index_of(&k.unwrap()).unwrap())
            .collect()
    }

    #[tokio::test]
    async fn large_entries_are_stored_in_pieces_the_cache_can_count_and_read_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let open = || once_unlocked(|| LogStore::open(dir.path(), 0, 1 << 20)).unwrap();
        let sizes = [10, 100_000, PIECE_BYTES, 300_000, 10];
        let log = open();
        log.write_entries(
            sizes
                .iter()
                .enumerate()
                .map(|(i, &size)| entry_of_about(i as u64 + 1, size)),
        )
        .await
        .unwrap();
        let stored: Vec<usize> = log.tree.iter().values().map(|v| v.unwrap().len()).collect();
        assert!(stored.iter().all(|&len| len <= PIECE_BYTES), "{stored:?}");
        assert!(stored.len() > 60, "{} keys", stored.len());
        drop(log);

        // Reopened, nothing is held decoded: every read joins the pieces.
        let mut log = open();
        let state = log.get_log_state().await.unwrap();
        assert_eq!(state.last_log_id, Some(log_id(1, 5)));
        let all = log.try_get_log_entries(1..=5).await.unwrap();
        let read: Vec<(u64, usize)> = all
            .iter()
            .map(|e| (e.log_id.index, reason_len(e)))
            .collect();
        let written: Vec<(u64, usize)> = (1..=5).zip(sizes).collect();
        assert_eq!(read, written);
        let middle = log.try_get_log_entries(2..4).await.unwrap();
        assert_eq!(
            middle.iter().map(|e| e.log_id.index).collect::<Vec<_>>(),
            [2, 3]
        );

        // Purging and truncating take every piece of the entries they remove.
        log.purge(log_id(1, 2)).await.unwrap();
        assert_eq!(stored_indexes(&log), BTreeSet::from([3, 4, 5]));
        log.truncate(log_id(1, 4)).await.unwrap();
        assert_eq!(stored_indexes(&log), BTreeSet::from([3]));
        let state = log.get_log_state().await.unwrap();
        assert_eq!(state.last_log_id, Some(log_id(1, 3)));
        assert_eq!(
            reason_len(&log.try_get_log_entries(3..).await.unwrap()[0]),
            PIECE_BYTES
        );
    }

    #[tokio::test]
    async fn entries_a_crash_left_behind_the_purge_mark_do_not_count_and_the_next_purge_takes_them()
    {
        let dir = tempfile::tempdir().unwrap();
        let mut log = once_unlocked(|| LogStore::open(dir.path(), 0, 1 << 20)).unwrap();
        log.write_entries((1..=3).map(|i| entry_of_about(i, 20_000)))
            .await
            .unwrap();
        // A purge to 5 wrote its mark, then the node stopped before removing anything.
        log.write_meta(keys::LOG_LAST_PURGED, &log_id(1, 5))
            .await
            .unwrap();
        let state = log.get_log_state().await.unwrap();
        assert_eq!(state.last_purged_log_id, Some(log_id(1, 5)));
        assert_eq!(state.last_log_id, Some(log_id(1, 5)));

        log.write_entries((6..=7).map(|i| entry_of_about(i, 20_000)))
            .await
            .unwrap();
        log.purge(log_id(1, 6)).await.unwrap();
        assert_eq!(stored_indexes(&log), BTreeSet::from([7]));
        let state = log.get_log_state().await.unwrap();
        assert_eq!(state.last_log_id, Some(log_id(1, 7)));
    }

    #[tokio::test]
    async fn entries_an_older_layout_stored_whole_read_back_beside_pieces() {
        let dir = tempfile::tempdir().unwrap();
        let log = once_unlocked(|| LogStore::open(dir.path(), 0, 1 << 20)).unwrap();
        let whole = entry_of_about(1, 50_000);
        log.tree
            .insert(keys::log_entry(1), encode("entry", &whole).unwrap())
            .unwrap();
        log.write_entries([entry_of_about(2, 50_000)])
            .await
            .unwrap();
        let mut log = log;
        let read = log.try_get_log_entries(1..=2).await.unwrap();
        assert_eq!(
            read.iter()
                .map(|e| (e.log_id.index, reason_len(e)))
                .collect::<Vec<_>>(),
            [(1, 50_000), (2, 50_000)]
        );
        log.purge(log_id(1, 1)).await.unwrap();
        assert_eq!(stored_indexes(&log), BTreeSet::from([2]));
    }

    #[test]
    fn entries_round_trip_through_bincode_and_stay_smaller_than_json() {
        let config = BankConfig::new(
            "acme/agent-7".parse().unwrap(),
            Timestamp(1_700_000_000_000),
        );
        let nodes = BTreeMap::from([(1u64, BasicNode::new("127.0.0.1:7400"))]);
        let entries = vec![
            Entry {
                log_id: log_id(1, 0),
                payload: EntryPayload::Membership(Membership::new(
                    vec![BTreeSet::from([1u64])],
                    nodes,
                )),
            },
            Entry {
                log_id: log_id(1, 1),
                payload: EntryPayload::Blank,
            },
            Entry {
                log_id: log_id(1, 2),
                payload: EntryPayload::Normal(Arc::new(Command::CreateBank { config })),
            },
        ];
        for entry in entries {
            let bytes = encode("entry", &entry).unwrap();
            // A shared command is encoded as the command itself: logs written when entries
            // held their commands inline read back the same.
            if let EntryPayload::Normal(command) = &entry.payload {
                let inline = encode("command", &**command).unwrap();
                assert!(bytes.ends_with(&inline));
                let shared = encode("command", command).unwrap();
                assert_eq!(shared, inline);
            }
            let back: Entry = decode("entry", &bytes).unwrap();
            assert_eq!(back.log_id, entry.log_id);
            assert_eq!(
                format!("{:?}", back.payload),
                format!("{:?}", entry.payload)
            );
            let json = serde_json::to_vec(&entry).unwrap();
            assert!(
                bytes.len() <= json.len(),
                "{} > {}",
                bytes.len(),
                json.len()
            );
        }
    }
}
