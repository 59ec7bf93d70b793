use hindsight_core::{Memory, MemoryId, Provenance, SourceKind, Timestamp};

/// An active semantic memory with the given id in `bank`.
pub(crate) fn memory(id: u128, bank: &str, content: &str) -> Memory {
    Memory::new(
        MemoryId(id),
        bank.parse().unwrap(),
        content,
        Provenance::from_source(SourceKind::User),
        Timestamp(1_000_000),
    )
}

/// Runs `open` until sled lets go of the directory's lock. sled releases it when its last
/// background job drops the file, which can be a moment after every handle was dropped, so
/// reopening a directory at once in the same process may find it still locked.
pub(crate) fn once_unlocked<T>(
    mut open: impl FnMut() -> Result<T, crate::StoreError>,
) -> Result<T, crate::StoreError> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match open() {
            Err(e)
                if e.to_string().contains("could not acquire lock")
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            result => return result,
        }
    }
}
