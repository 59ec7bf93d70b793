//! English time expressions: dates, months, years and quarters, days and weekdays relative to
//! today, counts of units ago, ahead or up to now, and parts of the day.

use chrono::{Datelike, Duration, NaiveDate, Weekday};

use super::calendar::{
    coming_weekday, day_span, days_span, infer_year, midnight, month_span, previous_weekday,
    quarter_span, until_now, weekday_in_week, year_span, Span,
};
use super::relative::{
    ago, ahead, recent_weekend, relative_period, relative_weekend, rolling, Qty, Unit,
};
use super::rule::{rule, Rule};
use super::time_of_day::day_part;

// Each word these patterns admit must be known to the readers below (`en_qty`, `en_unit`,
// `month_from_name`, `weekday_from_en`), or its match resolves to nothing.
const EN_NUM: &str = r"\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|a\s+couple(?:\s+of)?|couple\s+of|a\s+few|few|several|some";
const EN_UNIT: &str =
    r"min(?:ute)?s?|hours?|hrs?|days?|weeks?|fortnights?|months?|quarters?|years?";
const EN_MONTH: &str = r"january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec";
const EN_WEEKDAY: &str = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday";

fn en_unit(s: &str) -> Option<(Unit, u32)> {
    let s = s.trim_end_matches('s');
    Some(match s {
        "min" | "minute" => (Unit::Minute, 1),
        "hr" | "hour" => (Unit::Hour, 1),
        "day" => (Unit::Day, 1),
        "week" => (Unit::Week, 1),
        "fortnight" => (Unit::Week, 2),
        "month" => (Unit::Month, 1),
        "quarter" => (Unit::Quarter, 1),
        "year" => (Unit::Year, 1),
        _ => return None,
    })
}

fn en_qty(s: &str) -> Option<Qty> {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Ok(n) = s.parse::<u32>() {
        return Some(Qty::N(n));
    }
    Some(Qty::N(match s.as_str() {
        "a" | "an" | "one" | "a single" => 1,
        "two" | "a couple of" | "a couple" | "couple of" | "a pair of" => 2,
        "three" => 3,
        "four" => 4,
        "five" => 5,
        "six" => 6,
        "seven" => 7,
        "eight" => 8,
        "nine" => 9,
        "ten" => 10,
        "eleven" => 11,
        "twelve" => 12,
        "fifteen" => 15,
        "twenty" => 20,
        "thirty" => 30,
        "a few" | "few" | "several" | "some" => return Some(Qty::Few),
        _ => return None,
    }))
}

fn month_from_name(s: &str) -> Option<u32> {
    let s = s.trim_end_matches('.');
    Some(match s {
        "january" | "jan" => 1,
        "february" | "feb" => 2,
        "march" | "mar" => 3,
        "april" | "apr" => 4,
        "may" => 5,
        "june" | "jun" => 6,
        "july" | "jul" => 7,
        "august" | "aug" => 8,
        "september" | "sept" | "sep" => 9,
        "october" | "oct" => 10,
        "november" | "nov" => 11,
        "december" | "dec" => 12,
        _ => return None,
    })
}

fn weekday_from_en(s: &str) -> Option<Weekday> {
    Some(match s {
        "monday" => Weekday::Mon,
        "tuesday" => Weekday::Tue,
        "wednesday" => Weekday::Wed,
        "thursday" => Weekday::Thu,
        "friday" => Weekday::Fri,
        "saturday" => Weekday::Sat,
        "sunday" => Weekday::Sun,
        _ => return None,
    })
}

pub(super) fn rules() -> Vec<Rule> {
    let lead = r"(?:(?:on|in|during|over|from|at|for)\s+)?";
    vec![
        // ISO-style dates, optionally with a time of day: 2026-03-04, 2026/3/4, 2026.03.04.
        rule(
            r"(\d{4})([-/.])(\d{1,2})([-/.])(\d{1,2})(?:t\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:z|[+-]\d{2}:?\d{2})?)?",
            true,
            |h| {
                if h.get(2) != h.get(4) {
                    return None;
                }
                let d = NaiveDate::from_ymd_opt(
                    h.get(1)?.parse().ok()?,
                    h.get(3)?.parse().ok()?,
                    h.get(5)?.parse().ok()?,
                )?;
                day_span(d)
            },
        ),
        // March 4, Mar 4th, 4 March, the 4th of March, optionally with a year.
        rule(
            &format!(
                r"(?:on\s+)?(?:(?:the\s+)?(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({EN_MONTH})\.?|({EN_MONTH})\.?\s+(?:the\s+)?(\d{{1,2}})(?:st|nd|rd|th)?)(?:,?\s+(\d{{4}}))?"
            ),
            true,
            |h| {
                let (day, month_group) = if h.has(1) {
                    (h.get(1)?, 2)
                } else {
                    (h.get(4)?, 3)
                };
                let name = h.get(month_group)?;
                // "may 4" and "march 4" are as likely a verb and a number as a date.
                if matches!(name, "may" | "mar" | "march") && !h.capitalised(month_group) {
                    return None;
                }
                let month = month_from_name(name)?;
                let day: u32 = day.parse().ok()?;
                let year = match h.get(5) {
                    Some(y) => y.parse().ok()?,
                    None => infer_year(month, day, h.ctx),
                };
                day_span(NaiveDate::from_ymd_opt(year, month, day)?)
            },
        ),
        // Months: "in March", "March 2026", "early April", "last March".
        rule(
            &format!(
                r"(?:(in|during|throughout|from|last|this|next)\s+)?(?:(early|mid|late)[\s-]+)?({EN_MONTH})\.?(?:,?\s+(\d{{4}}))?"
            ),
            true,
            |h| {
                let name = h.get(3)?;
                let full = name.len() > 3 || name == "may";
                let anchored = h.has(1) || h.has(2) || h.has(4);
                if !full && !h.has(4) {
                    return None;
                }
                if !anchored && (name == "may" || !h.capitalised(3)) {
                    return None;
                }
                if name == "may" && !h.capitalised(3) {
                    return None;
                }
                let month = month_from_name(name)?;
                let (cy, cm) = (h.ctx.today.year(), h.ctx.today.month());
                let year = if let Some(y) = h.get(4) {
                    y.parse().ok()?
                } else {
                    match h.get(1) {
                        Some("last") => {
                            if month < cm {
                                cy
                            } else {
                                cy - 1
                            }
                        }
                        Some("this") => cy,
                        Some("next") => {
                            if month > cm {
                                cy
                            } else {
                                cy + 1
                            }
                        }
                        _ => infer_year(month, 1, h.ctx),
                    }
                };
                let span = month_span(year, month)?;
                let last_day = (span.end - Duration::days(1)).date().day();
                let (first, last) = match h.get(2) {
                    Some("early") => (1, 10),
                    Some("mid") => (11, 20),
                    Some("late") => (21, last_day),
                    _ => return Some(span),
                };
                days_span(
                    NaiveDate::from_ymd_opt(year, month, first)?,
                    NaiveDate::from_ymd_opt(year, month, last)?,
                )
            },
        ),
        // Years and quarters: "in 2025", "Q1 2026", "2026 Q1".
        rule(
            r"(?:in|during|throughout|of|from)\s+((?:19|20)\d{2})|(?:the\s+)?year\s+((?:19|20)\d{2})",
            true,
            |h| {
                // "from 2026-03-04" is a date, not a year.
                let rest = &h.text[h.caps.get(0)?.end()..];
                if rest.starts_with(['-', '/', '.'])
                    && rest[1..].starts_with(|c: char| c.is_ascii_digit())
                {
                    return None;
                }
                year_span(h.get(1).or(h.get(2))?.parse().ok()?)
            },
        ),
        rule(
            r"q([1-4])\s+((?:19|20)\d{2})|((?:19|20)\d{2})\s+q([1-4])",
            true,
            |h| {
                let (q, y) = if h.has(1) {
                    (h.get(1)?, h.get(2)?)
                } else {
                    (h.get(4)?, h.get(3)?)
                };
                quarter_span(y.parse().ok()?, q.parse().ok()?)
            },
        ),
        // Days relative to today.
        rule(
            r"(?:the\s+)?day\s+before\s+yesterday|(?:the\s+)?day\s+after\s+tomorrow|yesterday|today|tomorrow",
            true,
            |h| {
                let m = h.get(0)?;
                let offset = if m.ends_with("before yesterday") {
                    -2
                } else if m.ends_with("after tomorrow") {
                    2
                } else if m == "yesterday" {
                    -1
                } else if m == "tomorrow" {
                    1
                } else {
                    0
                };
                day_span(h.ctx.today + Duration::days(offset))
            },
        ),
        rule(
            r"this\s+(morning|afternoon|evening)|tonight|last\s+night|earlier\s+today|later\s+today|just\s+now|the\s+other\s+day",
            true,
            |h| {
                let ctx = h.ctx;
                let m = h.get(0)?;
                if let Some(part) = h.get(1) {
                    return day_part(day_span(ctx.today)?, part);
                }
                match m.split_whitespace().collect::<Vec<_>>().as_slice() {
                    ["tonight"] => day_part(day_span(ctx.today)?, "night"),
                    ["last", "night"] => {
                        day_part(day_span(ctx.today - Duration::days(1))?, "night")
                    }
                    ["earlier", "today"] => until_now(midnight(ctx.today), ctx),
                    ["later", "today"] => Span::new(ctx.now, midnight(ctx.today.succ_opt()?)),
                    ["just", "now"] => until_now(ctx.now - Duration::hours(1), ctx),
                    _ => days_span(ctx.today - Duration::days(7), ctx.today - Duration::days(1)),
                }
            },
        ),
        // "three days ago", "a couple of weeks back".
        rule(
            &format!(r"({EN_NUM})\s+({EN_UNIT})\s+(?:ago|back)"),
            true,
            |h| {
                let (unit, mult) = en_unit(h.get(2)?)?;
                match en_qty(h.get(1)?)? {
                    Qty::N(n) => ago(Qty::N(n * mult), unit, h.ctx),
                    q => ago(q, unit, h.ctx),
                }
            },
        ),
        // "in 90 days", "two weeks from now".
        rule(
            &format!(r"in\s+({EN_NUM})\s+({EN_UNIT})|({EN_NUM})\s+({EN_UNIT})\s+from\s+now"),
            true,
            |h| {
                let (q, u) = if h.has(1) {
                    (h.get(1)?, h.get(2)?)
                } else {
                    (h.get(3)?, h.get(4)?)
                };
                let (unit, mult) = en_unit(u)?;
                match en_qty(q)? {
                    Qty::N(n) => ahead(Qty::N(n * mult), unit, h.ctx),
                    q => ahead(q, unit, h.ctx),
                }
            },
        ),
        // "the past three days", "over the last couple of weeks".
        rule(
            &format!(
                r"(?:(?:in|over|during|within|for)\s+)?(?:the\s+)?(?:last|past|previous)\s+({EN_NUM})\s+({EN_UNIT})"
            ),
            true,
            |h| {
                let (unit, mult) = en_unit(h.get(2)?)?;
                match en_qty(h.get(1)?)? {
                    Qty::N(n) => rolling(Qty::N(n * mult), unit, h.ctx),
                    q => rolling(q, unit, h.ctx),
                }
            },
        ),
        // "last week", "this month", "the past year", "earlier this week", "the week before last".
        rule(
            &format!(
                r"{lead}(?:(the\s+)?(last|past|previous|this\s+past|this|current|next|coming)|(earlier|later)\s+this)\s+(weekend|week|month|quarter|year)|{lead}(?:the\s+)?(week|month|year)\s+before\s+last"
            ),
            true,
            |h| {
                let ctx = h.ctx;
                if let Some(u) = h.get(5) {
                    let (unit, _) = en_unit(u)?;
                    return relative_period(unit, -2, ctx);
                }
                let unit_word = h.get(4)?;
                if let Some(dir) = h.get(3) {
                    let period = if unit_word == "weekend" {
                        relative_weekend(0, ctx)?
                    } else {
                        relative_period(en_unit(unit_word)?.0, 0, ctx)?
                    };
                    return if dir == "earlier" {
                        until_now(period.start, ctx)
                    } else {
                        Span::new(ctx.now, period.end)
                    };
                }
                let which = h.get(2)?;
                let with_the = h.has(1);
                if unit_word == "weekend" {
                    return match which {
                        "this" | "current" => relative_weekend(0, ctx),
                        "next" | "coming" => relative_weekend(1, ctx),
                        _ => relative_weekend(-1, ctx),
                    };
                }
                let (unit, _) = en_unit(unit_word)?;
                // "the past week" and "the last week" run up to now; "last week" is the
                // calendar week before this one.
                let rolling_window = which == "past" || (with_the && which == "last");
                match which {
                    _ if rolling_window => rolling(Qty::N(1), unit, ctx),
                    "last" | "previous" | "this past" => relative_period(unit, -1, ctx),
                    "this" | "current" => relative_period(unit, 0, ctx),
                    _ => relative_period(unit, 1, ctx),
                }
            },
        ),
        rule(r"(?:over|during|on|at)\s+the\s+weekend", true, |h| {
            recent_weekend(h.ctx)
        }),
        // Weekdays: "on Monday", "last Tuesday", "this Friday", "Monday last week".
        rule(
            &format!(
                r"(?:(last|this|next|coming|on|past|previous)\s+)?({EN_WEEKDAY})(?:\s+(?:of\s+)?(last|this|next)\s+week)?"
            ),
            true,
            |h| {
                let ctx = h.ctx;
                let wd = weekday_from_en(h.get(2)?)?;
                if let Some(week) = h.get(3) {
                    let offset = match week {
                        "last" => -1,
                        "this" => 0,
                        _ => 1,
                    };
                    return day_span(weekday_in_week(wd, offset, ctx));
                }
                match h.get(1) {
                    Some("this") => day_span(weekday_in_week(wd, 0, ctx)),
                    Some("next") => day_span(weekday_in_week(wd, 1, ctx)),
                    Some("coming") => day_span(coming_weekday(wd, ctx)),
                    _ => day_span(previous_weekday(wd, ctx)),
                }
            },
        ),
    ]
}

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use crate::time_expr::test_support::{as_of, at, days, window};

    #[test]
    fn english_days() {
        days("What did I do today?", (3, 18), (3, 19));
        days("what did we discuss yesterday", (3, 17), (3, 18));
        days("the day before yesterday", (3, 16), (3, 17));
        days("tomorrow", (3, 19), (3, 20));
        days(
            "What did the user have me analyse three days ago?",
            (3, 15),
            (3, 16),
        );
        days("2 days ago", (3, 16), (3, 17));
        days("moved to Berlin last month", (2, 1), (3, 1));
        days("a plugin last week", (3, 9), (3, 16));
    }

    #[test]
    fn english_weeks_months_years() {
        days("last week", (3, 9), (3, 16));
        days("this week", (3, 16), (3, 23));
        days("next week", (3, 23), (3, 30));
        days("two weeks ago", (3, 2), (3, 9));
        days("the week before last", (3, 2), (3, 9));
        days("last month", (2, 1), (3, 1));
        days("this month", (3, 1), (4, 1));
        days("a month ago", (2, 1), (3, 1));
        assert_eq!(window("last year"), (at(2025, 1, 1, 0), at(2026, 1, 1, 0)));
        assert_eq!(window("in 2024"), (at(2024, 1, 1, 0), at(2025, 1, 1, 0)));
        days("last weekend", (3, 14), (3, 16));
        days("this weekend", (3, 21), (3, 23));
        days("over the weekend", (3, 14), (3, 16));
        days("Q1 2026", (1, 1), (4, 1));
    }

    #[test]
    fn english_weekdays() {
        days("on Monday", (3, 16), (3, 17));
        days("last Tuesday", (3, 17), (3, 18));
        days("what happened on Wednesday", (3, 11), (3, 12));
        days("Thursday", (3, 12), (3, 13));
        days("this Friday", (3, 20), (3, 21));
        days("next Monday", (3, 23), (3, 24));
        days("Monday last week", (3, 9), (3, 10));
    }

    #[test]
    fn english_parts_of_day() {
        assert_eq!(
            window("this morning"),
            (at(2026, 3, 18, 5), at(2026, 3, 18, 12))
        );
        assert_eq!(
            window("yesterday afternoon"),
            (at(2026, 3, 17, 12), at(2026, 3, 17, 18))
        );
        assert_eq!(
            window("last night"),
            (at(2026, 3, 17, 18), at(2026, 3, 18, 5))
        );
        assert_eq!(
            window("earlier today"),
            (at(2026, 3, 18, 0), as_of() + Duration::seconds(1))
        );
        assert_eq!(
            window("Monday at 3pm"),
            (at(2026, 3, 16, 15), at(2026, 3, 16, 16))
        );
        assert_eq!(
            window("yesterday evening at 7"),
            (at(2026, 3, 17, 19), at(2026, 3, 17, 20))
        );
    }

    #[test]
    fn english_explicit_dates() {
        days("on 2026-03-04", (3, 4), (3, 5));
        days("2026/3/4", (3, 4), (3, 5));
        days("March 4", (3, 4), (3, 5));
        days("on March 4th, 2026", (3, 4), (3, 5));
        days("4 March", (3, 4), (3, 5));
        days("the 4th of March", (3, 4), (3, 5));
        days("in March", (3, 1), (4, 1));
        days("early February", (2, 1), (2, 11));
        assert_eq!(
            window("in December"),
            (at(2025, 12, 1, 0), at(2026, 1, 1, 0))
        );
        assert_eq!(window("last March"), (at(2025, 3, 1, 0), at(2025, 4, 1, 0)));
        days("May 5", (5, 5), (5, 6));
    }

    #[test]
    fn english_rolling_and_future() {
        assert_eq!(
            window("in the past three days"),
            (at(2026, 3, 15, 0), as_of() + Duration::seconds(1))
        );
        days("a few days ago", (3, 12), (3, 17));
        days("remind me in 90 days", (6, 16), (6, 17));
        days("two weeks from now", (3, 30), (4, 6));
        assert_eq!(
            window("since last week"),
            (at(2026, 3, 9, 0), as_of() + Duration::seconds(1))
        );
        assert_eq!(
            window("3 hours ago"),
            (at(2026, 3, 18, 6), at(2026, 3, 18, 8))
        );
    }
}
