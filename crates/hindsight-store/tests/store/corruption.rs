//! A flipped byte in any one store file of a stopped node loses no acknowledged write, and the
//! corrupt original is kept, byte for byte, where the node moved it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hindsight_core::MemoryId;
use hindsight_store::{NoopListener, StoreConfig, StoreHandle};

use crate::support::{self, write, BANK};

/// Names of what the node moved aside start with the original's name and this.
const MOVED_ASIDE: &str = ".corrupt-";

fn purging_config() -> StoreConfig {
    StoreConfig {
        max_in_snapshot_log_to_keep: 0,
        ..support::config()
    }
}

/// Writes through a real store, optionally snapshots and purges the log in the middle, stops it
/// cleanly and returns the ids it acknowledged.
async fn write_and_stop(dir: &Path, snapshot_and_purge: bool) -> Vec<u128> {
    let store = support::open_with(dir, purging_config(), Arc::new(NoopListener)).await;
    store.propose(support::create_bank(BANK)).await.unwrap();
    let mut acknowledged = vec![];
    for id in 1..=20u128 {
        store.propose(write(id, BANK)).await.unwrap();
        acknowledged.push(id);
    }
    if snapshot_and_purge {
        support::snapshot_and_purge(&store).await;
        // Writes after the snapshot: only the log (and the state) hold these.
        for id in 21..=30u128 {
            store.propose(write(id, BANK)).await.unwrap();
            acknowledged.push(id);
        }
    }
    store.shutdown().await.unwrap();
    drop(store);
    acknowledged
}

/// Every regular file under `dir`, relative to it, with its bytes.
fn files_under(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, at: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                out.insert(path.strip_prefix(root).unwrap().to_path_buf(), bytes);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn write_files(dir: &Path, files: &BTreeMap<PathBuf, Vec<u8>>) {
    for (relative, bytes) in files {
        let path = dir.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

/// Flips a byte that holds data (the middle one of the file's non-zero bytes): a flip in sled's
/// zeroed padding would test nothing.
fn flip_a_data_byte(bytes: &mut [u8]) -> Option<usize> {
    let nonzero: Vec<usize> = (0..bytes.len()).filter(|&i| bytes[i] != 0).collect();
    let at = *nonzero.get(nonzero.len() / 2)?;
    bytes[at] ^= 0x5a;
    Some(at)
}

/// The top-level directory or file of the store that `relative` lies in (`state`, `raft-log`, ...).
fn top_level(relative: &Path) -> String {
    relative
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy()
        .into_owned()
}

/// What the node moved aside, by the name it had: `state` for `state.corrupt-1712345678`.
fn moved_aside(dir: &Path) -> BTreeMap<String, PathBuf> {
    let mut found = BTreeMap::new();
    let mut visit = |at: &Path| {
        for entry in std::fs::read_dir(at).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if let Some((original, _)) = name.split_once(MOVED_ASIDE) {
                found.insert(original.to_string(), path);
            }
        }
    };
    visit(dir);
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() && !path.to_string_lossy().contains(MOVED_ASIDE) {
            visit(&path);
        }
    }
    found
}

/// Opens the store at `dir` and checks that it holds every acknowledged write and takes new ones;
/// the first thing that is wrong, if any.
async fn reopen_and_check(dir: &Path, acknowledged: &[u128]) -> Result<(), String> {
    let store = hindsight_store::open(dir, purging_config(), Arc::new(NoopListener))
        .await
        .map_err(|e| format!("the store did not open: {e}"))?;
    let checked = check_store(&store, acknowledged).await;
    store
        .shutdown()
        .await
        .map_err(|e| format!("shutdown: {e}"))?;
    drop(store);
    checked
}

async fn check_store(store: &StoreHandle, acknowledged: &[u128]) -> Result<(), String> {
    let reader = store.reader();
    let bank = BANK.parse().unwrap();
    let mut lost = vec![];
    for id in acknowledged {
        match reader.memory(MemoryId(*id)) {
            Ok(Some(memory)) if memory.content == format!("memory number {id}") => {}
            Ok(Some(memory)) => return Err(format!("memory {id} reads {:?}", memory.content)),
            Ok(None) => lost.push(*id),
            Err(e) => return Err(format!("reading memory {id}: {e}")),
        }
    }
    if !lost.is_empty() {
        return Err(format!("acknowledged memories lost: {lost:?}"));
    }
    if !matches!(reader.bank(&bank), Ok(Some(_))) {
        return Err("the bank is lost".into());
    }
    let count = reader.bank_memory_count(&bank).map_err(|e| e.to_string())?;
    if count != acknowledged.len() as u64 {
        return Err(format!(
            "the bank counts {count} memories, not {}",
            acknowledged.len()
        ));
    }
    // Still takes writes after recovering.
    store
        .propose(write(10_000, BANK))
        .await
        .map_err(|e| format!("no write after recovery: {e}"))?;
    Ok(())
}

/// Whether the stopped directory keeps the seals of its databases.
#[derive(Clone, Copy, PartialEq)]
enum Seals {
    /// As a clean shutdown leaves it.
    Kept,
    /// As a crash, or a version that did not seal, leaves it.
    Removed,
}

/// A seal's own damage only makes the store check a copy of the database instead; it is not a
/// corrupt store file.
fn is_seal(relative: &Path) -> bool {
    relative
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("hindsight.seal"))
}

/// One case per store file: a fresh copy of the stopped directory with one byte of that file
/// flipped must open with every acknowledged write, and keep the corrupt file where it moved it.
async fn every_file_flipped_in_turn(snapshot_and_purge: bool, seals: Seals) {
    let stopped = tempfile::tempdir().unwrap();
    let acknowledged = write_and_stop(stopped.path(), snapshot_and_purge).await;
    let mut pristine = files_under(stopped.path());
    if seals == Seals::Removed {
        pristine.retain(|path, _| !is_seal(path));
    }
    assert!(
        pristine.keys().any(|p| top_level(p) == "state")
            && pristine.keys().any(|p| top_level(p) == "raft-log"),
        "{:?}",
        pristine.keys().collect::<Vec<_>>()
    );

    // No corruption, no alarm: a clean restart moves nothing aside.
    let control = tempfile::tempdir().unwrap();
    write_files(control.path(), &pristine);
    reopen_and_check(control.path(), &acknowledged)
        .await
        .unwrap_or_else(|e| panic!("no corruption: {e}"));
    assert!(
        moved_aside(control.path()).is_empty(),
        "a clean restart moved files aside: {:?}",
        moved_aside(control.path())
    );

    let mut detected = 0;
    let mut failures = vec![];
    for (relative, original) in &pristine {
        let mut corrupted = original.clone();
        let Some(at) = flip_a_data_byte(&mut corrupted) else {
            continue;
        };
        let case = format!("{} with byte {at} flipped", relative.display());
        let copy = tempfile::tempdir().unwrap();
        write_files(copy.path(), &pristine);
        std::fs::write(copy.path().join(relative), &corrupted).unwrap();

        if let Err(e) = reopen_and_check(copy.path(), &acknowledged).await {
            failures.push(format!("{case}: {e}"));
            continue;
        }

        let aside = moved_aside(copy.path());
        let owner = top_level(relative);
        // A snapshot file is moved aside on its own, a database as a whole directory.
        let file_name = relative.file_name().unwrap().to_string_lossy().into_owned();
        let kept = match (aside.get(&owner), aside.get(&file_name)) {
            (Some(dir), _) if dir.is_dir() => {
                Some(dir.join(relative.strip_prefix(&owner).unwrap()))
            }
            (_, Some(file)) if file.is_file() => Some(file.clone()),
            _ => None,
        };
        if seals == Seals::Kept && !is_seal(relative) && kept.is_none() {
            // Sealed files and snapshot files are checked whole: every changed byte is caught.
            failures.push(format!("{case}: the change went unnoticed"));
        }
        if let Some(kept) = kept {
            detected += 1;
            let kept_bytes = std::fs::read(&kept)
                .unwrap_or_else(|e| panic!("{case}: {} unreadable: {e}", kept.display()));
            assert!(
                kept_bytes == corrupted,
                "{case}: the copy kept at {} is not the corrupt original",
                kept.display()
            );
            if kept.is_file() && aside.get(&owner).is_some_and(|d| d.is_dir()) {
                // The rest of the database moved with it, untouched.
                let moved = files_under(aside.get(&owner).unwrap());
                for (inner, bytes) in &moved {
                    let in_store = Path::new(&owner).join(inner);
                    if &in_store != relative {
                        assert!(
                            pristine.get(&in_store) == Some(bytes),
                            "{case}: {} was changed when moved aside",
                            in_store.display()
                        );
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        pristine.len(),
        failures.join("\n")
    );
    assert!(
        detected > 0,
        "no flipped file was ever detected and kept: {:?}",
        pristine.keys().collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flipped_byte_in_any_store_file_loses_no_acknowledged_write() {
    every_file_flipped_in_turn(false, Seals::Kept).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flipped_byte_after_a_snapshot_and_log_purge_loses_no_acknowledged_write() {
    every_file_flipped_in_turn(true, Seals::Kept).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flipped_byte_in_a_store_that_did_not_stop_cleanly_loses_no_acknowledged_write() {
    every_file_flipped_in_turn(true, Seals::Removed).await;
}
