use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::ValidationError;

/// A 128-bit, time-ordered memory id, shown as a ULID string.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct MemoryId(pub u128);

impl MemoryId {
    /// A new id whose high bits are `millis`, so ids sort by creation time.
    pub fn new(millis: i64, random: u128) -> Self {
        let ts = (millis.max(0) as u128) & ((1u128 << 48) - 1);
        MemoryId((ts << 80) | (random & ((1u128 << 80) - 1)))
    }

    pub fn to_bytes(self) -> [u8; 16] {
        self.0.to_be_bytes()
    }

    pub fn from_bytes(bytes: [u8; 16]) -> Self {
        MemoryId(u128::from_be_bytes(bytes))
    }
}

impl fmt::Display for MemoryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", ulid::Ulid(self.0))
    }
}

impl fmt::Debug for MemoryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MemoryId({self})")
    }
}

impl FromStr for MemoryId {
    type Err = ValidationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ulid::Ulid::from_string(s.trim())
            .map(|u| MemoryId(u.0))
            .map_err(|_| ValidationError::InvalidId(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_sort_by_time() {
        let a = MemoryId::new(1_000, 99);
        let b = MemoryId::new(2_000, 1);
        assert!(a < b);
        let parsed: MemoryId = a.to_string().parse().unwrap();
        assert_eq!(parsed, a);
        assert!("not-an-id".parse::<MemoryId>().is_err());
    }
}
