//! A fixed reference time and shorthands for the windows the tests expect.

use chrono::{DateTime, TimeZone, Utc};

use super::parse_time_window;

/// Wednesday.
pub(super) fn as_of() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 18, 10, 0, 0).unwrap()
}

pub(super) fn at(y: i32, m: u32, d: u32, h: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, m, d, h, 0, 0).unwrap()
}

pub(super) fn window(text: &str) -> (DateTime<Utc>, DateTime<Utc>) {
    let w = parse_time_window(text, as_of()).unwrap_or_else(|| panic!("no window in {text:?}"));
    (w.start, w.end)
}

pub(super) fn days(text: &str, from: (u32, u32), to_exclusive: (u32, u32)) {
    assert_eq!(
        window(text),
        (
            at(2026, from.0, from.1, 0),
            at(2026, to_exclusive.0, to_exclusive.1, 0)
        ),
        "{text}"
    );
}
