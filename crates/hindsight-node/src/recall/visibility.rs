//! Which records recall may return, and the live record that stands for one it may not.

use std::sync::Arc;

use hindsight_core::{BankConfig, Memory, MemoryId, Status};

use super::search::{Plan, Records};

/// A bank's settings that decide whether recall may return a record.
#[derive(Clone, Copy)]
pub(super) struct Visibility {
    pub(super) min_confidence: f32,
    pub(super) require_corroboration: bool,
}

impl Plan {
    pub(super) fn visibility(&self, config: &BankConfig) -> Visibility {
        Visibility {
            min_confidence: self.request.filters.min_confidence.unwrap_or(
                if self.request.include_history {
                    0.0
                } else {
                    config.min_confidence
                },
            ),
            require_corroboration: config.require_corroboration,
        }
    }

    /// The record a hit stands for: the hit itself when recall may return it, else the live
    /// record that superseded it (a merged rewording, or a newer statement of the same fact),
    /// followed for a few hops. A question phrased like an old statement is answered by what
    /// replaced it, never by the old statement.
    pub(super) fn stand_in<'r>(
        &self,
        records: &'r Records,
        id: MemoryId,
        rules: Visibility,
    ) -> Option<(&'r Arc<Memory>, Status)> {
        let mut current = records.get(&id)?;
        for _ in 0..4 {
            if let Some(status) = self.status_if_visible(current, rules) {
                return Some((current, status));
            }
            let status = match self.request.as_of {
                Some(t) => current.status_as_of(t)?,
                None => current.status.clone(),
            };
            let Status::Superseded { by } = status else {
                return None;
            };
            current = records.get(&by)?;
        }
        None
    }

    /// The status recall reports for `memory`, or `None` when the memory is left out.
    pub(super) fn status_if_visible(&self, memory: &Memory, rules: Visibility) -> Option<Status> {
        let status = match self.request.as_of {
            Some(t) => memory.status_as_of(t)?,
            None if memory.is_expired_at(self.now) => Status::Expired,
            None => memory.status.clone(),
        };
        if status == Status::Deleted {
            return None;
        }
        let archived_asked = status == Status::Archived && self.request.include_archived;
        if status.hidden_by_default() && !self.request.include_history && !archived_asked {
            return None;
        }
        if self.confidence_of(memory) < rules.min_confidence && !archived_asked {
            return None;
        }
        // Not even with history: a bank that requires corroboration never lets recall put an
        // unconfirmed low-trust claim in front of an agent. Trace and the listing still show it.
        if rules.require_corroboration && crate::write::guarding::is_uncorroborated(memory) {
            return None;
        }
        let filters = &self.request.filters;
        if !filters.kinds.is_empty() && !filters.kinds.contains(&memory.kind) {
            return None;
        }
        if !filters.tags.iter().all(|t| memory.tags.contains(t)) {
            return None;
        }
        if filters
            .occurred_from
            .is_some_and(|from| memory.occurred_at < from)
            || filters
                .occurred_to
                .is_some_and(|to| memory.occurred_at >= to)
        {
            return None;
        }
        Some(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recall::testing::{memory, plan, superseded};

    #[test]
    fn a_superseded_record_is_answered_by_the_live_record_that_replaced_it() {
        let mut plan = plan(10);
        let mut deleted = memory(5);
        deleted.status = Status::Deleted;
        let records: Records = [
            superseded(1, 2),
            superseded(2, 3),
            memory(3),
            superseded(4, 5),
            deleted,
        ]
        .into_iter()
        .map(|m| (m.id, Arc::new(m)))
        .collect();
        let rules = plan.visibility(&plan.configs[0]);
        let stands_for = |plan: &Plan, id: u128| {
            plan.stand_in(&records, MemoryId(id), rules)
                .map(|(m, status)| (m.id.0, status))
        };
        // Followed over two replacements to the live one, never the old statement itself.
        assert_eq!(stands_for(&plan, 1), Some((3, Status::Active)));
        assert_eq!(stands_for(&plan, 3), Some((3, Status::Active)));
        // Nothing stands for a record replaced by one since deleted, or one never stored.
        assert_eq!(stands_for(&plan, 4), None);
        assert_eq!(stands_for(&plan, 9), None);
        // Asked for history, the old statement answers for itself.
        plan.request.include_history = true;
        assert_eq!(
            stands_for(&plan, 1),
            Some((1, Status::Superseded { by: MemoryId(2) }))
        );
    }
}
