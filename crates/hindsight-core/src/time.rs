use std::fmt;

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};
use serde::{Deserialize, Serialize};

use crate::error::ValidationError;

/// Unix time in milliseconds. Integer time keeps apply deterministic across replicas.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
pub struct Timestamp(pub i64);

pub const MILLIS_PER_DAY: i64 = 86_400_000;

impl Timestamp {
    pub fn now() -> Self {
        Timestamp(Utc::now().timestamp_millis())
    }

    pub fn millis(self) -> i64 {
        self.0
    }

    pub fn to_datetime(self) -> DateTime<Utc> {
        Utc.timestamp_millis_opt(self.0)
            .single()
            .unwrap_or(DateTime::<Utc>::MIN_UTC)
    }

    pub fn from_datetime(dt: DateTime<Utc>) -> Self {
        Timestamp(dt.timestamp_millis())
    }

    /// Parses RFC 3339 (`2026-03-04T10:00:00Z`, offsets allowed).
    pub fn parse_rfc3339(s: &str) -> Result<Self, ValidationError> {
        DateTime::parse_from_rfc3339(s.trim())
            .map(|dt| Timestamp(dt.with_timezone(&Utc).timestamp_millis()))
            .map_err(|e| ValidationError::InvalidTimestamp {
                value: s.to_string(),
                reason: e.to_string(),
            })
    }

    pub fn to_rfc3339(self) -> String {
        self.to_datetime()
            .to_rfc3339_opts(SecondsFormat::Millis, true)
    }

    /// `secs` later, saturating at the end of representable time: a duration too large for
    /// `i64` must never wrap round into the past.
    pub fn plus_secs(self, secs: u64) -> Self {
        let millis = i64::try_from(secs).unwrap_or(i64::MAX).saturating_mul(1000);
        Timestamp(self.0.saturating_add(millis))
    }

    pub fn days_since(self, earlier: Timestamp) -> f64 {
        (self.0 - earlier.0) as f64 / MILLIS_PER_DAY as f64
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Timestamp({})", self.to_rfc3339())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_duration_saturates_instead_of_wrapping_into_the_past() {
        let t = Timestamp::parse_rfc3339("2026-03-04T10:00:00Z").unwrap();
        for secs in [1u64 << 63, u64::MAX, 9_300_000_000_000_000] {
            assert!(t.plus_secs(secs) > t, "{secs}");
        }
        assert_eq!(t.plus_secs(60).millis(), t.millis() + 60_000);
    }

    #[test]
    fn parses_and_formats_rfc3339() {
        let t = Timestamp::parse_rfc3339("2026-03-04T10:00:00Z").unwrap();
        assert_eq!(t.to_rfc3339(), "2026-03-04T10:00:00.000Z");
        let with_offset = Timestamp::parse_rfc3339("2026-03-04T12:00:00+02:00").unwrap();
        assert_eq!(with_offset, t);
        assert!(Timestamp::parse_rfc3339("yesterday").is_err());
        assert!(Timestamp::parse_rfc3339("2026-13-04T10:00:00Z").is_err());
    }
}
