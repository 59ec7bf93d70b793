//! Feedback on a recalled memory: its confidence moves, and a memory reported harmful is
//! quarantined.

use super::{rejected, Ctx, Effect, StateMut};
use crate::command::CommandOutcome;
use crate::history::{FieldChange, HistoryKind};
use crate::id::MemoryId;
use crate::memory::Status;
use crate::retrieval::{FeedbackOutcome, RecallId};
use crate::time::Timestamp;

impl<S: StateMut> Ctx<'_, S> {
    pub(super) fn feedback(
        &mut self,
        id: MemoryId,
        recall: RecallId,
        outcome: FeedbackOutcome,
        delta: f32,
        at: Timestamp,
        principal: &str,
    ) -> CommandOutcome {
        let Some(mut memory) = self.state.memory(id) else {
            return rejected(format!("memory {id} does not exist"), true);
        };
        if memory.status == Status::Deleted {
            return rejected(format!("memory {id} was deleted"), true);
        }
        let before = memory.confidence;
        let after = (before + delta).clamp(0.0, 1.0);
        let mut changes = vec![FieldChange::new(
            "confidence",
            format!("{before:.2}"),
            format!("{after:.2}"),
        )];
        memory.confidence = after;
        if outcome == FeedbackOutcome::Helpful {
            changes.push(FieldChange::new(
                "support",
                memory.support.count,
                memory.support.count + 1,
            ));
            memory.support.count += 1;
        }
        if matches!(outcome, FeedbackOutcome::Used | FeedbackOutcome::Helpful) {
            memory.access.count += 1;
            memory.access.last_accessed_at =
                Some(memory.access.last_accessed_at.map_or(at, |t| t.max(at)));
        }
        let reason = format!("{outcome} in feedback on recall {recall} by {principal}");
        memory.version += 1;
        memory.updated_at = at;
        if matches!(outcome, FeedbackOutcome::Wrong | FeedbackOutcome::Harmful) {
            // Evidence against the memory: the next review looks at it again.
            memory.updated_index = self.log_index;
        }
        self.state.put_memory(&memory);
        self.history(
            &memory,
            HistoryKind::Updated,
            at,
            at,
            "feedback",
            reason.clone(),
            changes,
        );
        if outcome == FeedbackOutcome::Harmful
            && !matches!(memory.status, Status::Quarantined { .. })
        {
            self.set_status(
                memory,
                Status::Quarantined {
                    reason: format!("reported harmful in feedback on recall {recall}"),
                },
                at,
                at,
                "feedback",
                &reason,
            );
        } else {
            self.effects.push(Effect::MemoryUpserted(Box::new(memory)));
        }
        CommandOutcome::FeedbackApplied {
            confidence_before: before,
            confidence_after: after,
        }
    }
}
