//! Node status, review reports and traces.

use hindsight_core::review::{
    outcome_name, parse_outcome, Conflict, ConflictResolution, CycleReport,
};
use hindsight_core::{NodeStatus, ReviewReport, Trace, ValidationError};

use super::{convert_all, ids, parse_ids, parse_time, required, time};
use crate::pb;
use crate::server_status::ServerStatus;

impl From<&ServerStatus> for pb::StatusResponse {
    fn from(s: &ServerStatus) -> Self {
        let n = &s.node;
        pb::StatusResponse {
            node_id: n.node_id,
            leader_id: n.leader_id,
            term: n.term,
            last_log_index: n.last_log_index,
            applied_index: n.applied_index,
            banks_loaded: n.banks_loaded as u64,
            embedding_model: n.embedding_model.clone(),
            store_bytes_on_disk: n.store_bytes_on_disk,
            ready: s.ready,
            version: s.version.clone(),
        }
    }
}

impl From<pb::StatusResponse> for ServerStatus {
    fn from(s: pb::StatusResponse) -> Self {
        ServerStatus {
            node: NodeStatus {
                node_id: s.node_id,
                leader_id: s.leader_id,
                term: s.term,
                last_log_index: s.last_log_index,
                applied_index: s.applied_index,
                banks_loaded: s.banks_loaded as usize,
                embedding_model: s.embedding_model,
                store_bytes_on_disk: s.store_bytes_on_disk,
            },
            ready: s.ready,
            version: s.version,
        }
    }
}

impl From<&ReviewReport> for pb::ReviewResponse {
    fn from(r: &ReviewReport) -> Self {
        pb::ReviewResponse {
            bank: r.bank.clone(),
            as_of: time(r.as_of),
            considered: r.considered as u64,
            expired: ids(&r.expired),
            took_micros: r.cycle.took_micros,
            updated: ids(&r.updated),
            conflicts_opened: r.conflicts_opened.clone(),
            cycle: Some(pb::ReviewCycle::from(&r.cycle)),
            created: ids(&r.created),
            purged: ids(&r.purged),
            backlog: r.backlog,
        }
    }
}

impl From<&CycleReport> for pb::ReviewCycle {
    fn from(c: &CycleReport) -> Self {
        pb::ReviewCycle {
            cycle: c.cycle,
            as_of: time(c.as_of),
            started_at: time(c.started_at),
            took_micros: c.took_micros,
            changed: c.changed,
            pairs_considered: c.pairs_considered,
            all_pairs: c.all_pairs,
            pairs_judged: c.pairs_judged,
            pairs_deferred: c.pairs_deferred,
            tokens_used: c.tokens_used,
            token_budget: c.token_budget,
            judge: c.judge.clone(),
            decisions: c.decisions.clone().into_iter().collect(),
            expired: c.expired,
        }
    }
}

impl TryFrom<pb::ReviewCycle> for CycleReport {
    type Error = ValidationError;

    fn try_from(c: pb::ReviewCycle) -> Result<Self, ValidationError> {
        Ok(CycleReport {
            cycle: c.cycle,
            as_of: parse_time(&c.as_of)?,
            started_at: parse_time(&c.started_at)?,
            took_micros: c.took_micros,
            changed: c.changed,
            pairs_considered: c.pairs_considered,
            all_pairs: c.all_pairs,
            pairs_judged: c.pairs_judged,
            pairs_deferred: c.pairs_deferred,
            tokens_used: c.tokens_used,
            token_budget: c.token_budget,
            judge: c.judge,
            decisions: c.decisions.into_iter().collect(),
            expired: c.expired,
        })
    }
}

impl From<&Conflict> for pb::Conflict {
    fn from(c: &Conflict) -> Self {
        pb::Conflict {
            id: c.id,
            bank: c.bank.to_string(),
            a: c.a.to_string(),
            b: c.b.to_string(),
            judge: c.judge.clone(),
            explanation: c.explanation.clone(),
            opened_at: time(c.opened_at),
            outcome: c
                .resolution
                .as_ref()
                .map(|r| outcome_name(r.outcome).to_string()),
            resolved_at: c.resolution.as_ref().map(|r| time(r.resolved_at)),
            note: c
                .resolution
                .as_ref()
                .map(|r| r.note.clone())
                .unwrap_or_default(),
        }
    }
}

impl TryFrom<pb::Conflict> for Conflict {
    type Error = ValidationError;

    fn try_from(c: pb::Conflict) -> Result<Self, ValidationError> {
        let resolution = match (c.outcome, c.resolved_at) {
            (Some(outcome), Some(at)) => Some(ConflictResolution {
                outcome: parse_outcome(&outcome)?,
                resolved_at: parse_time(&at)?,
                note: c.note,
            }),
            _ => None,
        };
        Ok(Conflict {
            id: c.id,
            bank: c.bank.parse()?,
            a: c.a.parse()?,
            b: c.b.parse()?,
            judge: c.judge,
            explanation: c.explanation,
            opened_at: parse_time(&c.opened_at)?,
            resolution,
        })
    }
}

impl TryFrom<pb::ReviewResponse> for ReviewReport {
    type Error = ValidationError;

    fn try_from(r: pb::ReviewResponse) -> Result<Self, ValidationError> {
        Ok(ReviewReport {
            bank: r.bank,
            as_of: parse_time(&r.as_of)?,
            considered: r.considered as usize,
            expired: parse_ids(&r.expired)?,
            updated: parse_ids(&r.updated)?,
            conflicts_opened: r.conflicts_opened,
            created: parse_ids(&r.created)?,
            purged: parse_ids(&r.purged)?,
            backlog: r.backlog,
            cycle: match r.cycle {
                Some(cycle) => cycle.try_into()?,
                None => CycleReport::default(),
            },
            phases: vec![],
        })
    }
}

impl From<&Trace> for pb::TraceResponse {
    fn from(t: &Trace) -> Self {
        pb::TraceResponse {
            memory: Some(pb::Memory::from(&t.memory)),
            history: t.history.iter().map(pb::HistoryEntry::from).collect(),
            related: t.related.iter().map(pb::Memory::from).collect(),
            integrity: t.integrity.clone(),
        }
    }
}

impl TryFrom<pb::TraceResponse> for Trace {
    type Error = ValidationError;

    fn try_from(t: pb::TraceResponse) -> Result<Self, ValidationError> {
        Ok(Trace {
            memory: required(t.memory, "memory")?.try_into()?,
            history: convert_all(t.history)?,
            related: convert_all(t.related)?,
            integrity: t.integrity,
        })
    }
}
