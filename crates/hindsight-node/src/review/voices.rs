//! Inferences in the user's voice, embedded before a cycle so that its neighbourhood can compare
//! them with what the user stated.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use hindsight_core::{Memory, MemoryId};
use hindsight_index::dot;
use hindsight_review::is_inferred;

use super::neighbourhood::{reviewable_inferences, DIRECT_SCAN_LIMIT};
use super::ReviewHost;
use crate::bank::BankView;
use crate::config::ReviewSection;
use crate::error::NodeError;

/// An agent writes about "the user", the user about "I": the same claim lands further apart in
/// embedding space than its content warrants. Inferences that may meet a statement in this
/// cycle get a second vector, embedded in the user's voice ("I seem to work late"), which the
/// review's neighbourhood compares with statements instead of the third-person one.
pub(super) async fn user_voices(
    node: &impl ReviewHost,
    view: &BankView,
    watermark: u64,
    settings: &ReviewSection,
) -> Result<HashMap<MemoryId, Vec<f32>>, NodeError> {
    let loose = settings.pairs.inference_similarity / 2.0;
    let limit = settings.pairs.neighbours_per_memory;
    let texts: Vec<(MemoryId, String)> = view.with_records(|records| {
        let inferences = reviewable_inferences(records);
        if inferences.is_empty() {
            return vec![];
        }
        let vectors = view.index.vectors();
        let inference_vectors: Vec<(&Arc<Memory>, Vec<f32>)> =
            if inferences.len() <= DIRECT_SCAN_LIMIT {
                inferences
                    .iter()
                    .filter_map(|m| Some((m, vectors.get(m.id.0)?)))
                    .collect()
            } else {
                vec![]
            };
        let is_inference = |id: u128| {
            records
                .get(&MemoryId(id))
                .is_some_and(|m| is_inferred(m) && hindsight_review::is_reviewable(m))
        };
        let mut wanted: BTreeMap<MemoryId, String> = BTreeMap::new();
        let mut voice = |m: &Memory| {
            if let Some(text) = hindsight_text::in_user_voice(&m.content) {
                wanted.insert(m.id, text);
            }
        };
        for m in records.values().filter(|m| m.updated_index > watermark) {
            if !hindsight_review::is_reviewable(m) {
                continue;
            }
            if is_inferred(m) {
                voice(m);
                continue;
            }
            let Some(vector) = vectors.get(m.id.0) else {
                continue;
            };
            if inference_vectors.is_empty() {
                for (id, similarity) in vectors
                    .search(&vector, limit, &is_inference)
                    .unwrap_or_default()
                {
                    if similarity >= loose {
                        if let Some(other) = records.get(&MemoryId(id)) {
                            voice(other);
                        }
                    }
                }
            } else {
                for (other, v) in &inference_vectors {
                    if dot(&vector, v) >= loose {
                        voice(other);
                    }
                }
            }
        }
        wanted.into_iter().collect()
    });
    if texts.is_empty() {
        return Ok(HashMap::new());
    }
    let (ids, texts): (Vec<MemoryId>, Vec<String>) = texts.into_iter().unzip();
    let vectors = crate::bank::embedding::embed(&node.banks().context().embedder, texts).await?;
    Ok(ids.into_iter().zip(vectors).collect())
}
