//! Judges: given candidate pairs, say how the two memories of each relate.

use std::fmt;

use hindsight_core::MemoryId;
use serde::{Deserialize, Serialize};

use crate::pair::{Pair, PairKey};

/// How two memories relate (docs/DESIGN.md, "Review").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    /// Rewordings of one fact.
    Duplicate,
    /// A preference or fact changed: `newer` replaces `older`.
    Update { newer: MemoryId, older: MemoryId },
    /// A user statement contradicts an agent's inference.
    InferenceRefuted { fact: MemoryId, inference: MemoryId },
    /// Two tool results disagree; neither can be preferred.
    SourceConflict,
    /// They contradict each other, and nothing says which is right.
    Undecidable,
    /// Nothing to do.
    Unrelated,
}

impl Relation {
    /// Short name for metrics and logs.
    pub fn name(&self) -> &'static str {
        match self {
            Relation::Duplicate => "duplicate",
            Relation::Update { .. } => "update",
            Relation::InferenceRefuted { .. } => "inference_refuted",
            Relation::SourceConflict => "source_conflict",
            Relation::Undecidable => "undecidable",
            Relation::Unrelated => "unrelated",
        }
    }

    /// Whether the two memories cannot both stand as they are.
    pub fn is_conflict(&self) -> bool {
        matches!(
            self,
            Relation::Update { .. }
                | Relation::InferenceRefuted { .. }
                | Relation::SourceConflict
                | Relation::Undecidable
        )
    }

    /// The memory ids the relation names, for checking them against the pair it was given for.
    pub fn named_ids(&self) -> Vec<MemoryId> {
        match self {
            Relation::Update { newer, older } => vec![*newer, *older],
            Relation::InferenceRefuted { fact, inference } => vec![*fact, *inference],
            _ => Vec::new(),
        }
    }
}

impl fmt::Display for Relation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Relation::Update { newer, older } => write!(f, "update({newer} replaces {older})"),
            Relation::InferenceRefuted { fact, inference } => {
                write!(f, "inference_refuted({fact} refutes {inference})")
            }
            other => f.write_str(other.name()),
        }
    }
}

/// A judge's verdict on one pair.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    pub pair: PairKey,
    pub relation: Relation,
    /// Why, in words a person reviewing the bank's history can check.
    pub reason: String,
    /// The judge that decided (`rules`, an LLM judge's name …).
    pub judge: String,
}

impl Judgement {
    /// Whether the relation names only memories of its pair, each role by a different memory. A
    /// judge that answers from free text can name the wrong ids; such verdicts must not be acted on.
    pub fn is_consistent(&self) -> bool {
        let ids = self.relation.named_ids();
        ids.iter().all(|id| self.pair.contains(*id)) && (ids.len() < 2 || ids[0] != ids[1])
    }
}

/// Decides how the memories of each pair relate. Deterministic judges (the default rules judge)
/// and model-backed ones implement the same trait; a model-backed one calls its client blocking.
///
/// A judge answers at most once per pair; a pair it could not judge (a failed call, a malformed
/// answer) is left out of the answer so that the caller can carry it to the next cycle rather than
/// act on a guess.
pub trait Judge {
    fn name(&self) -> &str;
    fn judge(&self, pairs: &[Pair]) -> Vec<Judgement>;
}

/// The pairs `judgements` did not answer, in their original order.
pub fn unjudged(pairs: &[Pair], judgements: &[Judgement]) -> Vec<Pair> {
    pairs
        .iter()
        .filter(|p| !judgements.iter().any(|j| j.pair == p.key()))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relations_serialise_in_snake_case() {
        let r = Relation::Update {
            newer: MemoryId(2),
            older: MemoryId(1),
        };
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.starts_with("{\"update\":"), "{json}");
        assert_eq!(serde_json::from_str::<Relation>(&json).unwrap(), r);
        let json = serde_json::to_string(&Relation::Duplicate).unwrap();
        assert_eq!(json, "\"duplicate\"");
    }

    #[test]
    fn verdicts_naming_other_memories_are_inconsistent() {
        let pair = PairKey::new(MemoryId(1), MemoryId(2));
        let judgement = |relation| Judgement {
            pair,
            relation,
            reason: String::new(),
            judge: "test".into(),
        };
        assert!(judgement(Relation::Duplicate).is_consistent());
        assert!(judgement(Relation::Update {
            newer: MemoryId(2),
            older: MemoryId(1)
        })
        .is_consistent());
        assert!(!judgement(Relation::Update {
            newer: MemoryId(3),
            older: MemoryId(1)
        })
        .is_consistent());
        assert!(!judgement(Relation::InferenceRefuted {
            fact: MemoryId(1),
            inference: MemoryId(1)
        })
        .is_consistent());
    }
}
