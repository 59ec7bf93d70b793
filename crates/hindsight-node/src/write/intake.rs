//! What the node lends the planner: ids in the bank's partition, the guard (its screener and
//! window of recent writes, and the user's rules a write may relax) and signatures.

use std::sync::Arc;

use hindsight_core::{BankName, Memory, MemoryId, SourceKind, Timestamp};
use hindsight_index::dot;

use super::guarding::{self, Held};
use super::plan::{Intake, Planned};
use super::WriteHost;
use crate::bank::BankView;

pub(crate) struct NodeIntake<'a, H>(pub &'a H);

impl<H: WriteHost> Intake for NodeIntake<'_, H> {
    fn new_id(&self, bank: &BankName, now: Timestamp) -> MemoryId {
        self.0.banks().new_ids(bank).next(now)
    }

    fn guard(
        &self,
        memory: &mut Memory,
        confidence_given: bool,
        view: Option<&BankView>,
        earlier: &[Planned],
        vector: &[f32],
    ) -> Option<Held> {
        let screener = self.0.writing().screener()?;
        let recent = self.0.writing().recent_writes();
        if let Some(held) = guarding::guard_memory(screener, recent, memory, confidence_given) {
            return Some(held);
        }
        if !guarding::may_challenge_rules(screener, memory) {
            return None;
        }
        let rules = principal_statements_near(view, earlier, memory, vector);
        let close = rules
            .iter()
            .map(|(rule, similarity)| (rule.as_ref(), *similarity));
        guarding::hold_if_relaxing_a_rule(screener, memory, close)
    }

    fn sign(&self, memory: &mut Memory) {
        self.0.writing().sign(memory);
    }
}

/// How many of the user's statements closest to a write are compared with it for a rule it
/// would relax.
const RULES_COMPARED: usize = 8;

/// The user's statements in `memory`'s bank closest to it, closest first, with their similarity:
/// from the bank's index and from the writes kept before it in the same batch.
fn principal_statements_near(
    view: Option<&BankView>,
    earlier: &[Planned],
    memory: &Memory,
    vector: &[f32],
) -> Vec<(Arc<Memory>, f32)> {
    let by_user =
        |m: &Memory| m.provenance.source == SourceKind::User && !m.status.hidden_by_default();
    let mut close: Vec<(Arc<Memory>, f32)> = earlier
        .iter()
        .filter(|p| p.lands_in().is_some() && p.memory.bank == memory.bank && by_user(&p.memory))
        .map(|p| (Arc::new(p.memory.clone()), dot(&p.vector, vector)))
        .collect();
    if let Some(view) = view {
        let found = view.with_records(|records| {
            let filter = |id: u128| records.get(&MemoryId(id)).is_some_and(|m| by_user(m));
            let vectors = view.index.vectors();
            vectors
                .search_batch(&[vector], RULES_COMPARED, vectors.ef_search(), &filter)
                .unwrap_or_default()
        });
        for (id, similarity) in found.into_iter().flatten() {
            if let Some(rule) = view.record(MemoryId(id)) {
                close.push((rule, similarity));
            }
        }
    }
    close.sort_by(|a, b| b.1.total_cmp(&a.1));
    close.truncate(RULES_COMPARED);
    close
}
