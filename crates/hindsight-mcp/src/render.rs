//! How memories read in tool results: the fields an agent acts on, without the bookkeeping (index
//! positions, signatures, access counters) that would only cost it context.

use hindsight_api::pb;
use serde_json::{json, Map, Value};

/// A memory in a few fields: what it says, how far to trust it, and where it stands.
pub fn memory(m: &pb::Memory) -> Value {
    let mut out = Map::new();
    out.insert("id".into(), json!(m.id));
    out.insert("bank".into(), json!(m.bank));
    out.insert("content".into(), json!(m.content));
    out.insert("kind".into(), json!(m.kind));
    if let Some(subtype) = &m.subtype {
        out.insert("subtype".into(), json!(subtype));
    }
    if let Some(status) = &m.status {
        out.insert("status".into(), json!(status.name));
        if let Some(by) = &status.superseded_by {
            out.insert("superseded_by".into(), json!(by));
        }
        if let Some(reason) = &status.quarantine_reason {
            out.insert("quarantine_reason".into(), json!(reason));
        }
    }
    out.insert("confidence".into(), json!(round(m.confidence)));
    if let Some(p) = &m.provenance {
        out.insert("source".into(), json!(p.source));
        if let Some(tool) = &p.tool {
            out.insert("tool".into(), json!(tool));
        }
    }
    out.insert("occurred_at".into(), json!(m.occurred_at));
    if let Some(expires) = &m.expires_at {
        out.insert("expires_at".into(), json!(expires));
    }
    if !m.tags.is_empty() {
        out.insert("tags".into(), json!(m.tags));
    }
    Value::Object(out)
}

/// Scores to three decimals: more digits carry no meaning and cost tokens.
pub fn round(x: f32) -> f64 {
    (f64::from(x) * 1000.0).round() / 1000.0
}

/// Inserts `value` under `key` unless it is empty (an empty list, an unset option).
pub fn put_nonempty(out: &mut Map<String, Value>, key: &str, value: Value) {
    let empty = match &value {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::String(s) => s.is_empty(),
        _ => false,
    };
    if !empty {
        out.insert(key.to_string(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memory_reads_without_bookkeeping() {
        let m = pb::Memory {
            id: "01J".into(),
            bank: "b".into(),
            kind: "semantic".into(),
            subtype: Some("preference".into()),
            content: "likes tea".into(),
            confidence: 0.912_345,
            status: Some(pb::MemoryStatus {
                name: "active".into(),
                ..Default::default()
            }),
            updated_index: 42,
            ..Default::default()
        };
        let v = memory(&m);
        assert_eq!(v["confidence"], json!(0.912));
        assert_eq!(v["status"], json!("active"));
        assert!(v.get("updated_index").is_none());
        assert!(v.get("tags").is_none());
    }
}
