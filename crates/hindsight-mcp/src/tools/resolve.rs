//! `memory_resolve_conflict`: record the user's decision on two contradicting memories.

use hindsight_api::pb;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::backend::Backend;
use crate::caller::Caller;
use crate::render::put_nonempty;
use crate::tool_error::ToolError;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ResolveArgs {
    /// The conflict's id, as memory_review reported it.
    pub conflict_id: u64,
    /// "keep_a" or "keep_b" (the other is marked false), "keep_both" (both hold, e.g. they were
    /// about different things) or "discard_both".
    pub outcome: Outcome,
    /// Why, in the user's words; kept in both memories' history.
    #[serde(default)]
    pub note: Option<String>,
    /// The bank the conflict is in. Defaults to the configured bank.
    #[serde(default)]
    pub bank: Option<String>,
}

#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    KeepA,
    KeepB,
    KeepBoth,
    DiscardBoth,
}

impl Outcome {
    fn wire(self) -> &'static str {
        match self {
            Outcome::KeepA => "keep_a",
            Outcome::KeepB => "keep_b",
            Outcome::KeepBoth => "keep_both",
            Outcome::DiscardBoth => "discard_both",
        }
    }
}

impl ResolveArgs {
    pub async fn run(self, backend: &dyn Backend, caller: &Caller) -> Result<Value, ToolError> {
        let request = pb::ResolveConflictRequest {
            bank: caller.bank(self.bank)?,
            id: self.conflict_id,
            outcome: self.outcome.wire().to_string(),
            note: self.note.unwrap_or_default(),
        };
        Ok(result(
            &backend.resolve_conflict(caller.key(), request).await?,
        ))
    }
}

fn result(r: &pb::ResolveConflictResponse) -> Value {
    let mut out = Map::new();
    if let Some(c) = &r.conflict {
        out.insert("conflict_id".into(), json!(c.id));
        put_nonempty(&mut out, "outcome", json!(c.outcome));
        put_nonempty(&mut out, "resolved_at", json!(c.resolved_at));
    }
    out.insert("changed".into(), json!(r.changed));
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_read_as_the_service_spells_them() {
        let args: ResolveArgs =
            serde_json::from_value(json!({"conflict_id": 4, "outcome": "discard_both"})).unwrap();
        assert_eq!(args.outcome.wire(), "discard_both");
        assert!(serde_json::from_value::<ResolveArgs>(
            json!({"conflict_id": 4, "outcome": "keep_c"})
        )
        .is_err());
    }
}
