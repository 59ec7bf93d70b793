//! Every rule run over a text; overlapping matches resolved to the earliest and longest.

use std::sync::OnceLock;

use regex::RegexSet;

use super::calendar::{until_now, Ctx, Span};
use super::rule::{Hit, Rule};
use super::time_of_day::refine;
use super::{chinese, english};
use crate::script::Folded;

fn rules() -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    // Two matches of the same extent are read by the rule that comes first, so English before
    // Chinese, each in its own order, is part of the behaviour.
    RULES.get_or_init(|| {
        english::rules()
            .into_iter()
            .chain(chinese::rules())
            .collect()
    })
}

/// Every rule's pattern in one set: one scan of a text tells which rules match anywhere in it,
/// and only those are searched for their captures. Most texts hold no time expression at all,
/// and a text is read this way on every write and by the review's judge.
fn rule_set() -> &'static RegexSet {
    static SET: OnceLock<RegexSet> = OnceLock::new();
    SET.get_or_init(|| {
        RegexSet::new(rules().iter().map(|r| r.re.as_str()))
            .expect("the time patterns compile one by one, so together too")
    })
}

pub(super) struct Found {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) span: Span,
}

fn is_ascii_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

pub(super) fn find_spans(folded: &Folded, ctx: &Ctx) -> Vec<Found> {
    let text = folded.text.as_str();
    let bytes = text.as_bytes();
    let mut candidates = Vec::new();
    let possible = rule_set().matches(text);
    for (_, rule) in rules()
        .iter()
        .enumerate()
        .filter(|(i, _)| possible.matched(*i))
    {
        let mut at = 0;
        while at <= text.len() {
            let Some(caps) = rule.re.captures_at(text, at) else {
                break;
            };
            let m = caps.get(0).expect("group 0 always matches");
            let (start, end) = (m.start(), m.end());
            // On a miss, look again one character later: "in last month" inside "Berlin last
            // month" fails its boundary, yet "last month" must still be found.
            let next = start + text[start..].chars().next().map_or(1, char::len_utf8);
            let bounded = !rule.english
                || ((start == 0 || !is_ascii_word_byte(bytes[start - 1]))
                    && (end == bytes.len() || !is_ascii_word_byte(bytes[end])));
            if m.as_str().trim().is_empty() || !bounded {
                at = next;
                continue;
            }
            let hit = Hit {
                caps,
                text,
                folded,
                original: folded.original(),
                ctx,
            };
            match (rule.resolve)(&hit) {
                Some(span) => {
                    let (end, span) = refine(text, end, span);
                    candidates.push(Found { start, end, span });
                    at = end.max(next);
                }
                None => at = next,
            }
        }
    }
    candidates.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
    let mut chosen: Vec<Found> = Vec::new();
    for c in candidates {
        if chosen.last().is_some_and(|last| c.start < last.end) {
            continue;
        }
        chosen.push(c);
    }
    for found in &mut chosen {
        open_ended(text, found, ctx);
    }
    chosen
}

/// "since last week", "上周以来", "从三月到现在": from the start of the expression until now.
fn open_ended(text: &str, found: &mut Found, ctx: &Ctx) {
    let before = &text[..found.start];
    let after = &text[found.end..];
    let since = ["since ", "自从", "自"]
        .iter()
        .find(|p| before.ends_with(*p))
        .map(|p| p.len());
    let until_now_suffix = ["以来", "至今", "到现在", "到今天"]
        .iter()
        .find(|s| after.starts_with(*s))
        .map(|s| s.len());
    if since.is_none() && until_now_suffix.is_none() {
        return;
    }
    if let Some(span) = until_now(found.span.start, ctx) {
        found.span = span;
        found.start -= since.unwrap_or(0);
        found.end += until_now_suffix.unwrap_or(0);
    }
}
