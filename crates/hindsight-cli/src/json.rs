//! JSON renderings for `--json`: ids as ULID strings, times as RFC 3339, and scores as the short
//! decimals the server computed rather than widened binary floats. Writes, memories, recalls and
//! logged recalls are the wire messages, field for field as the HTTP API answers them
//! (docs/RECALL-RESULT.md); the other reports leave absent optional fields out.

use hindsight_api::pb;
use hindsight_api::ServerStatus;
use hindsight_core::history::HistoryEntry;
use hindsight_core::review::Conflict;
use hindsight_core::{
    BankConfig, Memory, MemoryId, RecallResponse, RetrievalRecord, Timestamp, WriteOutcome,
};
use hindsight_node::conflicts::outcome_name;
use hindsight_node::{BankInfo, FeedbackReport, ReviewReport, Trace};
use serde_json::{json, Map, Value};

pub fn num(x: f32) -> Value {
    // By way of the shortest decimal, so 0.9 prints as 0.9 and not 0.8999999761581421.
    x.to_string()
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

fn time(t: Timestamp) -> Value {
    t.to_rfc3339().into()
}

fn ids(ids: &[MemoryId]) -> Value {
    ids.iter().map(|id| Value::from(id.to_string())).collect()
}

fn put(map: &mut Map<String, Value>, key: &str, value: Option<impl Into<Value>>) {
    if let Some(value) = value {
        map.insert(key.to_string(), value.into());
    }
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

// Writes, memories, recalls and logged recalls print as the wire messages themselves, serialized
// as the HTTP API serializes them: the same fields in the same order, and an `f32` as the server
// computed it (0.9, not the 0.8999999761581421 a detour through `Value` would print).

pub fn write(o: &WriteOutcome) -> pb::WriteResponse {
    pb::WriteResponse::from(o)
}

pub fn memory(m: &Memory) -> pb::Memory {
    pb::Memory::from(m)
}

/// A logged recall, for `hindsight log` and its export: one self-contained object per recall,
/// with the results' content as returned, so that it can be labelled offline.
pub fn retrieval(r: &RetrievalRecord) -> pb::LoggedRecall {
    pb::LoggedRecall::from(r)
}

pub fn retrievals(records: &[RetrievalRecord]) -> pb::ListRecallsResponse {
    pb::ListRecallsResponse {
        recalls: records.iter().map(retrieval).collect(),
    }
}

pub fn feedback(f: &FeedbackReport) -> Value {
    json!({
        "memory": memory(&f.memory),
        "confidence_before": num(f.confidence_before),
        "confidence_after": num(f.confidence_after),
        "applied": f.applied,
    })
}

pub fn recall(r: &RecallResponse) -> pb::RecallResponse {
    pb::RecallResponse::from(r)
}

fn history_entry(h: &HistoryEntry) -> Value {
    json!({
        "version": h.version,
        "kind": h.kind.as_str(),
        "effective_at": time(h.effective_at),
        "recorded_at": time(h.recorded_at),
        "log_index": h.log_index,
        "actor": h.actor,
        "reason": h.reason,
        "changes": h.changes.iter().map(|c| json!({ "field": c.field, "old": c.old, "new": c.new })).collect::<Vec<_>>(),
    })
}

pub fn trace(t: &Trace) -> Value {
    json!({
        "memory": memory(&t.memory),
        "history": t.history.iter().map(history_entry).collect::<Vec<_>>(),
        "related": t.related.iter().map(memory).collect::<Vec<_>>(),
    })
}

pub fn bank(b: &BankConfig) -> Value {
    let w = &b.weights;
    json!({
        "name": b.name.as_str(),
        "description": b.description,
        "created_at": time(b.created_at),
        "updated_at": time(b.updated_at),
        "weights": {
            "relevance": num(w.relevance),
            "confidence": num(w.confidence),
            "freshness": num(w.freshness),
            "freshness_days": num(w.freshness_days),
            "fact_freshness_days": num(w.fact_freshness_days),
        },
        "min_confidence": num(b.min_confidence),
        "dedup_threshold": num(b.dedup_threshold),
        "working_ttl_seconds": b.working_ttl_secs,
        "collapse_threshold": num(b.collapse_threshold),
        "max_memories": b.max_memories,
        "max_bytes": b.max_bytes,
        "require_corroboration": b.require_corroboration,
        "strategies": b.strategies,
    })
}

pub fn bank_info(i: &BankInfo) -> Value {
    let mut out = object(bank(&i.config));
    out.insert("memory_count".into(), i.memory_count.into());
    Value::Object(out)
}

pub fn reflect(r: &hindsight_node::reflecting::ReflectReport) -> Value {
    json!({
        "reflector": r.reflector,
        "tokens_used": r.tokens_used,
        "memories": r.memories.iter().map(|(m, written)| json!({
            "kind": m.kind.as_str(),
            "subtype": m.subtype.map(|s| s.as_str()),
            "content": m.content,
            "tags": m.tags,
            "why": m.why,
            "id": written.as_ref().map(|w| w.id.to_string()),
            "disposition": written.as_ref().map(|w| w.disposition.name()),
        })).collect::<Vec<_>>(),
    })
}

pub fn review(r: &ReviewReport) -> Value {
    json!({
        "bank": r.bank,
        "as_of": time(r.as_of),
        "considered": r.considered,
        "expired": ids(&r.expired),
        "updated": ids(&r.updated),
        "conflicts_opened": r.conflicts_opened,
        "created": ids(&r.created),
        "purged": ids(&r.purged),
        "backlog": r.backlog,
        "cycle": {
            "cycle": r.cycle.cycle,
            "changed": r.cycle.changed,
            "pairs_considered": r.cycle.pairs_considered,
            "all_pairs": r.cycle.all_pairs,
            "pairs_judged": r.cycle.pairs_judged,
            "pairs_deferred": r.cycle.pairs_deferred,
            "tokens_used": r.cycle.tokens_used,
            "token_budget": r.cycle.token_budget,
            "judge": r.cycle.judge,
            "decisions": r.cycle.decisions,
        },
        "took_micros": r.cycle.took_micros,
    })
}

pub fn conflict(c: &Conflict) -> Value {
    json!({
        "id": c.id,
        "bank": c.bank.as_str(),
        "a": c.a.to_string(),
        "b": c.b.to_string(),
        "judge": c.judge,
        "explanation": c.explanation,
        "opened_at": time(c.opened_at),
        "outcome": c.resolution.as_ref().map(|r| outcome_name(r.outcome)),
        "resolved_at": c.resolution.as_ref().map(|r| time(r.resolved_at)),
        "note": c.resolution.as_ref().map(|r| r.note.clone()),
    })
}

pub fn status(s: &ServerStatus) -> Value {
    let n = &s.node;
    let mut out = object(json!({
        "node_id": n.node_id,
        "ready": s.ready,
        "version": s.version,
        "term": n.term,
        "last_log_index": n.last_log_index,
        "applied_index": n.applied_index,
        "banks_loaded": n.banks_loaded,
        "embedding_model": n.embedding_model,
        "store_bytes_on_disk": n.store_bytes_on_disk,
    }));
    put(&mut out, "leader_id", n.leader_id);
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use hindsight_core::recall::{Explain, RecallHit};
    use hindsight_core::{Disposition, Provenance, SourceKind, Status};

    use super::*;

    /// As printed, then read back.
    fn printed(message: &impl serde::Serialize) -> Value {
        serde_json::from_str(&serde_json::to_string(message).unwrap()).unwrap()
    }

    fn sample() -> Memory {
        let t = Timestamp::parse_rfc3339("2026-03-04T10:00:00Z").unwrap();
        let mut memory = Memory::new(
            MemoryId::new(t.millis(), 7),
            "acme/agent-7".parse().unwrap(),
            "likes green tea",
            Provenance::from_source(SourceKind::User),
            t,
        );
        memory.status = Status::Superseded {
            by: MemoryId::new(t.millis(), 8),
        };
        memory.support.count = 2;
        memory.support.merged = vec![MemoryId::new(t.millis(), 9)];
        memory
    }

    #[test]
    fn write_answers_the_wire_fields_with_short_floats() {
        let target = MemoryId::new(2_000, 2);
        let merged = WriteOutcome {
            id: target,
            disposition: Disposition::MergedInto {
                target,
                similarity: 0.95,
            },
        };
        let value = printed(&write(&merged));
        assert_eq!(value["id"], json!(target.to_string()));
        assert_eq!(value["disposition"], json!("merged"));
        assert_eq!(value["merged_into"], json!(target.to_string()));
        assert_eq!(value["similarity"], json!(0.95));
    }

    #[test]
    fn a_hit_nests_the_memory_and_the_status_as_of_the_recall() {
        let m = sample();
        let value = printed(&recall(&RecallResponse {
            hits: vec![RecallHit {
                memory: m.clone(),
                status: Status::Active,
                score: 0.5,
                explain: Explain::default(),
            }],
            ..Default::default()
        }));
        let hit = &value["hits"][0];
        assert_eq!(hit["status"]["name"], json!("active"));
        assert_eq!(hit["score"], json!(0.5));
        assert_eq!(hit["memory"]["confidence"], json!(0.9));
        assert_eq!(
            hit["memory"]["occurred_at"],
            json!("2026-03-04T10:00:00.000Z")
        );
        let by = MemoryId::new(m.occurred_at.millis(), 8).to_string();
        assert_eq!(hit["memory"]["status"]["superseded_by"], json!(by));
        assert_eq!(printed(&memory(&m)), hit["memory"]);
    }
}
