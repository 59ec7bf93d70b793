//! The error a reflector returns.

/// Why a reflection could not be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReflectError {
    /// The trace is unusable as given; nothing was attempted.
    #[error("invalid task trace: {0}")]
    Invalid(String),
    /// The reflector's backend (a model endpoint) could not be used.
    #[error("the reflector is unavailable: {0}")]
    Unavailable(String),
    /// The backend answered, but never with an answer that passed validation.
    #[error("the reflector gave no valid answer: {0}")]
    Malformed(String),
}
