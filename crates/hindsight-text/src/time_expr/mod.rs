//! Time expressions in English and Chinese, resolved to a window relative to a reference time.
//!
//! Calendar arithmetic happens in one fixed offset (UTC unless the caller gives another); weeks
//! start on Monday. Windows are half-open, `[start, end)`; windows that run "until now" end one
//! second after the reference time so that a memory stamped exactly then is inside.

use std::sync::OnceLock;

use chrono::{
    DateTime, Datelike, Duration, FixedOffset, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc,
    Weekday,
};
use regex::{Captures, Regex, RegexSet};
use serde::{Deserialize, Serialize};

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

// ---------------------------------------------------------------------------------------------
// Calendar helpers

/// Reference point for resolution, in local (offset-applied) time.
struct Ctx {
    now: NaiveDateTime,
    today: NaiveDate,
}

impl Ctx {
    fn new(now: NaiveDateTime) -> Self {
        Ctx {
            now,
            today: now.date(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: NaiveDateTime,
    end: NaiveDateTime,
    /// Exactly one calendar day, so a part of day or a clock time may narrow it.
    day: bool,
}

impl Span {
    fn new(start: NaiveDateTime, end: NaiveDateTime) -> Option<Span> {
        (start < end).then_some(Span {
            start,
            end,
            day: false,
        })
    }
}

fn midnight(d: NaiveDate) -> NaiveDateTime {
    d.and_time(NaiveTime::MIN)
}

fn day_span(d: NaiveDate) -> Option<Span> {
    let next = d.succ_opt()?;
    Some(Span {
        start: midnight(d),
        end: midnight(next),
        day: true,
    })
}

fn days_span(first: NaiveDate, last_inclusive: NaiveDate) -> Option<Span> {
    Span::new(midnight(first), midnight(last_inclusive.succ_opt()?))
}

fn week_start(d: NaiveDate) -> NaiveDate {
    d - Duration::days(i64::from(d.weekday().num_days_from_monday()))
}

fn week_span(monday: NaiveDate) -> Option<Span> {
    days_span(monday, monday + Duration::days(6))
}

/// (year, month) moved by `delta` months.
fn shift_month(year: i32, month: u32, delta: i32) -> (i32, u32) {
    let index = year * 12 + month as i32 - 1 + delta;
    (index.div_euclid(12), index.rem_euclid(12) as u32 + 1)
}

fn month_span(year: i32, month: u32) -> Option<Span> {
    let first = NaiveDate::from_ymd_opt(year, month, 1)?;
    let (ny, nm) = shift_month(year, month, 1);
    Span::new(
        midnight(first),
        midnight(NaiveDate::from_ymd_opt(ny, nm, 1)?),
    )
}

fn months_span(first: (i32, u32), last_inclusive: (i32, u32)) -> Option<Span> {
    let start = month_span(first.0, first.1)?.start;
    let end = month_span(last_inclusive.0, last_inclusive.1)?.end;
    Span::new(start, end)
}

fn year_span(year: i32) -> Option<Span> {
    Span::new(
        midnight(NaiveDate::from_ymd_opt(year, 1, 1)?),
        midnight(NaiveDate::from_ymd_opt(year + 1, 1, 1)?),
    )
}

fn quarter_span(year: i32, quarter: u32) -> Option<Span> {
    if !(1..=4).contains(&quarter) {
        return None;
    }
    let first = (quarter - 1) * 3 + 1;
    months_span((year, first), (year, first + 2))
}

/// Saturday 00:00 to Monday 00:00 of the week starting on `monday`.
fn weekend_span(monday: NaiveDate) -> Option<Span> {
    days_span(monday + Duration::days(5), monday + Duration::days(6))
}

fn until_now(start: NaiveDateTime, ctx: &Ctx) -> Option<Span> {
    Span::new(start, ctx.now + Duration::seconds(1))
}

/// The same calendar day `delta` months away, clamped to the month's length.
fn add_months_clamped(d: NaiveDate, delta: i32) -> Option<NaiveDate> {
    let (y, m) = shift_month(d.year(), d.month(), delta);
    let mut day = d.day();
    loop {
        if let Some(nd) = NaiveDate::from_ymd_opt(y, m, day) {
            return Some(nd);
        }
        if day <= 28 {
            return None;
        }
        day -= 1;
    }
}

/// Year for a month (and day) written without one: this year's unless that lies well in the
/// future, when the previous year's is meant ("in December", asked in March).
fn infer_year(month: u32, day: u32, ctx: &Ctx) -> i32 {
    let year = ctx.today.year();
    match NaiveDate::from_ymd_opt(year, month, day.max(1)) {
        Some(d) if d > ctx.today + Duration::days(60) => year - 1,
        _ => year,
    }
}

// ---------------------------------------------------------------------------------------------
// Quantities and units

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Qty {
    N(u32),
    /// "a few", "several", 几: a vague handful.
    Few,
    /// 半 ("half a month").
    Half,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
}

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

fn zh_unit(s: &str) -> Option<Unit> {
    Some(match s {
        "分钟" => Unit::Minute,
        "小时" | "钟头" => Unit::Hour,
        "天" | "日" => Unit::Day,
        "周" | "星期" | "礼拜" => Unit::Week,
        "月" => Unit::Month,
        "季度" => Unit::Quarter,
        "年" => Unit::Year,
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

/// Chinese numerals up to the hundreds ("三", "十五", "二十", "两"), digits, 几 and 半.
fn zh_qty(s: &str) -> Option<Qty> {
    let s = s.trim();
    if let Ok(n) = s.parse::<u32>() {
        return Some(Qty::N(n));
    }
    match s {
        "几" | "好几" | "数" | "些" => return Some(Qty::Few),
        "半" => return Some(Qty::Half),
        _ => {}
    }
    zh_number(s).map(Qty::N)
}

fn zh_digit(c: char) -> Option<u32> {
    Some(match c {
        '零' | '〇' => 0,
        '一' => 1,
        '二' | '两' => 2,
        '三' => 3,
        '四' => 4,
        '五' => 5,
        '六' => 6,
        '七' => 7,
        '八' => 8,
        '九' => 9,
        _ => return None,
    })
}

fn zh_number(s: &str) -> Option<u32> {
    if s.is_empty() {
        return None;
    }
    if let Ok(n) = s.parse::<u32>() {
        return Some(n);
    }
    // Years are read digit by digit: 二〇二六.
    if s.chars().count() == 4 && s.chars().all(|c| zh_digit(c).is_some()) {
        return s
            .chars()
            .try_fold(0u32, |acc, c| Some(acc * 10 + zh_digit(c)?));
    }
    let (mut total, mut current) = (0u32, 0u32);
    for c in s.chars() {
        match c {
            '十' => {
                total += current.max(1) * 10;
                current = 0;
            }
            '百' => {
                total += current.max(1) * 100;
                current = 0;
            }
            _ => current = zh_digit(c)?,
        }
    }
    Some(total + current)
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

fn weekday_from_zh(c: char) -> Option<Weekday> {
    Some(match c {
        '一' => Weekday::Mon,
        '二' => Weekday::Tue,
        '三' => Weekday::Wed,
        '四' => Weekday::Thu,
        '五' => Weekday::Fri,
        '六' => Weekday::Sat,
        '日' | '天' => Weekday::Sun,
        _ => return None,
    })
}

/// The most recent `wd` strictly before today (one to seven days back).
fn previous_weekday(wd: Weekday, ctx: &Ctx) -> NaiveDate {
    let today = ctx.today.weekday().num_days_from_monday() as i64;
    let target = wd.num_days_from_monday() as i64;
    let mut back = (today - target).rem_euclid(7);
    if back == 0 {
        back = 7;
    }
    ctx.today - Duration::days(back)
}

/// The next `wd` strictly after today.
fn coming_weekday(wd: Weekday, ctx: &Ctx) -> NaiveDate {
    let today = ctx.today.weekday().num_days_from_monday() as i64;
    let target = wd.num_days_from_monday() as i64;
    let mut ahead = (target - today).rem_euclid(7);
    if ahead == 0 {
        ahead = 7;
    }
    ctx.today + Duration::days(ahead)
}

fn weekday_in_week(wd: Weekday, week_offset: i64, ctx: &Ctx) -> NaiveDate {
    week_start(ctx.today)
        + Duration::weeks(week_offset)
        + Duration::days(i64::from(wd.num_days_from_monday()))
}

/// The window `n` units back from today (calendar unit for days and longer).
fn ago(qty: Qty, unit: Unit, ctx: &Ctx) -> Option<Span> {
    let n = match qty {
        Qty::N(n) => i64::from(n),
        Qty::Half => {
            return match unit {
                Unit::Hour => {
                    let t = ctx.now - Duration::minutes(30);
                    Span::new(t - Duration::minutes(15), t + Duration::minutes(15))
                }
                Unit::Day => Span::new(ctx.now - Duration::hours(16), ctx.now - Duration::hours(8)),
                Unit::Month => {
                    let d = ctx.today - Duration::days(15);
                    days_span(d - Duration::days(3), d + Duration::days(3))
                }
                Unit::Year => {
                    let (y, m) = shift_month(ctx.today.year(), ctx.today.month(), -6);
                    month_span(y, m)
                }
                _ => None,
            };
        }
        Qty::Few => {
            // A handful: two up to about five or six units back.
            return match unit {
                Unit::Minute => until_now(ctx.now - Duration::minutes(30), ctx),
                Unit::Hour => Span::new(ctx.now - Duration::hours(6), ctx.now - Duration::hours(1)),
                Unit::Day => {
                    days_span(ctx.today - Duration::days(6), ctx.today - Duration::days(2))
                }
                Unit::Week => {
                    let ws = week_start(ctx.today);
                    Span::new(
                        midnight(ws - Duration::weeks(5)),
                        midnight(ws - Duration::weeks(1)),
                    )
                }
                Unit::Month => {
                    let (y, m) = (ctx.today.year(), ctx.today.month());
                    months_span(shift_month(y, m, -5), shift_month(y, m, -2))
                }
                Unit::Quarter => None,
                Unit::Year => {
                    let y = ctx.today.year();
                    Span::new(year_span(y - 5)?.start, year_span(y - 2)?.end)
                }
            };
        }
    };
    match unit {
        Unit::Minute => {
            let t = ctx.now - Duration::minutes(n);
            let slack = Duration::minutes((n / 2).max(2));
            Span::new(t - slack, (t + slack).min(ctx.now + Duration::seconds(1)))
        }
        Unit::Hour => {
            let t = ctx.now - Duration::hours(n);
            Span::new(
                t - Duration::hours(1),
                (t + Duration::hours(1)).min(ctx.now + Duration::seconds(1)),
            )
        }
        Unit::Day => day_span(ctx.today - Duration::days(n)),
        Unit::Week => week_span(week_start(ctx.today) - Duration::weeks(n)),
        Unit::Month => {
            let (y, m) = shift_month(ctx.today.year(), ctx.today.month(), -(n as i32));
            month_span(y, m)
        }
        Unit::Quarter => {
            let q = (ctx.today.month() as i32 - 1) / 3;
            let index = ctx.today.year() * 4 + q - n as i32;
            quarter_span(index.div_euclid(4), index.rem_euclid(4) as u32 + 1)
        }
        Unit::Year => year_span(ctx.today.year() - n as i32),
    }
}

/// The window `n` units ahead of today.
fn ahead(qty: Qty, unit: Unit, ctx: &Ctx) -> Option<Span> {
    let n = match qty {
        Qty::N(n) => i64::from(n),
        Qty::Few => 3,
        Qty::Half => return None,
    };
    match unit {
        Unit::Minute => {
            let t = ctx.now + Duration::minutes(n);
            let slack = Duration::minutes((n / 2).max(2));
            Span::new(t - slack, t + slack)
        }
        Unit::Hour => {
            let t = ctx.now + Duration::hours(n);
            Span::new(t - Duration::hours(1), t + Duration::hours(1))
        }
        Unit::Day => day_span(ctx.today + Duration::days(n)),
        Unit::Week => week_span(week_start(ctx.today + Duration::weeks(n))),
        Unit::Month => {
            let (y, m) = shift_month(ctx.today.year(), ctx.today.month(), n as i32);
            month_span(y, m)
        }
        Unit::Quarter => {
            let q = (ctx.today.month() as i32 - 1) / 3;
            let index = ctx.today.year() * 4 + q + n as i32;
            quarter_span(index.div_euclid(4), index.rem_euclid(4) as u32 + 1)
        }
        Unit::Year => year_span(ctx.today.year() + n as i32),
    }
}

/// The last `n` units up to now ("past three days", "最近两周").
fn rolling(qty: Qty, unit: Unit, ctx: &Ctx) -> Option<Span> {
    let n = match qty {
        Qty::N(n) => i64::from(n),
        Qty::Few => 3,
        Qty::Half => return None,
    };
    let start = match unit {
        Unit::Minute => ctx.now - Duration::minutes(n),
        Unit::Hour => ctx.now - Duration::hours(n),
        Unit::Day => midnight(ctx.today - Duration::days(n)),
        Unit::Week => midnight(ctx.today - Duration::weeks(n)),
        Unit::Month => midnight(add_months_clamped(ctx.today, -(n as i32))?),
        Unit::Quarter => midnight(add_months_clamped(ctx.today, -3 * n as i32)?),
        Unit::Year => midnight(add_months_clamped(ctx.today, -12 * n as i32)?),
    };
    until_now(start, ctx)
}

/// A named period relative to the current one: offset -1 is "last", 0 "this", 1 "next".
fn relative_period(unit: Unit, offset: i64, ctx: &Ctx) -> Option<Span> {
    match unit {
        Unit::Day => day_span(ctx.today + Duration::days(offset)),
        Unit::Week => week_span(week_start(ctx.today) + Duration::weeks(offset)),
        Unit::Month => {
            let (y, m) = shift_month(ctx.today.year(), ctx.today.month(), offset as i32);
            month_span(y, m)
        }
        Unit::Quarter => {
            let q = (ctx.today.month() as i32 - 1) / 3;
            let index = ctx.today.year() * 4 + q + offset as i32;
            quarter_span(index.div_euclid(4), index.rem_euclid(4) as u32 + 1)
        }
        Unit::Year => year_span(ctx.today.year() + offset as i32),
        Unit::Hour | Unit::Minute => None,
    }
}

/// The weekend before the current week (offset -1), of it (0) or after it (1).
fn relative_weekend(offset: i64, ctx: &Ctx) -> Option<Span> {
    weekend_span(week_start(ctx.today) + Duration::weeks(offset))
}

/// "Over the weekend": the weekend in progress, or else the one just past.
fn recent_weekend(ctx: &Ctx) -> Option<Span> {
    if matches!(ctx.today.weekday(), Weekday::Sat | Weekday::Sun) {
        let saturday = week_start(ctx.today) + Duration::days(5);
        until_now(midnight(saturday), ctx)
    } else {
        relative_weekend(-1, ctx)
    }
}

// ---------------------------------------------------------------------------------------------
// Rules

struct Hit<'a> {
    caps: Captures<'a>,
    /// The folded text the rule ran on.
    text: &'a str,
    folded: &'a Folded<'a>,
    original: &'a str,
    ctx: &'a Ctx,
}

impl Hit<'_> {
    fn get(&self, i: usize) -> Option<&str> {
        self.caps.get(i).map(|m| m.as_str())
    }

    fn has(&self, i: usize) -> bool {
        self.caps.get(i).is_some()
    }

    /// The character just before the whole match, in the folded text.
    fn char_before(&self) -> Option<char> {
        let start = self.caps.get(0)?.start();
        self.text[..start].chars().next_back()
    }

    fn char_after(&self) -> Option<char> {
        let end = self.caps.get(0)?.end();
        self.text[end..].chars().next()
    }

    /// Whether group `i` starts with an upper-case letter in the original text.
    fn capitalised(&self, i: usize) -> bool {
        self.caps.get(i).is_some_and(|m| {
            let at = self.folded.orig(m.start());
            self.original[at..]
                .chars()
                .next()
                .is_some_and(|c| c.is_uppercase())
        })
    }
}

type Resolver = fn(&Hit) -> Option<Span>;

struct Rule {
    re: Regex,
    /// English rules need word boundaries around the match.
    english: bool,
    resolve: Resolver,
}

const EN_NUM: &str = r"\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|a\s+couple(?:\s+of)?|couple\s+of|a\s+few|few|several|some";
const EN_UNIT: &str =
    r"min(?:ute)?s?|hours?|hrs?|days?|weeks?|fortnights?|months?|quarters?|years?";
const EN_MONTH: &str = r"january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec";
const EN_WEEKDAY: &str = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday";
const ZH_NUM: &str = r"\d{1,3}|[零一二两三四五六七八九十百]{1,4}|好几|几|半|些";

fn rules() -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES.get_or_init(build_rules)
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

fn rule(pattern: &str, english: bool, resolve: Resolver) -> Rule {
    Rule {
        re: Regex::new(pattern).unwrap_or_else(|e| panic!("time pattern {pattern}: {e}")),
        english,
        resolve,
    }
}

fn build_rules() -> Vec<Rule> {
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
        // Chinese dates: 2026年3月4日, 3月4号, 三月, 2026年.
        rule(
            r"(?:(\d{4}|[〇零一二三四五六七八九]{4})\s*年\s*)?(\d{1,2}|十[一二]?|[一二三四五六七八九])\s*月\s*(?:份)?\s*(?:(\d{1,2}|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九])\s*[日号])?",
            false,
            |h| {
                // "3个月" never reaches here, but "第3月" or "每3月" are not dates.
                if matches!(h.char_before(), Some('第' | '每' | '个')) {
                    return None;
                }
                let month = zh_number(h.get(2)?)?;
                if !(1..=12).contains(&month) {
                    return None;
                }
                let day = match h.get(3) {
                    Some(d) => Some(zh_number(d)?),
                    None => None,
                };
                let year = match h.get(1) {
                    Some(y) => zh_number(y)? as i32,
                    None => infer_year(month, day.unwrap_or(1), h.ctx),
                };
                match day {
                    Some(d) => day_span(NaiveDate::from_ymd_opt(year, month, d)?),
                    None => month_span(year, month),
                }
            },
        ),
        rule(
            r"(\d{4}|[〇零一二三四五六七八九]{4})\s*年\s*(?:第\s*([一二三四1-4])\s*季度|(?:q|Q)([1-4]))?",
            false,
            |h| {
                let year = zh_number(h.get(1)?)? as i32;
                match h.get(2).or(h.get(3)) {
                    Some(q) => quarter_span(year, zh_number(q)?),
                    None => year_span(year),
                }
            },
        ),
        // 大前天 … 大后天, 昨晚, 今早.
        rule(
            r"大前天|前天|昨天|昨日|昨儿|今天|今日|今儿|明天|明日|大后天|后天|昨晚|昨夜|今晚|今夜|今早|今晨|明早|明晚",
            false,
            |h| {
                let m = h.get(0)?;
                let ctx = h.ctx;
                if matches!(m, "前天" | "后天")
                    && (matches!(
                        h.char_before(),
                        Some(
                            '之' | '以'
                                | '提'
                                | '向'
                                | '目'
                                | '当'
                                | '然'
                                | '最'
                                | '先'
                                | '落'
                                | '午'
                                | '往'
                        )
                    ) || h.char_after() == Some('天'))
                {
                    return None;
                }
                let (offset, part) = match m {
                    "大前天" => (-3, None),
                    "前天" => (-2, None),
                    "昨天" | "昨日" | "昨儿" => (-1, None),
                    "今天" | "今日" | "今儿" => (0, None),
                    "明天" | "明日" => (1, None),
                    "后天" => (2, None),
                    "大后天" => (3, None),
                    "昨晚" | "昨夜" => (-1, Some("night")),
                    "今晚" | "今夜" => (0, Some("night")),
                    "今早" | "今晨" => (0, Some("morning")),
                    "明早" => (1, Some("morning")),
                    "明晚" => (1, Some("night")),
                    _ => return None,
                };
                let day = day_span(ctx.today + Duration::days(offset))?;
                match part {
                    Some(p) => day_part(day, p),
                    None => Some(day),
                }
            },
        ),
        rule(r"(?:今天)?早些时候|刚才", false, |h| {
            let ctx = h.ctx;
            if h.get(0)? == "刚才" {
                until_now(ctx.now - Duration::hours(1), ctx)
            } else {
                until_now(midnight(ctx.today), ctx)
            }
        }),
        // 三天前, 两周前, 一个月前, 半年前; 90天后.
        rule(
            &format!(
                r"({ZH_NUM})\s*(个)?\s*(?:多\s*)?(分钟|小时|钟头|天|日|周|星期|礼拜|月|季度|年)\s*(前|以前|之前|后|以后|之后)"
            ),
            false,
            |h| {
                let unit_word = h.get(3)?;
                // "3月前" reads as "before March"; a count of months needs 个.
                if unit_word == "月" && !h.has(2) {
                    return None;
                }
                if matches!(h.char_before(), Some('第' | '每')) {
                    return None;
                }
                let unit = zh_unit(unit_word)?;
                let qty = zh_qty(h.get(1)?)?;
                if h.get(4)?.ends_with('前') {
                    ago(qty, unit, h.ctx)
                } else {
                    ahead(qty, unit, h.ctx)
                }
            },
        ),
        // 前几天, 前些日子, 这几天, 最近三天, 过去两周.
        rule(
            &format!(
                r"前(?:几|两|些)(?:天|日子)|(过去|最近|近|这)\s*({ZH_NUM})\s*(个)?\s*(分钟|小时|天|日|周|星期|礼拜|月|年)"
            ),
            false,
            |h| {
                let ctx = h.ctx;
                if !h.has(1) {
                    return ago(Qty::Few, Unit::Day, ctx);
                }
                let unit_word = h.get(4)?;
                if unit_word == "月" && !h.has(3) {
                    return None;
                }
                rolling(zh_qty(h.get(2)?)?, zh_unit(unit_word)?, ctx)
            },
        ),
        // 上周二, 这周五, 星期天, 上周末.
        rule(
            r"(上上个|上上|上个|上|这个|这|本|下下个|下下|下个|下)?(?:周|星期|礼拜)([一二三四五六日天末])",
            false,
            |h| {
                let ctx = h.ctx;
                let prefix = h.get(1);
                let day = h.get(2)?.chars().next()?;
                if prefix.is_none() {
                    // "两周一个迭代", "每周五": a count or a habit, not a date.
                    let numeric = h.char_before().is_some_and(|c| {
                        c.is_ascii_digit() || zh_digit(c).is_some() || "十几每隔个".contains(c)
                    });
                    if numeric || day == '末' {
                        return None;
                    }
                }
                if prefix == Some("下") && h.char_before() == Some('一') {
                    return None;
                }
                let offset = match prefix {
                    Some("上上个" | "上上") => -2,
                    Some("上个" | "上") => -1,
                    Some("这个" | "这" | "本") => 0,
                    Some("下个" | "下") => 1,
                    Some("下下个" | "下下") => 2,
                    _ => {
                        return day_span(previous_weekday(weekday_from_zh(day)?, ctx));
                    }
                };
                if day == '末' {
                    return relative_weekend(offset, ctx);
                }
                day_span(weekday_in_week(weekday_from_zh(day)?, offset, ctx))
            },
        ),
        // 上周, 本月, 下个季度, 去年, 前年.
        rule(
            r"(上上个|上上|上个|上|这个|这|本|下下个|下下|下个|下)\s*(周|星期|礼拜|月|季度)|(大前年|前年|去年|今年|明年|后年)",
            false,
            |h| {
                let ctx = h.ctx;
                if let Some(y) = h.get(3) {
                    let offset = match y {
                        "大前年" => -3,
                        "前年" => -2,
                        "去年" => -1,
                        "今年" => 0,
                        "明年" => 1,
                        _ => 2,
                    };
                    if y == "后年" && matches!(h.char_before(), Some('以' | '之' | '然' | '最'))
                    {
                        return None;
                    }
                    return year_span(ctx.today.year() + offset);
                }
                let prefix = h.get(1)?;
                let unit_word = h.get(2)?;
                // "一下周报" is "a look at the weekly report"; "周报"/"月报" are reports.
                if prefix.starts_with('下') && h.char_before() == Some('一') {
                    return None;
                }
                if matches!(h.char_after(), Some('报' | '刊' | '薪')) {
                    return None;
                }
                // "这月" is rare and "这周" common; both fine. "上月" must not be "上月球".
                if unit_word == "月" && h.char_after() == Some('球') {
                    return None;
                }
                let offset = match prefix {
                    "上上个" | "上上" => -2,
                    "上个" | "上" => -1,
                    "这个" | "这" | "本" => 0,
                    "下个" | "下" => 1,
                    _ => 2,
                };
                let unit = match unit_word {
                    "月" => Unit::Month,
                    "季度" => Unit::Quarter,
                    _ => Unit::Week,
                };
                relative_period(unit, offset, ctx)
            },
        ),
    ]
}

/// Narrows a day to a part of it.
fn day_part(day: Span, part: &str) -> Option<Span> {
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
fn refine(text: &str, end: usize, span: Span) -> (usize, Span) {
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

struct Found {
    start: usize,
    end: usize,
    span: Span,
}

fn is_ascii_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

fn find_spans(folded: &Folded, ctx: &Ctx) -> Vec<Found> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    /// Wednesday.
    fn as_of() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 18, 10, 0, 0).unwrap()
    }

    fn at(y: i32, m: u32, d: u32, h: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, m, d, h, 0, 0).unwrap()
    }

    fn window(text: &str) -> (DateTime<Utc>, DateTime<Utc>) {
        let w = parse_time_window(text, as_of()).unwrap_or_else(|| panic!("no window in {text:?}"));
        (w.start, w.end)
    }

    fn days(text: &str, from: (u32, u32), to_exclusive: (u32, u32)) {
        assert_eq!(
            window(text),
            (
                at(2026, from.0, from.1, 0),
                at(2026, to_exclusive.0, to_exclusive.1, 0)
            ),
            "{text}"
        );
    }

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

    #[test]
    fn chinese_relative() {
        days("用户昨天让我分析了什么？", (3, 17), (3, 18));
        days("今天", (3, 18), (3, 19));
        days("前天", (3, 16), (3, 17));
        days("大前天", (3, 15), (3, 16));
        days("用户三天前让我分析了什么？", (3, 15), (3, 16));
        days("两周前", (3, 2), (3, 9));
        days("一个月前", (2, 1), (3, 1));
        days("用户上周让我分析了什么？", (3, 9), (3, 16));
        days("这周", (3, 16), (3, 23));
        days("本周", (3, 16), (3, 23));
        days("下周", (3, 23), (3, 30));
        days("上个月", (2, 1), (3, 1));
        days("这个月", (3, 1), (4, 1));
        days("上周二", (3, 10), (3, 11));
        days("周五", (3, 13), (3, 14));
        days("上周末", (3, 14), (3, 16));
        assert_eq!(window("去年"), (at(2025, 1, 1, 0), at(2026, 1, 1, 0)));
        days("前几天", (3, 12), (3, 17));
    }

    #[test]
    fn chinese_parts_and_dates() {
        assert_eq!(
            window("昨天下午"),
            (at(2026, 3, 17, 12), at(2026, 3, 17, 18))
        );
        assert_eq!(
            window("上周二下午三点"),
            (at(2026, 3, 10, 15), at(2026, 3, 10, 16))
        );
        assert_eq!(
            window("今天上午"),
            (at(2026, 3, 18, 5), at(2026, 3, 18, 12))
        );
        assert_eq!(window("昨晚"), (at(2026, 3, 17, 18), at(2026, 3, 18, 5)));
        days("3月4日", (3, 4), (3, 5));
        days("2026年3月4日", (3, 4), (3, 5));
        days("三月四号", (3, 4), (3, 5));
        days("三月", (3, 1), (4, 1));
        assert_eq!(window("2025年"), (at(2025, 1, 1, 0), at(2026, 1, 1, 0)));
        days("90 天后提醒我", (6, 16), (6, 17));
        assert_eq!(
            window("最近三天"),
            (at(2026, 3, 15, 0), as_of() + Duration::seconds(1))
        );
    }

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
