//! The apply listener hears every entry, in log order, with the effects of its command.

use std::sync::Arc;

use hindsight_core::apply::Effect;
use hindsight_core::{MemoryId, Status};

use crate::support::{self, forget, write, Recorder, BANK};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hears_every_apply_in_log_order() {
    let dir = tempfile::tempdir().unwrap();
    let recorder = Arc::new(Recorder::default());
    let store = support::open(dir.path(), recorder.clone()).await;

    let mut proposed = vec![];
    for command in [
        support::create_bank(BANK),
        write(1, BANK),
        forget(1, false),
        write(2, BANK),
        forget(2, true),
    ] {
        proposed.push(store.propose(command).await.unwrap().log_index);
    }

    let applied = recorder.applied();
    let indexes: Vec<u64> = applied.iter().map(|(i, _)| *i).collect();
    let last = *indexes.last().unwrap();
    assert_eq!(
        indexes,
        (0..=last).collect::<Vec<_>>(),
        "every entry, in order"
    );
    assert_eq!(last, *proposed.last().unwrap());

    let effects_at = |index: u64| applied.iter().find(|(i, _)| *i == index).unwrap().1.clone();
    let bank = BANK.parse().unwrap();
    assert_eq!(effects_at(proposed[0]), vec![Effect::BankChanged(bank)]);
    assert!(matches!(
        effects_at(proposed[1]).as_slice(),
        [Effect::MemoryUpserted(m)] if m.id == MemoryId(1) && m.status == Status::Active
    ));
    assert!(matches!(
        effects_at(proposed[2]).as_slice(),
        [Effect::MemoryUpserted(m)] if m.id == MemoryId(1) && m.status == Status::Archived
    ));
    assert!(matches!(
        effects_at(proposed[4]).as_slice(),
        [Effect::MemoryRemoved { id, .. }] if *id == MemoryId(2)
    ));
    // Entries without a command (the initial membership, the leader's blank entry) carry nothing.
    assert!(effects_at(0).is_empty());
    store.shutdown().await.unwrap();
}
