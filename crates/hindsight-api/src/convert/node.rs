//! Node status, review reports and traces.

use hindsight_core::ValidationError;
use hindsight_node::{NodeStatus, ReviewReport, Trace};

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
            took_micros: r.took_micros,
        }
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
            took_micros: r.took_micros,
        })
    }
}

impl From<&Trace> for pb::TraceResponse {
    fn from(t: &Trace) -> Self {
        pb::TraceResponse {
            memory: Some(pb::Memory::from(&t.memory)),
            history: t.history.iter().map(pb::HistoryEntry::from).collect(),
            related: t.related.iter().map(pb::Memory::from).collect(),
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
        })
    }
}
