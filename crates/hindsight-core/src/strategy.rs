//! Per-bank conflict strategies: what each kind of verdict does to the memories
//! (docs/DESIGN.md, "Review"). Stored with the bank, so every field has a default and a stored
//! config missing a field still reads.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// What a temporal conflict (a preference or fact changed) does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TemporalStrategy {
    /// The newer supersedes the older.
    #[default]
    Supersede,
    /// Both go to the conflict queue.
    PendingReview,
    /// Nothing happens.
    Ignore,
}

/// What two disagreeing tools do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceStrategy {
    /// Keep both, down-weighted and marked `disputed`.
    #[default]
    KeepBoth,
    PendingReview,
    Ignore,
}

/// What an inference refuted by a fact does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InferenceStrategy {
    /// The inference is `falsified`, confidence 0.
    #[default]
    Falsify,
    /// The fact supersedes the inference (kept in history as a value that held until then).
    Supersede,
    PendingReview,
    Ignore,
}

/// What an undecidable contradiction does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UndecidableStrategy {
    /// Both down-weighted, `pending_review`, and a conflict-queue entry.
    #[default]
    PendingReview,
    Ignore,
}

/// What two rewordings of one fact do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DuplicateStrategy {
    /// Merge one into the other, keeping the support count.
    #[default]
    Merge,
    Ignore,
}

/// A bank's conflict strategies and their parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Strategies {
    pub temporal: TemporalStrategy,
    pub source: SourceStrategy,
    pub inference: InferenceStrategy,
    pub undecidable: UndecidableStrategy,
    pub duplicate: DuplicateStrategy,
    /// The winner of a supersession gets at least `min(1, loser · boost)`: it is corroborated
    /// by the record it replaces.
    pub supersede_boost: f32,
    /// Confidence a superseded memory keeps (below 0.1, so recall leaves it out even when asked
    /// to include low-confidence memories at the default threshold).
    pub superseded_confidence: f32,
    /// Factor both sides of a source conflict are multiplied by.
    pub dispute_factor: f32,
    /// Factor both sides of an undecidable conflict are multiplied by.
    pub pending_review_factor: f32,
}

impl Default for Strategies {
    fn default() -> Self {
        Strategies {
            temporal: TemporalStrategy::default(),
            source: SourceStrategy::default(),
            inference: InferenceStrategy::default(),
            undecidable: UndecidableStrategy::default(),
            duplicate: DuplicateStrategy::default(),
            supersede_boost: 1.2,
            superseded_confidence: 0.05,
            dispute_factor: 0.7,
            pending_review_factor: 0.8,
        }
    }
}

/// A strategy parameter out of its range.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("strategy parameter {field} = {value} is outside {range}")]
pub struct StrategyError {
    pub field: &'static str,
    pub value: f32,
    pub range: &'static str,
}

impl Strategies {
    pub fn validate(&self) -> Result<(), StrategyError> {
        let check = |field, value: f32, ok: bool, range| {
            if ok && value.is_finite() {
                Ok(())
            } else {
                Err(StrategyError {
                    field,
                    value,
                    range,
                })
            }
        };
        let b = self.supersede_boost;
        check("supersede_boost", b, (1.0..=2.0).contains(&b), "1..=2")?;
        let s = self.superseded_confidence;
        check(
            "superseded_confidence",
            s,
            (0.0..0.1).contains(&s),
            "0..0.1",
        )?;
        let d = self.dispute_factor;
        check("dispute_factor", d, (0.0..=1.0).contains(&d), "0..=1")?;
        let p = self.pending_review_factor;
        check(
            "pending_review_factor",
            p,
            (0.0..=1.0).contains(&p),
            "0..=1",
        )
    }

    /// Confidence of the winner of a supersession.
    pub fn winner_confidence(&self, winner: f32, loser: f32) -> f32 {
        winner.max((loser * self.supersede_boost).min(1.0))
    }

    /// Confidence of the loser of a supersession: never raised by being superseded.
    pub fn superseded_confidence(&self, loser: f32) -> f32 {
        loser.min(self.superseded_confidence)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_architecture() {
        let s = Strategies::default();
        assert_eq!(s.temporal, TemporalStrategy::Supersede);
        assert_eq!(s.source, SourceStrategy::KeepBoth);
        assert_eq!(s.inference, InferenceStrategy::Falsify);
        assert_eq!(s.undecidable, UndecidableStrategy::PendingReview);
        assert_eq!(s.duplicate, DuplicateStrategy::Merge);
        assert!(s.validate().is_ok());
        assert!((s.winner_confidence(0.6, 0.7) - 0.84).abs() < 1e-6);
        assert_eq!(s.winner_confidence(0.95, 0.9), 1.0);
        assert_eq!(s.winner_confidence(0.9, 0.3), 0.9);
        assert_eq!(s.superseded_confidence(0.9), 0.05);
        assert_eq!(s.superseded_confidence(0.01), 0.01);
    }

    #[test]
    fn a_partial_config_reads_with_defaults() {
        let s: Strategies =
            serde_json::from_str(r#"{"source": "pending_review", "dispute_factor": 0.5}"#).unwrap();
        assert_eq!(s.source, SourceStrategy::PendingReview);
        assert_eq!(s.dispute_factor, 0.5);
        assert_eq!(s.temporal, TemporalStrategy::Supersede);
        assert_eq!(s.pending_review_factor, 0.8);
    }

    #[test]
    fn out_of_range_parameters_are_rejected() {
        let bad = Strategies {
            superseded_confidence: 0.2,
            ..Strategies::default()
        };
        let err = bad.validate().unwrap_err();
        assert_eq!(err.field, "superseded_confidence");
        let bad = Strategies {
            dispute_factor: f32::NAN,
            ..Strategies::default()
        };
        assert!(bad.validate().is_err());
    }
}
