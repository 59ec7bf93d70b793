//! What the pair judge is asked about.

use serde::{Deserialize, Serialize};

/// One memory as the judge sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Statement {
    pub content: String,
    /// Who produced it: `user`, `tool`, `agent`, or another provenance label.
    pub source: String,
    /// When it was observed, as an RFC 3339 timestamp.
    pub occurred_at: String,
    /// Current confidence, 0 to 1.
    pub confidence: f32,
}

impl Statement {
    pub fn new(
        content: impl Into<String>,
        source: impl Into<String>,
        occurred_at: impl Into<String>,
        confidence: f32,
    ) -> Self {
        Statement {
            content: content.into(),
            source: source.into(),
            occurred_at: occurred_at.into(),
            confidence,
        }
    }
}

/// A candidate pair of memories; `id` is the caller's name for the pair and comes back on its
/// verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeItem {
    pub id: String,
    pub a: Statement,
    pub b: Statement,
}

impl JudgeItem {
    pub fn new(id: impl Into<String>, a: Statement, b: Statement) -> Self {
        JudgeItem {
            id: id.into(),
            a,
            b,
        }
    }

    /// The same pair with `a` and `b` exchanged.
    pub fn swapped(&self) -> JudgeItem {
        JudgeItem {
            id: self.id.clone(),
            a: self.b.clone(),
            b: self.a.clone(),
        }
    }
}
