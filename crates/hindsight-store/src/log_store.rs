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
            .range(keys::log_entry(0)..=keys::log_entry(u64::MAX))
            .next_back()
            .transpose()
            .map_err(|e| StoreError::storage("reading the last log entry", e))?;
        match last {
            Some((_, bytes)) => Ok(Some(decode::<Entry>("log entry", &bytes)?.log_id)),
            None => Ok(None),
        }
    }

    /// Keys of every entry at or after `index`.
    fn keys_from(&self, index: u64) -> impl Iterator<Item = sled::Result<sled::IVec>> {
        self.tree
            .range(keys::log_entry(index)..=keys::log_entry(u64::MAX))
            .keys()
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
            Some(i) => Bound::Excluded(keys::log_entry(i)),
            None => Bound::Included(keys::log_entry(u64::MAX)),
        };
        self.tree
            .range((Bound::Included(keys::log_entry(start)), end))
            .values()
            .map(|value| {
                let bytes = value.map_err(|e| StoreError::storage("reading log entries", e))?;
                decode("log entry", &bytes)
            })
            .collect()
    }
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
        let last_log_id = self
            .last_entry_log_id()
            .map_err(logs_err(ErrorVerb::Read))?
            .or(last_purged_log_id);
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
        let mut batch = Batch::default();
        let mut appended = Vec::new();
        for entry in entries {
            let bytes = encode("log entry", &entry)
                .map_err(|e| e.into_raft(ErrorSubject::Log(entry.log_id), ErrorVerb::Write))?;
            let size = bytes.len();
            batch.insert(&keys::log_entry(entry.log_id.index), bytes);
            appended.push((entry, size));
        }
        crate::sled_gate::exclusively(|| self.tree.apply_batch(batch))
            .map_err(|e| StoreError::storage("appending log entries", e))
            .map_err(logs_err(ErrorVerb::Write))?;
        {
            let mut recent = self.recent.lock();
            for (entry, size) in appended {
                recent.appended(entry, size);
            }
        }
        // Raft may count an entry towards a quorum as soon as the callback fires, so the fsync must
        // come first.
        match crate::sled_gate::flush(&self.db).await {
            Ok(_) => {
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                let error = StoreError::storage("flushing appended log entries", &e);
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
        // The mark and the removals go in one transaction: a crash can never leave entries gone
        // while the mark still points before them, which would make the log look like it had a hole.
        let mark = encode("purge mark", &log_id).map_err(logs_err(ErrorVerb::Delete))?;
        self.recent.lock().purged(log_id.index);
        let mut batch = Batch::default();
        for key in self
            .tree
            .range(keys::log_entry(0)..=keys::log_entry(log_id.index))
            .keys()
        {
            let key = key
                .map_err(|e| StoreError::storage("listing log entries to purge", e))
                .map_err(logs_err(ErrorVerb::Delete))?;
            batch.remove(key);
        }
        crate::sled_gate::exclusively(|| {
            (&self.tree, &self.meta).transaction(|(entries, meta)| {
                entries.apply_batch(&batch)?;
                meta.insert(keys::LOG_LAST_PURGED, mark.as_slice())?;
                Ok::<_, ConflictableTransactionError<()>>(())
            })
        })
        .map_err(|e| StoreError::storage("purging the log", format!("{e:?}")))
        .map_err(logs_err(ErrorVerb::Delete))?;
        self.flush().await.map_err(logs_err(ErrorVerb::Delete))
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
