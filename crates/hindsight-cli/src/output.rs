//! Printing answers: JSON for `--json`, readable text otherwise.

use hindsight_core::Memory;
use serde::Serialize;

use crate::table::Table;

/// Columns of content shown per row in listings; `get` shows all of it.
pub const CONTENT_COLUMNS: usize = 70;

/// Prints `value` as JSON when asked to, else the text `text` builds.
pub fn emit<S: Serialize>(json: bool, value: impl FnOnce() -> S, text: impl FnOnce() -> String) {
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&value()).unwrap_or_default()
        );
    } else {
        print!("{}", text());
    }
}

pub fn score(x: f32) -> String {
    format!("{x:.3}")
}

/// A record as field/value lines.
pub fn memory_text(m: &Memory) -> String {
    let mut t = Table::fields();
    let kind = match m.subtype {
        Some(subtype) => format!("{}/{subtype}", m.kind),
        None => m.kind.to_string(),
    };
    t.row(["id", &m.id.to_string()])
        .row(["bank", m.bank.as_str()])
        .row(["kind", &kind])
        .row(["status", &m.status.to_string()])
        .row(["content", &m.content])
        .row(["confidence", &score(m.confidence)])
        .row(["importance", &score(m.importance)]);
    if m.critical {
        t.row(["critical", "yes"]);
    }
    let p = &m.provenance;
    match &p.tool {
        Some(tool) => t.row(["source", &format!("{} ({tool})", p.source)]),
        None => t.row(["source", p.source.as_str()]),
    };
    for (name, value) in [
        ("agent_id", &p.agent_id),
        ("session_id", &p.session_id),
        ("task_id", &p.task_id),
        ("tool_call_id", &p.tool_call_id),
    ] {
        if let Some(value) = value {
            t.row([name, value]);
        }
    }
    t.row(["occurred_at", &m.occurred_at.to_string()])
        .row(["recorded_at", &m.recorded_at.to_string()]);
    let valid = match m.valid_to {
        Some(to) => format!("{} .. {to}", m.valid_from),
        None => format!("{} ..", m.valid_from),
    };
    t.row(["valid", &valid]);
    if let Some(expires) = m.expires_at {
        t.row(["expires_at", &expires.to_string()]);
    }
    if !m.tags.is_empty() {
        t.row(["tags", &m.tags.join(", ")]);
    }
    if !m.entities.is_empty() {
        t.row(["entities", &m.entities.join(", ")]);
    }
    if let Some(slot) = &m.slot {
        t.row([
            "slot",
            &format!("({}, {}) = {}", slot.subject, slot.attribute, slot.value),
        ]);
    }
    for (key, value) in &m.metadata {
        t.row([format!("meta.{key}"), value.clone()]);
    }
    t.row(["support", &m.support.count.to_string()]);
    if !m.support.merged.is_empty() {
        t.row(["merged", &join(&m.support.merged)]);
    }
    if !m.support.derived_from.is_empty() {
        t.row(["derived_from", &join(&m.support.derived_from)]);
    }
    let last = m
        .access
        .last_accessed_at
        .map_or_else(|| "never".to_string(), |t| t.to_string());
    t.row([
        "accessed",
        &format!("{} times, last {last}", m.access.count),
    ])
    .row(["version", &m.version.to_string()]);
    t.render()
}

pub fn join<T: ToString>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
