//! Recall's scoring rules: each arm's calibrated evidence combined into one relevance, then the
//! lifecycle score.
//!
//! Reciprocal rank fusion counts positions only: the first hit of an arm that found nothing close scores as much as the first hit of an arm that found
//! the answer, and confidence added on top lets a well-trusted but unrelated memory outrank a
//! relevant one. Recall therefore fuses calibrated evidence (how strongly each arm says "this
//! answers the query", in 0..1) with a noisy-or: a memory is at least as relevant as its best
//! arm says, and agreement between arms raises it further. Confidence and freshness then scale
//! that relevance instead of adding to it, so an unrelated memory stays near 0 whatever its
//! confidence, and a relevance floor can leave it out.

use crate::bank::ScoringWeights;

/// `exp(-age_days / scale_days)`; memories from the future (relative to `as_of`) count as fresh.
pub fn freshness(age_days: f64, scale_days: f32) -> f32 {
    (-(age_days.max(0.0)) / scale_days as f64).exp() as f32
}

/// The most one arm's evidence may count: no single arm is certain, so a second arm that agrees
/// still lifts the relevance.
pub const MAX_ARM_EVIDENCE: f32 = 0.95;

/// Relevance below which recall leaves a memory out by default: 0, so none is. Semantic evidence
/// bottoms out at 0.02 (a cosine under 0.165 with the default model), which is also where some
/// right answers sit when a question shares no word and little meaning with them (3 of 595 on the
/// public dev set, all found by trust and freshness alone); a floor of 0.03 leaves those out
/// together with every memory of an unrelated query. Such hits are flagged `weak_match` instead
/// (below [`WEAK_RELEVANCE`]), and `recall.min_relevance` sets a floor for a deployment that would
/// rather get nothing.
pub const DEFAULT_MIN_RELEVANCE: f32 = 0.0;

/// Relevance below which a returned memory is flagged `weak_match`: the arms found little of the
/// query in it, so an agent should not take it as the answer without checking. On the public dev
/// set, 69 % of the returned memories that were not a right answer sit below it, and 4 % of right
/// answers; every memory returned for an unrelated query does.
pub const WEAK_RELEVANCE: f32 = 0.15;

/// Noisy-or of the arms' evidence, each in 0..1 and capped at [`MAX_ARM_EVIDENCE`]: never below
/// the strongest single arm, higher when several agree.
pub fn combine_evidence(evidence: impl IntoIterator<Item = f32>) -> f32 {
    let missed: f32 = evidence
        .into_iter()
        .map(|e| 1.0 - e.clamp(0.0, MAX_ARM_EVIDENCE))
        .product();
    1.0 - missed
}

/// `relevance` scaled by what the memory's confidence and freshness are worth: with the default
/// weights (0.6, 0.3, 0.1) a certain, fresh memory keeps all of its relevance and an unconfirmed,
/// stale one keeps 0.6 of it. The weights are normalised, so only their proportions matter.
pub fn lifecycle_score(
    weights: &ScoringWeights,
    relevance: f32,
    confidence: f32,
    freshness: f32,
) -> f32 {
    let total = (weights.relevance + weights.confidence + weights.freshness).max(f32::EPSILON);
    let worth =
        (weights.relevance + weights.confidence * confidence + weights.freshness * freshness)
            / total;
    relevance * worth
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Kind;

    #[test]
    fn lifecycle_score_scales_relevance_by_confidence_and_freshness() {
        let w = ScoringWeights::default();
        let s = lifecycle_score(&w, 1.0, 0.5, freshness(0.0, w.freshness_days));
        assert!((s - (0.6 + 0.15 + 0.1)).abs() < 1e-6);
        let halved = lifecycle_score(&w, 0.5, 0.5, freshness(0.0, w.freshness_days));
        assert!((halved - s / 2.0).abs() < 1e-6);
        // A fully trusted memory that shares nothing with the query scores nothing.
        assert_eq!(lifecycle_score(&w, 0.0, 1.0, 1.0), 0.0);
        assert!((freshness(30.0, 30.0) - (-1.0f32).exp()).abs() < 1e-6);
        assert_eq!(freshness(-5.0, 30.0), 1.0);
    }

    #[test]
    fn combined_evidence_is_never_below_the_best_arm() {
        assert_eq!(combine_evidence([]), 0.0);
        assert!((combine_evidence([0.7]) - 0.7).abs() < 1e-6);
        let both = combine_evidence([0.7, 0.4]);
        assert!(both > 0.7 && both < 1.0, "{both}");
        assert!((combine_evidence([1.0]) - MAX_ARM_EVIDENCE).abs() < 1e-6);
        assert!(combine_evidence([0.2, 0.2]) < combine_evidence([0.5]));
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
