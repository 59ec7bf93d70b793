//! Writes: a new memory is stored, or merged into the live memory it duplicates.

use std::sync::Arc;

use super::{Ctx, Effect, StateMut};
use crate::command::{WriteItem, WriteResult};
use crate::history::{FieldChange, HistoryKind};
use crate::memory::Memory;

impl<S: StateMut> Ctx<'_, S> {
    /// `vector`: the embedding the entry carries for the item's content, with its model.
    pub(super) fn write(
        &mut self,
        item: &WriteItem,
        vector: Option<(&Arc<str>, &[f32])>,
    ) -> WriteResult {
        let (memory, merge) = match item {
            WriteItem::Create { memory } => (memory, None),
            WriteItem::Merge {
                target,
                similarity,
                memory,
            } => (memory, Some((*target, *similarity))),
        };
        if self.state.bank(&memory.bank).is_none() {
            return WriteResult::Rejected {
                id: memory.id,
                reason: format!("bank {} does not exist", memory.bank),
            };
        }
        if self.state.memory(memory.id).is_some() {
            return WriteResult::Rejected {
                id: memory.id,
                reason: format!("memory {} already exists", memory.id),
            };
        }
        if let Some((target_id, similarity)) = merge {
            if let Some(target) = self
                .state
                .memory(target_id)
                .filter(|t| t.bank == memory.bank && !t.status.hidden_by_default())
            {
                self.merge(target, memory, similarity);
                return WriteResult::MergedInto {
                    id: memory.id,
                    target: target_id,
                };
            }
        }
        let mut memory = (**memory).clone();
        memory.updated_index = self.log_index;
        let memory = &memory;
        self.state.put_memory(memory);
        self.history(
            memory,
            HistoryKind::Created,
            memory.occurred_at,
            memory.recorded_at,
            "write",
            format!("stated by {}", memory.provenance.source),
            vec![],
        );
        if let Some((model, vector)) = vector {
            self.effects.push(Effect::VectorCarried {
                bank: memory.bank.clone(),
                id: memory.id,
                model: model.clone(),
                vector: vector.to_vec(),
            });
        }
        self.effects
            .push(Effect::MemoryUpserted(Box::new(memory.clone())));
        WriteResult::Created { id: memory.id }
    }

    fn merge(&mut self, mut target: Memory, duplicate: &Memory, similarity: f32) {
        let old_confidence = target.confidence;
        let old_count = target.support.count;
        target.support.count += duplicate.support.count.max(1);
        target.support.merged.push(duplicate.id);
        target.confidence = target.confidence.max(duplicate.confidence);
        for tag in &duplicate.tags {
            if !target.tags.contains(tag) {
                target.tags.push(tag.clone());
            }
        }
        // A restated short-lived memory lives as long as its latest statement.
        if let (Some(a), Some(b)) = (target.expires_at, duplicate.expires_at) {
            target.expires_at = Some(a.max(b));
        }
        let mut changes = vec![
            FieldChange::new("support.count", old_count, target.support.count),
            FieldChange::new("support.merged", "", duplicate.id),
        ];
        if old_confidence != target.confidence {
            changes.push(FieldChange::new(
                "confidence",
                old_confidence,
                target.confidence,
            ));
        }
        target.version += 1;
        target.updated_at = duplicate.recorded_at;
        target.updated_index = self.log_index;
        self.state.put_memory(&target);
        self.history(
            &target,
            HistoryKind::Merged,
            duplicate.occurred_at,
            duplicate.recorded_at,
            "write",
            format!(
                "duplicate {} (similarity {similarity:.3}, source {}): {:?}",
                duplicate.id, duplicate.provenance.source, duplicate.content
            ),
            changes,
        );
        self.effects.push(Effect::MemoryUpserted(Box::new(target)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::apply;
    use crate::apply::tests::{create, run, with_bank, MemState};
    use crate::bank::BankName;
    use crate::command::{Command, CommandOutcome};
    use crate::id::MemoryId;
    use crate::memory::tests::sample;
    use crate::time::Timestamp;

    fn forget_softly(state: &mut MemState, id: MemoryId) {
        run(
            state,
            Command::Forget {
                id,
                hard: false,
                at: Timestamp(5),
                reason: "test".into(),
            },
        );
    }

    fn embedded(items: Vec<WriteItem>, vectors: Vec<Vec<f32>>) -> Command {
        Command::WriteEmbedded {
            items,
            vectors: crate::command::ItemVectors {
                model: "model-a".into(),
                vectors,
            },
        }
    }

    #[test]
    fn an_embedded_write_applies_as_a_write_and_hands_on_each_created_memorys_vector() {
        let mut plain = with_bank();
        let mut carried = with_bank();
        let items = vec![
            create(1, "The office opens at nine"),
            create(2, "Lunch is at noon"),
        ];
        let plain_outcome = apply(
            &mut plain,
            &Command::Write {
                items: items.clone(),
            },
            2,
            &mut vec![],
        );
        let mut effects = vec![];
        let outcome = apply(
            &mut carried,
            // The second item carries no vector: its replicas embed it.
            &embedded(items, vec![vec![0.6, 0.8], vec![]]),
            2,
            &mut effects,
        );
        assert_eq!(outcome, plain_outcome);
        assert_eq!(carried.memories, plain.memories);
        assert_eq!(carried.history, plain.history);
        let bank: BankName = "test/bank".parse().unwrap();
        assert_eq!(effects.len(), 3, "{effects:?}");
        assert_eq!(
            effects[0],
            Effect::VectorCarried {
                bank,
                id: MemoryId(1),
                model: Arc::from("model-a"),
                vector: vec![0.6, 0.8],
            }
        );
        assert!(matches!(&effects[1], Effect::MemoryUpserted(m) if m.id == MemoryId(1)));
        assert!(matches!(&effects[2], Effect::MemoryUpserted(m) if m.id == MemoryId(2)));
    }

    #[test]
    fn an_embedded_merge_hands_on_its_vector_only_when_it_creates_instead() {
        let mut state = with_bank();
        run(&mut state, embedded(vec![create(1, "a")], vec![vec![1.0]]));
        let merge = |id: u128| WriteItem::Merge {
            target: MemoryId(1),
            similarity: 0.95,
            memory: Box::new(sample(id, "a")),
        };
        let mut effects = vec![];
        apply(
            &mut state,
            &embedded(vec![merge(2)], vec![vec![1.0]]),
            3,
            &mut effects,
        );
        assert!(
            !effects
                .iter()
                .any(|e| matches!(e, Effect::VectorCarried { .. })),
            "a merge indexes no new vector: {effects:?}"
        );
        forget_softly(&mut state, MemoryId(1));
        let mut effects = vec![];
        let outcome = apply(
            &mut state,
            &embedded(vec![merge(3)], vec![vec![1.0]]),
            4,
            &mut effects,
        );
        assert_eq!(
            outcome,
            CommandOutcome::Written(vec![WriteResult::Created { id: MemoryId(3) }])
        );
        assert!(matches!(
            &effects[..],
            [Effect::VectorCarried { id, .. }, Effect::MemoryUpserted(m)]
                if *id == MemoryId(3) && m.id == MemoryId(3)
        ));
    }

    #[test]
    fn write_to_unknown_bank_changes_nothing() {
        let mut state = MemState::default();
        let outcome = run(
            &mut state,
            Command::Write {
                items: vec![create(1, "a")],
            },
        );
        assert!(matches!(
            outcome,
            CommandOutcome::Written(ref r) if matches!(r[0], WriteResult::Rejected { .. })
        ));
        assert!(state.memories.is_empty());
    }

    #[test]
    fn merge_bumps_support_and_records_history() {
        let mut state = with_bank();
        run(
            &mut state,
            Command::Write {
                items: vec![create(1, "User likes tea")],
            },
        );
        let outcome = run(
            &mut state,
            Command::Write {
                items: vec![WriteItem::Merge {
                    target: MemoryId(1),
                    similarity: 0.95,
                    memory: Box::new(sample(2, "The user likes tea")),
                }],
            },
        );
        assert_eq!(
            outcome,
            CommandOutcome::Written(vec![WriteResult::MergedInto {
                id: MemoryId(2),
                target: MemoryId(1)
            }])
        );
        let target = state.memories[&MemoryId(1)].clone();
        assert_eq!(target.support.count, 2);
        assert_eq!(target.support.merged, vec![MemoryId(2)]);
        assert!(!state.memories.contains_key(&MemoryId(2)));
        assert_eq!(state.history.last().unwrap().kind, HistoryKind::Merged);
    }

    #[test]
    fn merge_into_a_forgotten_target_creates_instead() {
        let mut state = with_bank();
        run(
            &mut state,
            Command::Write {
                items: vec![create(1, "a")],
            },
        );
        forget_softly(&mut state, MemoryId(1));
        let outcome = run(
            &mut state,
            Command::Write {
                items: vec![WriteItem::Merge {
                    target: MemoryId(1),
                    similarity: 0.99,
                    memory: Box::new(sample(2, "a")),
                }],
            },
        );
        assert_eq!(
            outcome,
            CommandOutcome::Written(vec![WriteResult::Created { id: MemoryId(2) }])
        );
    }
}
