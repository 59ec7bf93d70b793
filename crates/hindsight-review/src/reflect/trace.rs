//! The task trace an agent reports: the goal, the steps, the tool calls and how the task ended.

use std::fmt;

use hindsight_text::{detect_lang, Lang};
use serde::{Deserialize, Serialize};

use super::clip::first_line;
use super::ReflectError;

/// Most steps a trace may carry.
pub const MAX_TRACE_STEPS: usize = 200;
/// Most tool calls a trace may carry.
pub const MAX_TRACE_TOOL_CALLS: usize = 200;
/// Longest text field of a trace (goal, step, arguments, result, error, feedback), in bytes.
pub const MAX_TRACE_TEXT_BYTES: usize = 16 * 1024;
/// Longest tool name, in bytes (the limit on a memory's provenance `tool`).
pub const MAX_TOOL_NAME_BYTES: usize = 256;

/// How a task ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Succeeded,
    Failed,
    /// Some of the goal was reached.
    Partial,
}

impl Outcome {
    pub const ALL: [Outcome; 3] = [Outcome::Succeeded, Outcome::Failed, Outcome::Partial];

    /// The serialised name: `succeeded`, `failed` or `partial`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Succeeded => "succeeded",
            Outcome::Failed => "failed",
            Outcome::Partial => "partial",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One tool call of a task: what was called, with what, and what came back.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub tool: String,
    /// The arguments as the agent sent them (often JSON), verbatim.
    #[serde(default)]
    pub arguments: String,
    #[serde(default)]
    pub result: Option<String>,
    /// Set when the call failed. A blank error counts as none.
    #[serde(default)]
    pub error: Option<String>,
}

impl ToolCall {
    pub fn new(tool: impl Into<String>, arguments: impl Into<String>) -> Self {
        ToolCall {
            tool: tool.into(),
            arguments: arguments.into(),
            result: None,
            error: None,
        }
    }

    pub fn returning(mut self, result: impl Into<String>) -> Self {
        self.result = Some(result.into());
        self
    }

    pub fn failing(mut self, error: impl Into<String>) -> Self {
        self.error = Some(error.into());
        self
    }

    /// Whether the call failed (it has a non-blank error).
    pub fn failed(&self) -> bool {
        self.error_line().is_some()
    }

    /// The first non-blank line of the error, trimmed.
    pub fn error_line(&self) -> Option<&str> {
        self.error.as_deref().and_then(first_line)
    }
}

/// A finished task as the agent reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskTrace {
    /// What the task was for, as the user or the agent put it.
    pub goal: String,
    /// The agent's steps, in order (plans, observations, decisions).
    #[serde(default)]
    pub steps: Vec<String>,
    /// The tool calls, in the order they were made.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    pub outcome: Outcome,
    /// What the user said about the result, in their own words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
    /// The language reflections are written in; detected from the goal when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lang: Option<Lang>,
}

impl TaskTrace {
    pub fn new(goal: impl Into<String>, outcome: Outcome) -> Self {
        TaskTrace {
            goal: goal.into(),
            steps: Vec::new(),
            tool_calls: Vec::new(),
            outcome,
            feedback: None,
            lang: None,
        }
    }

    pub fn with_step(mut self, step: impl Into<String>) -> Self {
        self.steps.push(step.into());
        self
    }

    pub fn with_call(mut self, call: ToolCall) -> Self {
        self.tool_calls.push(call);
        self
    }

    pub fn with_feedback(mut self, feedback: impl Into<String>) -> Self {
        self.feedback = Some(feedback.into());
        self
    }

    pub fn with_lang(mut self, lang: Lang) -> Self {
        self.lang = Some(lang);
        self
    }

    /// The language hint, or the language of the goal.
    pub fn language(&self) -> Lang {
        self.lang.unwrap_or_else(|| detect_lang(&self.goal))
    }

    /// Checks that the trace can be reflected on: a goal, and every list and text within the
    /// limits ([`MAX_TRACE_STEPS`], [`MAX_TRACE_TOOL_CALLS`], [`MAX_TRACE_TEXT_BYTES`],
    /// [`MAX_TOOL_NAME_BYTES`]). Nothing over a limit is truncated.
    pub fn validate(&self) -> Result<(), ReflectError> {
        if self.goal.trim().is_empty() {
            return Err(ReflectError::Invalid(
                "the goal is empty; say what the task was for (e.g. \"deploy the billing \
                 service\"), since every reflection is about it"
                    .into(),
            ));
        }
        check_text("goal", &self.goal)?;
        if self.steps.len() > MAX_TRACE_STEPS {
            return Err(ReflectError::Invalid(format!(
                "the trace has {} steps; at most {MAX_TRACE_STEPS} are accepted",
                self.steps.len()
            )));
        }
        for (i, step) in self.steps.iter().enumerate() {
            check_text(&format!("steps[{i}]"), step)?;
        }
        if self.tool_calls.len() > MAX_TRACE_TOOL_CALLS {
            return Err(ReflectError::Invalid(format!(
                "the trace has {} tool calls; at most {MAX_TRACE_TOOL_CALLS} are accepted",
                self.tool_calls.len()
            )));
        }
        for (i, call) in self.tool_calls.iter().enumerate() {
            if call.tool.trim().is_empty() {
                return Err(ReflectError::Invalid(format!(
                    "tool_calls[{i}] has no tool name"
                )));
            }
            if call.tool.len() > MAX_TOOL_NAME_BYTES {
                return Err(ReflectError::Invalid(format!(
                    "tool_calls[{i}].tool is {} bytes; the limit is {MAX_TOOL_NAME_BYTES} bytes",
                    call.tool.len()
                )));
            }
            check_text(&format!("tool_calls[{i}].arguments"), &call.arguments)?;
            if let Some(result) = &call.result {
                check_text(&format!("tool_calls[{i}].result"), result)?;
            }
            if let Some(error) = &call.error {
                check_text(&format!("tool_calls[{i}].error"), error)?;
            }
        }
        if let Some(feedback) = &self.feedback {
            check_text("feedback", feedback)?;
        }
        Ok(())
    }
}

fn check_text(field: &str, text: &str) -> Result<(), ReflectError> {
    if text.len() > MAX_TRACE_TEXT_BYTES {
        return Err(ReflectError::Invalid(format!(
            "{field} is {} bytes; the limit is {MAX_TRACE_TEXT_BYTES} bytes (16 KiB)",
            text.len()
        )));
    }
    Ok(())
}
