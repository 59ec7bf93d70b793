use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use openraft::{BasicNode, SnapshotMeta};
use sled::Db;
use tokio::sync::Mutex;

use crate::codec::{decode, encode};
use crate::error::StoreError;
use crate::file_digest::FileDigest;
use crate::keys;
use crate::move_aside::move_aside;
use crate::seal::sync_dir;
use crate::snapshot_format::Written;

pub(crate) type Meta = SnapshotMeta<u64, BasicNode>;

/// The current-snapshot file: `"HSSNAPF2" | meta_len u32 | meta (bincode) | name_len u32 | data
/// file name | data_len u64 | data digest u64 | digest u64`, big-endian; the last digest covers
/// everything before it, the data digest the whole data file.
const MAGIC: &[u8; 8] = b"HSSNAPF2";
/// An older layout kept the data inside the current-snapshot file:
/// `"HSSNAPF1" | meta_len u32 | meta | data_len u64 | data | digest u64`. It is split on open.
const COMBINED_MAGIC: &[u8; 8] = b"HSSNAPF1";

/// The persisted current snapshot of a group, in files of its own beside the state database:
/// openraft purges the log behind a snapshot, so the snapshot must survive the loss of the state
/// database it was built from (see `DESIGN.md`, "Corrupt store files").
///
/// A snapshot holds the whole state, so its data lives in a file of its own that is written,
/// sent and installed piece by piece; a small file names the current data file and says which
/// log entries it stands for. Replacing the snapshot writes the new data file, then switches the
/// small file by rename: a crash leaves the old snapshot or the new one, and open removes the
/// data files that the small file does not name.
///
/// Snapshots are built on a spawned task while the state machine may be installing one received from
/// the leader; the lock plus the "never go backwards" check keep an older build from replacing a newer
/// install.
#[derive(Clone)]
pub(crate) struct SnapshotStore {
    dir: PathBuf,
    group: u64,
    /// The stored snapshot; `None` when there is none. Guarded by the lock, which every switch
    /// and every opening of the data file takes, so a data file is never removed while opened.
    current: Arc<Mutex<Option<Current>>>,
}

#[derive(Clone, Debug)]
struct Current {
    meta: Meta,
    data: PathBuf,
}

/// Snapshot data in a file of its own, not (yet) the current snapshot.
#[derive(Debug)]
pub(crate) struct Built {
    path: PathBuf,
    written: Written,
}

impl Built {
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The data's length in bytes.
    pub(crate) fn len(&self) -> u64 {
        self.written.len
    }

    pub(crate) fn written(path: PathBuf, written: Written) -> Self {
        Built { path, written }
    }

    fn into_parts(mut self) -> (PathBuf, Written) {
        (std::mem::take(&mut self.path), self.written)
    }
}

impl Drop for Built {
    fn drop(&mut self) {
        // Data that was never saved is an abandoned build.
        if !self.path.as_os_str().is_empty() {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// The name of `group`'s current-snapshot file in `snapshot_dir`.
pub(crate) fn snapshot_file(snapshot_dir: &Path, group: u64) -> PathBuf {
    snapshot_dir.join(format!("g{group:016x}.snapshot"))
}

fn group_prefix(group: u64) -> String {
    format!("g{group:016x}.")
}

const DATA: &str = ".data";
const BUILDING: &str = ".building";

/// A name no other file of this process or an earlier one has used: the time in nanoseconds and a
/// counter.
fn unique() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{nanos:x}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

fn io_error(doing: &str, path: &Path) -> impl FnOnce(io::Error) -> StoreError {
    let doing = format!("{doing} {}", path.display());
    move |e: io::Error| StoreError::storage(doing, e)
}

impl SnapshotStore {
    /// Opens the group's snapshot in `dir`, checking its data file whole and moving both files
    /// aside if either is damaged. The layout that kept the data inside the current-snapshot file
    /// is split, and a snapshot an older layout kept in the state database (`legacy_db`) moves to
    /// the files.
    pub(crate) fn open(dir: &Path, group: u64, legacy_db: &Db) -> Result<Self, StoreError> {
        fs::create_dir_all(dir).map_err(io_error("creating", dir))?;
        let file = snapshot_file(dir, group);
        let _ = fs::remove_file(temporary(&file));
        let store = SnapshotStore {
            dir: dir.to_path_buf(),
            group,
            current: Arc::new(Mutex::new(None)),
        };
        let current = match read_current(&file, dir) {
            Ok(Found::Current(current)) => Some(current),
            Ok(Found::Nothing) => None,
            Ok(Found::Combined(meta, data)) => {
                let built = store.write_bytes(&data)?;
                drop(data);
                let data = store.data_path_for(&built);
                store.switch_to(&meta, built, &data, None)?;
                tracing::info!(path = %file.display(), "moved the snapshot's data to a file of its own");
                Some(Current { meta, data })
            }
            Err(FileError::Corrupt { path, why }) => {
                for damaged in [file.as_path(), path.as_path()] {
                    if damaged.exists() {
                        let kept =
                            move_aside(damaged).map_err(io_error("moving aside", damaged))?;
                        tracing::error!(
                            path = %damaged.display(),
                            moved_to = %kept.display(),
                            reason = %why,
                            "the current snapshot is corrupt: it was moved aside and will not be \
                             installed; a new one is built from the state",
                        );
                    }
                }
                None
            }
            Err(FileError::Io(path, e)) => return Err(io_error("reading", &path)(e)),
        };
        store.remove_unnamed_data(current.as_ref().map(|c| c.data.as_path()))?;
        *store.current.try_lock().expect("not shared yet") = current;
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
            let mut current = self.current.try_lock().expect("not shared yet");
            if current.as_ref().map(|c| c.meta.last_log_id) < Some(meta.last_log_id) {
                let built = self.write_bytes(&data)?;
                let path = self.data_path_for(&built);
                let replaced = self.switch_to(&meta, built, &path, current.as_ref())?;
                *current = Some(Current { meta, data: path });
                remove_replaced(replaced);
                tracing::info!(dir = %self.dir.display(), "moved the snapshot out of the state database");
            }
        }
        drop(tree);
        db.drop_tree(&name)
            .map_err(|e| StoreError::storage("dropping the old snapshot tree", e))?;
        Ok(())
    }

    /// Removes this group's data files other than `keep`: builds a crash interrupted, and data
    /// a switch replaced before it could remove it.
    fn remove_unnamed_data(&self, keep: Option<&Path>) -> Result<(), StoreError> {
        let prefix = group_prefix(self.group);
        let entries = fs::read_dir(&self.dir).map_err(io_error("listing", &self.dir))?;
        for entry in entries {
            let path = entry.map_err(io_error("listing", &self.dir))?.path();
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let ours =
                name.starts_with(&prefix) && (name.ends_with(DATA) || name.ends_with(BUILDING));
            if ours && Some(path.as_path()) != keep {
                fs::remove_file(&path).map_err(io_error("removing", &path))?;
            }
        }
        Ok(())
    }

    /// A new file name for snapshot data about to be written.
    pub(crate) fn building_path(&self) -> PathBuf {
        self.dir.join(format!(
            "{}{}{BUILDING}",
            group_prefix(self.group),
            unique()
        ))
    }

    fn data_path_for(&self, built: &Built) -> PathBuf {
        let name = built
            .path
            .file_name()
            .expect("a built file has a name")
            .to_string_lossy()
            .replace(BUILDING, DATA);
        self.dir.join(name)
    }

    /// `data` written to a new file, synced.
    pub(crate) fn write_bytes(&self, data: &[u8]) -> Result<Built, StoreError> {
        let path = self.building_path();
        let mut file = File::create(&path).map_err(io_error("writing", &path))?;
        file.write_all(data).map_err(io_error("writing", &path))?;
        file.sync_all().map_err(io_error("writing", &path))?;
        let mut digest = FileDigest::new();
        digest.update(data);
        Ok(Built::written(
            path,
            Written {
                len: data.len() as u64,
                digest: digest.finish(),
            },
        ))
    }

    /// A copy of everything `source` holds from its start, synced: a received snapshot kept as
    /// the current one.
    pub(crate) fn copy_in(&self, source: &mut File) -> Result<Built, StoreError> {
        use std::io::{BufRead, Seek, SeekFrom};
        let path = self.building_path();
        let out = File::create(&path).map_err(io_error("writing", &path))?;
        let built_so_far = Built::written(path.clone(), Written { len: 0, digest: 0 });
        source
            .seek(SeekFrom::Start(0))
            .map_err(io_error("reading a received snapshot into", &path))?;
        let mut reader = io::BufReader::with_capacity(1 << 20, source);
        let mut out = io::BufWriter::with_capacity(1 << 20, out);
        let mut digest = FileDigest::new();
        let mut len = 0u64;
        loop {
            let piece = reader
                .fill_buf()
                .map_err(io_error("reading a received snapshot into", &path))?;
            if piece.is_empty() {
                break;
            }
            digest.update(piece);
            out.write_all(piece).map_err(io_error("writing", &path))?;
            let n = piece.len();
            len += n as u64;
            reader.consume(n);
        }
        let out = out
            .into_inner()
            .map_err(|e| io_error("writing", &path)(e.into_error()))?;
        out.sync_all().map_err(io_error("writing", &path))?;
        let (path, _) = built_so_far.into_parts();
        Ok(Built::written(
            path,
            Written {
                len,
                digest: digest.finish(),
            },
        ))
    }

    /// A new file to receive a snapshot into, already unlinked: it disappears with its last
    /// handle, whatever happens to the transfer.
    pub(crate) fn receiving_file(&self) -> Result<File, StoreError> {
        let path = self.dir.join(format!(
            "{}{}.receiving",
            group_prefix(self.group),
            unique()
        ));
        let file = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(io_error("creating", &path))?;
        fs::remove_file(&path).map_err(io_error("unlinking", &path))?;
        Ok(file)
    }

    /// The stored snapshot's meta and its data, opened for reading from the start.
    pub(crate) async fn current(&self) -> Result<Option<(Meta, File)>, StoreError> {
        let current = self.current.lock().await;
        let Some(current) = current.as_ref() else {
            return Ok(None);
        };
        let file = File::open(&current.data).map_err(io_error("opening", &current.data))?;
        Ok(Some((current.meta.clone(), file)))
    }

    /// Makes `built` the current snapshot for `meta` unless a newer one is already stored.
    /// Returns whether it was stored; data not stored is removed.
    pub(crate) async fn save(&self, meta: &Meta, built: Built) -> Result<bool, StoreError> {
        let mut current = self.current.lock().await;
        if current.as_ref().map(|c| c.meta.last_log_id) > Some(meta.last_log_id) {
            return Ok(false);
        }
        let data = self.data_path_for(&built);
        let replaced = blocking(|| self.switch_to(meta, built, &data, current.as_ref()))?;
        *current = Some(Current {
            meta: meta.clone(),
            data,
        });
        remove_replaced(replaced);
        Ok(true)
    }

    /// Renames `built` to `data` and points the current-snapshot file at it, both durable before
    /// returning. Returns the data file it replaced, which the caller removes once no one can
    /// open it any more.
    fn switch_to(
        &self,
        meta: &Meta,
        built: Built,
        data: &Path,
        old: Option<&Current>,
    ) -> Result<Option<PathBuf>, StoreError> {
        let (path, written) = built.into_parts();
        fs::rename(&path, data).map_err(io_error("renaming", &path))?;
        write_current(&snapshot_file(&self.dir, self.group), meta, data, written)?;
        Ok(old.map(|o| o.data.clone()).filter(|o| o != data))
    }
}

fn remove_replaced(replaced: Option<PathBuf>) {
    if let Some(old) = replaced {
        if let Err(e) = fs::remove_file(&old) {
            // Removed on the next open instead.
            tracing::warn!(path = %old.display(), error = %e, "could not remove replaced snapshot data");
        }
    }
}

/// Runs blocking file work on this thread, telling a multi-threaded runtime to move its other
/// tasks away first; a snapshot's data is too large to copy for a blocking task.
pub(crate) fn blocking<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(work),
        _ => work(),
    }
}

fn temporary(file: &Path) -> PathBuf {
    let mut name = file.file_name().expect("a file name").to_os_string();
    name.push(".tmp");
    file.with_file_name(name)
}

/// Writes the current-snapshot file beside the old one, syncs, renames over it and syncs the
/// directory: a crash leaves the old file or the new one, never half of one.
fn write_current(
    file: &Path,
    meta: &Meta,
    data: &Path,
    written: Written,
) -> Result<(), StoreError> {
    let meta_bytes = encode("snapshot meta", meta)?;
    let meta_len = u32::try_from(meta_bytes.len())
        .map_err(|_| StoreError::codec("snapshot meta", "over 4 GiB"))?;
    let name = data
        .file_name()
        .expect("a data file has a name")
        .to_string_lossy()
        .into_owned();
    let mut bytes = Vec::with_capacity(64 + meta_bytes.len() + name.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&meta_len.to_be_bytes());
    bytes.extend_from_slice(&meta_bytes);
    bytes.extend_from_slice(&(name.len() as u32).to_be_bytes());
    bytes.extend_from_slice(name.as_bytes());
    bytes.extend_from_slice(&written.len.to_be_bytes());
    bytes.extend_from_slice(&written.digest.to_be_bytes());
    let mut digest = FileDigest::new();
    digest.update(&bytes);
    bytes.extend_from_slice(&digest.finish().to_be_bytes());

    let temporary = temporary(file);
    let io_error = |e| StoreError::storage(format!("writing {}", file.display()), e);
    let mut out = File::create(&temporary).map_err(io_error)?;
    out.write_all(&bytes).map_err(io_error)?;
    out.sync_all().map_err(io_error)?;
    drop(out);
    fs::rename(&temporary, file).map_err(io_error)?;
    sync_dir(file.parent().expect("a directory")).map_err(io_error)
}

enum Found {
    Nothing,
    Current(Current),
    /// The older layout: meta and data in one file.
    Combined(Meta, Vec<u8>),
}

enum FileError {
    Io(PathBuf, io::Error),
    /// `path` (the current-snapshot file or its data) is damaged.
    Corrupt {
        path: PathBuf,
        why: String,
    },
}

/// Reads the current-snapshot file and checks the data file it names, whole.
fn read_current(file: &Path, dir: &Path) -> Result<Found, FileError> {
    let bytes = match fs::read(file) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Found::Nothing),
        Err(e) => return Err(FileError::Io(file.to_path_buf(), e)),
    };
    if bytes.starts_with(COMBINED_MAGIC) {
        return match read_combined(bytes) {
            Ok((meta, data)) => Ok(Found::Combined(meta, data)),
            Err(why) => Err(FileError::Corrupt {
                path: file.to_path_buf(),
                why,
            }),
        };
    }
    let corrupt = |why: &str| FileError::Corrupt {
        path: file.to_path_buf(),
        why: why.to_string(),
    };
    let body_len = bytes
        .len()
        .checked_sub(8)
        .filter(|&n| n >= MAGIC.len())
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
    let mut rest = &body[MAGIC.len()..];
    let mut take = |n: usize| -> Result<&[u8], FileError> {
        if rest.len() < n {
            return Err(corrupt("a field runs past the end"));
        }
        let (head, tail) = rest.split_at(n);
        rest = tail;
        Ok(head)
    };
    let meta_len = u32::from_be_bytes(take(4)?.try_into().expect("4 bytes")) as usize;
    let meta: Meta =
        decode("snapshot meta", take(meta_len)?).map_err(|e| corrupt(&e.to_string()))?;
    let name_len = u32::from_be_bytes(take(4)?.try_into().expect("4 bytes")) as usize;
    let name = String::from_utf8(take(name_len)?.to_vec())
        .map_err(|_| corrupt("the data file's name is not text"))?;
    let data_len = u64::from_be_bytes(take(8)?.try_into().expect("8 bytes"));
    let data_digest = u64::from_be_bytes(take(8)?.try_into().expect("8 bytes"));
    if name.contains('/') || !name.ends_with(DATA) {
        return Err(corrupt("the data file's name is not one this store writes"));
    }
    let data = dir.join(&name);
    let data_corrupt = |why: &str| FileError::Corrupt {
        path: data.clone(),
        why: why.to_string(),
    };
    let opened = match File::open(&data) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(data_corrupt("the snapshot's data file is missing"))
        }
        Err(e) => return Err(FileError::Io(data.clone(), e)),
    };
    let (found_digest, found_len) = FileDigest::of(io::BufReader::with_capacity(1 << 20, opened))
        .map_err(|e| FileError::Io(data.clone(), e))?;
    if (found_digest, found_len) != (data_digest, data_len) {
        return Err(data_corrupt(
            "the snapshot's data does not match its digest: the file is damaged or truncated",
        ));
    }
    Ok(Found::Current(Current { meta, data }))
}

fn read_combined(bytes: Vec<u8>) -> Result<(Meta, Vec<u8>), String> {
    let corrupt = |why: &str| why.to_string();
    let body_len = bytes
        .len()
        .checked_sub(8)
        .filter(|&n| n >= COMBINED_MAGIC.len() + 4 + 8)
        .ok_or_else(|| corrupt("too short to be a snapshot file"))?;
    let (body, sum) = bytes.split_at(body_len);
    let mut digest = FileDigest::new();
    digest.update(body);
    if digest.finish().to_be_bytes() != sum {
        return Err(corrupt(
            "its checksum does not match: the file is damaged or truncated",
        ));
    }
    let rest = &body[COMBINED_MAGIC.len()..];
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
    let meta: Meta = decode("snapshot meta", meta_bytes).map_err(|e| e.to_string())?;
    // The data is most of the file: it is cut out of the bytes read rather than copied.
    let data_start = bytes.len() - 8 - data.len();
    let mut bytes = bytes;
    bytes.truncate(body_len);
    bytes.drain(..data_start);
    Ok((meta, bytes))
}

/// Everything `file` holds from its start; for tests and small files.
#[cfg(test)]
pub(crate) fn read_all(mut file: File) -> Vec<u8> {
    use std::io::Read;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).expect("readable");
    bytes
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use openraft::{CommittedLeaderId, LogId, Membership, StoredMembership};

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

    async fn load(store: &SnapshotStore) -> Option<(Meta, Vec<u8>)> {
        let (meta, file) = store.current().await.unwrap()?;
        Some((meta, read_all(file)))
    }

    async fn save(store: &SnapshotStore, index: u64, data: &[u8]) -> bool {
        let built = store.write_bytes(data).unwrap();
        store.save(&meta(index), built).await.unwrap()
    }

    fn files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[tokio::test]
    async fn a_saved_snapshot_reads_back_and_an_older_one_does_not_replace_it() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new().temporary(true).open().unwrap();
        let store = SnapshotStore::open(dir.path(), 0, &db).unwrap();
        assert!(load(&store).await.is_none());
        assert!(save(&store, 5, b"five").await);
        assert!(!save(&store, 4, b"four").await);
        let reopened = SnapshotStore::open(dir.path(), 0, &db).unwrap();
        assert_eq!(load(&reopened).await, Some((meta(5), b"five".to_vec())));
        assert!(!save(&reopened, 4, b"four").await);
        // One current-snapshot file and one data file: refused and replaced data is gone.
        assert!(save(&reopened, 6, b"six").await);
        let names = files(dir.path());
        assert_eq!(names.len(), 2, "{names:?}");
        assert_eq!(load(&reopened).await, Some((meta(6), b"six".to_vec())));
    }

    #[tokio::test]
    async fn data_a_crash_left_behind_is_removed_on_open_and_other_groups_are_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new().temporary(true).open().unwrap();
        let store = SnapshotStore::open(dir.path(), 0, &db).unwrap();
        assert!(save(&store, 5, b"five").await);
        let other = SnapshotStore::open(dir.path(), 1, &db).unwrap();
        assert!(save(&other, 2, b"two").await);
        // A build that never finished, and new data whose switch never happened.
        let half_built = store.building_path();
        fs::write(&half_built, b"half").unwrap();
        let unswitched = store.write_bytes(b"six").unwrap();
        let unswitched_data = store.data_path_for(&unswitched);
        fs::rename(unswitched.path(), &unswitched_data).unwrap();
        drop(unswitched);
        let before = files(dir.path()).len();

        let reopened = SnapshotStore::open(dir.path(), 0, &db).unwrap();
        assert_eq!(load(&reopened).await, Some((meta(5), b"five".to_vec())));
        assert!(!half_built.exists() && !unswitched_data.exists());
        assert_eq!(files(dir.path()).len(), before - 2);
        let other = SnapshotStore::open(dir.path(), 1, &db).unwrap();
        assert_eq!(load(&other).await, Some((meta(2), b"two".to_vec())));
    }

    #[tokio::test]
    async fn a_corrupt_snapshot_is_moved_aside_on_open() {
        for damaged in ["current", "data"] {
            let dir = tempfile::tempdir().unwrap();
            let db = sled::Config::new().temporary(true).open().unwrap();
            let store = SnapshotStore::open(dir.path(), 0, &db).unwrap();
            assert!(save(&store, 5, b"the state").await);
            let file = match damaged {
                "current" => snapshot_file(dir.path(), 0),
                _ => store.current.lock().await.as_ref().unwrap().data.clone(),
            };
            let mut bytes = fs::read(&file).unwrap();
            let at = bytes.len() - 3;
            bytes[at] ^= 1;
            fs::write(&file, &bytes).unwrap();

            let reopened = SnapshotStore::open(dir.path(), 0, &db).unwrap();
            assert!(load(&reopened).await.is_none(), "{damaged}");
            let kept: Vec<_> = fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.to_string_lossy().contains(".corrupt-"))
                .collect();
            assert!(
                kept.iter().any(|k| fs::read(k).unwrap() == bytes),
                "{damaged}: the damaged file is kept as it was: {kept:?}"
            );
            assert!(save(&reopened, 3, b"older is fine now").await, "{damaged}");
        }
    }

    #[tokio::test]
    async fn a_snapshot_in_the_older_one_file_layout_is_split_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new().temporary(true).open().unwrap();
        let meta_bytes = encode("meta", &meta(8)).unwrap();
        let data = b"eight".to_vec();
        let mut combined = COMBINED_MAGIC.to_vec();
        combined.extend_from_slice(&(meta_bytes.len() as u32).to_be_bytes());
        combined.extend_from_slice(&meta_bytes);
        combined.extend_from_slice(&(data.len() as u64).to_be_bytes());
        combined.extend_from_slice(&data);
        let mut digest = FileDigest::new();
        digest.update(&combined);
        combined.extend_from_slice(&digest.finish().to_be_bytes());
        fs::write(snapshot_file(dir.path(), 0), &combined).unwrap();

        let store = SnapshotStore::open(dir.path(), 0, &db).unwrap();
        assert_eq!(load(&store).await, Some((meta(8), data.clone())));
        assert_eq!(files(dir.path()).len(), 2);
        let reopened = SnapshotStore::open(dir.path(), 0, &db).unwrap();
        assert_eq!(load(&reopened).await, Some((meta(8), data)));
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
        let store = SnapshotStore::open(dir.path(), 0, &db).unwrap();
        assert_eq!(load(&store).await, Some((meta(7), b"seven".to_vec())));
        let name = keys::snapshot_tree(0);
        assert!(!db.tree_names().iter().any(|n| n == name.as_bytes()));
    }

    #[tokio::test]
    async fn a_received_copy_is_what_was_received() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new().temporary(true).open().unwrap();
        let store = SnapshotStore::open(dir.path(), 0, &db).unwrap();
        let mut received = store.receiving_file().unwrap();
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        received.write_all(&data).unwrap();
        assert_eq!(files(dir.path()).len(), 0, "the receiving file has no name");
        let built = store.copy_in(&mut received).unwrap();
        assert!(store.save(&meta(9), built).await.unwrap());
        let reopened = SnapshotStore::open(dir.path(), 0, &db).unwrap();
        assert_eq!(load(&reopened).await, Some((meta(9), data)));
    }
}
