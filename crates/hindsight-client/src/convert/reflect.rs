//! Task traces and what reflection kept.

use hindsight_core::{Kind, Subtype, ValidationError};
use hindsight_review::reflect::{Outcome, ReflectReport, Reflection, TaskTrace, ToolCall};

use crate::pb;

/// The trace a request carries, and its task id.
pub fn trace_of(r: &pb::ReflectRequest) -> Result<TaskTrace, ValidationError> {
    let outcome = match r.outcome.as_str() {
        "succeeded" => Outcome::Succeeded,
        "failed" => Outcome::Failed,
        "partial" => Outcome::Partial,
        other => {
            return Err(ValidationError::UnknownEnumValue {
                field: "outcome",
                value: other.to_string(),
                expected: "succeeded failed partial",
            })
        }
    };
    let lang = match r.lang.as_deref() {
        None | Some("") => None,
        Some("en") => Some(hindsight_text::Lang::En),
        Some("zh") => Some(hindsight_text::Lang::Zh),
        Some(other) => {
            return Err(ValidationError::UnknownEnumValue {
                field: "lang",
                value: other.to_string(),
                expected: "en zh",
            })
        }
    };
    Ok(TaskTrace {
        goal: r.goal.clone(),
        steps: r.steps.clone(),
        tool_calls: r
            .tool_calls
            .iter()
            .map(|c| ToolCall {
                tool: c.tool.clone(),
                arguments: c.arguments.clone(),
                result: c.result.clone(),
                error: c.error.clone(),
            })
            .collect(),
        outcome,
        feedback: r.feedback.clone(),
        lang,
    })
}

pub fn request_of(
    bank: &str,
    trace: &TaskTrace,
    task_id: Option<String>,
    dry_run: bool,
) -> pb::ReflectRequest {
    pb::ReflectRequest {
        bank: bank.to_string(),
        goal: trace.goal.clone(),
        steps: trace.steps.clone(),
        tool_calls: trace
            .tool_calls
            .iter()
            .map(|c| pb::ToolCall {
                tool: c.tool.clone(),
                arguments: c.arguments.clone(),
                result: c.result.clone(),
                error: c.error.clone(),
            })
            .collect(),
        outcome: trace.outcome.as_str().to_string(),
        feedback: trace.feedback.clone(),
        lang: trace.lang.map(|l| match l {
            hindsight_text::Lang::Zh => "zh".to_string(),
            _ => "en".to_string(),
        }),
        task_id,
        dry_run,
    }
}

impl From<&ReflectReport> for pb::ReflectResponse {
    fn from(r: &ReflectReport) -> Self {
        pb::ReflectResponse {
            reflector: r.reflector.clone(),
            memories: r
                .memories
                .iter()
                .map(|(m, written)| pb::Reflection {
                    content: m.content.clone(),
                    kind: m.kind.as_str().to_string(),
                    subtype: m.subtype.map(|s| s.as_str().to_string()),
                    tags: m.tags.clone(),
                    why: m.why.clone(),
                    written: written.as_ref().map(pb::WriteResponse::from),
                })
                .collect(),
            tokens_used: r.tokens_used,
        }
    }
}

impl TryFrom<pb::ReflectResponse> for ReflectReport {
    type Error = ValidationError;

    fn try_from(r: pb::ReflectResponse) -> Result<Self, ValidationError> {
        let memories = r
            .memories
            .into_iter()
            .map(|m| {
                let reflection = Reflection {
                    kind: m.kind.parse::<Kind>()?,
                    subtype: m.subtype.map(|s| s.parse::<Subtype>()).transpose()?,
                    content: m.content,
                    tags: m.tags,
                    why: m.why,
                };
                let written = m.written.map(TryInto::try_into).transpose()?;
                Ok((reflection, written))
            })
            .collect::<Result<Vec<_>, ValidationError>>()?;
        Ok(ReflectReport {
            reflector: r.reflector,
            memories,
            tokens_used: r.tokens_used,
        })
    }
}
