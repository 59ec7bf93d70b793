use std::path::PathBuf;

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// A vector's length differs from the index dimension.
    #[error("vector has {got} dimensions but the index expects {expected}")]
    DimensionMismatch { expected: usize, got: usize },

    /// A vector that cannot be normalised (zero, NaN or infinite components).
    #[error("invalid vector: {0}")]
    InvalidVector(&'static str),

    /// The dump was built with another embedding model or dimension; the caller
    /// must re-embed and rebuild instead of loading it.
    #[error(
        "index dump was built with model {found_model:?} (dim {found_dim}) but \
         model {expected_model:?} (dim {expected_dim}) is configured; re-embed and rebuild"
    )]
    ModelMismatch {
        expected_model: String,
        expected_dim: usize,
        found_model: String,
        found_dim: usize,
    },

    /// No completed dump exists in the directory.
    #[error("no index dump found in {0}")]
    NotFound(PathBuf),

    /// The dump was written by an incompatible version of this crate.
    #[error("index dump format {found} is not supported (this build reads format {expected})")]
    UnsupportedFormat { found: u32, expected: u32 },

    /// The dump exists but its content is damaged or inconsistent.
    #[error("index dump is corrupt: {0}")]
    Corrupt(String),

    /// A filesystem operation failed.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl IndexError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        IndexError::Io {
            path: path.into(),
            source,
        }
    }
}
