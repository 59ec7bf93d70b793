//! `memory_search`: what is remembered about the task at hand.

use std::collections::HashSet;

use hindsight_api::pb;
use hindsight_core::time::Timestamp;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::backend::Backend;
use crate::caller::Caller;
use crate::render::round;
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
    /// What the memories are for, to rank the right subtypes first: "facts", "how_to"
    /// (procedures and rules), "past_cases" (what happened before), "preferences", or "any" (the
    /// default: no preference).
    #[serde(default)]
    pub intent: Option<Intent>,
    /// Search the bank as it was at this moment, RFC 3339 (e.g. "2026-03-04T10:00:00Z"): what
    /// was believed then, with the statuses of then; memories stated later are left out, and
    /// time expressions in `query` count from it. Defaults to now.
    #[serde(default)]
    pub as_of: Option<String>,
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
        let as_of = self
            .as_of
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .map(|t| match Timestamp::parse_rfc3339(&t) {
                Ok(parsed) => Ok(parsed.to_rfc3339()),
                Err(_) => Err(ToolError::NotATimestamp {
                    field: "as_of",
                    value: t,
                }),
            })
            .transpose()?;
        Ok(pb::RecallRequest {
            banks,
            as_of,
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

/// The recall result of docs/RECALL-RESULT.md with only the fields a model acts on. Every key is
/// always there (`null` or empty when unset), in the same names and nesting as every other
/// interface's, so a client reads one shape whichever way it asked; a note when some contradict.
fn result(r: &pb::RecallResponse) -> Value {
    let mut conflicted = false;
    let hits: Vec<Value> = r
        .hits
        .iter()
        .filter_map(|hit| {
            let memory = hit.memory.as_ref()?;
            // The status as of the recall, which can differ from the record's latest.
            let status = hit
                .status
                .as_ref()
                .or(memory.status.as_ref())
                .map_or("", |s| s.name.as_str());
            let flags = hit.explain.as_ref().map_or(&[][..], |e| &e.flags[..]);
            conflicted |= CONFLICT_STATUSES.contains(&status)
                || flags.iter().any(|f| CONFLICT_FLAGS.contains(&f.as_str()));
            Some(json!({
                "memory": hit_memory(memory),
                "status": {"name": status},
                "score": round(hit.score),
                "explain": {"flags": flags},
            }))
        })
        .collect();
    let mut out = Map::new();
    out.insert("hits".into(), Value::Array(hits));
    out.insert(
        "time_window".into(),
        r.time_window
            .as_ref()
            .map_or(Value::Null, |w| json!({"from": w.from, "to": w.to})),
    );
    out.insert("recall_id".into(), json!(r.recall_id));
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

fn hit_memory(m: &pb::Memory) -> Value {
    json!({
        "id": m.id,
        "bank": m.bank,
        "kind": m.kind,
        "subtype": m.subtype,
        "content": m.content,
        "confidence": round(m.confidence),
        "critical": m.critical,
        "tags": m.tags,
        "occurred_at": m.occurred_at,
        "valid_to": m.valid_to,
        "provenance": {"source": m.provenance.as_ref().map(|p| p.source.as_str())},
    })
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
    fn as_of_is_checked_and_passed() {
        let caller = Caller {
            bank: Some("b".into()),
            ..Default::default()
        };
        let args: SearchArgs =
            serde_json::from_value(json!({"query": "q", "as_of": "2026-03-04T11:00:00+01:00"}))
                .unwrap();
        assert_eq!(
            args.request(&caller).unwrap().as_of.as_deref(),
            Some("2026-03-04T10:00:00.000Z")
        );
        let args: SearchArgs =
            serde_json::from_value(json!({"query": "q", "as_of": "last Tuesday"})).unwrap();
        let error = args.request(&caller).unwrap_err().to_string();
        assert!(
            error.contains("`as_of`") && error.contains("last Tuesday"),
            "{error}"
        );
        let args: SearchArgs = serde_json::from_value(json!({"query": "q", "as_of": " "})).unwrap();
        assert_eq!(args.request(&caller).unwrap().as_of, None);
    }

    /// The documented subset of the recall result, no more and no less.
    #[test]
    fn the_result_has_exactly_the_documented_fields() {
        let hit = pb::RecallHit {
            memory: Some(pb::Memory {
                id: "m".into(),
                bank: "b".into(),
                kind: "semantic".into(),
                content: "likes tea".into(),
                confidence: 0.912_345,
                provenance: Some(pb::Provenance {
                    source: "user".into(),
                    tool: Some("crm".into()),
                    ..Default::default()
                }),
                status: Some(pb::MemoryStatus {
                    name: "superseded".into(),
                    ..Default::default()
                }),
                updated_index: 7,
                ..Default::default()
            }),
            status: Some(pb::MemoryStatus {
                name: "active".into(),
                ..Default::default()
            }),
            score: 0.4781,
            explain: Some(pb::Explain {
                flags: vec!["support:2".into()],
                relevance: 0.2,
                ..Default::default()
            }),
        };
        let v = result(&pb::RecallResponse {
            hits: vec![hit],
            recall_id: "r".into(),
            tokens_used: 3,
            ..Default::default()
        });
        assert_eq!(
            v,
            json!({
                "hits": [{
                    "memory": {
                        "id": "m", "bank": "b", "kind": "semantic", "subtype": null,
                        "content": "likes tea", "confidence": 0.912, "critical": false,
                        "tags": [], "occurred_at": "", "valid_to": null,
                        "provenance": {"source": "user"},
                    },
                    "status": {"name": "active"},
                    "score": 0.478,
                    "explain": {"flags": ["support:2"]},
                }],
                "time_window": null,
                "recall_id": "r",
            })
        );
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
        assert_eq!(v["hits"].as_array().unwrap().len(), 1);
        assert!(v["note"]
            .as_str()
            .unwrap()
            .contains("memory_resolve_conflict"));
        let quiet = result(&pb::RecallResponse::default());
        assert!(quiet.get("note").is_none());
    }
}
