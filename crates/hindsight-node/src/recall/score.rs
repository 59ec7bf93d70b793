//! Score: a candidate's relevance weighed with its confidence, freshness and the request's
//! adjustments, and the flags that tell an agent how far to trust it.

use hindsight_core::intent;
use hindsight_core::recall::Explain;
use hindsight_core::scoring::{combine_evidence, freshness, lifecycle_score, WEAK_RELEVANCE};
use hindsight_core::{Memory, Status};

use super::fuse::{Candidate, Candidates};
use super::search::Plan;

/// A candidate with its score and the explanation of the score.
pub(super) struct ScoredHit {
    pub(super) score: f32,
    pub(super) explain: Explain,
    pub(super) candidate: Candidate,
}

impl Plan {
    /// The candidates above the relevance floor that no adjustment leaves out, scored, best first.
    pub(super) fn score(&self, candidates: Candidates) -> Vec<ScoredHit> {
        let mut scored: Vec<ScoredHit> = candidates
            .into_values()
            .filter_map(|c| self.scored(c))
            .collect();
        by_score(&mut scored);
        scored
    }

    /// The candidate's relevance (its arms' evidence combined) scaled by its confidence,
    /// freshness and adjustments; `None` below the relevance floor or when left out.
    fn scored(&self, candidate: Candidate) -> Option<ScoredHit> {
        let weights = &self.configs[candidate.bank].weights;
        let relevance = combine_evidence(candidate.evidence.iter().copied());
        if relevance < self.min_relevance {
            return None;
        }
        let memory = &candidate.memory;
        let fresh = freshness(
            self.as_of.days_since(memory.occurred_at),
            weights.freshness_days_for(memory.kind),
        );
        let confidence = self.confidence_of(memory);
        let (factor, adjustments) = self.adjustments(memory)?;
        let score = lifecycle_score(weights, relevance, confidence, fresh) * factor;
        let explain = Explain {
            arms: candidate.arms.clone(),
            relevance,
            confidence,
            freshness: fresh,
            score,
            status: candidate.status.name().to_string(),
            flags: flags(&candidate, relevance),
            collapsed: vec![],
            adjustments,
        };
        Some(ScoredHit {
            score,
            explain,
            candidate,
        })
    }

    /// The factor intent, role and context give `memory`, and why; `None` leaves it out (its
    /// metadata names another case than the context's).
    fn adjustments(&self, memory: &Memory) -> Option<(f32, Vec<String>)> {
        let (context, mut reasons) = intent::context_factor(&self.request.context, memory)?;
        let (kind, kind_reason) = self.profile.kind_factor(memory);
        let (role, role_reason) = intent::role_factor(self.request.agent_role.as_deref(), memory);
        reasons.extend(kind_reason);
        reasons.extend(role_reason);
        Some((context * kind * role, reasons))
    }

    /// The memory's confidence at the request's point in time.
    pub(super) fn confidence_of(&self, memory: &Memory) -> f32 {
        self.request
            .as_of
            .map_or(memory.confidence, |t| memory.confidence_as_of(t))
    }
}

/// Best first; equal scores by memory id, so that the order never depends on the order the
/// candidates were found in.
pub(super) fn by_score(scored: &mut [ScoredHit]) {
    scored.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.candidate.memory.id.cmp(&b.candidate.memory.id))
    });
}

/// What an agent should know before it relies on the hit.
fn flags(candidate: &Candidate, relevance: f32) -> Vec<String> {
    let mut flags = vec![];
    if relevance < WEAK_RELEVANCE {
        flags.push("weak_match".to_string());
    }
    if candidate
        .memory
        .metadata
        .contains_key(crate::write::guarding::SENSITIVE)
    {
        flags.push("requires_confirmation".to_string());
    }
    match candidate.status {
        Status::Disputed => flags.push("disputed".to_string()),
        Status::PendingReview => flags.push("pending_review".to_string()),
        _ => {}
    }
    if candidate.in_window {
        flags.push("in_time_window".to_string());
    }
    if candidate.memory.support.count > 1 {
        flags.push(format!("support:{}", candidate.memory.support.count));
    } else if crate::write::guarding::is_uncorroborated(&candidate.memory) {
        flags.push("uncorroborated".to_string());
    }
    flags
}

#[cfg(test)]
mod tests {
    use hindsight_core::time::MILLIS_PER_DAY;
    use hindsight_core::Timestamp;

    use super::*;
    use crate::recall::testing::{candidate, found, ids, memory, plan, scored};
    use crate::write::guarding::{SENSITIVE, UNTRUSTED};

    #[test]
    fn candidates_below_the_relevance_floor_are_left_out_and_weak_ones_flagged() {
        let mut plan = plan(10);
        plan.min_relevance = 0.1;
        let hits = scored(
            &plan,
            vec![candidate(1, 0.05), candidate(2, 0.12), candidate(3, 0.5)],
        );
        assert_eq!(ids(&hits), vec![3, 2]);
        assert!(hits[0].explain.flags.is_empty(), "{:?}", hits[0].explain);
        assert_eq!(hits[1].explain.flags, ["weak_match"]);
        // With no floor, as by default, nothing is left out for being weak.
        plan.min_relevance = 0.0;
        assert_eq!(scored(&plan, vec![candidate(1, 0.05)]).len(), 1);
    }

    #[test]
    fn equal_scores_are_ordered_by_memory_id_whatever_order_they_were_found_in() {
        let plan = plan(10);
        let mut hits = scored(&plan, [4, 2, 3, 1].map(|id| candidate(id, 0.5)).into());
        assert_eq!(ids(&hits), vec![1, 2, 3, 4]);
        hits.reverse();
        by_score(&mut hits);
        assert_eq!(ids(&hits), vec![1, 2, 3, 4]);
        // A higher score comes first, whatever its id.
        let hits = scored(&plan, vec![candidate(1, 0.4), candidate(2, 0.6)]);
        assert_eq!(ids(&hits), vec![2, 1]);
    }

    #[test]
    fn at_equal_relevance_the_more_confident_and_fresher_memory_ranks_first() {
        let plan = plan(10);
        let mut doubtful = memory(1);
        doubtful.confidence = 0.2;
        let mut stale = memory(2);
        stale.occurred_at = Timestamp(stale.occurred_at.0 - 400 * MILLIS_PER_DAY);
        let hits = scored(
            &plan,
            vec![
                found(doubtful, &[("semantic", 0.5)]),
                found(stale, &[("semantic", 0.5)]),
                candidate(3, 0.5),
            ],
        );
        assert_eq!(ids(&hits), vec![3, 2, 1]);
        assert_eq!(hits[2].explain.confidence, 0.2);
        assert!(hits[1].explain.freshness < hits[0].explain.freshness);
        // Trust and freshness scale relevance, never add to it.
        assert!(hits.iter().all(|h| h.score <= h.explain.relevance));
    }

    #[test]
    fn a_memory_about_another_case_than_the_context_is_left_out() {
        let mut plan = plan(10);
        plan.request.context.insert("user_id".into(), "u1".into());
        let about = |id, user: &str| {
            let mut m = memory(id);
            m.metadata.insert("user_id".into(), user.into());
            found(m, &[("semantic", 0.5)])
        };
        let hits = scored(
            &plan,
            vec![about(1, "u2"), about(2, "u1"), candidate(3, 0.5)],
        );
        assert_eq!(ids(&hits), vec![2, 3]);
        assert!(hits[0].score > hits[1].score);
        assert_eq!(hits[0].explain.adjustments.len(), 1);
    }

    #[test]
    fn flags_say_what_to_check_before_relying_on_a_hit() {
        let flagged = |memory: Memory, relevance: f32| flags(&found(memory, &[]), relevance);
        let mut disputed = memory(1);
        disputed.status = Status::Disputed;
        disputed.metadata.insert(SENSITIVE.into(), "health".into());
        assert_eq!(
            flagged(disputed, 0.5),
            ["requires_confirmation", "disputed"]
        );
        let mut pending = memory(2);
        pending.status = Status::PendingReview;
        assert_eq!(flagged(pending, 0.1), ["weak_match", "pending_review"]);
        // Corroborated by other writes, a low-trust claim is no longer flagged as such.
        let mut untrusted = memory(3);
        untrusted.metadata.insert(UNTRUSTED.into(), "low".into());
        assert_eq!(flagged(untrusted.clone(), 0.5), ["uncorroborated"]);
        untrusted.support.count = 3;
        assert_eq!(flagged(untrusted, 0.5), ["support:3"]);
        let mut in_window = found(memory(4), &[]);
        in_window.in_window = true;
        assert_eq!(flags(&in_window, 0.5), ["in_time_window"]);
        assert!(flagged(memory(5), 0.5).is_empty());
    }
}
