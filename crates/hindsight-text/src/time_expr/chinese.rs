//! Chinese time expressions: dates, years and quarters, days relative to today, counts of units
//! before or after now, recent days, weekdays and named periods.

use chrono::{Datelike, Duration, NaiveDate, Weekday};

use super::calendar::{
    day_span, infer_year, midnight, month_span, previous_weekday, quarter_span, until_now,
    weekday_in_week, year_span,
};
use super::relative::{ago, ahead, relative_period, relative_weekend, rolling, Qty, Unit};
use super::rule::{rule, Rule};
use super::time_of_day::day_part;

// Each numeral this pattern admits must be known to `zh_qty`, or its match resolves to nothing.
const ZH_NUM: &str = r"\d{1,3}|[零一二两三四五六七八九十百]{1,4}|好几|几|半|些";

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

pub(super) fn zh_number(s: &str) -> Option<u32> {
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

pub(super) fn rules() -> Vec<Rule> {
    vec![
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

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use crate::time_expr::test_support::{as_of, at, days, window};

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
}
