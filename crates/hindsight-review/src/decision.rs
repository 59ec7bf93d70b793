//! What a review cycle decided: the changes to make, each with the memories it touches, the new
//! values, the judge and the reason, ready to become one replicated command and history entries.

use hindsight_core::{MemoryId, Slot, Status, Timestamp};
use serde::{Deserialize, Serialize};

use crate::judge::Relation;

/// New values for one memory. `None` leaves a field as it is. Values are absolute, computed by
/// the proposer from the records it saw, so that every replica applies the same numbers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryUpdate {
    pub id: MemoryId,
    pub status: Option<Status>,
    pub confidence: Option<f32>,
    pub valid_to: Option<Timestamp>,
}

impl MemoryUpdate {
    /// An update that changes nothing yet.
    pub fn of(id: MemoryId) -> Self {
        MemoryUpdate {
            id,
            status: None,
            confidence: None,
            valid_to: None,
        }
    }

    pub fn status(mut self, status: Status) -> Self {
        self.status = Some(status);
        self
    }

    pub fn confidence(mut self, confidence: f32) -> Self {
        self.confidence = Some(confidence);
        self
    }

    pub fn valid_to(mut self, valid_to: Timestamp) -> Self {
        self.valid_to = Some(valid_to);
        self
    }

    pub fn changes_anything(&self) -> bool {
        self.status.is_some() || self.confidence.is_some() || self.valid_to.is_some()
    }
}

/// A semantic rule proposed from several episodes that show the same pattern.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DistilledRule {
    pub content: String,
    /// The episodes behind the rule, sorted.
    pub derived_from: Vec<MemoryId>,
    pub confidence: f32,
    /// The slot the episodes share, when they share one.
    pub slot: Option<Slot>,
}

/// One change a review cycle makes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// A temporal conflict: `older` (status `superseded` by `newer`, `valid_to` set, confidence
    /// below 0.1) gives way to `newer`, whose confidence rises to `min(1, older · boost)` if that
    /// is higher (its update is empty otherwise).
    Supersede {
        newer: MemoryUpdate,
        older: MemoryUpdate,
    },
    /// An inference the fact refutes is marked `falsified` with confidence 0.
    Falsify {
        fact: MemoryId,
        inference: MemoryUpdate,
    },
    /// Two sources disagree: both are kept, down-weighted and marked `disputed`.
    Dispute { a: MemoryUpdate, b: MemoryUpdate },
    /// A conflict for a person (or a stronger judge) to settle: the caller opens an entry in
    /// the bank's conflict queue for the pair and counts it in the alert metric. An update with
    /// no changes leaves that memory as it is (a critical memory is not flagged by a guess).
    PendingReview {
        a: MemoryUpdate,
        b: MemoryUpdate,
        relation: Relation,
    },
    /// `from` restates `into`: the caller marks `from` as merged into `into`, records `merged`
    /// in `into`'s support and sets its support count. `into` takes the higher of the two
    /// confidences (its update is empty when it already had it).
    Merge {
        into: MemoryUpdate,
        from: MemoryId,
        /// `from` and every id already merged into it.
        merged: Vec<MemoryId>,
        support_count: u32,
    },
    /// Unused since the last cycle: confidence lowered.
    Decay(MemoryUpdate),
    /// Decayed below the archive threshold: status `archived`.
    Archive(MemoryUpdate),
    /// A new semantic rule to write, derived from episodes.
    Distill(DistilledRule),
    /// Further episodes show an existing rule's pattern: they join its support (and its
    /// confidence follows), instead of a copy of the rule being written.
    Reinforce {
        rule: MemoryUpdate,
        episodes: Vec<MemoryId>,
    },
}

impl Action {
    /// Short name for metrics and logs.
    pub fn name(&self) -> &'static str {
        match self {
            Action::Supersede { .. } => "supersede",
            Action::Falsify { .. } => "falsify",
            Action::Dispute { .. } => "dispute",
            Action::PendingReview { .. } => "pending_review",
            Action::Merge { .. } => "merge",
            Action::Decay(_) => "decay",
            Action::Archive(_) => "archive",
            Action::Distill(_) => "distill",
            Action::Reinforce { .. } => "reinforce",
        }
    }
}

/// A change with the judge that decided it and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub action: Action,
    /// The judge whose verdict led here (`rules`, an LLM judge's name), or the review step that
    /// decided on its own (`decay`, `distill`).
    pub judge: String,
    pub reason: String,
}

impl Decision {
    /// Every memory the decision names, in the order the action lists them.
    pub fn memories(&self) -> Vec<MemoryId> {
        match &self.action {
            Action::Supersede { newer, older } => vec![newer.id, older.id],
            Action::Falsify { fact, inference } => vec![*fact, inference.id],
            Action::Dispute { a, b } | Action::PendingReview { a, b, .. } => vec![a.id, b.id],
            Action::Merge { into, from, .. } => vec![into.id, *from],
            Action::Decay(u) | Action::Archive(u) => vec![u.id],
            Action::Distill(rule) => rule.derived_from.clone(),
            Action::Reinforce { rule, episodes } => {
                let mut ids = vec![rule.id];
                ids.extend(episodes.iter().copied());
                ids
            }
        }
    }

    /// The field changes to apply, one per memory that changes, for history entries.
    pub fn updates(&self) -> Vec<&MemoryUpdate> {
        let all: Vec<&MemoryUpdate> = match &self.action {
            Action::Supersede { newer, older } => vec![newer, older],
            Action::Falsify { inference, .. } => vec![inference],
            Action::Dispute { a, b } | Action::PendingReview { a, b, .. } => vec![a, b],
            Action::Merge { into, .. } => vec![into],
            Action::Decay(u) | Action::Archive(u) => vec![u],
            Action::Distill(_) => vec![],
            Action::Reinforce { rule, .. } => vec![rule],
        };
        all.into_iter().filter(|u| u.changes_anything()).collect()
    }

    /// The memory this decision takes out of the live set (superseded, falsified, merged away or
    /// archived), if any.
    pub fn retires(&self) -> Option<MemoryId> {
        match &self.action {
            Action::Supersede { older, .. } => Some(older.id),
            Action::Falsify { inference, .. } => Some(inference.id),
            Action::Merge { from, .. } => Some(*from),
            Action::Archive(u) => Some(u.id),
            _ => None,
        }
    }

    /// Whether the caller should open a conflict-queue entry.
    pub fn opens_conflict(&self) -> bool {
        matches!(self.action, Action::PendingReview { .. })
    }
}
