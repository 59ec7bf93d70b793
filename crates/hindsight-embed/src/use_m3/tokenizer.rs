//! SentencePiece unigram tokenizer (normalisation + Viterbi segmentation).

use std::path::Path;

use super::normalizer::Normalizer;
use super::sp_model::{PieceKind, SpModel};
use super::trie::PieceTrie;
use crate::EmbedError;

/// Penalty below the worst piece score given to a character no piece covers,
/// as in SentencePiece, so unknowns are used only when nothing else fits.
const UNK_PENALTY: f32 = 10.0;

/// A SentencePiece unigram model loaded from a `.model` file.
///
/// Segmentation follows the reference implementation: pieces of type
/// control and unknown never match text, user-defined pieces always win, and
/// a character no piece covers becomes the unknown id.
#[derive(Debug, Clone)]
pub struct SentencePieceTokenizer {
    normalizer: Normalizer,
    trie: PieceTrie,
    pieces: Vec<String>,
    /// Score used in the lattice for each piece id.
    scores: Vec<f32>,
    unk_id: u32,
    unk_score: f32,
    bos_id: Option<u32>,
    eos_id: Option<u32>,
}

impl SentencePieceTokenizer {
    /// Reads and parses a `.model` file.
    pub fn load(path: &Path) -> Result<Self, EmbedError> {
        let data = std::fs::read(path).map_err(|e| EmbedError::io("cannot read", path, e))?;
        Self::from_bytes(&data).map_err(|reason| EmbedError::invalid(path, reason))
    }

    /// Parses a serialized `ModelProto`.
    pub fn from_bytes(data: &[u8]) -> Result<Self, String> {
        let model = SpModel::parse(data)?;
        let normalizer = Normalizer::new(
            &model.precompiled_charsmap,
            model.add_dummy_prefix,
            model.remove_extra_whitespaces,
            model.escape_whitespaces,
        )?;

        let normal_scores = model
            .pieces
            .iter()
            .filter(|p| p.kind == PieceKind::Normal)
            .map(|p| p.score);
        let min_score = normal_scores.clone().fold(f32::MAX, f32::min);
        // Starting from the smallest positive float (not -inf) mirrors the
        // reference, which makes user-defined pieces score about -0.1.
        let max_score = normal_scores.fold(f32::MIN_POSITIVE, f32::max);

        let unk_id = model
            .pieces
            .iter()
            .position(|p| p.kind == PieceKind::Unknown)
            .ok_or_else(|| "model defines no unknown piece".to_string())?
            as u32;

        let mut entries = Vec::with_capacity(model.pieces.len());
        let mut scores = Vec::with_capacity(model.pieces.len());
        for (id, piece) in model.pieces.iter().enumerate() {
            let score = match piece.kind {
                PieceKind::UserDefined => piece.text.len() as f32 * max_score - 0.1,
                _ => piece.score,
            };
            scores.push(score);
            // Byte-fallback pieces are spelled like `<0x41>` and, like control
            // and unused pieces, must never match literal text.
            let matchable = matches!(piece.kind, PieceKind::Normal | PieceKind::UserDefined);
            if matchable && !piece.text.is_empty() {
                entries.push((piece.text.as_bytes(), id as u32));
            }
        }
        let trie = PieceTrie::build(entries);

        let n = model.pieces.len() as u32;
        Ok(SentencePieceTokenizer {
            normalizer,
            trie,
            scores,
            unk_id,
            unk_score: min_score - UNK_PENALTY,
            bos_id: model.bos_id.filter(|&id| id < n),
            eos_id: model.eos_id.filter(|&id| id < n),
            pieces: model.pieces.into_iter().map(|p| p.text).collect(),
        })
    }

    /// Number of pieces in the vocabulary.
    pub fn vocab_size(&self) -> usize {
        self.pieces.len()
    }

    /// The text of piece `id`.
    pub fn piece(&self, id: u32) -> Option<&str> {
        self.pieces.get(id as usize).map(String::as_str)
    }

    /// Id given to characters the vocabulary does not cover.
    pub fn unk_id(&self) -> u32 {
        self.unk_id
    }

    /// Beginning-of-sentence id, if the model has one.
    pub fn bos_id(&self) -> Option<u32> {
        self.bos_id
    }

    /// End-of-sentence id, if the model has one.
    pub fn eos_id(&self) -> Option<u32> {
        self.eos_id
    }

    /// The normalised form of `text` that segmentation works on.
    pub fn normalize(&self, text: &str) -> String {
        self.normalizer.normalize(text)
    }

    /// Piece ids for `text`, without sentence markers; empty when the text
    /// normalises to nothing.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut ids = Vec::new();
        self.encode_into(text, &mut ids);
        ids
    }

    /// Appends the piece ids for `text` to `out`.
    pub fn encode_into(&self, text: &str, out: &mut Vec<u32>) {
        let normalized = self.normalizer.normalize(text);
        self.viterbi(normalized.as_bytes(), out);
    }

    /// Best segmentation of `text` (already normalised) by total piece score.
    ///
    /// A forward pass keeps, for every end position, the best-scoring piece
    /// ending there; ties go to the earliest candidate, as in the reference.
    fn viterbi(&self, text: &[u8], out: &mut Vec<u32>) {
        let len = text.len();
        if len == 0 {
            return;
        }
        // Per end position: best score, start of the last piece, its id.
        // `start == u32::MAX` marks positions not reached yet.
        let mut best = vec![(0.0f32, u32::MAX, 0u32); len + 1];
        best[0].1 = 0;
        let mut start = 0;
        while start < len {
            let base = best[start].0;
            let char_len = utf8_len(text[start]).min(len - start);
            let mut has_single = false;
            let mut node = self.trie.root();
            for (offset, &byte) in text[start..].iter().enumerate() {
                let Some(next) = self.trie.step(node, byte) else {
                    break;
                };
                node = next;
                if let Some(id) = self.trie.value(node) {
                    let end = start + offset + 1;
                    let score = base + self.scores[id as usize];
                    let slot = &mut best[end];
                    if slot.1 == u32::MAX || score > slot.0 {
                        *slot = (score, start as u32, id);
                    }
                    if end - start == char_len {
                        has_single = true;
                    }
                }
            }
            if !has_single {
                let end = start + char_len;
                let score = base + self.unk_score;
                let slot = &mut best[end];
                if slot.1 == u32::MAX || score > slot.0 {
                    *slot = (score, start as u32, self.unk_id);
                }
            }
            start += char_len;
        }

        let first = out.len();
        let mut end = len;
        while end > 0 {
            let (_, start, id) = best[end];
            // A run of uncovered characters becomes a single unknown id.
            let extends_unknown_run = id == self.unk_id && out.last() == Some(&self.unk_id);
            if !extends_unknown_run || out.len() == first {
                out.push(id);
            }
            end = start as usize;
        }
        out[first..].reverse();
    }
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => 1,
    }
}
