//! Feature-hashing embedder: deterministic and free of model files.

use crate::{l2_normalize, EmbedError, Embedder};

/// Embeds text by hashing word tokens, character trigrams and CJK character
/// unigrams/bigrams into a fixed number of signed buckets.
///
/// It only captures surface overlap (shared words and character sequences),
/// not meaning: paraphrases and translations score low. It is much weaker
/// than [`crate::UseM3Embedder`] and exists for unit tests and as an explicit
/// offline fallback. Output is stable across platforms and versions with the
/// same `model_id`.
#[derive(Debug, Clone)]
pub struct HashingEmbedder {
    dim: usize,
    model_id: String,
}

impl HashingEmbedder {
    /// An embedder with `dim` buckets (model id `hashing-v1-{dim}`).
    ///
    /// # Panics
    /// If `dim` is zero.
    pub fn new(dim: usize) -> Self {
        assert!(dim > 0, "HashingEmbedder needs at least one dimension");
        HashingEmbedder {
            dim,
            model_id: format!("hashing-v1-{dim}"),
        }
    }

    /// Embeds one text.
    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0.0f32; self.dim];
        let mut add = |kind: u8, feature: &str, weight: f32| {
            let h = fnv1a(kind, feature.as_bytes());
            let bucket = (h % self.dim as u64) as usize;
            let sign = if h >> 63 == 0 { 1.0 } else { -1.0 };
            v[bucket] += sign * weight;
        };

        let lower = text.to_lowercase();
        let mut word = String::new();
        let mut prev_cjk: Option<char> = None;
        let mut features = 0usize;
        for c in lower.chars() {
            if is_cjk(c) {
                features += flush_word(&mut word, &mut add);
                let mut buf = [0u8; 8];
                add(b'c', c.encode_utf8(&mut buf), 1.0);
                if let Some(p) = prev_cjk {
                    let pair: String = [p, c].iter().collect();
                    add(b'b', &pair, 1.0);
                }
                prev_cjk = Some(c);
                features += 1;
            } else if c.is_alphanumeric() {
                word.push(c);
                prev_cjk = None;
            } else {
                features += flush_word(&mut word, &mut add);
                prev_cjk = None;
            }
        }
        features += flush_word(&mut word, &mut add);
        if features == 0 {
            // Empty or punctuation-only text still gets a unit vector.
            add(b'e', "", 1.0);
        }
        l2_normalize(&mut v);
        v
    }
}

impl Embedder for HashingEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|t| self.embed_one(t)).collect())
    }
}

/// Emits the features of a finished word and clears it; returns how many
/// words were emitted (0 or 1).
fn flush_word(word: &mut String, add: &mut dyn FnMut(u8, &str, f32)) -> usize {
    if word.is_empty() {
        return 0;
    }
    add(b'w', word, 1.0);
    // Boundary-marked trigrams let inflections and typos still overlap.
    let padded: Vec<char> = std::iter::once('^')
        .chain(word.chars())
        .chain(std::iter::once('$'))
        .collect();
    let mut gram = String::new();
    for window in padded.windows(3) {
        gram.clear();
        gram.extend(window);
        add(b'g', &gram, 0.5);
    }
    word.clear();
    1
}

/// 64-bit FNV-1a with a feature-kind prefix, fixed so vectors never change.
fn fnv1a(kind: u8, bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in std::iter::once(&kind).chain(bytes) {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    // FNV's high bits mix poorly; fold them so the sign bit is usable.
    h ^ (h >> 29).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30ff       // hiragana, katakana
        | 0x3400..=0x4dbf     // CJK extension A
        | 0x4e00..=0x9fff     // CJK unified ideographs
        | 0xac00..=0xd7af     // hangul syllables
        | 0xf900..=0xfaff     // CJK compatibility ideographs
        | 0x20000..=0x2fa1f) // CJK extensions B-F and supplements
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cos(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn unit_length_and_deterministic() {
        let e = HashingEmbedder::new(256);
        assert_eq!(e.model_id(), "hashing-v1-256");
        let texts = ["Alice likes green tea", "", "!!!", "我喜欢喝绿茶"];
        let a = e.embed(&texts).unwrap();
        let b = e.embed(&texts).unwrap();
        assert_eq!(a, b);
        for v in &a {
            assert_eq!(v.len(), 256);
            let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-5, "norm {norm}");
        }
    }

    #[test]
    fn overlapping_text_is_closer() {
        let e = HashingEmbedder::new(512);
        let v = e
            .embed(&[
                "Alice prefers green tea in the morning",
                "In the morning Alice drinks green tea",
                "The server crashed after the kernel upgrade",
                "我每天早上喝绿茶",
                "早上喝绿茶对身体好",
                "服务器在升级后崩溃了",
            ])
            .unwrap();
        assert!(cos(&v[0], &v[1]) > cos(&v[0], &v[2]) + 0.2);
        assert!(cos(&v[3], &v[4]) > cos(&v[3], &v[5]) + 0.2);
    }

    #[test]
    fn case_insensitive() {
        let e = HashingEmbedder::new(64);
        assert_eq!(e.embed_one("Green TEA"), e.embed_one("green tea"));
    }
}
