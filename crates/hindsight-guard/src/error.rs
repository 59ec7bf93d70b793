use thiserror::Error;

/// A guard configuration that cannot be compiled. Each variant names the rule at fault, so a bad
/// per-bank override is rejected with a message its author can act on.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum GuardError {
    #[error("invalid {category} rule {rule:?}: pattern {pattern:?} does not compile: {reason}")]
    InvalidPattern {
        category: String,
        rule: String,
        pattern: String,
        reason: String,
    },
    #[error("{category} rule {rule:?} refers to unknown fragment {{{{{fragment}}}}}")]
    UnknownFragment {
        category: String,
        rule: String,
        fragment: String,
    },
    #[error("{category} rule {rule:?}: fragments nest too deeply (a fragment probably refers to itself)")]
    FragmentCycle { category: String, rule: String },
    #[error("{category} rule has an empty name (pattern {pattern:?})")]
    UnnamedRule { category: String, pattern: String },
    #[error("sensitive topic {topic:?} has an empty term")]
    EmptyTopicTerm { topic: String },
}

/// Why a record's signature was not accepted. Callers withhold the record in every case; the
/// variants are distinct so that an unknown key (a configuration problem after rotation) is not
/// reported as tampering.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum IntegrityError {
    #[error("record is not signed")]
    Unsigned,
    #[error("signature uses unknown key id {key_id:?}")]
    UnknownKey { key_id: String },
    #[error("signature made with key {key_id:?} does not match the record")]
    Mismatch { key_id: String },
    #[error("signature made with key {key_id:?} is not a hex MAC")]
    MalformedMac { key_id: String },
    #[error("key {key_id:?} has an empty secret")]
    EmptySecret { key_id: String },
    #[error("key id must not be empty")]
    EmptyKeyId,
    #[error("key {key_id:?} is the active signing key and cannot be removed")]
    ActiveKey { key_id: String },
}
