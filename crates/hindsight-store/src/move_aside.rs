//! Moving a corrupt store file or directory out of the way, untouched, for an operator to inspect.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::seal::sync_dir;

/// Renames `path` to `<path>.corrupt-<unix seconds>` (with a `-<n>` suffix if that is taken) and
/// makes the rename durable. A rename never changes the bytes, and it keeps them on the same disk.
pub(crate) fn move_aside(path: &Path) -> io::Result<PathBuf> {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other(format!("{} has no file name", path.display())))?
        .to_string_lossy()
        .into_owned();
    let mut target = path.with_file_name(format!("{name}.corrupt-{seconds}"));
    let mut n = 1;
    while target.exists() {
        n += 1;
        target = path.with_file_name(format!("{name}.corrupt-{seconds}-{n}"));
    }
    std::fs::rename(path, &target)?;
    if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
        sync_dir(parent)?;
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_without_overwriting_an_earlier_move() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state");
        std::fs::write(&path, b"first").unwrap();
        let first = move_aside(&path).unwrap();
        std::fs::write(&path, b"second").unwrap();
        let second = move_aside(&path).unwrap();
        assert_ne!(first, second);
        assert_eq!(std::fs::read(first).unwrap(), b"first");
        assert_eq!(std::fs::read(second).unwrap(), b"second");
        assert!(!path.exists());
    }
}
