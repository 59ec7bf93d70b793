//! The task's goal as reflections quote it.

use hindsight_text::grammar::{lowercase_first, sentences, trim_end_punct};

use super::clip::{excerpt, first_line};

/// Characters of the goal quoted in a reflection.
const GOAL_CHARS: usize = 160;

/// The goal as reflections quote it: its first line, without closing punctuation, clipped.
pub(super) struct Goal {
    /// As written: `Task "Deploy the billing service" failed`.
    pub(super) quoted: String,
    /// Inside a sentence: `To deploy the billing service: …`.
    pub(super) clause: String,
}

impl Goal {
    pub(super) fn of(goal: &str, zh: bool) -> Goal {
        let first = sentences(goal).into_iter().next().map(|s| s.text);
        let line = first.as_deref().or_else(|| first_line(goal)).unwrap_or("");
        let quoted = excerpt(trim_end_punct(line), GOAL_CHARS);
        let clause = if zh {
            quoted.clone()
        } else {
            lowercase_first(&quoted)
        };
        Goal { quoted, clause }
    }
}
