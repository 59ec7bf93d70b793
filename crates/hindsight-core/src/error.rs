use thiserror::Error;

/// Why a request was refused before anything was stored. Messages are meant for the person who sent it.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ValidationError {
    #[error("content must not be empty")]
    EmptyContent,
    #[error("content is {len} bytes; the limit is {max} bytes")]
    ContentTooLong { len: usize, max: usize },
    #[error("invalid bank name {name:?}: {reason}")]
    InvalidBankName { name: String, reason: &'static str },
    #[error("invalid memory id {0:?}: expected a 26-character ULID")]
    InvalidId(String),
    #[error(
        "invalid timestamp {value:?}: {reason} (expected RFC 3339, e.g. 2026-03-04T10:00:00Z)"
    )]
    InvalidTimestamp { value: String, reason: String },
    #[error("unknown {field} {value:?}; expected one of: {expected}")]
    UnknownEnumValue {
        field: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error("{field} must be between {min} and {max}, got {value}")]
    OutOfRange {
        field: &'static str,
        value: String,
        min: String,
        max: String,
    },
    #[error("{field} has {len} entries; the limit is {max}")]
    TooMany {
        field: &'static str,
        len: usize,
        max: usize,
    },
    #[error("{field} entry is {len} bytes; the limit is {max} bytes")]
    FieldTooLong {
        field: &'static str,
        len: usize,
        max: usize,
    },
    #[error("{0}")]
    Invalid(String),
}
