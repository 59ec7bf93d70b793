//! The procedure: the tool sequence of a task that succeeded.

use hindsight_core::Subtype;

use super::goal::Goal;
use super::{Outcome, Reflection, TaskTrace};

/// Tools named in one procedure; a longer sequence ends with a count of the rest.
const MAX_PROCEDURE_STEPS: usize = 15;

/// The tools of a successful task in order, failed calls left out and repeats merged.
pub(super) fn procedure(trace: &TaskTrace, goal: &Goal, zh: bool) -> Option<Reflection> {
    if trace.outcome != Outcome::Succeeded {
        return None;
    }
    let worked: Vec<(usize, &str)> = trace
        .tool_calls
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.failed())
        .map(|(i, c)| (i, c.tool.trim()))
        .collect();
    if worked.len() < 2 {
        return None;
    }
    let mut sequence: Vec<&str> = Vec::new();
    for (_, tool) in &worked {
        if sequence.last() != Some(tool) {
            sequence.push(tool);
        }
    }
    if sequence.len() < 2 {
        return None;
    }
    let shown = sequence.len().min(MAX_PROCEDURE_STEPS);
    let mut steps = sequence[..shown].join(" → ");
    if sequence.len() > shown {
        let more = sequence.len() - shown;
        steps.push_str(&if zh {
            format!(" → …（另有 {more} 步）")
        } else {
            format!(" → … (+{more} more)")
        });
    }
    let content = if zh {
        format!("完成“{}”的做法：{steps}", goal.clause)
    } else {
        format!("To {}: {steps}", goal.clause)
    };
    let numbers: Vec<String> = worked.iter().map(|(i, _)| format!("#{}", i + 1)).collect();
    let why = if numbers.len() <= 10 {
        format!(
            "tool calls {} succeeded in a task that succeeded; failed calls left out",
            numbers.join(", ")
        )
    } else {
        format!(
            "{} tool calls succeeded in a task that succeeded; failed calls left out",
            numbers.len()
        )
    };
    let mut reflection = Reflection::semantic(Subtype::Procedure, content, why);
    for tool in &sequence[..shown] {
        reflection = reflection.tagged(format!("tool:{tool}"));
    }
    Some(reflection)
}
