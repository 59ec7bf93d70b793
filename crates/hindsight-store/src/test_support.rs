use std::collections::BTreeMap;

use hindsight_core::memory::{AccessStats, StatusChange};
use hindsight_core::{Kind, Memory, MemoryId, Provenance, SourceKind, Status, Support, Timestamp};

/// An active semantic memory with the given id in `bank`.
pub(crate) fn memory(id: u128, bank: &str, content: &str) -> Memory {
    let t = Timestamp(1_000_000);
    Memory {
        id: MemoryId(id),
        bank: bank.parse().unwrap(),
        kind: Kind::Semantic,
        subtype: None,
        content: content.to_string(),
        entities: vec![],
        slot: None,
        provenance: Provenance::from_source(SourceKind::User),
        occurred_at: t,
        recorded_at: t,
        valid_from: t,
        valid_to: None,
        expires_at: None,
        confidence: 0.9,
        importance: 0.5,
        critical: false,
        status: Status::Active,
        status_log: vec![StatusChange {
            effective_at: t,
            status: Status::Active,
            confidence: None,
        }],
        support: Support {
            count: 1,
            ..Support::default()
        },
        access: AccessStats::default(),
        tags: vec![],
        metadata: BTreeMap::new(),
        signature: None,
        version: 1,
        updated_at: t,
        updated_index: 0,
    }
}
