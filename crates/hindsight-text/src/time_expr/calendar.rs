//! Calendar windows in local time: days, weeks (from Monday), months, quarters and years.

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, Weekday};

/// Reference point for resolution, in local (offset-applied) time.
pub(super) struct Ctx {
    pub(super) now: NaiveDateTime,
    pub(super) today: NaiveDate,
}

impl Ctx {
    pub(super) fn new(now: NaiveDateTime) -> Self {
        Ctx {
            now,
            today: now.date(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Span {
    pub(super) start: NaiveDateTime,
    pub(super) end: NaiveDateTime,
    /// Exactly one calendar day, so a part of day or a clock time may narrow it.
    pub(super) day: bool,
}

impl Span {
    pub(super) fn new(start: NaiveDateTime, end: NaiveDateTime) -> Option<Span> {
        (start < end).then_some(Span {
            start,
            end,
            day: false,
        })
    }
}

pub(super) fn midnight(d: NaiveDate) -> NaiveDateTime {
    d.and_time(NaiveTime::MIN)
}

pub(super) fn day_span(d: NaiveDate) -> Option<Span> {
    let next = d.succ_opt()?;
    Some(Span {
        start: midnight(d),
        end: midnight(next),
        day: true,
    })
}

pub(super) fn days_span(first: NaiveDate, last_inclusive: NaiveDate) -> Option<Span> {
    Span::new(midnight(first), midnight(last_inclusive.succ_opt()?))
}

pub(super) fn week_start(d: NaiveDate) -> NaiveDate {
    d - Duration::days(i64::from(d.weekday().num_days_from_monday()))
}

pub(super) fn week_span(monday: NaiveDate) -> Option<Span> {
    days_span(monday, monday + Duration::days(6))
}

/// (year, month) moved by `delta` months.
pub(super) fn shift_month(year: i32, month: u32, delta: i32) -> (i32, u32) {
    let index = year * 12 + month as i32 - 1 + delta;
    (index.div_euclid(12), index.rem_euclid(12) as u32 + 1)
}

pub(super) fn month_span(year: i32, month: u32) -> Option<Span> {
    let first = NaiveDate::from_ymd_opt(year, month, 1)?;
    let (ny, nm) = shift_month(year, month, 1);
    Span::new(
        midnight(first),
        midnight(NaiveDate::from_ymd_opt(ny, nm, 1)?),
    )
}

pub(super) fn months_span(first: (i32, u32), last_inclusive: (i32, u32)) -> Option<Span> {
    let start = month_span(first.0, first.1)?.start;
    let end = month_span(last_inclusive.0, last_inclusive.1)?.end;
    Span::new(start, end)
}

pub(super) fn year_span(year: i32) -> Option<Span> {
    Span::new(
        midnight(NaiveDate::from_ymd_opt(year, 1, 1)?),
        midnight(NaiveDate::from_ymd_opt(year + 1, 1, 1)?),
    )
}

pub(super) fn quarter_span(year: i32, quarter: u32) -> Option<Span> {
    if !(1..=4).contains(&quarter) {
        return None;
    }
    let first = (quarter - 1) * 3 + 1;
    months_span((year, first), (year, first + 2))
}

/// Saturday 00:00 to Monday 00:00 of the week starting on `monday`.
pub(super) fn weekend_span(monday: NaiveDate) -> Option<Span> {
    days_span(monday + Duration::days(5), monday + Duration::days(6))
}

pub(super) fn until_now(start: NaiveDateTime, ctx: &Ctx) -> Option<Span> {
    Span::new(start, ctx.now + Duration::seconds(1))
}

/// The same calendar day `delta` months away, clamped to the month's length.
pub(super) fn add_months_clamped(d: NaiveDate, delta: i32) -> Option<NaiveDate> {
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
pub(super) fn infer_year(month: u32, day: u32, ctx: &Ctx) -> i32 {
    let year = ctx.today.year();
    match NaiveDate::from_ymd_opt(year, month, day.max(1)) {
        Some(d) if d > ctx.today + Duration::days(60) => year - 1,
        _ => year,
    }
}

/// The most recent `wd` strictly before today (one to seven days back).
pub(super) fn previous_weekday(wd: Weekday, ctx: &Ctx) -> NaiveDate {
    let today = ctx.today.weekday().num_days_from_monday() as i64;
    let target = wd.num_days_from_monday() as i64;
    let mut back = (today - target).rem_euclid(7);
    if back == 0 {
        back = 7;
    }
    ctx.today - Duration::days(back)
}

/// The next `wd` strictly after today.
pub(super) fn coming_weekday(wd: Weekday, ctx: &Ctx) -> NaiveDate {
    let today = ctx.today.weekday().num_days_from_monday() as i64;
    let target = wd.num_days_from_monday() as i64;
    let mut ahead = (target - today).rem_euclid(7);
    if ahead == 0 {
        ahead = 7;
    }
    ctx.today + Duration::days(ahead)
}

pub(super) fn weekday_in_week(wd: Weekday, week_offset: i64, ctx: &Ctx) -> NaiveDate {
    week_start(ctx.today)
        + Duration::weeks(week_offset)
        + Duration::days(i64::from(wd.num_days_from_monday()))
}
