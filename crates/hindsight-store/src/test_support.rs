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
