//! The bytes of a state snapshot: every key and value of a group's state tree, framed so that a
//! truncated or corrupted transfer is refused instead of half-installed.
//!
//! ```text
//! magic "HSSNAP01" | group u64 | pairs u64 | pairs × (key_len u32, key, value_len u32, value) | fnv1a-64
//! ```
//! Integers are big-endian; the checksum covers everything before it.
//!
//! A snapshot holds the whole state, so it is written to and read from a file piece by piece and
//! never held in memory whole.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::error::StoreError;
use crate::file_digest::FileDigest;

const MAGIC: &[u8; 8] = b"HSSNAP01";
const COUNT_AT: u64 = 16;
const BUFFER: usize = 1 << 20;

/// One key and its value.
pub(crate) type Pair = (Vec<u8>, Vec<u8>);
const WHAT: &str = "snapshot";

/// What [`write_file`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Written {
    pub(crate) len: u64,
    /// [`FileDigest`] of the whole file, so that the file can be checked without decoding it.
    pub(crate) digest: u64,
}

/// Writes `pairs` (all pairs of one state tree) as snapshot bytes to a new file at `path`, synced.
///
/// The pair count comes before the pairs and the checksum covers it, so the pairs are written
/// first, the count patched in, and the checksum computed by reading the file back.
pub(crate) fn write_file<I, K, V>(group: u64, pairs: I, path: &Path) -> Result<Written, StoreError>
where
    I: IntoIterator<Item = Result<(K, V), StoreError>>,
    K: AsRef<[u8]>,
    V: AsRef<[u8]>,
{
    let io_error = |e| StoreError::storage(format!("writing {}", path.display()), e);
    let file = File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(io_error)?;
    let mut out = BufWriter::with_capacity(BUFFER, file);
    out.write_all(MAGIC).map_err(io_error)?;
    out.write_all(&group.to_be_bytes()).map_err(io_error)?;
    out.write_all(&0u64.to_be_bytes()).map_err(io_error)?;
    let mut count = 0u64;
    for pair in pairs {
        let (key, value) = pair?;
        for part in [key.as_ref(), value.as_ref()] {
            let len = u32::try_from(part.len())
                .map_err(|_| StoreError::codec(WHAT, "a key or value is over 4 GiB"))?;
            out.write_all(&len.to_be_bytes()).map_err(io_error)?;
            out.write_all(part).map_err(io_error)?;
        }
        count += 1;
    }
    let mut file = out.into_inner().map_err(|e| io_error(e.into_error()))?;
    file.seek(SeekFrom::Start(COUNT_AT)).map_err(io_error)?;
    file.write_all(&count.to_be_bytes()).map_err(io_error)?;
    file.seek(SeekFrom::Start(0)).map_err(io_error)?;
    let mut reader = BufReader::with_capacity(BUFFER, &file);
    let mut sum = Fnv1a::new();
    let mut digest = FileDigest::new();
    let mut len = 0u64;
    loop {
        let piece = reader.fill_buf().map_err(io_error)?;
        if piece.is_empty() {
            break;
        }
        sum.update(piece);
        digest.update(piece);
        let n = piece.len();
        len += n as u64;
        reader.consume(n);
    }
    drop(reader);
    let trailer = sum.finish().to_be_bytes();
    digest.update(&trailer);
    file.seek(SeekFrom::End(0)).map_err(io_error)?;
    file.write_all(&trailer).map_err(io_error)?;
    file.sync_all().map_err(io_error)?;
    Ok(Written {
        len: len + trailer.len() as u64,
        digest: digest.finish(),
    })
}

/// The pairs of snapshot bytes read from `source` one at a time, after checking that the header
/// names `group`. The checksum can only be checked once the last pair is read: until the iterator
/// has returned `None` (and no error), the pairs must be treated as unconfirmed.
pub(crate) struct Pairs<R> {
    source: BufReader<R>,
    sum: Fnv1a,
    left: u64,
    finished: bool,
}

impl<R: Read> Pairs<R> {
    pub(crate) fn new(group: u64, source: R) -> Result<Self, StoreError> {
        let mut pairs = Pairs {
            source: BufReader::with_capacity(BUFFER, source),
            sum: Fnv1a::new(),
            left: 0,
            finished: false,
        };
        let mut magic = [0u8; 8];
        pairs.read_exact(&mut magic)?;
        if &magic != MAGIC {
            return Err(StoreError::codec(
                WHAT,
                "not a Hindsight state snapshot (bad magic)",
            ));
        }
        let from_group = pairs.u64()?;
        if from_group != group {
            return Err(StoreError::codec(
                WHAT,
                format!("built for raft group {from_group}, installing into group {group}"),
            ));
        }
        pairs.left = pairs.u64()?;
        Ok(pairs)
    }

    /// How many pairs the header announces.
    #[cfg(test)]
    fn announced(&self) -> u64 {
        self.left
    }

    fn read_exact(&mut self, into: &mut [u8]) -> Result<(), StoreError> {
        self.source.read_exact(into).map_err(read_error)?;
        self.sum.update(into);
        Ok(())
    }

    fn u64(&mut self) -> Result<u64, StoreError> {
        let mut bytes = [0u8; 8];
        self.read_exact(&mut bytes)?;
        Ok(u64::from_be_bytes(bytes))
    }

    fn chunk(&mut self) -> Result<Vec<u8>, StoreError> {
        let mut len = [0u8; 4];
        self.read_exact(&mut len)?;
        let len = u32::from_be_bytes(len) as usize;
        // The length is not trusted for an allocation before the bytes are there.
        let mut bytes = Vec::with_capacity(len.min(BUFFER));
        (&mut self.source)
            .take(len as u64)
            .read_to_end(&mut bytes)
            .map_err(read_error)?;
        if bytes.len() != len {
            return Err(StoreError::codec(
                WHAT,
                "frame ends early: the snapshot is truncated",
            ));
        }
        self.sum.update(&bytes);
        Ok(bytes)
    }

    fn pair(&mut self) -> Result<Pair, StoreError> {
        let key = self.chunk()?;
        let value = self.chunk()?;
        Ok((key, value))
    }

    fn check_end(&mut self) -> Result<(), StoreError> {
        let mut stored = [0u8; 8];
        self.source.read_exact(&mut stored).map_err(read_error)?;
        if self.sum.finish().to_be_bytes() != stored {
            return Err(StoreError::codec(
                WHAT,
                "checksum mismatch: the snapshot is corrupt or truncated",
            ));
        }
        let mut rest = Vec::new();
        (&mut self.source)
            .take(BUFFER as u64)
            .read_to_end(&mut rest)
            .map_err(read_error)?;
        if !rest.is_empty() {
            return Err(StoreError::codec(
                WHAT,
                format!("{} unexpected trailing bytes", rest.len()),
            ));
        }
        Ok(())
    }
}

impl<R: Read> Iterator for Pairs<R> {
    type Item = Result<Pair, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.finished {
            return None;
        }
        if self.left == 0 {
            self.finished = true;
            return self.check_end().err().map(Err);
        }
        self.left -= 1;
        let pair = self.pair();
        if pair.is_err() {
            self.finished = true;
        }
        Some(pair)
    }
}

fn read_error(e: io::Error) -> StoreError {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        StoreError::codec(WHAT, "frame ends early: the snapshot is truncated")
    } else {
        StoreError::storage("reading a snapshot", e)
    }
}

/// FNV-1a, 64-bit, fed in pieces.
struct Fnv1a(u64);

impl Fnv1a {
    fn new() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }

    fn update(&mut self, bytes: &[u8]) {
        self.0 = bytes.iter().fold(self.0, |hash, &b| {
            (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs() -> Vec<Result<Pair, StoreError>> {
        vec![
            Ok((b"b/acme".to_vec(), b"config".to_vec())),
            Ok((b"meta/last_applied".to_vec(), vec![])),
        ]
    }

    fn written(group: u64, pairs: Vec<Result<Pair, StoreError>>) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let written = write_file(group, pairs, &path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(written.len, bytes.len() as u64);
        assert_eq!(written.digest, FileDigest::of(&bytes[..]).unwrap().0);
        bytes
    }

    fn decode(group: u64, bytes: &[u8]) -> Result<Vec<Pair>, StoreError> {
        Pairs::new(group, bytes)?.collect()
    }

    #[test]
    fn round_trips_every_pair() {
        let bytes = written(0, pairs());
        assert_eq!(Pairs::new(0, &bytes[..]).unwrap().announced(), 2);
        let back = decode(0, &bytes).unwrap();
        let expected: Vec<_> = pairs().into_iter().map(Result::unwrap).collect();
        assert_eq!(back, expected);
        assert!(decode(0, &written(0, vec![])).unwrap().is_empty());
    }

    #[test]
    fn the_checksum_covers_the_patched_count() {
        // Written before the pairs are known, the count is part of what the checksum covers.
        let bytes = written(0, pairs());
        let mut fewer = bytes.clone();
        fewer[COUNT_AT as usize + 7] = 1;
        let err = decode(0, &fewer).unwrap_err().to_string();
        assert!(
            err.contains("checksum") || err.contains("trailing"),
            "{err}"
        );
    }

    #[test]
    fn refuses_corruption_truncation_and_foreign_groups() {
        let bytes = written(0, pairs());
        for at in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[at] ^= 1;
            assert!(decode(0, &flipped).is_err(), "byte {at} flipped");
        }
        for len in 0..bytes.len() {
            assert!(decode(0, &bytes[..len]).is_err(), "cut to {len} bytes");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(0, &longer).is_err());
        let err = decode(1, &bytes).err().unwrap().to_string();
        assert!(err.contains("group 0"), "{err}");
    }
}
