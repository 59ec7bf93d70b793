//! Opening a sled database only once its files are known to be intact; a corrupt one is moved
//! aside untouched and a fresh one opened in its place, for the store to recover into.
//!
//! sled 0.34 cannot be trusted with a damaged directory: on open it reads its log from the last
//! snapshot on, stops at the first message whose CRC fails, zeroes the rest of that segment and
//! every later one, and removes blobs past that point; pages written earlier are not checked until
//! they are read. So the verdict comes before sled touches the files:
//!
//! - **Sealed** (the store stopped cleanly, see [`Seal`]): the files must be exactly as sealed.
//! - **Not sealed** (a crash, or a directory from before seals): sled opens a *copy*, which it may
//!   repair as it likes, and every tree of it is read through (every page's CRC checked). If that
//!   fails, the original is corrupt; if it succeeds, the original is opened, and sled repeats on it
//!   the recovery it just made on the copy.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use sled::Db;

use crate::error::StoreError;
use crate::move_aside::move_aside;
use crate::seal::{Seal, SEAL_FILE};

/// An open database and, when the one found was corrupt, where it was moved.
pub(crate) struct CheckedDb {
    pub(crate) db: Db,
    pub(crate) moved_aside: Option<PathBuf>,
}

/// What the check of a directory found.
enum Verdict {
    Intact,
    Corrupt(String),
}

impl CheckedDb {
    /// Checks and opens the database at `path`; `what` names it in messages ("the Raft log").
    pub(crate) fn open(
        path: &Path,
        cache_capacity_bytes: u64,
        what: &str,
    ) -> Result<Self, StoreError> {
        let storage = |doing: String| move |e: io::Error| StoreError::storage(doing, e);
        let moved_aside = match check(path, cache_capacity_bytes, what)? {
            Verdict::Intact => None,
            Verdict::Corrupt(why) => {
                let kept = move_aside(path).map_err(storage(format!(
                    "moving the corrupt {} aside",
                    path.display()
                )))?;
                tracing::error!(
                    database = what,
                    path = %path.display(),
                    moved_to = %kept.display(),
                    reason = %why,
                    "{what} is corrupt: its files were moved aside untouched and a new database \
                     is created in its place, to be recovered from the rest of the store",
                );
                Some(kept)
            }
        };
        let db = open_sled(path, cache_capacity_bytes)?;
        Ok(CheckedDb { db, moved_aside })
    }
}

fn open_sled(path: &Path, cache_capacity_bytes: u64) -> Result<Db, StoreError> {
    sled::Config::new()
        .path(path)
        .cache_capacity(cache_capacity_bytes)
        // sled's own background flushes would bypass the flush gate (crate::sled_gate).
        .flush_every_ms(None)
        .open()
        .map_err(|e| StoreError::storage(format!("opening {}", path.display()), e))
}

fn check(path: &Path, cache_capacity_bytes: u64, what: &str) -> Result<Verdict, StoreError> {
    let storage = |doing: &str| {
        let doing = format!("{doing} {}", path.display());
        move |e: io::Error| StoreError::storage(doing, e)
    };
    if !holds_files(path).map_err(storage("listing"))? {
        return Ok(Verdict::Intact);
    }
    match Seal::read(path) {
        Ok(Some(seal)) => {
            let now = Seal::of_dir(path).map_err(storage("reading"))?;
            let differences = seal.differences(&now);
            if !differences.is_empty() {
                return Ok(Verdict::Corrupt(format!(
                    "changed since it was sealed at a clean stop: {}",
                    differences.join("; ")
                )));
            }
            Seal::remove(path).map_err(storage("removing the seal of"))?;
            Ok(Verdict::Intact)
        }
        Ok(None) => {
            tracing::info!(
                database = what,
                path = %path.display(),
                "not sealed (the store did not stop cleanly): checking a copy before opening it",
            );
            check_a_copy(path, cache_capacity_bytes, what)
        }
        Err(e) => {
            tracing::warn!(
                database = what,
                path = %path.display(),
                error = %e,
                "the seal cannot be used: checking a copy of the database instead",
            );
            let verdict = check_a_copy(path, cache_capacity_bytes, what)?;
            if matches!(verdict, Verdict::Intact) {
                Seal::remove(path).map_err(storage("removing the seal of"))?;
            }
            Ok(verdict)
        }
    }
}

/// Lets sled recover a copy of `path` and reads all of it.
fn check_a_copy(path: &Path, cache_capacity_bytes: u64, what: &str) -> Result<Verdict, StoreError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let copy = path.with_file_name(format!("{name}.checking"));
    let result = (|| {
        remove_if_present(&copy)?;
        copy_dir(path, &copy)?;
        Ok::<_, io::Error>(())
    })();
    if let Err(e) = result {
        // Most likely a full disk. Refusing to start would not protect the files either.
        tracing::warn!(
            database = what,
            path = %path.display(),
            error = %e,
            "could not copy the database to check it; opening it unchecked",
        );
        let _ = remove_if_present(&copy);
        return Ok(Verdict::Intact);
    }
    let verdict = match open_sled(&copy, cache_capacity_bytes).and_then(|db| read_everything(&db)) {
        Ok(()) => Verdict::Intact,
        Err(e) => Verdict::Corrupt(format!("sled could not read a copy of it: {e}")),
    };
    remove_if_present(&copy)
        .map_err(|e| StoreError::storage(format!("removing {}", copy.display()), e))?;
    Ok(verdict)
}

/// Reads every key and value of every tree, so that sled checks every page it holds.
fn read_everything(db: &Db) -> Result<(), StoreError> {
    let read = |e| StoreError::storage("reading a copy of the database", e);
    for name in db.tree_names() {
        let tree = db.open_tree(&name).map_err(read)?;
        for pair in tree.iter() {
            pair.map_err(read)?;
        }
    }
    Ok(())
}

fn holds_files(path: &Path) -> io::Result<bool> {
    match fs::read_dir(path) {
        Ok(mut entries) => Ok(entries.next().is_some()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

fn remove_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_dir_all(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

fn copy_dir(from: &Path, to: &Path) -> io::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else if !entry.file_name().to_string_lossy().starts_with(SEAL_FILE) {
            fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::once_unlocked;

    fn write_some(path: &Path) {
        let db = open_sled(path, 1 << 20).unwrap();
        for i in 0..2_000u32 {
            db.insert(i.to_be_bytes(), vec![(i % 251) as u8; 100])
                .unwrap();
        }
        db.flush().unwrap();
    }

    fn open(path: &Path) -> CheckedDb {
        once_unlocked(|| CheckedDb::open(path, 1 << 20, "the test database")).unwrap()
    }

    #[test]
    fn a_sealed_database_opens_and_loses_its_seal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        write_some(&path);
        Seal::write(&path).unwrap();
        let opened = open(&path);
        assert!(opened.moved_aside.is_none());
        assert_eq!(opened.db.len(), 2_000);
        assert!(
            Seal::read(&path).unwrap().is_none(),
            "an open database has no seal"
        );
    }

    #[test]
    fn a_byte_changed_after_sealing_moves_the_files_aside_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        write_some(&path);
        Seal::write(&path).unwrap();
        let mut bytes = fs::read(path.join("db")).unwrap();
        let at = bytes.len() / 3;
        bytes[at] ^= 0x10;
        fs::write(path.join("db"), &bytes).unwrap();

        let opened = open(&path);
        let kept = opened.moved_aside.expect("detected");
        assert_eq!(fs::read(kept.join("db")).unwrap(), bytes);
        assert!(
            kept.join(SEAL_FILE).exists(),
            "the seal is kept with the files"
        );
        assert_eq!(opened.db.len(), 0, "a fresh database in its place");
    }

    #[test]
    fn an_unsealed_database_that_sled_cannot_read_is_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        write_some(&path);
        fs::write(path.join("conf"), b"not a sled config").unwrap();
        let opened = open(&path);
        let kept = opened.moved_aside.expect("detected");
        assert_eq!(fs::read(kept.join("conf")).unwrap(), b"not a sled config");
        assert!(
            !dir.path().join("db.checking").exists(),
            "the copy is removed"
        );
    }

    #[test]
    fn an_unsealed_intact_database_opens_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        write_some(&path);
        let opened = open(&path);
        assert!(opened.moved_aside.is_none());
        assert_eq!(opened.db.len(), 2_000);
    }
}
