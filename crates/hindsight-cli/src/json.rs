//! JSON renderings for `--json`: ids as ULID strings, times as RFC 3339, absent optional fields left
//! out, and scores as the short decimals the server computed rather than widened binary floats.

use hindsight_api::ServerStatus;
use hindsight_core::history::HistoryEntry;
use hindsight_core::recall::{Explain, RecallHit};
use hindsight_core::review::Conflict;
use hindsight_core::{
    BankConfig, Disposition, Memory, MemoryId, RecallResponse, RetrievalRecord, Status, Timestamp,
    WriteOutcome,
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

pub fn write(o: &WriteOutcome) -> Value {
    let mut out = object(json!({ "id": o.id.to_string(), "disposition": o.disposition.name() }));
    match &o.disposition {
        Disposition::Created => {}
        Disposition::MergedInto { target, similarity } => {
            out.insert("merged_into".into(), target.to_string().into());
            out.insert("similarity".into(), num(*similarity));
        }
        Disposition::Quarantined { reason } => {
            out.insert("quarantine_reason".into(), reason.clone().into());
        }
        Disposition::RejectedLowImportance { scores } => {
            out.insert(
                "importance".into(),
                json!({
                    "reuse": num(scores.reuse),
                    "impact": num(scores.impact),
                    "stability": num(scores.stability),
                    "uniqueness": num(scores.uniqueness),
                    "total": num(scores.total),
                }),
            );
        }
    }
    Value::Object(out)
}

/// `status` is the name; the superseding id or quarantine reason go in fields of their own.
fn status_into(map: &mut Map<String, Value>, status: &Status) {
    map.insert("status".into(), status.name().into());
    map.remove("superseded_by");
    map.remove("quarantine_reason");
    match status {
        Status::Superseded { by } => {
            map.insert("superseded_by".into(), by.to_string().into());
        }
        Status::Quarantined { reason } => {
            map.insert("quarantine_reason".into(), reason.clone().into());
        }
        _ => {}
    }
}

pub fn memory(m: &Memory) -> Value {
    let p = &m.provenance;
    let mut provenance = object(json!({ "source": p.source.as_str() }));
    put(&mut provenance, "tool", p.tool.clone());
    put(&mut provenance, "agent_id", p.agent_id.clone());
    put(&mut provenance, "session_id", p.session_id.clone());
    put(&mut provenance, "task_id", p.task_id.clone());
    put(&mut provenance, "tool_call_id", p.tool_call_id.clone());
    let mut access = object(json!({ "count": m.access.count }));
    put(
        &mut access,
        "last_accessed_at",
        m.access.last_accessed_at.map(time),
    );

    let mut out = object(json!({
        "id": m.id.to_string(),
        "bank": m.bank.as_str(),
        "kind": m.kind.as_str(),
        "content": m.content,
        "entities": m.entities,
        "provenance": provenance,
        "occurred_at": time(m.occurred_at),
        "recorded_at": time(m.recorded_at),
        "valid_from": time(m.valid_from),
        "confidence": num(m.confidence),
        "importance": num(m.importance),
        "critical": m.critical,
        "status_log": m.status_log.iter().map(|c| {
            let mut change = object(json!({ "effective_at": time(c.effective_at) }));
            status_into(&mut change, &c.status);
            Value::Object(change)
        }).collect::<Vec<_>>(),
        "support": {
            "count": m.support.count,
            "merged": ids(&m.support.merged),
            "derived_from": ids(&m.support.derived_from),
        },
        "access": access,
        "tags": m.tags,
        "metadata": m.metadata,
        "version": m.version,
        "updated_at": time(m.updated_at),
    }));
    put(&mut out, "subtype", m.subtype.map(|s| s.as_str()));
    put(
        &mut out,
        "slot",
        m.slot
            .as_ref()
            .map(|s| json!({ "subject": s.subject, "attribute": s.attribute, "value": s.value })),
    );
    put(&mut out, "valid_to", m.valid_to.map(time));
    put(&mut out, "expires_at", m.expires_at.map(time));
    put(
        &mut out,
        "signature",
        m.signature
            .as_ref()
            .map(|s| json!({ "key_id": s.key_id, "mac": s.mac })),
    );
    status_into(&mut out, &m.status);
    Value::Object(out)
}

/// A recall result: the record's fields with `status` as of the recall's time, its score, its
/// explanation, and every id it stands for (itself, merged duplicates, sources).
pub fn hit(h: &RecallHit) -> Value {
    let mut out = object(memory(&h.memory));
    status_into(&mut out, &h.status);
    out.insert("score".into(), num(h.score));
    out.insert("explain".into(), explain(&h.explain));
    out.insert("represents".into(), ids(&h.memory.represented_ids()));
    Value::Object(out)
}

fn explain(e: &Explain) -> Value {
    json!({
        "arms": e.arms.iter().map(|a| json!({ "arm": a.arm, "rank": a.rank, "score": num(a.score) })).collect::<Vec<_>>(),
        "relevance": num(e.relevance),
        "confidence": num(e.confidence),
        "freshness": num(e.freshness),
        "score": num(e.score),
        "status": e.status,
        "flags": e.flags,
        "collapsed": e.collapsed,
        "adjustments": e.adjustments,
    })
}

/// A logged recall, for `hindsight log` and its export: one self-contained object per recall,
/// with the results' content as returned, so that it can be labelled offline.
pub fn retrieval(r: &RetrievalRecord) -> Value {
    let q = &r.request;
    json!({
        "recall_id": r.id.to_string(),
        "at": time(r.at),
        "principal": r.principal,
        "banks": q.banks.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "query": q.query,
        "options": {
            "top_k": q.top_k,
            "max_tokens": q.max_tokens,
            "as_of": q.as_of.map(time),
            "intent": q.intent.as_str(),
            "agent_role": q.agent_role,
            "context": q.context,
            "kinds": q.filters.kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>(),
            "tags": q.filters.tags,
            "min_confidence": q.filters.min_confidence.map(num),
            "include_history": q.include_history,
            "include_archived": q.include_archived,
        },
        "results": r.hits.iter().map(|h| json!({
            "rank": h.rank,
            "memory_id": h.memory.to_string(),
            "bank": h.bank.to_string(),
            "score": num(h.score),
            "content": h.content,
            "explain": explain(&h.explain),
        })).collect::<Vec<_>>(),
        "latency_micros": r.latency_micros,
        "feedback": r.feedback.iter().map(|f| json!({
            "memory_id": f.memory.to_string(),
            "outcome": f.outcome.as_str(),
            "at": time(f.at),
            "principal": f.principal,
            "confidence_before": num(f.confidence_before),
            "confidence_after": num(f.confidence_after),
        })).collect::<Vec<_>>(),
    })
}

pub fn feedback(f: &FeedbackReport) -> Value {
    json!({
        "memory": memory(&f.memory),
        "confidence_before": num(f.confidence_before),
        "confidence_after": num(f.confidence_after),
        "applied": f.applied,
    })
}

pub fn recall(r: &RecallResponse) -> Value {
    let mut out = object(json!({
        "results": r.hits.iter().map(hit).collect::<Vec<_>>(),
        "tokens_used": r.tokens_used,
        "took_micros": r.took_micros,
    }));
    put(
        &mut out,
        "recall_id",
        r.recall_id.map(|id| Value::from(id.to_string())),
    );
    put(
        &mut out,
        "time_window",
        r.time_window
            .map(|(from, to)| json!({ "from": time(from), "to": time(to) })),
    );
    Value::Object(out)
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
    use hindsight_core::{Provenance, SourceKind};

    use super::*;

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
    fn write_leaves_out_absent_fields_and_prints_short_floats() {
        let id = MemoryId::new(1_000, 1);
        let created = WriteOutcome {
            id,
            disposition: Disposition::Created,
        };
        assert_eq!(
            write(&created),
            json!({ "id": id.to_string(), "disposition": "created" })
        );
        let merged = WriteOutcome {
            id,
            disposition: Disposition::MergedInto {
                target: MemoryId::new(2_000, 2),
                similarity: 0.95,
            },
        };
        assert_eq!(write(&merged)["similarity"], json!(0.95));
        assert_eq!(
            write(&merged)["merged_into"],
            json!(MemoryId::new(2_000, 2).to_string())
        );
    }

    #[test]
    fn a_hit_carries_the_status_as_of_the_recall() {
        let m = sample();
        let value = hit(&RecallHit {
            memory: m.clone(),
            status: Status::Active,
            score: 0.5,
            explain: Explain::default(),
        });
        assert_eq!(value["status"], json!("active"));
        assert!(value.get("superseded_by").is_none());
        assert_eq!(value["score"], json!(0.5));
        assert_eq!(value["confidence"], json!(0.9));
        assert_eq!(value["occurred_at"], json!("2026-03-04T10:00:00.000Z"));
        assert_eq!(value["represents"].as_array().unwrap().len(), 2);
        let by = MemoryId::new(m.occurred_at.millis(), 8).to_string();
        assert_eq!(memory(&m)["superseded_by"], json!(by));
    }
}
