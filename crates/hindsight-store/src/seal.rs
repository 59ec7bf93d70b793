//! The length and digest of every file of a sled database, written when the store stops cleanly and
//! checked before sled next opens it.
//!
//! sled checks its own CRCs only while it recovers, and its recovery writes: it zeroes what follows
//! the first message it cannot read and drops what depended on it. A flipped byte in a stopped
//! node's database was seen to turn the file into zeros on the first start. A seal lets the store
//! notice any change to the files before sled sees them, and move them aside untouched.
//!
//! The seal is the file `hindsight.seal` inside the database's directory. It is removed before the
//! database is opened, so a seal always describes files nobody wrote since; a directory without one
//! (a crash, or a version that did not seal) is checked another way (see `checked_db`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use crate::file_digest::FileDigest;

pub(crate) const SEAL_FILE: &str = "hindsight.seal";
const HEADER: &str = "hindsight-seal 1";

/// What a file looked like when the seal was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sealed {
    len: u64,
    digest: u64,
}

/// Every file under one database directory, by path relative to it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Seal {
    files: BTreeMap<PathBuf, Sealed>,
}

/// Why a directory's seal could not be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SealError {
    #[error("reading the seal: {0}")]
    Io(#[from] io::Error),
    #[error("the seal itself is damaged: {0}")]
    Damaged(String),
}

impl Seal {
    /// Digests every file under `dir` but the seal.
    pub(crate) fn of_dir(dir: &Path) -> io::Result<Seal> {
        let mut files = BTreeMap::new();
        collect(dir, dir, &mut files)?;
        Ok(Seal { files })
    }

    /// Seals `dir` as it is now: written beside the files, synced, then renamed into place.
    pub(crate) fn write(dir: &Path) -> io::Result<()> {
        let seal = Seal::of_dir(dir)?;
        let mut text = String::from(HEADER);
        text.push('\n');
        for (path, file) in &seal.files {
            let name = path
                .to_str()
                .ok_or_else(|| io::Error::other(format!("{} is not UTF-8", path.display())))?;
            let _ = writeln!(text, "{} {:016x} {name}", file.len, file.digest);
        }
        let mut digest = FileDigest::new();
        digest.update(text.as_bytes());
        let _ = writeln!(text, "end {:016x}", digest.finish());
        let temporary = dir.join(format!("{SEAL_FILE}.tmp"));
        fs::write(&temporary, text.as_bytes())?;
        File::open(&temporary)?.sync_all()?;
        fs::rename(&temporary, dir.join(SEAL_FILE))?;
        sync_dir(dir)
    }

    /// The seal of `dir`, if it has one.
    pub(crate) fn read(dir: &Path) -> Result<Option<Seal>, SealError> {
        let text = match fs::read(dir.join(SEAL_FILE)) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let damaged = |why: &str| SealError::Damaged(why.to_string());
        let text = String::from_utf8(text).map_err(|_| damaged("not UTF-8"))?;
        let body_end = text
            .trim_end_matches('\n')
            .rfind('\n')
            .map(|i| i + 1)
            .ok_or_else(|| damaged("too short"))?;
        let (body, end) = text.split_at(body_end);
        let mut digest = FileDigest::new();
        digest.update(body.as_bytes());
        if end.trim_end() != format!("end {:016x}", digest.finish()) {
            return Err(damaged("its checksum does not match"));
        }
        let mut lines = body.lines();
        if lines.next() != Some(HEADER) {
            return Err(damaged("unknown header"));
        }
        let mut files = BTreeMap::new();
        for line in lines {
            let mut fields = line.splitn(3, ' ');
            let (Some(len), Some(digest), Some(name)) =
                (fields.next(), fields.next(), fields.next())
            else {
                return Err(damaged("a line has fewer than three fields"));
            };
            let len = len.parse().map_err(|_| damaged("a bad length"))?;
            let digest = u64::from_str_radix(digest, 16).map_err(|_| damaged("a bad digest"))?;
            files.insert(PathBuf::from(name), Sealed { len, digest });
        }
        Ok(Some(Seal { files }))
    }

    /// Removes the seal before the database is written again, durably: a seal left behind after
    /// a crash would describe files that have since changed.
    pub(crate) fn remove(dir: &Path) -> io::Result<()> {
        match fs::remove_file(dir.join(SEAL_FILE)) {
            Ok(()) => sync_dir(dir),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// What differs between this seal and `now`, one phrase per file; empty when nothing does.
    pub(crate) fn differences(&self, now: &Seal) -> Vec<String> {
        let mut found = Vec::new();
        for (path, sealed) in &self.files {
            match now.files.get(path) {
                None => found.push(format!("{} is missing", path.display())),
                Some(file) if file.len != sealed.len => found.push(format!(
                    "{} is {} bytes, was {}",
                    path.display(),
                    file.len,
                    sealed.len
                )),
                Some(file) if file.digest != sealed.digest => {
                    found.push(format!("{} has changed", path.display()))
                }
                Some(_) => {}
            }
        }
        for path in now.files.keys() {
            if !self.files.contains_key(path) {
                found.push(format!("{} was not there", path.display()));
            }
        }
        found
    }
}

fn collect(root: &Path, dir: &Path, files: &mut BTreeMap<PathBuf, Sealed>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let relative = path
            .strip_prefix(root)
            .expect("under the root")
            .to_path_buf();
        if entry.file_type()?.is_dir() {
            collect(root, &path, files)?;
        } else if !is_seal(&relative) {
            let (digest, len) = FileDigest::of(File::open(&path)?)?;
            files.insert(relative, Sealed { len, digest });
        }
    }
    Ok(())
}

fn is_seal(relative: &Path) -> bool {
    relative
        .to_str()
        .is_some_and(|name| name.starts_with(SEAL_FILE))
}

/// Makes a rename or removal in `dir` durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_directory_matches_until_a_byte_changes() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("db"), vec![7u8; 5000]).unwrap();
        fs::create_dir(dir.path().join("blobs")).unwrap();
        fs::write(dir.path().join("blobs/1"), b"blob").unwrap();
        Seal::write(dir.path()).unwrap();
        let seal = Seal::read(dir.path()).unwrap().expect("sealed");
        assert!(seal
            .differences(&Seal::of_dir(dir.path()).unwrap())
            .is_empty());

        let mut db = fs::read(dir.path().join("db")).unwrap();
        db[4000] ^= 1;
        fs::write(dir.path().join("db"), db).unwrap();
        fs::write(dir.path().join("snap.1"), b"new").unwrap();
        let differences = seal.differences(&Seal::of_dir(dir.path()).unwrap());
        assert_eq!(differences, vec!["db has changed", "snap.1 was not there"]);

        Seal::remove(dir.path()).unwrap();
        assert!(Seal::read(dir.path()).unwrap().is_none());
    }

    #[test]
    fn a_damaged_seal_is_reported_as_such() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("db"), b"data").unwrap();
        Seal::write(dir.path()).unwrap();
        let mut text = fs::read(dir.path().join(SEAL_FILE)).unwrap();
        text[20] ^= 1;
        fs::write(dir.path().join(SEAL_FILE), text).unwrap();
        assert!(matches!(Seal::read(dir.path()), Err(SealError::Damaged(_))));
    }
}
