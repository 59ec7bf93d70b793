//! Windows counted from the reference time: so many units ago, ahead or up to now, and the
//! period before, of or after the current one.

use chrono::{Datelike, Duration, Weekday};

use super::calendar::{
    add_months_clamped, day_span, days_span, midnight, month_span, months_span, quarter_span,
    shift_month, until_now, week_span, week_start, weekend_span, year_span, Ctx, Span,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Qty {
    N(u32),
    /// "a few", "several", 几: a vague handful.
    Few,
    /// 半 ("half a month").
    Half,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unit {
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
}

/// The window `n` units back from today (calendar unit for days and longer).
pub(super) fn ago(qty: Qty, unit: Unit, ctx: &Ctx) -> Option<Span> {
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
pub(super) fn ahead(qty: Qty, unit: Unit, ctx: &Ctx) -> Option<Span> {
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
pub(super) fn rolling(qty: Qty, unit: Unit, ctx: &Ctx) -> Option<Span> {
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
pub(super) fn relative_period(unit: Unit, offset: i64, ctx: &Ctx) -> Option<Span> {
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
pub(super) fn relative_weekend(offset: i64, ctx: &Ctx) -> Option<Span> {
    weekend_span(week_start(ctx.today) + Duration::weeks(offset))
}

/// "Over the weekend": the weekend in progress, or else the one just past.
pub(super) fn recent_weekend(ctx: &Ctx) -> Option<Span> {
    if matches!(ctx.today.weekday(), Weekday::Sat | Weekday::Sun) {
        let saturday = week_start(ctx.today) + Duration::days(5);
        until_now(midnight(saturday), ctx)
    } else {
        relative_weekend(-1, ctx)
    }
}
