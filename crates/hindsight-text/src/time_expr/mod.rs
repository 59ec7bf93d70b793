//! Time expressions in English and Chinese, resolved to a window relative to a reference time.
//!
//! Calendar arithmetic happens in one fixed offset (UTC unless the caller gives another); weeks
//! start on Monday. Windows are half-open, `[start, end)`; windows that run "until now" end one
//! second after the reference time so that a memory stamped exactly then is inside.

mod calendar;
mod chinese;
mod english;
mod relative;
mod rule;
mod scan;
#[cfg(test)]
mod test_support;
mod time_of_day;

use chrono::{DateTime, Duration, FixedOffset, NaiveDate, TimeZone, Utc};
use serde::{Deserialize, Serialize};

use self::calendar::Ctx;
use self::scan::find_spans;
use crate::script::Folded;

/// A resolved time expression.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TimeWindow {
    /// Inclusive start.
    pub start: DateTime<Utc>,
    /// Exclusive end.
    pub end: DateTime<Utc>,
    /// The expression as written in the text.
    pub expr: String,
}

impl TimeWindow {
    /// True when `t` falls inside the window.
    pub fn contains(&self, t: DateTime<Utc>) -> bool {
        self.start <= t && t < self.end
    }

    /// Length of the window.
    pub fn duration(&self) -> Duration {
        self.end - self.start
    }
}

/// The first time expression in `text`, resolved against `as_of`, with calendar days in UTC.
/// `None` when the text has no time expression.
pub fn parse_time_window(text: &str, as_of: DateTime<Utc>) -> Option<TimeWindow> {
    parse_time_window_tz(text, as_of, utc_offset())
}

/// Like [`parse_time_window`], with calendar days (today, last week, March 4) taken in the time
/// zone `tz`, e.g. UTC+8 for a user in China.
pub fn parse_time_window_tz(
    text: &str,
    as_of: DateTime<Utc>,
    tz: FixedOffset,
) -> Option<TimeWindow> {
    find_time_windows_tz(text, as_of, tz).into_iter().next()
}

/// Every time expression in `text`, in text order, resolved against `as_of` in UTC.
pub fn find_time_windows(text: &str, as_of: DateTime<Utc>) -> Vec<TimeWindow> {
    find_time_windows_tz(text, as_of, utc_offset())
}

/// Every time expression in `text`, in text order, resolved in the time zone `tz`.
pub fn find_time_windows_tz(text: &str, as_of: DateTime<Utc>, tz: FixedOffset) -> Vec<TimeWindow> {
    let ctx = Ctx::new(as_of.with_timezone(&tz).naive_local());
    let folded = Folded::new(text);
    find_spans(&folded, &ctx)
        .into_iter()
        .filter_map(|found| {
            let start = tz.from_local_datetime(&found.span.start).single()?;
            let end = tz.from_local_datetime(&found.span.end).single()?;
            let (a, b) = (folded.orig(found.start), folded.orig(found.end));
            Some(TimeWindow {
                start: start.with_timezone(&Utc),
                end: end.with_timezone(&Utc),
                expr: text[a..b].trim().to_string(),
            })
        })
        .collect()
}

/// `text` with its time expressions removed (and the spacing around them tidied), so that "last
/// week" does not count as keywords when the time is already handled as a window.
pub fn strip_time_expr(text: &str) -> String {
    // Which spans are expressions does not depend on the reference time except for rare
    // calendar edge cases, so any fixed reference in a leap year will do.
    let reference = NaiveDate::from_ymd_opt(2024, 6, 12)
        .and_then(|d| d.and_hms_opt(12, 0, 0))
        .expect("valid reference date");
    let ctx = Ctx::new(reference);
    let folded = Folded::new(text);
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for found in find_spans(&folded, &ctx) {
        let (a, b) = (folded.orig(found.start), folded.orig(found.end));
        out.push_str(&text[last..a]);
        out.push(' ');
        last = b;
    }
    out.push_str(&text[last..]);
    tidy_spaces(&out)
}

fn utc_offset() -> FixedOffset {
    FixedOffset::east_opt(0).expect("zero offset is valid")
}

fn tidy_spaces(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let is_space = c == ' ';
        if is_space && (out.is_empty() || out.ends_with(' ')) {
            continue;
        }
        let closing = matches!(
            c,
            '.' | ',' | '?' | '!' | ';' | ':' | '，' | '。' | '？' | '！' | '；' | '：'
        );
        if closing && out.ends_with(' ') {
            out.pop();
        }
        // Space only separates Latin words; next to Han text it is an artefact of removal.
        if !is_space && out.ends_with(' ') {
            let before = out[..out.len() - 1].chars().last();
            if before.is_some_and(crate::script::is_han) || crate::script::is_han(c) {
                out.pop();
            }
        }
        out.push(c);
    }
    out.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time_expr::test_support::{as_of, at};

    #[test]
    fn no_time_expression() {
        for text in [
            "The user prefers tea.",
            "We discussed a recipe for dumplings while working on a spreadsheet.",
            "Task T109: the flight search tool timed out when the date range exceeded 30 days.",
            "玛丽亚喜欢两周一个迭代的敏捷开发。",
            "每周五开例会",
            "看一下周报",
            "我可能会晚点到。",
            "May I ask you something?",
            "I may need a week off",
            "The weekend trip was fun",
            "I'm most productive in the morning",
            "用户聊周末出游时顺便提到了火车票。",
            "用户现在住哪儿？",
            "以后天天喝拿铁",
            "The troops march 4 miles",
        ] {
            assert_eq!(parse_time_window(text, as_of()), None, "{text}");
        }
    }

    #[test]
    fn expression_text_and_timezone() {
        let w = parse_time_window("What did we do Last Week?", as_of()).unwrap();
        assert_eq!(w.expr, "Last Week");
        assert!(w.contains(at(2026, 3, 12, 9)));
        assert!(!w.contains(at(2026, 3, 16, 0)));
        // 01:00 UTC on the 18th is already 09:00 in UTC+8 and 20:00 on the 17th in UTC-5.
        let early = Utc.with_ymd_and_hms(2026, 3, 18, 1, 0, 0).unwrap();
        let shanghai = FixedOffset::east_opt(8 * 3600).unwrap();
        let w = parse_time_window_tz("yesterday", early, shanghai).unwrap();
        assert_eq!(
            w.start,
            Utc.with_ymd_and_hms(2026, 3, 16, 16, 0, 0).unwrap()
        );
        assert_eq!(w.duration(), Duration::days(1));
        let w = parse_time_window("yesterday", early).unwrap();
        assert_eq!(w.start, at(2026, 3, 17, 0));
    }

    #[test]
    fn finds_all_expressions() {
        let all = find_time_windows(
            "I rotated my bank password yesterday; remind me again in 90 days.",
            as_of(),
        );
        let exprs: Vec<&str> = all.iter().map(|w| w.expr.as_str()).collect();
        assert_eq!(exprs, vec!["yesterday", "in 90 days"]);
    }

    #[test]
    fn strips_expressions() {
        assert_eq!(
            strip_time_expr("What did the user have me analyse last week?"),
            "What did the user have me analyse?"
        );
        assert_eq!(
            strip_time_expr("用户上周让我分析了什么？"),
            "用户让我分析了什么？"
        );
        assert_eq!(
            strip_time_expr("What did we decide on Monday about Falcon?"),
            "What did we decide about Falcon?"
        );
        assert_eq!(strip_time_expr("昨天下午三点开会"), "开会");
        assert_eq!(strip_time_expr("No time here."), "No time here.");
    }
}
