use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::bank::BankName;
use crate::error::ValidationError;
use crate::id::MemoryId;
use crate::time::Timestamp;

macro_rules! string_enum {
    ($name:ident, $field:literal, { $($variant:ident => $text:literal),+ $(,)? }) => {
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl FromStr for $name {
            type Err = ValidationError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s.trim().to_ascii_lowercase().as_str() {
                    $($text => Ok($name::$variant),)+
                    _ => Err(ValidationError::UnknownEnumValue {
                        field: $field,
                        value: s.to_string(),
                        expected: concat!($($text, " "),+),
                    }),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// The memory layer a record belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Kind {
    /// Task state; short-lived (24 h TTL by default).
    Working,
    /// An event: what happened.
    Episodic,
    /// What is known: facts, preferences, procedures, lessons, rules.
    Semantic,
}
string_enum!(Kind, "kind", { Working => "working", Episodic => "episodic", Semantic => "semantic" });

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Subtype {
    Fact,
    Preference,
    /// A working sequence of steps or tool calls.
    Procedure,
    /// A failure and its fix.
    Lesson,
    /// Distilled from several episodes.
    Rule,
}
string_enum!(Subtype, "subtype", {
    Fact => "fact", Preference => "preference", Procedure => "procedure", Lesson => "lesson", Rule => "rule"
});

/// Who stated a memory; decides its initial confidence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SourceKind {
    User,
    Tool,
    /// The agent's own inference.
    Agent,
    Reflection,
    Import,
}
string_enum!(SourceKind, "source", {
    User => "user", Tool => "tool", Agent => "agent", Reflection => "reflection", Import => "import"
});

impl SourceKind {
    /// Whether the source infers rather than observes: the agent's guesses and its reflections.
    /// A user's or a tool's statement outweighs one in a conflict.
    pub fn is_inference(self) -> bool {
        matches!(self, SourceKind::Agent | SourceKind::Reflection)
    }

    /// Initial confidence by source (docs/DESIGN.md, "Write path"): user 0.9, tool 0.8, agent
    /// inference 0.6.
    /// Reflection is an inference over the agent's own trace, so it starts like one; imports keep the
    /// confidence they carry when given, else 0.7.
    pub fn initial_confidence(self) -> f32 {
        match self {
            SourceKind::User => 0.9,
            SourceKind::Tool => 0.8,
            SourceKind::Agent => 0.6,
            SourceKind::Reflection => 0.6,
            SourceKind::Import => 0.7,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    pub source: SourceKind,
    pub tool: Option<String>,
    pub agent_id: Option<String>,
    pub session_id: Option<String>,
    pub task_id: Option<String>,
    pub tool_call_id: Option<String>,
}

impl Provenance {
    pub fn from_source(source: SourceKind) -> Self {
        Provenance {
            source,
            tool: None,
            agent_id: None,
            session_id: None,
            task_id: None,
            tool_call_id: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Status {
    Active,
    Superseded {
        by: MemoryId,
    },
    Falsified,
    /// Sources disagree; kept, down-weighted and flagged.
    Disputed,
    PendingReview,
    Quarantined {
        reason: String,
    },
    Archived,
    Expired,
    /// Tombstone left by a hard delete until the record is purged.
    Deleted,
}

impl Status {
    pub fn name(&self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Superseded { .. } => "superseded",
            Status::Falsified => "falsified",
            Status::Disputed => "disputed",
            Status::PendingReview => "pending_review",
            Status::Quarantined { .. } => "quarantined",
            Status::Archived => "archived",
            Status::Expired => "expired",
            Status::Deleted => "deleted",
        }
    }

    /// Statuses recall leaves out unless the caller asks for history.
    pub fn hidden_by_default(&self) -> bool {
        matches!(
            self,
            Status::Superseded { .. }
                | Status::Falsified
                | Status::Expired
                | Status::Archived
                | Status::Quarantined { .. }
                | Status::Deleted
        )
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Status::Superseded { by } => write!(f, "superseded(by {by})"),
            Status::Quarantined { reason } => write!(f, "quarantined({reason})"),
            other => f.write_str(other.name()),
        }
    }
}

/// The normalised (subject, attribute) a memory states a value for, e.g. (user, coffee) = "oat latte".
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Slot {
    pub subject: String,
    pub attribute: String,
    pub value: String,
}

/// Evidence behind a memory: how many writes stated it, which duplicates were merged into it and
/// which records it was derived from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Support {
    pub count: u32,
    pub merged: Vec<MemoryId>,
    pub derived_from: Vec<MemoryId>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AccessStats {
    pub count: u64,
    pub last_accessed_at: Option<Timestamp>,
}

/// A status with the event time from which it held; kept so recall can answer "as of" a time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatusChange {
    pub effective_at: Timestamp,
    pub status: Status,
    /// The confidence in force from this change on, so that a point-in-time recall judges the
    /// record as it was then (a superseded record's confidence drops only from its supersession).
    #[serde(default)]
    pub confidence: Option<f32>,
}

/// HMAC over the canonical record, with the id of the key that made it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Signature {
    pub key_id: String,
    pub mac: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    pub id: MemoryId,
    pub bank: BankName,
    pub kind: Kind,
    pub subtype: Option<Subtype>,
    pub content: String,
    pub entities: Vec<String>,
    pub slot: Option<Slot>,
    pub provenance: Provenance,
    pub occurred_at: Timestamp,
    pub recorded_at: Timestamp,
    pub valid_from: Timestamp,
    pub valid_to: Option<Timestamp>,
    pub expires_at: Option<Timestamp>,
    pub confidence: f32,
    pub importance: f32,
    pub critical: bool,
    pub status: Status,
    /// Every status the record has had, oldest first; the first is its status at `valid_from`.
    pub status_log: Vec<StatusChange>,
    pub support: Support,
    pub access: AccessStats,
    pub tags: Vec<String>,
    pub metadata: BTreeMap<String, String>,
    pub signature: Option<Signature>,
    /// Bumped by every applied change; the number of history entries the record has.
    pub version: u64,
    pub updated_at: Timestamp,
    /// Raft log index of the last change to what the record says (a write, a merge, a restore);
    /// review compares it with the bank's watermark to find what changed since the last cycle.
    /// Review decisions leave it alone, so a cycle does not re-judge what the last one settled.
    #[serde(default)]
    pub updated_index: u64,
}

impl Memory {
    /// Bytes this record holds on the heap beyond its own struct: the buffers of its strings and
    /// lists, by capacity, and the nodes of its metadata map. For resident-memory figures, not
    /// for quotas (those count content bytes, [`Memory::quota_bytes`]).
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        fn strings(list: &[String]) -> usize {
            list.iter().map(String::capacity).sum()
        }
        fn optional(text: &Option<String>) -> usize {
            text.as_ref().map_or(0, String::capacity)
        }
        fn status(status: &Status) -> usize {
            match status {
                Status::Quarantined { reason } => reason.capacity(),
                _ => 0,
            }
        }
        let provenance = &self.provenance;
        // A B-tree map keeps up to 11 entries in one node after a 16-byte header.
        let metadata_nodes = self.metadata.len().div_ceil(11);
        self.bank.as_str().len()
            + self.content.capacity()
            + self.entities.capacity() * size_of::<String>()
            + strings(&self.entities)
            + self.slot.as_ref().map_or(0, |slot| {
                slot.subject.capacity() + slot.attribute.capacity() + slot.value.capacity()
            })
            + optional(&provenance.tool)
            + optional(&provenance.agent_id)
            + optional(&provenance.session_id)
            + optional(&provenance.task_id)
            + optional(&provenance.tool_call_id)
            + status(&self.status)
            + self.status_log.capacity() * size_of::<StatusChange>()
            + self
                .status_log
                .iter()
                .map(|change| status(&change.status))
                .sum::<usize>()
            + (self.support.merged.capacity() + self.support.derived_from.capacity())
                * size_of::<MemoryId>()
            + self.tags.capacity() * size_of::<String>()
            + strings(&self.tags)
            + metadata_nodes * (16 + 11 * 2 * size_of::<String>())
            + self
                .metadata
                .iter()
                .map(|(key, value)| key.capacity() + value.capacity())
                .sum::<usize>()
            + self.signature.as_ref().map_or(0, |signature| {
                signature.key_id.capacity() + signature.mac.capacity()
            })
    }

    /// What the record counts against its bank's byte quota: the UTF-8 length of its content
    /// while it is live or held in quarantine (a quarantined record may be released, and a flood
    /// of flagged writes must not fill a bank unnoticed); nothing once it is superseded,
    /// falsified, expired, archived or deleted.
    pub fn quota_bytes(&self) -> u64 {
        if !self.status.hidden_by_default() || matches!(self.status, Status::Quarantined { .. }) {
            self.content.len() as u64
        } else {
            0
        }
    }

    /// Whether the record is held in quarantine: quarantined now, or quarantined once and
    /// never released since (only a release makes a quarantined record active again). Such a
    /// record never becomes active by any other path: not by being archived and restored, nor
    /// by an import that says it was active.
    pub fn held_in_quarantine(&self) -> bool {
        matches!(self.status, Status::Quarantined { .. })
            || self
                .status_log
                .iter()
                .fold(false, |held, change| match change.status {
                    Status::Quarantined { .. } => true,
                    Status::Active => false,
                    _ => held,
                })
    }

    /// The status the record had at event time `t`, or `None` if it was not yet valid then.
    pub fn status_as_of(&self, t: Timestamp) -> Option<Status> {
        if t < self.valid_from {
            return None;
        }
        if let Some(expires) = self.expires_at {
            if t >= expires {
                return Some(Status::Expired);
            }
        }
        let mut status = None;
        for change in &self.status_log {
            if change.effective_at <= t {
                status = Some(change.status.clone());
            }
        }
        // A record with no change effective yet at `t` is in its first recorded status.
        Some(status.unwrap_or_else(|| {
            self.status_log
                .first()
                .map(|c| c.status.clone())
                .unwrap_or_else(|| self.status.clone())
        }))
    }

    /// The confidence the record had at event time `t`: the one recorded with the latest status
    /// change in force then, or the current one when the log does not say.
    pub fn confidence_as_of(&self, t: Timestamp) -> f32 {
        // Nothing changed the status after `t`: what the record says now held then.
        if self.status_log.last().is_none_or(|c| c.effective_at <= t) {
            return self.confidence;
        }
        self.status_log
            .iter()
            .rfind(|c| c.effective_at <= t)
            .and_then(|c| c.confidence)
            .unwrap_or(self.confidence)
    }

    pub fn is_expired_at(&self, t: Timestamp) -> bool {
        self.expires_at.is_some_and(|e| t >= e)
    }

    /// An active semantic memory stated at `at`: valid from then, the source's initial
    /// confidence, one unit of support, version 1. Callers set everything else.
    pub fn new(
        id: MemoryId,
        bank: BankName,
        content: impl Into<String>,
        provenance: Provenance,
        at: Timestamp,
    ) -> Memory {
        let confidence = provenance.source.initial_confidence();
        Memory {
            id,
            bank,
            kind: Kind::Semantic,
            subtype: None,
            content: content.into(),
            entities: vec![],
            slot: None,
            provenance,
            occurred_at: at,
            recorded_at: at,
            valid_from: at,
            valid_to: None,
            expires_at: None,
            confidence,
            importance: 0.5,
            critical: false,
            status: Status::Active,
            status_log: vec![StatusChange {
                effective_at: at,
                status: Status::Active,
                confidence: Some(confidence),
            }],
            support: Support {
                count: 1,
                ..Support::default()
            },
            access: AccessStats::default(),
            tags: vec![],
            metadata: BTreeMap::new(),
            signature: None,
            version: 1,
            updated_at: at,
            updated_index: 0,
        }
    }

    /// Every memory id this record stands for: itself, merged duplicates and its sources.
    pub fn represented_ids(&self) -> Vec<MemoryId> {
        let mut ids = vec![self.id];
        ids.extend(self.support.merged.iter().copied());
        ids.extend(self.support.derived_from.iter().copied());
        ids
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn sample(id: u128, content: &str) -> Memory {
        let mut memory = Memory::new(
            MemoryId(id),
            "test/bank".parse().unwrap(),
            content,
            Provenance::from_source(SourceKind::User),
            Timestamp(1_000_000),
        );
        memory.subtype = Some(Subtype::Fact);
        memory
    }

    #[test]
    fn heap_bytes_count_what_a_record_owns() {
        let short = sample(1, "tea");
        let mut long = sample(2, &"tea ".repeat(500));
        let base = long.heap_bytes();
        assert!(base >= 2000 + short.heap_bytes() - 3, "{base}");
        long.tags = vec!["a-tag".repeat(10); 4];
        long.metadata
            .insert("source-document".into(), "x".repeat(300));
        let grown = long.heap_bytes() - base;
        // Four tags of 50 bytes and their slots, one map node, a key and a 300-byte value.
        assert!(grown >= 4 * (50 + 24) + 300 + 15, "{grown}");
        assert!(grown <= 4 * (50 + 24) + 300 + 15 + 600, "{grown}");
    }

    #[test]
    fn confidence_as_of_is_the_one_in_force_then() {
        let mut m = sample(1, "x");
        m.status_log[0].confidence = Some(0.9);
        m.confidence = 0.05;
        m.status_log.push(StatusChange {
            effective_at: Timestamp(2_000_000),
            status: Status::Superseded { by: MemoryId(2) },
            confidence: Some(0.05),
        });
        assert_eq!(m.confidence_as_of(Timestamp(1_500_000)), 0.9);
        assert_eq!(m.confidence_as_of(Timestamp(2_500_000)), 0.05);
        // A raise with no status change is not in the log; after the last change, the current
        // confidence holds.
        m.confidence = 0.07;
        assert_eq!(m.confidence_as_of(Timestamp(2_500_000)), 0.07);
    }

    #[test]
    fn status_as_of_replays_the_status_log() {
        let mut m = sample(1, "x");
        m.status_log.push(StatusChange {
            effective_at: Timestamp(2_000_000),
            status: Status::Superseded { by: MemoryId(2) },
            confidence: None,
        });
        assert_eq!(m.status_as_of(Timestamp(999_999)), None);
        assert_eq!(m.status_as_of(Timestamp(1_500_000)), Some(Status::Active));
        assert_eq!(
            m.status_as_of(Timestamp(2_000_000)),
            Some(Status::Superseded { by: MemoryId(2) })
        );
        m.expires_at = Some(Timestamp(3_000_000));
        assert_eq!(m.status_as_of(Timestamp(3_000_000)), Some(Status::Expired));
    }

    #[test]
    fn enums_parse_case_insensitively_and_explain_failures() {
        assert_eq!("Semantic".parse::<Kind>().unwrap(), Kind::Semantic);
        let err = "fact".parse::<Kind>().unwrap_err().to_string();
        assert!(err.contains("working episodic semantic"), "{err}");
        assert_eq!(SourceKind::User.initial_confidence(), 0.9);
        assert_eq!(SourceKind::Tool.initial_confidence(), 0.8);
        assert_eq!(SourceKind::Agent.initial_confidence(), 0.6);
    }
}
