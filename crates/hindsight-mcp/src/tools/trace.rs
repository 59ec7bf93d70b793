//! `memory_trace`: why a memory is believed.

use hindsight_api::pb;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::backend::Backend;
use crate::caller::Caller;
use crate::render::{self, put_nonempty};
use crate::tool_error::ToolError;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct TraceArgs {
    /// The memory's id (26 characters, as memory_search or memory_write returned it).
    pub id: String,
}

impl TraceArgs {
    pub async fn run(self, backend: &dyn Backend, caller: &Caller) -> Result<Value, ToolError> {
        let request = pb::TraceRequest {
            id: self.id.trim().to_string(),
        };
        Ok(result(&backend.trace(caller.key(), request).await?))
    }
}

fn result(r: &pb::TraceResponse) -> Value {
    let mut out = Map::new();
    if let Some(m) = &r.memory {
        let mut memory = match render::memory(m) {
            Value::Object(memory) => memory,
            _ => Map::new(),
        };
        if let Some(p) = &m.provenance {
            put_nonempty(&mut memory, "agent_id", json!(p.agent_id));
            put_nonempty(&mut memory, "session_id", json!(p.session_id));
            put_nonempty(&mut memory, "task_id", json!(p.task_id));
        }
        memory.insert("recorded_at".into(), json!(m.recorded_at));
        put_nonempty(&mut memory, "valid_to", json!(m.valid_to));
        if let Some(support) = &m.support {
            memory.insert("stated_times".into(), json!(support.count));
            put_nonempty(&mut memory, "merged", json!(support.merged));
            put_nonempty(&mut memory, "derived_from", json!(support.derived_from));
        }
        out.insert("memory".into(), Value::Object(memory));
    }
    let traced = r.memory.as_ref().map_or("", |m| m.id.as_str());
    let history: Vec<Value> = r.history.iter().map(|h| history_entry(h, traced)).collect();
    out.insert("history".into(), Value::Array(history));
    let related: Vec<Value> = r.related.iter().map(render::memory).collect();
    put_nonempty(&mut out, "related", Value::Array(related));
    put_nonempty(&mut out, "integrity", json!(r.integrity));
    Value::Object(out)
}

/// One change; `memory` is named only when the entry is about another record than the one traced.
fn history_entry(h: &pb::HistoryEntry, traced: &str) -> Value {
    let mut out = Map::new();
    out.insert("version".into(), json!(h.version));
    out.insert("kind".into(), json!(h.kind));
    out.insert("at".into(), json!(h.effective_at));
    put_nonempty(&mut out, "by", json!(h.actor));
    put_nonempty(&mut out, "reason", json!(h.reason));
    if h.memory != traced {
        put_nonempty(&mut out, "memory", json!(h.memory));
    }
    let changes: Vec<Value> = h
        .changes
        .iter()
        .map(|c| json!({"field": c.field, "old": c.old, "new": c.new}))
        .collect();
    put_nonempty(&mut out, "changes", Value::Array(changes));
    Value::Object(out)
}
