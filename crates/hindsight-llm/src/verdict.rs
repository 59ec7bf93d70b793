//! What the pair judge answers.

use serde::{Deserialize, Serialize};

/// How the two memories of a pair relate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    /// Both say the same thing.
    Duplicate,
    /// Same subject, the value changed over time; `newer_or_fact` names the current one.
    Update,
    /// An agent inference contradicted by a fact; `newer_or_fact` names the fact.
    InferenceRefuted,
    /// Two sources disagree and neither clearly wins.
    SourceConflict,
    /// They conflict but the judge cannot tell how.
    Undecidable,
    /// About different things, or compatible.
    Unrelated,
}

impl Relation {
    pub const ALL: [Relation; 6] = [
        Relation::Duplicate,
        Relation::Update,
        Relation::InferenceRefuted,
        Relation::SourceConflict,
        Relation::Undecidable,
        Relation::Unrelated,
    ];

    /// The name used in the JSON answer.
    pub fn as_str(self) -> &'static str {
        match self {
            Relation::Duplicate => "duplicate",
            Relation::Update => "update",
            Relation::InferenceRefuted => "inference_refuted",
            Relation::SourceConflict => "source_conflict",
            Relation::Undecidable => "undecidable",
            Relation::Unrelated => "unrelated",
        }
    }

    /// Exact, case-sensitive match on the JSON name.
    pub fn parse(name: &str) -> Option<Relation> {
        Relation::ALL.into_iter().find(|r| r.as_str() == name)
    }

    /// Whether a verdict with this relation must say which memory wins.
    pub fn needs_side(self) -> bool {
        matches!(self, Relation::Update | Relation::InferenceRefuted)
    }
}

impl std::fmt::Display for Relation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One memory of a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    A,
    B,
}

impl Side {
    pub fn as_str(self) -> &'static str {
        match self {
            Side::A => "a",
            Side::B => "b",
        }
    }

    /// The other memory.
    pub fn flipped(self) -> Side {
        match self {
            Side::A => Side::B,
            Side::B => Side::A,
        }
    }
}

/// The judge's decision about one pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The [`JudgeItem`](crate::JudgeItem) id.
    pub id: String,
    pub relation: Relation,
    /// The newer memory for `update`, the fact for `inference_refuted`; `None` for every other
    /// relation (a side the model gives for those has no defined meaning and is dropped).
    pub newer_or_fact: Option<Side>,
    /// The model's explanation, for the audit trail.
    pub reason: String,
    /// Served from the pair cache: no request, no tokens.
    pub cached: bool,
    /// Samples that voted for this relation (1 for a plain judgement).
    pub votes: u32,
    /// Samples asked (1 for a plain judgement).
    pub samples: u32,
}

/// A pair the judge could not decide this time. It is not lost: the caller keeps it for the
/// next cycle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deferred {
    pub id: String,
    /// Why, in words a person can act on.
    pub reason: String,
}
