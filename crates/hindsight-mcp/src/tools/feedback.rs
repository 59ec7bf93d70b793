//! `memory_feedback`: tell the memory how a recalled memory turned out, so its confidence follows.

use hindsight_api::pb;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::backend::Backend;
use crate::caller::Caller;
use crate::render::round;
use crate::tool_error::ToolError;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct FeedbackArgs {
    /// The `recall_id` of the memory_search result the memory came from.
    pub recall_id: String,
    /// The memory's id (26 characters, as memory_search returned it).
    pub memory_id: String,
    /// How it turned out: "used" (acted on it, no judgement), "helpful" (it was right and it
    /// helped), "wrong" (it turned out to be false) or "harmful" (acting on it did damage).
    pub outcome: Outcome,
}

#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Used,
    Helpful,
    Wrong,
    Harmful,
}

impl Outcome {
    fn wire(self) -> &'static str {
        match self {
            Outcome::Used => "used",
            Outcome::Helpful => "helpful",
            Outcome::Wrong => "wrong",
            Outcome::Harmful => "harmful",
        }
    }
}

impl FeedbackArgs {
    pub async fn run(self, backend: &dyn Backend, caller: &Caller) -> Result<Value, ToolError> {
        let recall_id = self.recall_id.trim().to_string();
        // The node's own wording ("not a recall id") does not tell the agent where to get one.
        if recall_id.is_empty() {
            return Err(ToolError::NoRecallId);
        }
        let request = pb::FeedbackRequest {
            recall_id,
            memory_id: self.memory_id.trim().to_string(),
            outcome: self.outcome.wire().to_string(),
        };
        let response = backend.feedback(caller.key(), request).await?;
        Ok(result(self.outcome, &response))
    }
}

fn result(outcome: Outcome, r: &pb::FeedbackResponse) -> Value {
    let mut out = Map::new();
    if let Some(m) = &r.memory {
        out.insert("memory_id".into(), json!(m.id));
        if let Some(status) = &m.status {
            out.insert("status".into(), json!(status.name));
        }
    }
    out.insert("outcome".into(), json!(outcome.wire()));
    out.insert(
        "confidence_before".into(),
        json!(round(r.confidence_before)),
    );
    out.insert("confidence_after".into(), json!(round(r.confidence_after)));
    out.insert("applied".into(), json!(r.applied));
    if !r.applied {
        out.insert(
            "note".into(),
            json!("this feedback on this recall and memory was given before: nothing changed"),
        );
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_are_the_four_the_node_knows() {
        for word in ["used", "helpful", "wrong", "harmful"] {
            let args: FeedbackArgs = serde_json::from_value(
                json!({"recall_id": "r", "memory_id": "m", "outcome": word}),
            )
            .unwrap();
            assert_eq!(args.outcome.wire(), word);
        }
        assert!(serde_json::from_value::<FeedbackArgs>(
            json!({"recall_id": "r", "memory_id": "m", "outcome": "great"})
        )
        .is_err());
    }

    #[test]
    fn repeated_feedback_says_nothing_changed() {
        let v = result(
            Outcome::Helpful,
            &pb::FeedbackResponse {
                memory: Some(pb::Memory {
                    id: "01J".into(),
                    ..Default::default()
                }),
                confidence_before: 0.8,
                confidence_after: 0.8,
                applied: false,
            },
        );
        assert_eq!(v["memory_id"], json!("01J"));
        assert_eq!(v["confidence_after"], json!(0.8));
        assert!(v["note"].as_str().unwrap().contains("nothing changed"));
    }
}
