//! `memory_reflect`: turn a finished task into the few memories worth keeping from it.

use hindsight_api::pb;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::backend::Backend;
use crate::caller::Caller;
use crate::render::put_nonempty;
use crate::tool_error::ToolError;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReflectArgs {
    /// What the task was for, e.g. "refund order 1042".
    pub goal: String,
    /// What you did, in order, one short sentence each.
    pub steps: Vec<String>,
    /// "succeeded", "failed" or "partial".
    pub outcome: Outcome,
    /// The tool calls that mattered, in order, with what they returned or how they failed.
    #[serde(default)]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// What the user said about the result, in their own words.
    #[serde(default)]
    pub feedback: Option<String>,
    /// An id for the task, recorded in each memory's provenance.
    #[serde(default)]
    pub task_id: Option<String>,
    /// Only say what would be kept, writing nothing.
    #[serde(default)]
    pub dry_run: Option<bool>,
    /// The bank the memories go to. Defaults to the configured bank.
    #[serde(default)]
    pub bank: Option<String>,
}

#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Succeeded,
    Failed,
    Partial,
}

/// One tool call of the task.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ToolCall {
    /// The tool's name.
    pub tool: String,
    /// The arguments it was called with (any JSON).
    #[serde(default)]
    pub arguments: Option<Value>,
    /// What it returned, shortened to what mattered.
    #[serde(default)]
    pub result: Option<String>,
    /// How it failed, if it did.
    #[serde(default)]
    pub error: Option<String>,
}

impl ReflectArgs {
    pub async fn run(self, backend: &dyn Backend, caller: &Caller) -> Result<Value, ToolError> {
        let request = self.request(caller)?;
        Ok(result(&backend.reflect(caller.key(), request).await?))
    }

    fn request(self, caller: &Caller) -> Result<pb::ReflectRequest, ToolError> {
        Ok(pb::ReflectRequest {
            bank: caller.bank(self.bank)?,
            goal: self.goal,
            steps: self.steps,
            tool_calls: self
                .tool_calls
                .unwrap_or_default()
                .into_iter()
                .map(|c| pb::ToolCall {
                    tool: c.tool,
                    arguments: match c.arguments {
                        None | Some(Value::Null) => String::new(),
                        Some(Value::String(s)) => s,
                        Some(other) => other.to_string(),
                    },
                    result: c.result,
                    error: c.error,
                })
                .collect(),
            outcome: match self.outcome {
                Outcome::Succeeded => "succeeded",
                Outcome::Failed => "failed",
                Outcome::Partial => "partial",
            }
            .to_string(),
            feedback: self.feedback.filter(|f| !f.trim().is_empty()),
            lang: None,
            task_id: self.task_id.filter(|t| !t.trim().is_empty()),
            dry_run: self.dry_run.unwrap_or(false),
        })
    }
}

fn result(r: &pb::ReflectResponse) -> Value {
    let kept: Vec<Value> = r
        .memories
        .iter()
        .map(|m| {
            let mut out = Map::new();
            out.insert("content".into(), json!(m.content));
            out.insert("kind".into(), json!(m.kind));
            put_nonempty(&mut out, "subtype", json!(m.subtype));
            put_nonempty(&mut out, "why", json!(m.why));
            if let Some(written) = &m.written {
                out.insert("id".into(), json!(written.id));
                out.insert("disposition".into(), json!(written.disposition));
            }
            Value::Object(out)
        })
        .collect();
    let mut out = Map::new();
    out.insert("kept".into(), json!(kept.len()));
    out.insert("memories".into(), Value::Array(kept));
    out.insert("reflector".into(), json!(r.reflector));
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_arguments_of_any_shape_become_text() {
        let args: ReflectArgs = serde_json::from_value(json!({
            "goal": "g",
            "steps": ["a"],
            "outcome": "failed",
            "tool_calls": [
                {"tool": "t", "arguments": {"x": 1}, "error": "timeout"},
                {"tool": "u", "arguments": "raw"},
            ],
        }))
        .unwrap();
        let caller = Caller {
            bank: Some("b".into()),
            ..Default::default()
        };
        let r = args.request(&caller).unwrap();
        assert_eq!(r.outcome, "failed");
        assert_eq!(r.tool_calls[0].arguments, r#"{"x":1}"#);
        assert_eq!(r.tool_calls[1].arguments, "raw");
    }
}
