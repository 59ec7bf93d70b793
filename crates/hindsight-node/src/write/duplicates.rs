//! Whether a new write restates a memory its bank already holds (or one planned before it in the
//! same batch), or looks like it contradicts one. Pure: the neighbours are found beforehand.

use std::cell::OnceCell;
use std::sync::Arc;

use hindsight_core::{BankConfig, Memory, MemoryId};
use hindsight_index::dot;

use super::plan::Planned;

/// A memory of the bank close to a write, from the bank's vector index: its record as the bank's
/// view held it when it was found, `None` when it was gone by then.
#[derive(Clone, Debug)]
pub(crate) struct Hit {
    pub id: MemoryId,
    pub similarity: f32,
    pub record: Option<Arc<Memory>>,
}

/// What a new write found among its bank's memories.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Neighbours {
    /// The memory it duplicates, if any: the most similar active memory of the same kind at or
    /// above the bank's threshold that states the same thing (not a changed value or a negation).
    pub duplicate: Option<(MemoryId, f32)>,
    /// Whether it looks like it contradicts one: it announces a change, or a close neighbour
    /// (at least `conflict_similarity`) says something else, or one states another value for
    /// the same slot. Only a hint for the reviewer; the review decides.
    pub likely_conflict: bool,
    /// Similarity to the closest memory of the same kind, for the importance gate.
    pub nearest: Option<f32>,
}

/// `found`: the bank's memories closest to `memory`, closest first; `earlier`: the batch's writes
/// planned before it (those not kept are passed over).
pub(crate) fn neighbours(
    found: Vec<Hit>,
    earlier: &[Planned],
    memory: &Memory,
    vector: &[f32],
    config: &BankConfig,
    conflict_similarity: f32,
) -> Neighbours {
    let threshold = config.dedup_threshold;
    let mut best: Option<(MemoryId, f32)> = None;
    let mut nearest: Option<f32> = None;
    let mut near =
        |similarity: f32| nearest = Some(nearest.map_or(similarity, |n| n.max(similarity)));
    let statement = Statement::of(memory);
    let mut likely_conflict = statement.announces_change;
    for (p, lands_in) in earlier
        .iter()
        .filter_map(|p| Some((p, p.lands_in()?)))
        .filter(|(p, _)| p.memory.bank == memory.bank)
    {
        let similarity = dot(&p.vector, vector);
        near(similarity);
        if similarity >= threshold
            && best.is_none_or(|(_, s)| similarity > s)
            && statement.restated_by(&p.memory)
        {
            best = Some((lands_in, similarity));
        }
    }
    for hit in found {
        let similarity = hit.similarity;
        near(similarity);
        let Some(existing) = hit.record else {
            continue;
        };
        let conflicts_unless_restated =
            similarity >= conflict_similarity || same_slot_other_value(&existing, memory);
        if !conflicts_unless_restated && similarity < threshold {
            // Neither a likely conflict nor a duplicate, whatever it states.
            continue;
        }
        let restates = statement.restated_by(&existing);
        if !restates && conflicts_unless_restated {
            likely_conflict = true;
        }
        if similarity < threshold || best.is_some_and(|(_, s)| s >= similarity) {
            continue;
        }
        if restates {
            best = Some((hit.id, similarity));
            break;
        }
    }
    Neighbours {
        duplicate: best,
        likely_conflict: likely_conflict && best.is_none(),
        nearest,
    }
}

fn same_slot_other_value(existing: &Memory, new: &Memory) -> bool {
    matches!((&existing.slot, &new.slot),
        (Some(a), Some(b)) if a.subject == b.subject && a.attribute == b.attribute && a.value != b.value)
}

/// What a new write states, read at most once for all the memories it is compared with.
struct Statement<'a> {
    memory: &'a Memory,
    announces_change: bool,
    negated: OnceCell<bool>,
    numbers: OnceCell<Vec<String>>,
}

impl<'a> Statement<'a> {
    fn of(memory: &'a Memory) -> Self {
        Statement {
            memory,
            announces_change: hindsight_text::has_change_cue(&memory.content).is_some(),
            negated: OnceCell::new(),
            numbers: OnceCell::new(),
        }
    }

    /// Embeddings put "I like tea" and "I no longer like tea" close together; these cheap
    /// checks keep a changed value or a negation from being merged away as a duplicate. The
    /// negations, the costliest to read, are compared last.
    fn restated_by(&self, existing: &Memory) -> bool {
        let new = self.memory;
        if existing.kind != new.kind || self.announces_change {
            return false;
        }
        if same_slot_other_value(existing, new) {
            return false;
        }
        let stated = self.numbers.get_or_init(|| numbers(&new.content));
        if numbers(&existing.content) != *stated {
            return false;
        }
        let negated = *self
            .negated
            .get_or_init(|| hindsight_text::has_negation(&new.content).is_some());
        hindsight_text::has_negation(&existing.content).is_some() == negated
    }
}

fn numbers(text: &str) -> Vec<String> {
    let mut found: Vec<String> = text
        .split(|c: char| !c.is_ascii_digit() && c != '.')
        .map(|s| s.trim_matches('.'))
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    found.sort();
    found.dedup();
    found
}

#[cfg(test)]
mod tests {
    use hindsight_core::{BankConfig, MemoryId, SourceKind};

    use super::*;
    use crate::write::plan::build_memory;
    use crate::write::plan::tests::{bank, request, stored, toward, NOW};

    fn write(content: &str) -> Memory {
        build_memory(
            request(content, SourceKind::User),
            &BankConfig::new(bank(), NOW),
            MemoryId(100),
            NOW,
        )
    }

    /// What `content` finds among the bank's memories `found`, with no earlier write in its batch.
    fn near(content: &str, found: Vec<Hit>) -> Neighbours {
        let config = BankConfig::new(bank(), NOW);
        neighbours(found, &[], &write(content), &toward(1.0), &config, 0.85)
    }

    #[test]
    fn the_same_statement_is_a_duplicate_at_or_above_the_threshold_only() {
        let line = "The deploy bot uses the blue runner.";
        let found = near(line, vec![stored(1, line, 0.97)]);
        assert_eq!(found.duplicate, Some((MemoryId(1), 0.97)));
        assert!(!found.likely_conflict);
        assert_eq!(found.nearest, Some(0.97));
        let below = near(line, vec![stored(1, line, 0.9)]);
        assert_eq!(below.duplicate, None);
        // Close enough to pair with, and it says the same: no conflict either.
        assert!(!below.likely_conflict);
        assert_eq!(below.nearest, Some(0.9));
    }

    #[test]
    fn a_negated_statement_is_no_duplicate_of_the_positive_one() {
        let found = near(
            "The deploy bot does not use the blue runner.",
            vec![stored(1, "The deploy bot uses the blue runner.", 0.97)],
        );
        assert_eq!(found.duplicate, None);
        assert!(found.likely_conflict);
        let back = near(
            "The deploy bot uses the blue runner.",
            vec![stored(
                1,
                "The deploy bot does not use the blue runner.",
                0.97,
            )],
        );
        assert_eq!(back.duplicate, None);
        let both = near(
            "The deploy bot does not use the blue runner.",
            vec![stored(
                1,
                "The deploy bot doesn't use the blue runner.",
                0.97,
            )],
        );
        assert_eq!(both.duplicate, Some((MemoryId(1), 0.97)));
    }

    #[test]
    fn different_numbers_are_no_duplicate() {
        let found = near(
            "The nightly build takes 40 minutes.",
            vec![stored(1, "The nightly build takes 12 minutes.", 0.98)],
        );
        assert_eq!(found.duplicate, None);
        assert!(found.likely_conflict);
        assert_eq!(numbers("Version 2.1 ships on 3 May, v2.1."), ["2.1", "3"]);
    }

    #[test]
    fn another_value_for_the_same_slot_is_no_duplicate_and_a_likely_conflict() {
        let found = near(
            "I live in Denver.",
            vec![stored(1, "I live in Austin.", 0.95)],
        );
        assert_eq!(found.duplicate, None);
        assert!(found.likely_conflict);
        // Far apart in the embedding, the slot alone still pairs them.
        let far = near(
            "I live in Denver.",
            vec![stored(1, "I live in Austin.", 0.3)],
        );
        assert!(far.likely_conflict);
        let unrelated = near(
            "I live in Denver.",
            vec![stored(1, "The cafeteria opens at eight.", 0.3)],
        );
        assert!(!unrelated.likely_conflict);
    }

    #[test]
    fn an_announced_change_is_never_a_duplicate() {
        let found = near(
            "I no longer drink coffee.",
            vec![stored(1, "I no longer drink coffee.", 0.99)],
        );
        assert_eq!(found.duplicate, None);
        assert!(found.likely_conflict);
    }

    #[test]
    fn the_closest_restating_neighbour_wins() {
        let line = "Releases are tagged on Fridays.";
        let found = near(
            line,
            vec![
                stored(1, "Releases are not tagged on Fridays.", 0.99),
                stored(2, line, 0.96),
                stored(3, line, 0.94),
            ],
        );
        assert_eq!(found.duplicate, Some((MemoryId(2), 0.96)));
        assert!(!found.likely_conflict, "a duplicate is no conflict");
        assert_eq!(found.nearest, Some(0.99));
    }
}
