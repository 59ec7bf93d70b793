//! Whether a question is about the present moment ("is she free right now?", "他这会儿在干嘛？").
//!
//! Such a question is answered by what holds at the moment it is asked: short-lived state that
//! is still alive (a meeting until four, a build still running), not by the closest wording.
//! Only words of time are read here, never of any topic: the adverbs of the present, "yet" in a
//! question, and the next few minutes or hours.

use std::sync::OnceLock;

use regex::Regex;

use crate::script::normalize;

/// True when `text` asks about the present moment or the next few hours.
///
/// "From now on" and "until now" are not the present: the first is a standing rule, the second a
/// span of the past that [`crate::parse_time_window`] reads.
///
/// ```
/// assert!(hindsight_text::asks_about_present("Is Lucy free right now?"));
/// assert!(hindsight_text::asks_about_present("他这会儿方便接电话吗？"));
/// assert!(!hindsight_text::asks_about_present("From now on, reply in French."));
/// assert!(!hindsight_text::asks_about_present("What did we decide last week?"));
/// ```
pub fn asks_about_present(text: &str) -> bool {
    let text = normalize(text);
    let (english, chinese, not_present) = patterns();
    let rest = not_present.replace_all(&text, " ");
    english.is_match(&rest) || chinese.is_match(&rest)
}

fn patterns() -> &'static (Regex, Regex, Regex) {
    static PATTERNS: OnceLock<(Regex, Regex, Regex)> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        let english = Regex::new(
            r"(?x)\b(?:
                now | nowadays | currently | presently
              | at\ (?:the|this)\ (?:moment|minute|time)
              | at\ present
              | in\ the\ next\ (?:(?:few|couple\ of|\d+|one|two|three|half\ an?)\s+)?(?:minutes?|hours?|hrs?)
              | (?:within|for)\ the\ (?:next\ )?hour
            )\b
            # yet, in a question
            | \b(?:is|are|am|has|have|was|were|did|does|do)\b[^.!?]*\byet\s*\?",
        )
        .expect("valid present-tense pattern");
        let chinese = Regex::new(
            r"现在|此刻|此时|这会儿?|目前|眼下|当下|这时候|这个点|马上|接下来(?:[一二两三几半\d]+个?)?(?:小时|钟头|分钟)|(?:一|两|几)个?(?:小时|钟头)内",
        )
        .expect("valid present-tense pattern");
        let not_present = Regex::new(
            r"\b(?:from|until|till|up\s+to|by|since)\s+now\b|\bnow\s+(?:on|that)\b|从现在(?:起|开始)|到现在|至今|直到现在",
        )
        .expect("valid not-present pattern");
        (english, chinese, not_present)
    })
}

#[cfg(test)]
mod tests {
    use super::asks_about_present;

    #[test]
    fn questions_about_the_moment_are_recognised() {
        for question in [
            "can the plumber come round now?",
            "Is Marta at her desk at the moment?",
            "Has the parcel arrived yet?",
            "Can he answer a call in the next hour?",
            "Currently what is she working on",
            "她现在有空吗？",
            "老王这会在开会吗",
            "接下来两个小时能找到他吗？",
            "目前谁在值班？",
        ] {
            assert!(asks_about_present(question), "{question}");
        }
    }

    #[test]
    fn standing_rules_past_spans_and_other_times_are_not_the_present() {
        for text in [
            "From now on send the invoices to finance.",
            "What has changed since last March until now?",
            "Now that the move is done, what's left?",
            "从现在起周报改成周五交",
            "从一月到现在我们开了几次会？",
            "What did Marta say about the budget last week?",
            "Which snow tyres did I buy?",
            "Nobody knows yet.",
        ] {
            assert!(!asks_about_present(text), "{text}");
        }
    }
}
