//! Score: a candidate's relevance weighed with its confidence, freshness and the request's
//! adjustments, and the flags that tell an agent how far to trust it.

use hindsight_core::intent;
use hindsight_core::scoring::WEAK_RELEVANCE;
use hindsight_core::{Memory, Status};

use super::fuse::Candidate;
use super::search::Plan;

impl Plan {
    /// The factor intent, role and context give `memory`, and why; `None` leaves it out (its
    /// metadata names another case than the context's).
    pub(super) fn adjustments(&self, memory: &Memory) -> Option<(f32, Vec<String>)> {
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

pub(super) fn flags(candidate: &Candidate, relevance: f32) -> Vec<String> {
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
