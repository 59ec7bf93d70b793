//! SentencePiece text normalisation from a precompiled character map.
//!
//! The model ships its normalisation rules (here `nmt_nfkc`: NFKC plus
//! whitespace and control-character clean-up) as a darts-clone double-array
//! trie whose keys are input byte sequences and whose values point at
//! NUL-terminated replacements. Following the map, rather than a Unicode
//! library's NFKC, reproduces the tokenizer the model was trained with,
//! including its deviations from standard NFKC.

/// U+2581 LOWER ONE EIGHTH BLOCK, which stands for a space inside pieces.
pub(crate) const SPACE_SYMBOL: &str = "\u{2581}";

#[derive(Debug, Clone)]
pub(crate) struct Normalizer {
    units: Vec<u32>,
    replacements: Vec<u8>,
    add_dummy_prefix: bool,
    remove_extra_whitespaces: bool,
    escape_whitespaces: bool,
}

impl Normalizer {
    /// Builds a normaliser from the `precompiled_charsmap` blob (may be empty,
    /// meaning identity) and the whitespace flags of the normaliser spec.
    pub fn new(
        charsmap: &[u8],
        add_dummy_prefix: bool,
        remove_extra_whitespaces: bool,
        escape_whitespaces: bool,
    ) -> Result<Self, String> {
        let (units, replacements) = if charsmap.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            if charsmap.len() < 4 {
                return Err("precompiled charsmap is truncated".into());
            }
            let trie_size =
                u32::from_le_bytes([charsmap[0], charsmap[1], charsmap[2], charsmap[3]]) as usize;
            let trie_end = 4usize
                .checked_add(trie_size)
                .filter(|&e| e <= charsmap.len() && trie_size.is_multiple_of(4))
                .ok_or_else(|| "precompiled charsmap has a bad trie size".to_string())?;
            let units = charsmap[4..trie_end]
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect::<Vec<_>>();
            if units.is_empty() {
                return Err("precompiled charsmap has an empty trie".into());
            }
            (units, charsmap[trie_end..].to_vec())
        };
        Ok(Normalizer {
            units,
            replacements,
            add_dummy_prefix,
            remove_extra_whitespaces,
            escape_whitespaces,
        })
    }

    #[inline]
    fn offset(unit: u32) -> usize {
        ((unit >> 10) << ((unit & (1 << 9)) >> 6)) as usize
    }

    /// Normalises the longest mapped prefix of `input`; returns the
    /// replacement and how many input bytes it stands for.
    fn normalize_prefix<'a>(&'a self, input: &'a [u8]) -> (&'a [u8], usize) {
        let mut best_len = 0;
        let mut best_value = 0usize;
        if let Some(&root) = self.units.first() {
            let mut node = Self::offset(root);
            for (i, &byte) in input.iter().enumerate() {
                node ^= byte as usize;
                let Some(&unit) = self.units.get(node) else {
                    break;
                };
                // The label check also fails on leaf units, whose top bit is set.
                if unit & 0x8000_00ff != byte as u32 {
                    break;
                }
                node ^= Self::offset(unit);
                if unit & (1 << 8) != 0 {
                    let Some(&leaf) = self.units.get(node) else {
                        break;
                    };
                    best_len = i + 1;
                    best_value = (leaf & 0x7fff_ffff) as usize;
                }
            }
        }
        if best_len > 0 && best_value < self.replacements.len() {
            let tail = &self.replacements[best_value..];
            let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
            return (&tail[..end], best_len);
        }
        // Unmapped: the character passes through unchanged.
        let len = utf8_len(input[0]).min(input.len());
        (&input[..len], len)
    }

    /// Normalises `text` the way SentencePiece does before segmentation:
    /// map characters, collapse and trim whitespace, prepend the dummy prefix
    /// and write spaces as U+2581.
    pub fn normalize(&self, text: &str) -> String {
        let input = text.as_bytes();
        let mut pos = 0;
        let strip = self.remove_extra_whitespaces;
        if strip {
            while pos < input.len() {
                let (piece, consumed) = self.normalize_prefix(&input[pos..]);
                if piece != b" " {
                    break;
                }
                pos += consumed;
            }
        }
        if pos >= input.len() {
            return String::new();
        }

        let space: &[u8] = if self.escape_whitespaces {
            SPACE_SYMBOL.as_bytes()
        } else {
            b" "
        };
        let mut out: Vec<u8> = Vec::with_capacity(input.len() + 8);
        if self.add_dummy_prefix {
            out.extend_from_slice(space);
        }
        let mut prev_is_space = strip;
        while pos < input.len() {
            let (mut piece, consumed) = self.normalize_prefix(&input[pos..]);
            pos += consumed;
            if strip && prev_is_space {
                while let Some(rest) = piece.strip_prefix(b" ") {
                    piece = rest;
                }
            }
            if piece.is_empty() {
                continue;
            }
            for &byte in piece {
                if byte == b' ' {
                    out.extend_from_slice(space);
                } else {
                    out.push(byte);
                }
            }
            prev_is_space = piece.ends_with(b" ");
        }
        if strip {
            while out.ends_with(space) {
                out.truncate(out.len() - space.len());
            }
        }
        // Replacements are UTF-8 in any well-formed model; a broken one must
        // not abort tokenization, so repair rather than fail.
        match String::from_utf8(out) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        }
    }
}

/// Length of the UTF-8 sequence introduced by `first`; 1 for stray bytes.
fn utf8_len(first: u8) -> usize {
    match first {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_map_handles_whitespace() {
        let n = Normalizer::new(&[], true, true, true).unwrap();
        assert_eq!(n.normalize("  hello   world  "), "▁hello▁world");
        assert_eq!(n.normalize("   "), "");
        assert_eq!(n.normalize(""), "");
        assert_eq!(n.normalize("你好 世界"), "▁你好▁世界");

        let keep = Normalizer::new(&[], false, false, true).unwrap();
        assert_eq!(keep.normalize(" a  b "), "▁a▁▁b▁");
    }

    #[test]
    fn rejects_bad_charsmap() {
        assert!(Normalizer::new(&[1, 0], true, true, true).is_err());
        assert!(Normalizer::new(&[200, 0, 0, 0, 1, 2], true, true, true).is_err());
    }
}
