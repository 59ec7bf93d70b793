//! Records and their history.

use hindsight_core::history::FieldChange;
use hindsight_core::memory::{AccessStats, Signature, StatusChange};
use hindsight_core::{
    HistoryEntry, HistoryKind, Memory, Provenance, Slot, SourceKind, Status, Support,
    ValidationError,
};

use super::{convert_all, ids, opt_time, parse_ids, parse_time, required, time};
use crate::pb;

/// An unattributed write is treated as the agent's own inference rather than given a user's trust.
const DEFAULT_SOURCE: SourceKind = SourceKind::Agent;

impl From<&Memory> for pb::Memory {
    fn from(m: &Memory) -> Self {
        pb::Memory {
            id: m.id.to_string(),
            bank: m.bank.to_string(),
            kind: m.kind.as_str().to_string(),
            subtype: m.subtype.map(|s| s.as_str().to_string()),
            content: m.content.clone(),
            entities: m.entities.clone(),
            slot: m.slot.as_ref().map(pb::Slot::from),
            provenance: Some(pb::Provenance::from(&m.provenance)),
            occurred_at: time(m.occurred_at),
            recorded_at: time(m.recorded_at),
            valid_from: time(m.valid_from),
            valid_to: m.valid_to.map(time),
            expires_at: m.expires_at.map(time),
            confidence: m.confidence,
            importance: m.importance,
            critical: m.critical,
            status: Some(pb::MemoryStatus::from(&m.status)),
            status_log: m.status_log.iter().map(pb::StatusChange::from).collect(),
            support: Some(pb::Support::from(&m.support)),
            access: Some(pb::AccessStats::from(&m.access)),
            tags: m.tags.clone(),
            metadata: m.metadata.clone(),
            signature: m.signature.as_ref().map(pb::Signature::from),
            version: m.version,
            updated_at: time(m.updated_at),
            updated_index: m.updated_index,
        }
    }
}

impl TryFrom<pb::Memory> for Memory {
    type Error = ValidationError;

    fn try_from(m: pb::Memory) -> Result<Self, ValidationError> {
        Ok(Memory {
            id: m.id.parse()?,
            bank: m.bank.parse()?,
            kind: m.kind.parse()?,
            subtype: m.subtype.as_deref().map(str::parse).transpose()?,
            content: m.content,
            entities: m.entities,
            slot: m.slot.map(Slot::from),
            provenance: required(m.provenance, "provenance")?.try_into()?,
            occurred_at: parse_time(&m.occurred_at)?,
            recorded_at: parse_time(&m.recorded_at)?,
            valid_from: parse_time(&m.valid_from)?,
            valid_to: opt_time(m.valid_to.as_deref())?,
            expires_at: opt_time(m.expires_at.as_deref())?,
            confidence: m.confidence,
            importance: m.importance,
            critical: m.critical,
            status: required(m.status, "status")?.try_into()?,
            status_log: convert_all(m.status_log)?,
            support: m.support.unwrap_or_default().try_into()?,
            access: m.access.unwrap_or_default().try_into()?,
            tags: m.tags,
            metadata: m.metadata,
            signature: m.signature.map(Signature::from),
            version: m.version,
            updated_at: parse_time(&m.updated_at)?,
            updated_index: m.updated_index,
        })
    }
}

impl From<&Status> for pb::MemoryStatus {
    fn from(s: &Status) -> Self {
        pb::MemoryStatus {
            name: s.name().to_string(),
            superseded_by: match s {
                Status::Superseded { by } => Some(by.to_string()),
                _ => None,
            },
            quarantine_reason: match s {
                Status::Quarantined { reason } => Some(reason.clone()),
                _ => None,
            },
        }
    }
}

impl TryFrom<pb::MemoryStatus> for Status {
    type Error = ValidationError;

    fn try_from(s: pb::MemoryStatus) -> Result<Self, ValidationError> {
        Ok(match s.name.as_str() {
            "active" => Status::Active,
            "superseded" => Status::Superseded {
                by: required(s.superseded_by, "superseded_by")?.parse()?,
            },
            "falsified" => Status::Falsified,
            "disputed" => Status::Disputed,
            "pending_review" => Status::PendingReview,
            "quarantined" => Status::Quarantined {
                reason: s.quarantine_reason.unwrap_or_default(),
            },
            "archived" => Status::Archived,
            "expired" => Status::Expired,
            "deleted" => Status::Deleted,
            _ => {
                return Err(ValidationError::UnknownEnumValue {
                    field: "status",
                    value: s.name,
                    expected: "active superseded falsified disputed pending_review quarantined \
                               archived expired deleted",
                })
            }
        })
    }
}

impl From<&Provenance> for pb::Provenance {
    fn from(p: &Provenance) -> Self {
        pb::Provenance {
            source: p.source.as_str().to_string(),
            tool: p.tool.clone(),
            agent_id: p.agent_id.clone(),
            session_id: p.session_id.clone(),
            task_id: p.task_id.clone(),
            tool_call_id: p.tool_call_id.clone(),
        }
    }
}

impl TryFrom<pb::Provenance> for Provenance {
    type Error = ValidationError;

    fn try_from(p: pb::Provenance) -> Result<Self, ValidationError> {
        let source = if p.source.is_empty() {
            DEFAULT_SOURCE
        } else {
            p.source.parse()?
        };
        Ok(Provenance {
            source,
            tool: p.tool,
            agent_id: p.agent_id,
            session_id: p.session_id,
            task_id: p.task_id,
            tool_call_id: p.tool_call_id,
        })
    }
}

impl From<&Slot> for pb::Slot {
    fn from(s: &Slot) -> Self {
        pb::Slot {
            subject: s.subject.clone(),
            attribute: s.attribute.clone(),
            value: s.value.clone(),
        }
    }
}

impl From<pb::Slot> for Slot {
    fn from(s: pb::Slot) -> Self {
        Slot {
            subject: s.subject,
            attribute: s.attribute,
            value: s.value,
        }
    }
}

impl From<&StatusChange> for pb::StatusChange {
    fn from(c: &StatusChange) -> Self {
        pb::StatusChange {
            effective_at: time(c.effective_at),
            status: Some(pb::MemoryStatus::from(&c.status)),
            confidence: c.confidence,
        }
    }
}

impl TryFrom<pb::StatusChange> for StatusChange {
    type Error = ValidationError;

    fn try_from(c: pb::StatusChange) -> Result<Self, ValidationError> {
        Ok(StatusChange {
            effective_at: parse_time(&c.effective_at)?,
            status: required(c.status, "status")?.try_into()?,
            confidence: c.confidence,
        })
    }
}

impl From<&Support> for pb::Support {
    fn from(s: &Support) -> Self {
        pb::Support {
            count: s.count,
            merged: ids(&s.merged),
            derived_from: ids(&s.derived_from),
        }
    }
}

impl TryFrom<pb::Support> for Support {
    type Error = ValidationError;

    fn try_from(s: pb::Support) -> Result<Self, ValidationError> {
        Ok(Support {
            count: s.count,
            merged: parse_ids(&s.merged)?,
            derived_from: parse_ids(&s.derived_from)?,
        })
    }
}

impl From<&AccessStats> for pb::AccessStats {
    fn from(a: &AccessStats) -> Self {
        pb::AccessStats {
            count: a.count,
            last_accessed_at: a.last_accessed_at.map(time),
        }
    }
}

impl TryFrom<pb::AccessStats> for AccessStats {
    type Error = ValidationError;

    fn try_from(a: pb::AccessStats) -> Result<Self, ValidationError> {
        Ok(AccessStats {
            count: a.count,
            last_accessed_at: opt_time(a.last_accessed_at.as_deref())?,
        })
    }
}

impl From<&Signature> for pb::Signature {
    fn from(s: &Signature) -> Self {
        pb::Signature {
            key_id: s.key_id.clone(),
            mac: s.mac.clone(),
        }
    }
}

impl From<pb::Signature> for Signature {
    fn from(s: pb::Signature) -> Self {
        Signature {
            key_id: s.key_id,
            mac: s.mac,
        }
    }
}

impl From<&HistoryEntry> for pb::HistoryEntry {
    fn from(h: &HistoryEntry) -> Self {
        pb::HistoryEntry {
            memory: h.memory.to_string(),
            version: h.version,
            kind: h.kind.as_str().to_string(),
            effective_at: time(h.effective_at),
            recorded_at: time(h.recorded_at),
            log_index: h.log_index,
            actor: h.actor.clone(),
            reason: h.reason.clone(),
            changes: h.changes.iter().map(pb::FieldChange::from).collect(),
        }
    }
}

impl TryFrom<pb::HistoryEntry> for HistoryEntry {
    type Error = ValidationError;

    fn try_from(h: pb::HistoryEntry) -> Result<Self, ValidationError> {
        Ok(HistoryEntry {
            memory: h.memory.parse()?,
            version: h.version,
            kind: history_kind(&h.kind)?,
            effective_at: parse_time(&h.effective_at)?,
            recorded_at: parse_time(&h.recorded_at)?,
            log_index: h.log_index,
            actor: h.actor,
            reason: h.reason,
            changes: h.changes.into_iter().map(FieldChange::from).collect(),
        })
    }
}

fn history_kind(name: &str) -> Result<HistoryKind, ValidationError> {
    const ALL: [HistoryKind; 6] = [
        HistoryKind::Created,
        HistoryKind::Merged,
        HistoryKind::StatusChanged,
        HistoryKind::Updated,
        HistoryKind::Expired,
        HistoryKind::Archived,
    ];
    ALL.into_iter()
        .find(|k| k.as_str() == name)
        .ok_or_else(|| ValidationError::UnknownEnumValue {
            field: "history kind",
            value: name.to_string(),
            expected: "created merged status_changed updated expired archived",
        })
}

impl From<&FieldChange> for pb::FieldChange {
    fn from(c: &FieldChange) -> Self {
        pb::FieldChange {
            field: c.field.clone(),
            old: c.old.clone(),
            new: c.new.clone(),
        }
    }
}

impl From<pb::FieldChange> for FieldChange {
    fn from(c: pb::FieldChange) -> Self {
        FieldChange {
            field: c.field,
            old: c.old,
            new: c.new,
        }
    }
}
