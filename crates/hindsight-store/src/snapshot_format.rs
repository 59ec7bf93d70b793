//! The bytes of a state snapshot: every key and value of a group's state tree, framed so that a
//! truncated or corrupted transfer is refused instead of half-installed.
//!
//! ```text
//! magic "HSSNAP01" | group u64 | pairs u64 | pairs × (key_len u32, key, value_len u32, value) | fnv1a-64
//! ```
//! Integers are big-endian; the checksum covers everything before it.

use crate::error::StoreError;

const MAGIC: &[u8; 8] = b"HSSNAP01";

/// One key and its value.
pub(crate) type Pair = (Vec<u8>, Vec<u8>);
const WHAT: &str = "snapshot";

/// Frames `pairs` (all pairs of one state tree) as snapshot bytes.
pub(crate) fn encode<I, K, V>(group: u64, pairs: I) -> Result<Vec<u8>, StoreError>
where
    I: IntoIterator<Item = Result<(K, V), StoreError>>,
    K: AsRef<[u8]>,
    V: AsRef<[u8]>,
{
    let mut out = Vec::with_capacity(4096);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&group.to_be_bytes());
    let count_at = out.len();
    out.extend_from_slice(&0u64.to_be_bytes());
    let mut count = 0u64;
    for pair in pairs {
        let (key, value) = pair?;
        for part in [key.as_ref(), value.as_ref()] {
            let len = u32::try_from(part.len())
                .map_err(|_| StoreError::codec(WHAT, "a key or value is over 4 GiB"))?;
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(part);
        }
        count += 1;
    }
    out[count_at..count_at + 8].copy_from_slice(&count.to_be_bytes());
    let sum = fnv1a(&out);
    out.extend_from_slice(&sum.to_be_bytes());
    Ok(out)
}

/// The pairs in snapshot `bytes`, after checking the frame, the checksum and that it was built for
/// `group`.
pub(crate) fn decode(group: u64, bytes: &[u8]) -> Result<Vec<Pair>, StoreError> {
    let bad = |why: String| StoreError::codec(WHAT, why);
    let body_len = bytes
        .len()
        .checked_sub(8)
        .filter(|&n| n >= MAGIC.len() + 16)
        .ok_or_else(|| {
            bad(format!(
                "{} bytes is too short to be a snapshot",
                bytes.len()
            ))
        })?;
    let (body, sum) = bytes.split_at(body_len);
    if &body[..MAGIC.len()] != MAGIC {
        return Err(bad("not a Hindsight state snapshot (bad magic)".into()));
    }
    if fnv1a(body).to_be_bytes() != sum {
        return Err(bad(
            "checksum mismatch: the snapshot is corrupt or truncated".into(),
        ));
    }
    let mut reader = Reader {
        bytes: &body[MAGIC.len()..],
    };
    let from_group = reader.u64()?;
    if from_group != group {
        return Err(bad(format!(
            "built for raft group {from_group}, installing into group {group}"
        )));
    }
    let count = reader.u64()?;
    let mut pairs = Vec::with_capacity(count.min(1 << 20) as usize);
    for _ in 0..count {
        let key = reader.chunk()?.to_vec();
        let value = reader.chunk()?.to_vec();
        pairs.push((key, value));
    }
    if !reader.bytes.is_empty() {
        return Err(bad(format!(
            "{} unexpected trailing bytes",
            reader.bytes.len()
        )));
    }
    Ok(pairs)
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], StoreError> {
        if self.bytes.len() < n {
            return Err(StoreError::codec(WHAT, "frame ends early"));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    fn u64(&mut self) -> Result<u64, StoreError> {
        Ok(u64::from_be_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    fn chunk(&mut self) -> Result<&'a [u8], StoreError> {
        let len = u32::from_be_bytes(self.take(4)?.try_into().expect("4 bytes"));
        self.take(len as usize)
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
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

    #[test]
    fn round_trips_every_pair() {
        let bytes = encode(0, pairs()).unwrap();
        let back = decode(0, &bytes).unwrap();
        let expected: Vec<_> = pairs().into_iter().map(Result::unwrap).collect();
        assert_eq!(back, expected);
        assert!(
            decode(0, &encode(0, Vec::<Result<Pair, _>>::new()).unwrap())
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn refuses_corruption_truncation_and_foreign_groups() {
        let bytes = encode(0, pairs()).unwrap();
        let mut flipped = bytes.clone();
        flipped[20] ^= 1;
        assert!(decode(0, &flipped).is_err());
        assert!(decode(0, &bytes[..bytes.len() - 3]).is_err());
        assert!(decode(0, b"short").is_err());
        let err = decode(1, &bytes).unwrap_err().to_string();
        assert!(err.contains("group 0"), "{err}");
    }
}
