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
