use std::path::PathBuf;

/// Everything that can go wrong while fetching, loading or running an embedder.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// A file could not be read or written.
    #[error("{action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Model files exist but are not in the expected format.
    #[error("invalid model file {}: {reason}", path.display())]
    InvalidModel { path: PathBuf, reason: String },
    /// Downloading the model failed.
    #[error("download of {url} failed: {reason}")]
    Download { url: String, reason: String },
    /// A downloaded or local file does not have the pinned checksum.
    #[error(
        "sha256 mismatch for {what}: expected {expected}, got {actual} \
         (the file is corrupt or not the pinned release)"
    )]
    ChecksumMismatch {
        what: String,
        expected: String,
        actual: String,
    },
    /// The embedding server answered with an error status.
    #[error("embedding server returned HTTP {status}: {message}")]
    Api { status: u16, message: String },
    /// The embedding server could not be reached or answered nonsense.
    #[error("embedding request to {url} failed: {reason}")]
    Transport { url: String, reason: String },
    /// The embedder was configured in a way that cannot work.
    #[error("embedder configuration: {0}")]
    Config(String),
    /// The embedder produced vectors of an unexpected shape.
    #[error("embedder returned {got} for {expected}")]
    Shape { expected: String, got: String },
}

impl EmbedError {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        EmbedError::Io {
            action,
            path: path.into(),
            source,
        }
    }

    pub(crate) fn invalid(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        EmbedError::InvalidModel {
            path: path.into(),
            reason: reason.into(),
        }
    }
}
