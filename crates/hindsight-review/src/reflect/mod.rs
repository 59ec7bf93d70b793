//! Reflection: what a finished task leaves worth remembering (docs/DESIGN.md, "Reflect").
//!
//! A [`TaskTrace`] (the goal, the steps, the tool calls with their results or errors, the
//! outcome and the user's feedback) goes in; at most [`MAX_REFLECTIONS`] candidate
//! [`Reflection`]s come out, for the caller to write as semantic memories whose source is
//! `reflection`:
//!
//! - **facts**: preferences, constraints and facts the user stated in the feedback or the goal,
//!   in the user's own words turned to the third person ("I prefer tabs" → "The user prefers
//!   tabs", "不要用表情" → "用户要求不要用表情");
//! - **lessons**: each distinct error that a later call got past, with what worked, and why a
//!   task failed;
//! - **procedure**: the tool sequence of a task that succeeded.
//!
//! When more than five are found, facts come first, then lessons, then the procedure. Nothing
//! is invented: a trace that shows none of these yields an empty list. [`RulesReflector`]
//! decides from word cues in English and Chinese without a model; a model-backed reflector
//! implements the same [`Reflector`] trait. The English and Chinese grammar it reads (sentences,
//! the first person, request openings, "from now on") is `hindsight_text::grammar`; what counts
//! as a preference and how a reflection is phrased stay here.
//!
//! ```
//! use hindsight_review::reflect::{Outcome, Reflector, RulesReflector, TaskTrace, ToolCall};
//!
//! let trace = TaskTrace::new("Deploy the billing service", Outcome::Succeeded)
//!     .with_call(ToolCall::new("kubectl", "apply -f billing.yaml").failing("error: context \"prod\" not found"))
//!     .with_call(ToolCall::new("kubectl", "--context production apply -f billing.yaml").returning("configured"))
//!     .with_call(ToolCall::new("curl", "https://billing.internal/health").returning("ok"))
//!     .with_feedback("Thanks. Never deploy on Fridays.");
//! let reflections = RulesReflector.reflect(&trace).unwrap();
//! let contents: Vec<&str> = reflections.iter().map(|r| r.content.as_str()).collect();
//! assert_eq!(contents, [
//!     "The user asked never to deploy on Fridays.",
//!     "When trying to deploy the billing service, kubectl failed with 'error: context \"prod\" \
//!      not found'; kubectl worked with `--context production apply -f billing.yaml`.",
//!     "To deploy the billing service: kubectl → curl",
//! ]);
//! ```

mod clip;
mod error;
mod goal;
mod lesson;
mod procedure;
mod reflection;
mod retell;
mod stated;
#[cfg(test)]
mod tests;
mod trace;

use std::collections::HashSet;

use hindsight_text::Lang;

pub use error::ReflectError;
pub use reflection::{ReflectReport, Reflection};
pub use trace::{
    Outcome, TaskTrace, ToolCall, MAX_TOOL_NAME_BYTES, MAX_TRACE_STEPS, MAX_TRACE_TEXT_BYTES,
    MAX_TRACE_TOOL_CALLS,
};

use goal::Goal;
use lesson::lessons;
use procedure::procedure;
use stated::stated;

/// Most reflections one task yields (docs/DESIGN.md, "Reflect").
pub const MAX_REFLECTIONS: usize = 5;

/// The name [`RulesReflector`] reports.
pub const REFLECT_RULES: &str = "rules";

/// Turns a finished task's trace into at most [`MAX_REFLECTIONS`] candidate memories.
/// Deterministic reflectors and model-backed ones implement the same trait; a model-backed one
/// calls its client blocking.
pub trait Reflector {
    fn reflect(&self, trace: &TaskTrace) -> Result<Vec<Reflection>, ReflectError>;
    /// Short name for history entries and metrics (`rules`, `llm:<model>` …).
    fn name(&self) -> &str;
}

/// Reflection from word cues and the shape of the trace, in English and Chinese, without a
/// model. See the module documentation for what it finds.
#[derive(Clone, Copy, Debug, Default)]
pub struct RulesReflector;

impl Reflector for RulesReflector {
    fn reflect(&self, trace: &TaskTrace) -> Result<Vec<Reflection>, ReflectError> {
        trace.validate()?;
        let zh = trace.language() == Lang::Zh;
        let goal = Goal::of(&trace.goal, zh);
        let mut found = stated(trace);
        found.extend(lessons(trace, &goal, zh));
        found.extend(procedure(trace, &goal, zh));
        let mut seen = HashSet::new();
        found.retain(|r| seen.insert(r.content.clone()));
        found.truncate(MAX_REFLECTIONS);
        Ok(found)
    }

    fn name(&self) -> &str {
        REFLECT_RULES
    }
}
