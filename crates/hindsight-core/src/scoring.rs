//! Recall's scoring rules (ARCHITECTURE §5): reciprocal rank fusion of the arms, then the lifecycle score.

use std::collections::HashMap;
use std::hash::Hash;

use crate::bank::ScoringWeights;

/// The RRF constant from the design.
pub const RRF_K: f32 = 60.0;

/// Fuses ranked lists (best first) into `id → Σ weight / (k + rank)` with 1-based ranks.
pub fn reciprocal_rank_fusion<I: Copy + Eq + Hash>(
    arms: &[(f32, Vec<I>)],
    k: f32,
) -> HashMap<I, f32> {
    let mut fused = HashMap::new();
    for (weight, ranked) in arms {
        for (rank, id) in ranked.iter().enumerate() {
            *fused.entry(*id).or_insert(0.0) += weight / (k + rank as f32 + 1.0);
        }
    }
    fused
}

/// The best fused score an item can get: first in every arm. Dividing by it maps relevance to 0..1.
pub fn max_fused_score(arm_weights: impl IntoIterator<Item = f32>, k: f32) -> f32 {
    arm_weights.into_iter().map(|w| w / (k + 1.0)).sum()
}

/// `exp(-age_days / scale_days)`; memories from the future (relative to `as_of`) count as fresh.
pub fn freshness(age_days: f64, scale_days: f32) -> f32 {
    (-(age_days.max(0.0)) / scale_days as f64).exp() as f32
}

pub fn lifecycle_score(
    weights: &ScoringWeights,
    relevance: f32,
    confidence: f32,
    freshness: f32,
) -> f32 {
    weights.relevance * relevance + weights.confidence * confidence + weights.freshness * freshness
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Kind;

    #[test]
    fn rrf_rewards_agreement_between_arms() {
        let fused = reciprocal_rank_fusion(&[(1.0, vec![1, 2, 3]), (1.0, vec![2, 4])], RRF_K);
        assert!(fused[&2] > fused[&1]);
        assert!(fused[&1] > fused[&4]);
        assert!((fused[&2] - (1.0 / 62.0 + 1.0 / 61.0)).abs() < 1e-6);
        assert!((max_fused_score([1.0, 1.0], RRF_K) - 2.0 / 61.0).abs() < 1e-6);
    }

    #[test]
    fn lifecycle_score_uses_the_seed_weights() {
        let w = ScoringWeights::default();
        let s = lifecycle_score(&w, 1.0, 0.5, freshness(0.0, w.freshness_days));
        assert!((s - (0.6 + 0.15 + 0.1)).abs() < 1e-6);
        assert!((freshness(30.0, 30.0) - (-1.0f32).exp()).abs() < 1e-6);
        assert_eq!(freshness(-5.0, 30.0), 1.0);
    }

    #[test]
    fn a_fact_ages_far_more_slowly_than_an_event() {
        let w = ScoringWeights::default();
        let event = freshness(90.0, w.freshness_days_for(Kind::Episodic));
        let fact = freshness(90.0, w.freshness_days_for(Kind::Semantic));
        assert!(event < 0.06, "{event}");
        assert!(fact > 0.75, "{fact}");
        assert_eq!(w.freshness_days_for(Kind::Working), w.freshness_days);
    }
}
