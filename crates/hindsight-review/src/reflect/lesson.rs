//! Lessons: an error that a later call got past, and why a task failed.

use std::collections::HashSet;

use hindsight_core::Subtype;

use super::clip::{excerpt, one_line};
use super::goal::Goal;
use super::{Outcome, Reflection, TaskTrace, ToolCall};

/// Characters of an error line quoted in a lesson.
const ERROR_CHARS: usize = 200;
/// Characters of arguments quoted in a lesson.
const ARGUMENT_CHARS: usize = 200;

/// What got past a failed call.
enum Fix<'a> {
    /// A later call of the same tool succeeded (its index and the call).
    SameTool(usize, &'a ToolCall),
    /// Another tool's call succeeded next.
    Other(usize, &'a ToolCall),
    /// Nothing later succeeded, yet the task did.
    TaskSucceeded,
}

pub(super) fn lessons(trace: &TaskTrace, goal: &Goal, zh: bool) -> Vec<Reflection> {
    let calls = &trace.tool_calls;
    let next_success = |after: usize, same_tool: bool| {
        let tool = calls[after].tool.trim();
        calls
            .iter()
            .enumerate()
            .skip(after + 1)
            .find(|(_, c)| !c.failed() && (!same_tool || c.tool.trim() == tool))
    };
    let mut out = Vec::new();
    if trace.outcome != Outcome::Succeeded {
        let cause = (0..calls.len())
            .rev()
            .find(|&i| calls[i].failed() && next_success(i, true).is_none());
        if let Some(i) = cause {
            out.push(failure(trace.outcome, goal, i, &calls[i], zh));
        }
    }
    let mut seen = HashSet::new();
    for (i, call) in calls.iter().enumerate() {
        let Some(error) = call.error_line() else {
            continue;
        };
        let tool = call.tool.trim();
        let error = excerpt(error, ERROR_CHARS);
        if !seen.insert((tool.to_string(), error.clone())) {
            continue;
        }
        let fix = match next_success(i, true) {
            Some((j, next)) => Fix::SameTool(j, next),
            None if trace.outcome == Outcome::Succeeded => {
                next_success(i, false).map_or(Fix::TaskSucceeded, |(j, next)| Fix::Other(j, next))
            }
            None => continue,
        };
        let content = if zh {
            format!(
                "在“{}”时，{tool} 报错“{error}”；{}。",
                goal.clause,
                fix_text(call, &fix, zh)
            )
        } else {
            format!(
                "When trying to {}, {tool} failed with '{error}'; {}.",
                goal.clause,
                fix_text(call, &fix, zh)
            )
        };
        let fixed = match &fix {
            Fix::SameTool(j, _) | Fix::Other(j, _) => format!("call #{} succeeded", j + 1),
            Fix::TaskSucceeded => "the task succeeded".to_string(),
        };
        let mut lesson = Reflection::semantic(
            Subtype::Lesson,
            content,
            format!("tool call #{} ({tool}) failed; {fixed}", i + 1),
        )
        .tagged(format!("tool:{tool}"));
        if let Fix::Other(_, next) = fix {
            lesson = lesson.tagged(format!("tool:{}", next.tool.trim()));
        }
        out.push(lesson);
    }
    out
}

fn fix_text(failed: &ToolCall, fix: &Fix<'_>, zh: bool) -> String {
    match fix {
        Fix::SameTool(_, next) => {
            let tool = next.tool.trim();
            let args = one_line(&next.arguments, ARGUMENT_CHARS);
            match (
                zh,
                args.is_empty(),
                next.arguments.trim() == failed.arguments.trim(),
            ) {
                (false, _, true) => "retrying the same call worked".into(),
                (false, true, false) => format!("calling {tool} again worked"),
                (false, false, false) => format!("{tool} worked with `{args}`"),
                (true, _, true) => "原样重试后成功".into(),
                (true, true, false) => format!("再次调用 {tool} 后成功"),
                (true, false, false) => format!("改用参数 `{args}` 后 {tool} 成功"),
            }
        }
        Fix::Other(_, next) => {
            let tool = next.tool.trim();
            let args = one_line(&next.arguments, ARGUMENT_CHARS);
            match (zh, args.is_empty()) {
                (false, true) => format!("{tool} worked next"),
                (false, false) => format!("{tool} `{args}` worked next"),
                (true, true) => format!("随后 {tool} 成功"),
                (true, false) => format!("随后 {tool} `{args}` 成功"),
            }
        }
        Fix::TaskSucceeded if zh => "任务仍然完成了".into(),
        Fix::TaskSucceeded => "the task succeeded without it".into(),
    }
}

/// Why a task failed or only partly succeeded: its last error that nothing got past.
fn failure(outcome: Outcome, goal: &Goal, index: usize, call: &ToolCall, zh: bool) -> Reflection {
    let tool = call.tool.trim();
    let error = excerpt(call.error_line().unwrap_or_default(), ERROR_CHARS);
    let partial = outcome == Outcome::Partial;
    let content = match (zh, partial) {
        (false, false) => format!(
            "Task \"{}\" failed: {tool} reported '{error}'.",
            goal.quoted
        ),
        (false, true) => format!(
            "Task \"{}\" only partly succeeded: {tool} reported '{error}'.",
            goal.quoted
        ),
        (true, false) => format!("任务“{}”失败：{tool} 报错“{error}”。", goal.quoted),
        (true, true) => format!(
            "任务“{}”只完成了一部分：{tool} 报错“{error}”。",
            goal.quoted
        ),
    };
    Reflection::semantic(
        Subtype::Lesson,
        content,
        format!(
            "task outcome {outcome}; tool call #{} ({tool}) failed and was not retried successfully",
            index + 1
        ),
    )
    .tagged(format!("outcome:{outcome}"))
    .tagged(format!("tool:{tool}"))
}
