//! `memory_search`: what is remembered about the task at hand.

use std::collections::HashSet;

use hindsight_api::pb;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::backend::Backend;
use crate::caller::Caller;
use crate::render::{self, put_nonempty, round};
use crate::tool_error::ToolError;

/// Flags a result carries when memories contradict each other and nobody has settled which holds.
const CONFLICT_FLAGS: &[&str] = &["disputed", "requires_confirmation"];
const CONFLICT_STATUSES: &[&str] = &["disputed", "pending_review"];

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchArgs {
    /// What to look for, in plain words, any language, e.g. "how does the user want invoices
    /// sent". Time expressions ("last week") narrow the search to that time.
    pub query: String,
    /// The bank to search. Defaults to the configured bank.
    #[serde(default)]
    pub bank: Option<String>,
    /// Several banks to search at once (e.g. the agent's own and a shared team bank); used
    /// together with `bank`.
    #[serde(default)]
    pub banks: Option<Vec<String>>,
    /// How many memories to return, best first (default 10).
    #[serde(default)]
    pub top_k: Option<u32>,
    /// What the memories are for, to rank the right subtypes first.
    #[serde(default)]
    pub intent: Option<Intent>,
    /// Only memories carrying every one of these tags.
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// Also return superseded, falsified, expired and archived memories, to see what was believed
    /// before and what replaced it.
    #[serde(default)]
    pub include_history: Option<bool>,
}

#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Intent {
    Facts,
    HowTo,
    PastCases,
    Preferences,
    Any,
}

impl Intent {
    fn wire(self) -> &'static str {
        match self {
            Intent::Facts => "facts",
            Intent::HowTo => "how_to",
            Intent::PastCases => "past_cases",
            Intent::Preferences => "preferences",
            Intent::Any => "any",
        }
    }
}

impl SearchArgs {
    pub async fn run(self, backend: &dyn Backend, caller: &Caller) -> Result<Value, ToolError> {
        let request = self.request(caller)?;
        Ok(result(&backend.recall(caller.key(), request).await?))
    }

    fn request(self, caller: &Caller) -> Result<pb::RecallRequest, ToolError> {
        let mut named: Vec<String> = self.bank.into_iter().collect();
        named.extend(self.banks.unwrap_or_default());
        let mut banks = caller.banks(named)?;
        let mut seen = HashSet::new();
        banks.retain(|b| seen.insert(b.clone()));
        Ok(pb::RecallRequest {
            banks,
            query: self.query,
            top_k: self.top_k,
            intent: self.intent.map(|i| i.wire().to_string()),
            filters: Some(pb::RecallFilters {
                tags: self.tags.unwrap_or_default(),
                ..Default::default()
            }),
            include_history: self.include_history.unwrap_or(false),
            ..Default::default()
        })
    }
}

/// The memories best first, each with its score and any flags; a note when some contradict.
fn result(r: &pb::RecallResponse) -> Value {
    let mut conflicted = false;
    let memories: Vec<Value> = r
        .hits
        .iter()
        .filter_map(|hit| {
            let memory = hit.memory.as_ref()?;
            let mut out = match render::memory(memory) {
                Value::Object(out) => out,
                _ => Map::new(),
            };
            // The status as of the recall, which can differ from the record's latest.
            if let Some(status) = &hit.status {
                out.insert("status".into(), json!(status.name));
                conflicted |= CONFLICT_STATUSES.contains(&status.name.as_str());
            }
            out.insert("score".into(), json!(round(hit.score)));
            if let Some(explain) = &hit.explain {
                put_nonempty(&mut out, "flags", json!(explain.flags));
                conflicted |= explain
                    .flags
                    .iter()
                    .any(|f| CONFLICT_FLAGS.contains(&f.as_str()));
            }
            Some(Value::Object(out))
        })
        .collect();
    let mut out = Map::new();
    out.insert("count".into(), json!(memories.len()));
    out.insert("memories".into(), Value::Array(memories));
    if let Some(window) = &r.time_window {
        out.insert(
            "time_window".into(),
            json!({"from": window.from, "to": window.to}),
        );
    }
    put_nonempty(&mut out, "recall_id", json!(r.recall_id));
    if conflicted {
        out.insert(
            "note".into(),
            json!(
                "some memories contradict others: do not rely on them without asking the user; \
                 memory_review lists the open conflicts, memory_resolve_conflict settles one"
            ),
        );
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bank_and_banks_combine_and_default() {
        let caller = Caller {
            bank: Some("acme/default".into()),
            ..Default::default()
        };
        let args: SearchArgs = serde_json::from_value(
            json!({"query": "q", "bank": "a", "banks": ["a", "shared"], "intent": "how_to"}),
        )
        .unwrap();
        let r = args.request(&caller).unwrap();
        assert_eq!(r.banks, ["a", "shared"]);
        assert_eq!(r.intent.as_deref(), Some("how_to"));

        let args: SearchArgs = serde_json::from_value(json!({"query": "q"})).unwrap();
        assert_eq!(args.request(&caller).unwrap().banks, ["acme/default"]);
    }

    #[test]
    fn disputed_results_carry_a_note() {
        let hit = pb::RecallHit {
            memory: Some(pb::Memory {
                id: "m".into(),
                ..Default::default()
            }),
            explain: Some(pb::Explain {
                flags: vec!["disputed".into()],
                ..Default::default()
            }),
            ..Default::default()
        };
        let v = result(&pb::RecallResponse {
            hits: vec![hit],
            ..Default::default()
        });
        assert_eq!(v["count"], json!(1));
        assert!(v["note"]
            .as_str()
            .unwrap()
            .contains("memory_resolve_conflict"));
    }
}
