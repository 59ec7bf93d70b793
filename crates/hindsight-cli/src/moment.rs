//! Points in time as people type them on a command line.

use anyhow::Context;
use hindsight_core::time::MILLIS_PER_DAY;
use hindsight_core::Timestamp;

/// A point in time given on the command line, and the end of the day it names where it names
/// one: RFC 3339, `today`, `yesterday`, or a span back from now (`30s`, `10m`, `24h`, `7d`,
/// optionally followed by `ago`).
pub fn moment(text: &str, now: Timestamp) -> anyhow::Result<(Timestamp, Timestamp)> {
    let text = text.trim();
    let midnight = Timestamp(now.millis() - now.millis().rem_euclid(MILLIS_PER_DAY));
    match text {
        "now" => return Ok((now, now)),
        "today" => return Ok((midnight, Timestamp(midnight.millis() + MILLIS_PER_DAY))),
        "yesterday" => return Ok((Timestamp(midnight.millis() - MILLIS_PER_DAY), midnight)),
        _ => {}
    }
    let span = text.strip_suffix("ago").map_or(text, str::trim_end);
    if let Some((number, unit)) = span
        .find(|c: char| !c.is_ascii_digit())
        .map(|i| span.split_at(i))
    {
        let unit_millis = match unit.trim() {
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => MILLIS_PER_DAY,
            _ => 0,
        };
        if let (Ok(n), true) = (number.parse::<i64>(), unit_millis > 0) {
            let at = Timestamp(now.millis() - n * unit_millis);
            return Ok((at, now));
        }
    }
    let at = Timestamp::parse_rfc3339(text).with_context(|| {
        format!(
            "{text:?} is not a time: use RFC 3339, now, today, yesterday, or a span back from now like 90s, 24h or 7d"
        )
    })?;
    Ok((at, at))
}

/// The moment a time argument names: its start (`yesterday` is yesterday's midnight).
pub fn point(text: &str) -> anyhow::Result<Timestamp> {
    Ok(moment(text, Timestamp::now())?.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_read_days_spans_and_times() {
        let t = |s: &str| Timestamp::parse_rfc3339(s).unwrap();
        let now = t("2026-11-29T15:30:00Z");
        assert_eq!(
            moment("yesterday", now).unwrap(),
            (t("2026-11-28T00:00:00Z"), t("2026-11-29T00:00:00Z"))
        );
        assert_eq!(moment("24h", now).unwrap().0, t("2026-11-28T15:30:00Z"));
        assert_eq!(moment("2d ago", now).unwrap().0, t("2026-11-27T15:30:00Z"));
        assert_eq!(moment("90s", now).unwrap().0, t("2026-11-29T15:28:30Z"));
        assert_eq!(moment("now", now).unwrap().0, now);
        assert_eq!(
            moment("2026-01-02T03:04:05Z", now).unwrap().0,
            t("2026-01-02T03:04:05Z")
        );
        assert!(moment("last tuesday", now).is_err());
        assert!(moment("3 fortnights", now).is_err());
    }
}
