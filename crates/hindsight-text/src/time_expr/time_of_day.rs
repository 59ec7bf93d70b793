//! Parts of the day and clock times, alone or narrowing a day matched just before them.

use std::sync::OnceLock;

use chrono::Duration;
use regex::Regex;

use super::calendar::Span;
use super::chinese::zh_number;

/// Narrows a day to a part of it.
pub(super) fn day_part(day: Span, part: &str) -> Option<Span> {
    let (from, to) = match part {
        "morning" | "上午" | "早上" | "早晨" | "清晨" => (5, 12),
        "noon" | "中午" => (11, 14),
        "afternoon" | "下午" => (12, 18),
        "evening" | "傍晚" | "晚上" | "晚间" => (17, 24),
        "night" | "夜里" | "夜间" | "半夜" | "深夜" => (18, 29),
        "凌晨" => (0, 6),
        "midnight" => (-1, 1),
        _ => return None,
    };
    Span::new(
        day.start + Duration::hours(from),
        day.start + Duration::hours(to),
    )
}

fn refinements() -> &'static (Regex, Regex, Regex) {
    static RE: OnceLock<(Regex, Regex, Regex)> = OnceLock::new();
    RE.get_or_init(|| {
        (
            Regex::new(
                r"^(?:\s*,)?\s*(?:(?:in|during)\s+the\s+|at\s+)?(morning|afternoon|evening|night|noon|midnight)\b|^\s*的?\s*(凌晨|早上|早晨|清晨|上午|中午|下午|傍晚|晚上|晚间|夜里|夜间|半夜|深夜)",
            )
            .expect("day part pattern"),
            Regex::new(
                r"^\s*(?:at\s+|@\s*)?(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.?|p\.m\.?)?",
            )
            .expect("clock pattern"),
            Regex::new(
                r"^\s*(\d{1,2}|[零一二两三四五六七八九十]{1,3})\s*[点点时](?:\s*(\d{1,2}|[零一二三四五六七八九十]{1,3})\s*分|(半))?",
            )
            .expect("chinese clock pattern"),
        )
    })
}

/// Extends a single-day match with a following part of day and clock time: "yesterday
/// afternoon", "昨天下午三点", "Monday at 3pm". Returns the new end and span.
pub(super) fn refine(text: &str, end: usize, span: Span) -> (usize, Span) {
    if !span.day {
        return (end, span);
    }
    let (part_re, clock_re, zh_clock_re) = refinements();
    let mut end = end;
    let mut span = span;
    let day_start = span.start;
    let mut pm = None;
    if let Some(c) = part_re.captures(&text[end..]) {
        let part = c.get(1).or(c.get(2)).map(|m| m.as_str()).unwrap_or("");
        if let Some(s) = day_part(span, part) {
            pm = Some(matches!(
                part,
                "afternoon"
                    | "evening"
                    | "night"
                    | "下午"
                    | "傍晚"
                    | "晚上"
                    | "晚间"
                    | "夜里"
                    | "夜间"
                    | "深夜"
            ));
            span = Span { day: false, ..s };
            end += c.get(0).map_or(0, |m| m.end());
        }
    }
    let rest = &text[end..];
    let clock = if let Some(c) = zh_clock_re.captures(rest) {
        let hour = zh_number(c.get(1).map_or("", |m| m.as_str()));
        let minute = match (c.get(2), c.get(3)) {
            (Some(m), _) => zh_number(m.as_str()),
            (None, Some(_)) => Some(30),
            _ => Some(0),
        };
        hour.zip(minute)
            .map(|(h, m)| (h, m, pm, c.get(0).map_or(0, |x| x.end())))
    } else if let Some(c) = clock_re.captures(rest) {
        let suffix = c.get(3).map(|m| m.as_str());
        // A bare number after a day ("Monday 3") is not a time unless it has a colon, an
        // am/pm, or a part of day before it.
        if suffix.is_none() && c.get(2).is_none() && pm.is_none() {
            None
        } else {
            let hour: Option<u32> = c.get(1).and_then(|m| m.as_str().parse().ok());
            let minute: Option<u32> = match c.get(2) {
                Some(m) => m.as_str().parse().ok(),
                None => Some(0),
            };
            let is_pm = suffix.map(|s| s.starts_with('p')).or(pm);
            hour.zip(minute)
                .map(|(h, m)| (h, m, is_pm, c.get(0).map_or(0, |x| x.end())))
        }
    } else {
        None
    };
    if let Some((mut hour, minute, is_pm, len)) = clock {
        if is_pm == Some(true) && hour < 12 {
            hour += 12;
        }
        if hour < 24 && minute < 60 {
            let t =
                day_start + Duration::hours(i64::from(hour)) + Duration::minutes(i64::from(minute));
            if let Some(s) = Span::new(t, t + Duration::hours(1)) {
                span = s;
                end += len;
            }
        }
    }
    (end, span)
}
