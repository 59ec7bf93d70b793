//! A fast 64-bit digest of file contents, to notice that a file changed while the node was stopped.
//!
//! Four lanes of 8-byte words, each lane updated by `(lane ^ word) * PRIME`, rotated. Each step is a
//! bijection of the lane for a fixed word and injective in the word for a fixed lane, and the final
//! fold is injective in each lane, so any change confined to one 8-byte word (every flipped byte or
//! bit) always changes the digest; wider random damage goes unnoticed with odds of about 2^-64.
//! It is a check against accidents (bad sectors, stray writes), not against someone forging files.

use std::io::{self, Read};

const PRIME: u64 = 0x9e37_79b9_7f4a_7c15;
const SEED: [u64; 4] = [
    0xcbf2_9ce4_8422_2325,
    0x8422_2325_cbf2_9ce4,
    0x2325_cbf2_9ce4_8422,
    0x9ce4_8422_2325_cbf2,
];
const BLOCK: usize = 32;

/// Digest of a stream, fed in pieces of any size.
pub(crate) struct FileDigest {
    lanes: [u64; 4],
    pending: [u8; BLOCK],
    pending_len: usize,
    total: u64,
}

impl FileDigest {
    pub(crate) fn new() -> Self {
        FileDigest {
            lanes: SEED,
            pending: [0; BLOCK],
            pending_len: 0,
            total: 0,
        }
    }

    /// The digest and length of everything `reader` yields.
    pub(crate) fn of(mut reader: impl Read) -> io::Result<(u64, u64)> {
        let mut digest = FileDigest::new();
        let mut buffer = vec![0u8; 1 << 20];
        loop {
            match reader.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => digest.update(&buffer[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        let total = digest.total;
        Ok((digest.finish(), total))
    }

    pub(crate) fn update(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.pending_len > 0 {
            let take = (BLOCK - self.pending_len).min(bytes.len());
            self.pending[self.pending_len..self.pending_len + take].copy_from_slice(&bytes[..take]);
            self.pending_len += take;
            bytes = &bytes[take..];
            if self.pending_len < BLOCK {
                return;
            }
            let block = self.pending;
            self.block(&block);
            self.pending_len = 0;
        }
        let mut blocks = bytes.chunks_exact(BLOCK);
        for block in &mut blocks {
            self.block(block);
        }
        let rest = blocks.remainder();
        self.pending[..rest.len()].copy_from_slice(rest);
        self.pending_len = rest.len();
    }

    fn block(&mut self, block: &[u8]) {
        for (lane, word) in self.lanes.iter_mut().zip(block.chunks_exact(8)) {
            let word = u64::from_le_bytes(word.try_into().expect("8 bytes"));
            *lane = step(*lane, word);
        }
    }

    pub(crate) fn finish(mut self) -> u64 {
        // The tail, zero-padded to whole words; the length below tells the padding from zeros.
        // Past `pending_len` the buffer may still hold an earlier piece's bytes.
        let mut tail = self.pending;
        tail[self.pending_len..].fill(0);
        for (i, word) in tail[..self.pending_len.div_ceil(8) * 8]
            .chunks_exact(8)
            .enumerate()
        {
            let word = u64::from_le_bytes(word.try_into().expect("8 bytes"));
            self.lanes[i] = step(self.lanes[i], word);
        }
        let folded = self.lanes.iter().fold(self.total, |h, &lane| step(h, lane));
        step(folded, self.total)
    }
}

fn step(lane: u64, word: u64) -> u64 {
    (lane ^ word).wrapping_mul(PRIME).rotate_left(29)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(bytes: &[u8]) -> u64 {
        FileDigest::of(bytes).unwrap().0
    }

    #[test]
    fn pieces_of_any_size_give_the_digest_of_the_whole() {
        let bytes: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
        let whole = digest(&bytes);
        for piece in [1, 3, 8, 31, 32, 33, 999] {
            let mut d = FileDigest::new();
            for chunk in bytes.chunks(piece) {
                d.update(chunk);
            }
            assert_eq!(d.finish(), whole, "pieces of {piece}");
        }
    }

    #[test]
    fn uneven_pieces_give_the_digest_of_the_whole() {
        // A short tail after a longer one must not pick up the longer one's bytes.
        for total in [24usize, 40, 60, 85, 120] {
            let bytes: Vec<u8> = (0..total as u32).map(|i| (i * 7 % 251) as u8).collect();
            let mut d = FileDigest::new();
            let mut at = 0;
            for n in [8, 4, total - 24, 8, 4] {
                d.update(&bytes[at..at + n]);
                at += n;
            }
            assert_eq!(d.finish(), digest(&bytes), "{total} bytes");
        }
    }

    #[test]
    fn every_flipped_bit_and_trailing_zero_changes_the_digest() {
        let bytes: Vec<u8> = (0..200u32).map(|i| (i * 13 % 256) as u8).collect();
        let original = digest(&bytes);
        for at in 0..bytes.len() {
            for bit in 0..8 {
                let mut flipped = bytes.clone();
                flipped[at] ^= 1 << bit;
                assert_ne!(digest(&flipped), original, "byte {at} bit {bit}");
            }
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_ne!(digest(&longer), original);
        assert_ne!(digest(&[]), digest(&[0]));
    }
}
