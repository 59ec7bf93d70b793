use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openraft::{BasicNode, LogId, SnapshotMeta};
use sled::Db;
use tokio::sync::Mutex;

use crate::codec::{decode, encode};
use crate::error::StoreError;
use crate::file_digest::FileDigest;
use crate::keys;
use crate::move_aside::move_aside;
use crate::seal::sync_dir;

pub(crate) type Meta = SnapshotMeta<u64, BasicNode>;

/// `"HSSNAPF1" | meta_len u32 | meta (bincode) | data_len u64 | data | digest u64`, big-endian; the
/// digest covers everything before it. The data carries its own checksum too (`snapshot_format`),
/// but the meta says which log entries the snapshot stands for, and must not be trusted unchecked.
const MAGIC: &[u8; 8] = b"HSSNAPF1";

/// The persisted current snapshot of a group, in a file of its own beside the state database:
/// openraft purges the log behind a snapshot, so the snapshot must survive the loss of the state
/// database it was built from (see `DESIGN.md`, "Corrupt store files").
///
/// Snapshots are built on a spawned task while the state machine may be installing one received from
/// the leader; the lock plus the "never go backwards" check keep an older build from replacing a newer
/// install.
#[derive(Clone)]
pub(crate) struct SnapshotStore {
    file: PathBuf,
    /// The last log id of the stored snapshot (`None` inside: a snapshot of nothing applied); the
    /// outer `None` when there is no snapshot. Guarded by the write lock.
    stored: Arc<Mutex<Option<Option<LogId<u64>>>>>,
}

/// The file of `group`'s current snapshot in `snapshot_dir`.
pub(crate) fn snapshot_file(snapshot_dir: &Path, group: u64) -> PathBuf {
    snapshot_dir.join(format!("g{group:016x}.snapshot"))
}

impl SnapshotStore {
    /// Opens the snapshot file, moving it aside if it is corrupt. A snapshot an older layout kept in
    /// the state database (`legacy_db`) moves to the file.
    pub(crate) fn open(file: PathBuf, legacy_db: &Db, group: u64) -> Result<Self, StoreError> {
        let io_error = |doing: &str, path: &Path| {
            let doing = format!("{doing} {}", path.display());
            move |e: io::Error| StoreError::storage(doing, e)
        };
        let dir = file
            .parent()
            .expect("a snapshot file has a directory")
            .to_path_buf();
        fs::create_dir_all(&dir).map_err(io_error("creating", &dir))?;
        let _ = fs::remove_file(temporary(&file));
        let store = SnapshotStore {
            file: file.clone(),
            stored: Arc::new(Mutex::new(None)),
        };
        let stored = match read_file(&file) {
            Ok(Some((meta, _))) => Some(meta.last_log_id),
            Ok(None) => None,
            Err(FileError::Corrupt(why)) => {
                let kept = move_aside(&file).map_err(io_error("moving aside", &file))?;
                tracing::error!(
                    path = %file.display(),
                    moved_to = %kept.display(),
                    reason = %why,
                    "the current snapshot is corrupt: it was moved aside and will not be \
                     installed; a new one is built from the state",
                );
                None
            }
            Err(FileError::Io(e)) => return Err(io_error("reading", &file)(e)),
        };
        *store.stored.try_lock().expect("not shared yet") = stored;
        store.move_legacy_snapshot(legacy_db, group)?;
        Ok(store)
    }

    fn move_legacy_snapshot(&self, db: &Db, group: u64) -> Result<(), StoreError> {
        let name = keys::snapshot_tree(group);
        if !db.tree_names().iter().any(|n| n == name.as_bytes()) {
            return Ok(());
        }
        let tree = db
            .open_tree(&name)
            .map_err(|e| StoreError::storage("opening the old snapshot tree", e))?;
        let read = |key: &[u8]| {
            tree.get(key)
                .map_err(|e| StoreError::storage("reading the old snapshot tree", e))
        };
        if let (Some(meta), Some(data)) = (read(keys::SNAPSHOT_META)?, read(keys::SNAPSHOT_DATA)?) {
            let meta: Meta = decode("snapshot meta", &meta)?;
            let mut stored = self.stored.try_lock().expect("not shared yet");
            if *stored < Some(meta.last_log_id) {
                write_file(&self.file, &meta, &data)?;
                *stored = Some(meta.last_log_id);
                tracing::info!(path = %self.file.display(), "moved the snapshot out of the state database");
            }
        }
        drop(tree);
        db.drop_tree(&name)
            .map_err(|e| StoreError::storage("dropping the old snapshot tree", e))?;
        Ok(())
    }

    /// The stored snapshot; an error when it no longer reads back as written.
    pub(crate) fn load(&self) -> Result<Option<(Meta, Vec<u8>)>, StoreError> {
        read_file(&self.file).map_err(|e| match e {
            FileError::Io(e) => StoreError::storage(format!("reading {}", self.file.display()), e),
            FileError::Corrupt(why) => {
                StoreError::codec(format!("snapshot {}", self.file.display()), why)
            }
        })
    }

    /// Stores `meta` and `data` as the current snapshot unless a newer one is already stored.
    /// Returns whether it was stored.
    pub(crate) async fn save(&self, meta: &Meta, data: &[u8]) -> Result<bool, StoreError> {
        let mut stored = self.stored.lock().await;
        if *stored > Some(meta.last_log_id) {
            return Ok(false);
        }
        // A snapshot holds the whole state: a copy of it for a blocking task would double the
        // memory a snapshot costs, so the write blocks this worker thread instead.
        match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
            Ok(tokio::runtime::RuntimeFlavor::MultiThread) => {
                tokio::task::block_in_place(|| write_file(&self.file, meta, data))?
            }
            _ => write_file(&self.file, meta, data)?,
        }
        *stored = Some(meta.last_log_id);
        Ok(true)
    }
}

fn temporary(file: &Path) -> PathBuf {
    let mut name = file.file_name().expect("a file name").to_os_string();
    name.push(".tmp");
    file.with_file_name(name)
}

/// Writes beside the file, syncs, renames over it and syncs the directory: a crash leaves the old
/// snapshot or the new one, never half of one. Streamed, so that writing costs no second copy of
/// the data.
fn write_file(file: &Path, meta: &Meta, data: &[u8]) -> Result<(), StoreError> {
    let meta_bytes = encode("snapshot meta", meta)?;
    let meta_len = u32::try_from(meta_bytes.len())
        .map_err(|_| StoreError::codec("snapshot meta", "over 4 GiB"))?;
    let temporary = temporary(file);
    let io_error = |e| StoreError::storage(format!("writing {}", file.display()), e);
    let mut out = io::BufWriter::new(File::create(&temporary).map_err(io_error)?);
    let mut digest = FileDigest::new();
    for piece in [
        MAGIC.as_slice(),
        &meta_len.to_be_bytes(),
        &meta_bytes,
        &(data.len() as u64).to_be_bytes(),
        data,
    ] {
        digest.update(piece);
        out.write_all(piece).map_err(io_error)?;
    }
    out.write_all(&digest.finish().to_be_bytes())
        .map_err(io_error)?;
    let out = out.into_inner().map_err(|e| io_error(e.into_error()))?;
    out.sync_all().map_err(io_error)?;
    drop(out);
    fs::rename(&temporary, file).map_err(io_error)?;
    sync_dir(file.parent().expect("a directory")).map_err(io_error)
}

enum FileError {
    Io(io::Error),
    Corrupt(String),
}

fn read_file(file: &Path) -> Result<Option<(Meta, Vec<u8>)>, FileError> {
    let bytes = match fs::read(file) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(FileError::Io(e)),
    };
    let corrupt = |why: &str| FileError::Corrupt(why.to_string());
    let body_len = bytes
        .len()
        .checked_sub(8)
        .filter(|&n| n >= MAGIC.len() + 4 + 8)
        .ok_or_else(|| corrupt("too short to be a snapshot file"))?;
    let (body, sum) = bytes.split_at(body_len);
    let mut digest = FileDigest::new();
    digest.update(body);
    if digest.finish().to_be_bytes() != sum {
        return Err(corrupt(
            "its checksum does not match: the file is damaged or truncated",
        ));
    }
    if &body[..MAGIC.len()] != MAGIC {
        return Err(corrupt("not a Hindsight snapshot file (bad magic)"));
    }
    let rest = &body[MAGIC.len()..];
    let meta_len = u32::from_be_bytes(rest[..4].try_into().expect("4 bytes")) as usize;
    let rest = &rest[4..];
    if rest.len() < meta_len + 8 {
        return Err(corrupt("the meta runs past the end"));
    }
    let (meta_bytes, rest) = rest.split_at(meta_len);
    let data_len = u64::from_be_bytes(rest[..8].try_into().expect("8 bytes"));
    let data = &rest[8..];
    if data.len() as u64 != data_len {
        return Err(corrupt("the data is not as long as its header says"));
    }
    let meta: Meta =
        decode("snapshot meta", meta_bytes).map_err(|e| FileError::Corrupt(e.to_string()))?;
    // The data is most of the file: it is cut out of the bytes read rather than copied.
    let data_start = bytes.len() - 8 - data.len();
    let mut bytes = bytes;
    bytes.truncate(body_len);
    bytes.drain(..data_start);
    Ok(Some((meta, bytes)))
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use openraft::{CommittedLeaderId, Membership, StoredMembership};

    use super::*;

    fn meta(index: u64) -> Meta {
        let membership = Membership::new(
            vec![BTreeSet::from([1u64])],
            BTreeMap::from([(1u64, BasicNode::new("127.0.0.1:7400"))]),
        );
        let last = LogId::new(CommittedLeaderId::new(1, 1), index);
        SnapshotMeta {
            last_log_id: Some(last),
            last_membership: StoredMembership::new(Some(last), membership),
            snapshot_id: format!("s{index}"),
        }
    }

    #[tokio::test]
    async fn a_saved_snapshot_reads_back_and_an_older_one_does_not_replace_it() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new().temporary(true).open().unwrap();
        let file = snapshot_file(dir.path(), 0);
        let store = SnapshotStore::open(file.clone(), &db, 0).unwrap();
        assert!(store.load().unwrap().is_none());
        assert!(store.save(&meta(5), b"five").await.unwrap());
        assert!(!store.save(&meta(4), b"four").await.unwrap());
        let reopened = SnapshotStore::open(file, &db, 0).unwrap();
        let (m, data) = reopened.load().unwrap().unwrap();
        assert_eq!((m, data), (meta(5), b"five".to_vec()));
        assert!(!reopened.save(&meta(4), b"four").await.unwrap());
    }

    #[tokio::test]
    async fn a_corrupt_snapshot_file_is_moved_aside_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new().temporary(true).open().unwrap();
        let file = snapshot_file(dir.path(), 0);
        let store = SnapshotStore::open(file.clone(), &db, 0).unwrap();
        store.save(&meta(5), b"the state").await.unwrap();
        let mut bytes = fs::read(&file).unwrap();
        let at = bytes.len() - 12;
        bytes[at] ^= 1;
        fs::write(&file, &bytes).unwrap();
        assert!(store.load().is_err(), "a damaged file is not loaded");

        let reopened = SnapshotStore::open(file.clone(), &db, 0).unwrap();
        assert!(reopened.load().unwrap().is_none());
        let kept: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().contains(".corrupt-"))
            .collect();
        assert_eq!(kept.len(), 1);
        assert_eq!(fs::read(&kept[0]).unwrap(), bytes);
        assert!(reopened.save(&meta(3), b"older is fine now").await.unwrap());
    }

    #[tokio::test]
    async fn a_snapshot_kept_in_the_state_database_moves_to_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new().temporary(true).open().unwrap();
        let tree = db.open_tree(keys::snapshot_tree(0)).unwrap();
        tree.insert(keys::SNAPSHOT_META, encode("meta", &meta(7)).unwrap())
            .unwrap();
        tree.insert(keys::SNAPSHOT_DATA, &b"seven"[..]).unwrap();
        drop(tree);
        let store = SnapshotStore::open(snapshot_file(dir.path(), 0), &db, 0).unwrap();
        assert_eq!(store.load().unwrap(), Some((meta(7), b"seven".to_vec())));
        let name = keys::snapshot_tree(0);
        assert!(!db.tree_names().iter().any(|n| n == name.as_bytes()));
    }
}
