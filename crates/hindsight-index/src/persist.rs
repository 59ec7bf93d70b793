//! Small filesystem helpers for durable dumps.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::IndexError;

/// Writes and fsyncs a whole file.
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), IndexError> {
    written(path, bytes)?
        .sync_all()
        .map_err(|e| IndexError::io(path, e))
}

/// Writes a whole file without waiting for the disk: for a dump's parts, written while writes to
/// the index wait and made durable by [`sync_files_in`] once they go on again.
pub(crate) fn write_file_unsynced(path: &Path, bytes: &[u8]) -> Result<(), IndexError> {
    written(path, bytes).map(drop)
}

fn written(path: &Path, bytes: &[u8]) -> Result<File, IndexError> {
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(path)
        .map_err(|e| IndexError::io(path, e))?;
    f.write_all(bytes).map_err(|e| IndexError::io(path, e))?;
    Ok(f)
}

/// Fsyncs a file, written by this crate unsynced or by someone else (hnsw_rs's dump only
/// flushes).
pub(crate) fn sync_file(path: &Path) -> Result<(), IndexError> {
    File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(|e| IndexError::io(path, e))
}

/// Fsyncs every regular file directly in `dir`, then `dir` itself.
pub(crate) fn sync_files_in(dir: &Path) -> Result<(), IndexError> {
    for entry in fs::read_dir(dir).map_err(|e| IndexError::io(dir, e))? {
        let entry = entry.map_err(|e| IndexError::io(dir, e))?;
        let is_file = entry
            .file_type()
            .map_err(|e| IndexError::io(entry.path(), e))?
            .is_file();
        if is_file {
            sync_file(&entry.path())?;
        }
    }
    sync_dir(dir)
}

/// Fsyncs a directory so that renames and new entries in it are durable.
pub(crate) fn sync_dir(path: &Path) -> Result<(), IndexError> {
    #[cfg(unix)]
    {
        File::open(path)
            .and_then(|f| f.sync_all())
            .map_err(|e| IndexError::io(path, e))
    }
    #[cfg(not(unix))]
    {
        // Directories cannot be opened for syncing on this platform.
        let _ = path;
        Ok(())
    }
}

pub(crate) fn read_file(path: &Path) -> Result<Vec<u8>, IndexError> {
    fs::read(path).map_err(|e| IndexError::io(path, e))
}

pub(crate) fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, IndexError> {
    bincode::serialize(value).map_err(|e| IndexError::Corrupt(format!("cannot encode: {e}")))
}

pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T, IndexError> {
    bincode::deserialize(bytes).map_err(|e| IndexError::Corrupt(format!("{what}: {e}")))
}

/// Turns a panic payload from a third-party call into a message.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic without message".to_string()
    }
}
