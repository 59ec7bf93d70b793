//! `memory_review`: run the after-the-fact review of a bank now, and show what it left for a person.

use hindsight_api::pb;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::backend::Backend;
use crate::caller::Caller;
use crate::render::put_nonempty;
use crate::tool_error::ToolError;

/// Conflicts shown with both memories' text; past this the agent gets ids and a count, so a bank
/// with a long queue does not flood its context.
const CONFLICTS_SHOWN: usize = 10;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReviewArgs {
    /// The bank to review. Defaults to the configured bank.
    #[serde(default)]
    pub bank: Option<String>,
}

impl ReviewArgs {
    pub async fn run(self, backend: &dyn Backend, caller: &Caller) -> Result<Value, ToolError> {
        let bank = caller.bank(self.bank)?;
        let report = backend
            .review(
                caller.key(),
                pb::ReviewRequest {
                    bank: bank.clone(),
                    as_of: None,
                },
            )
            .await?;
        let open = backend
            .list_conflicts(
                caller.key(),
                pb::ListConflictsRequest {
                    bank,
                    include_resolved: false,
                },
            )
            .await?
            .conflicts;
        let mut shown = Vec::new();
        for conflict in open.iter().take(CONFLICTS_SHOWN) {
            shown.push(conflict_with_contents(backend, caller, conflict, &report).await);
        }
        Ok(result(&report, shown, open.len()))
    }
}

/// A conflict with the text of both sides, which is what the user is asked to choose between.
async fn conflict_with_contents(
    backend: &dyn Backend,
    caller: &Caller,
    conflict: &pb::Conflict,
    report: &pb::ReviewResponse,
) -> Value {
    let mut out = Map::new();
    out.insert("conflict_id".into(), json!(conflict.id));
    for (side, id) in [("a", &conflict.a), ("b", &conflict.b)] {
        let request = pb::GetRequest {
            id: id.clone(),
            consistency: None,
        };
        // A side that cannot be read (forgotten since) is shown by id alone.
        let content = backend
            .get(caller.key(), request)
            .await
            .ok()
            .and_then(|r| r.memory)
            .map(|m| m.content);
        out.insert(side.into(), json!({"id": id, "content": content}));
    }
    put_nonempty(&mut out, "explanation", json!(conflict.explanation));
    if report.conflicts_opened.contains(&conflict.id) {
        out.insert("new".into(), json!(true));
    }
    Value::Object(out)
}

fn result(report: &pb::ReviewResponse, conflicts: Vec<Value>, open: usize) -> Value {
    let mut out = Map::new();
    out.insert("bank".into(), json!(report.bank));
    out.insert("considered".into(), json!(report.considered));
    out.insert("changed".into(), json!(report.updated.len()));
    out.insert("expired".into(), json!(report.expired.len()));
    if let Some(cycle) = &report.cycle {
        let decisions: Map<String, Value> = cycle
            .decisions
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(kind, n)| (kind.clone(), json!(n)))
            .collect();
        put_nonempty(&mut out, "decisions", Value::Object(decisions));
    }
    if !report.created.is_empty() {
        out.insert("rules_distilled".into(), json!(report.created.len()));
    }
    if report.backlog > 0 {
        out.insert("backlog".into(), json!(report.backlog));
    }
    out.insert("open_conflicts".into(), json!(open));
    if open > 0 {
        let left_out = open.saturating_sub(conflicts.len());
        out.insert("conflicts".into(), Value::Array(conflicts));
        if left_out > 0 {
            out.insert(
                "more_conflicts".into(),
                json!(format!("{left_out} more not shown")),
            );
        }
        out.insert(
            "note".into(),
            json!(
                "each conflict holds two memories that contradict each other: ask the user which \
                 holds, then call memory_resolve_conflict with its conflict_id"
            ),
        );
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quiet_review_is_short() {
        let v = result(
            &pb::ReviewResponse {
                bank: "b".into(),
                considered: 3,
                ..Default::default()
            },
            vec![],
            0,
        );
        assert_eq!(
            v,
            json!({"bank": "b", "considered": 3, "changed": 0, "expired": 0, "open_conflicts": 0})
        );
    }

    #[test]
    fn a_long_queue_says_how_much_is_left_out() {
        let shown = vec![json!({"conflict_id": 1}), json!({"conflict_id": 2})];
        let v = result(&pb::ReviewResponse::default(), shown, 5);
        assert_eq!(v["more_conflicts"], json!("3 more not shown"));
        assert!(v["note"]
            .as_str()
            .unwrap()
            .contains("memory_resolve_conflict"));
    }
}
