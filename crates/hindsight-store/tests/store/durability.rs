//! What a proposer was told is stored survives a restart, and the log alone can rebuild the state.

use std::sync::Arc;

use hindsight_core::apply::Effect;
use hindsight_core::{CommandOutcome, MemoryId, Status};
use hindsight_store::NoopListener;
use tokio::task::JoinSet;

use crate::support::{self, created, forget, write, Recorder, BANK};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let bank = BANK.parse().unwrap();

    let store = Arc::new(support::open(dir.path(), Arc::new(NoopListener)).await);
    let first = store.metrics();
    assert!(first.is_leader, "{first:?}");
    let membership_log_id = *store.raft().metrics().borrow().membership_config.log_id();

    store.propose(support::create_bank(BANK)).await.unwrap();
    let mut acknowledged = vec![];
    for id in 1..=20u128 {
        let out = store.propose(write(id, BANK)).await.unwrap();
        assert_eq!(out.outcome, created(id));
        acknowledged.push(id);
    }
    let mut concurrent = JoinSet::new();
    for id in 100..140u128 {
        let store = store.clone();
        concurrent.spawn(async move { (id, store.propose(write(id, BANK)).await) });
    }
    while let Some(joined) = concurrent.join_next().await {
        let (id, out) = joined.unwrap();
        assert_eq!(out.unwrap().outcome, created(id));
        acknowledged.push(id);
    }
    let archived = store.propose(forget(5, false)).await.unwrap();
    assert_eq!(
        archived.outcome,
        CommandOutcome::Forgotten {
            ids: vec![MemoryId(5)]
        }
    );
    let applied = store.reader().last_applied_index();
    let term = store.metrics().term;
    store.shutdown().await.unwrap();
    drop(store);

    let store = support::open(dir.path(), Arc::new(NoopListener)).await;
    let metrics = store.metrics();
    assert!(
        metrics.is_leader && metrics.leader == Some(1),
        "{metrics:?}"
    );
    assert!(metrics.term >= term);
    assert_eq!(
        *store.raft().metrics().borrow().membership_config.log_id(),
        membership_log_id,
        "the membership is the one from the first start, not a new initialisation"
    );
    let reader = store.reader();
    assert!(reader.last_applied_index() >= applied);
    assert_eq!(
        reader.bank_memory_count(&bank).unwrap(),
        acknowledged.len() as u64
    );
    for id in &acknowledged {
        let memory = reader
            .memory(MemoryId(*id))
            .unwrap()
            .unwrap_or_else(|| panic!("memory {id} lost"));
        assert_eq!(memory.content, format!("memory number {id}"));
    }
    let five = reader.memory(MemoryId(5)).unwrap().unwrap();
    assert_eq!(five.status, Status::Archived);
    let versions: Vec<u64> = reader
        .history(MemoryId(5))
        .unwrap()
        .iter()
        .map(|h| h.version)
        .collect();
    assert_eq!(versions, vec![1, 2]);

    // Still writable after the restart.
    let out = store.propose(write(1_000, BANK)).await.unwrap();
    assert_eq!(out.outcome, created(1_000));
    assert!(out.log_index > applied);
    store.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_state_database_is_rebuilt_from_the_log_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let store = support::open(dir.path(), Arc::new(NoopListener)).await;
    store.propose(support::create_bank(BANK)).await.unwrap();
    for id in 1..=10u128 {
        store.propose(write(id, BANK)).await.unwrap();
    }
    let applied = store.reader().last_applied_index();
    store.shutdown().await.unwrap();
    drop(store);

    std::fs::remove_dir_all(dir.path().join("state")).unwrap();

    let recorder = Arc::new(Recorder::default());
    let store = support::open(dir.path(), recorder.clone()).await;
    let reader = store.reader();
    assert!(reader.last_applied_index() >= applied);
    for id in 1..=10u128 {
        assert!(
            reader.memory(MemoryId(id)).unwrap().is_some(),
            "memory {id}"
        );
    }
    // Re-applied entries reach the listener before `open` returns, in log order.
    let applied_events = recorder.applied();
    let indexes: Vec<u64> = applied_events.iter().map(|(i, _)| *i).collect();
    assert_eq!(indexes, (0..indexes.len() as u64).collect::<Vec<_>>());
    let upserted = applied_events
        .iter()
        .flat_map(|(_, effects)| effects)
        .filter(|e| matches!(e, Effect::MemoryUpserted(_)))
        .count();
    assert_eq!(upserted, 10);
    store.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_of_another_node_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = support::open(dir.path(), Arc::new(NoopListener)).await;
    store.shutdown().await.unwrap();
    drop(store);

    let config = hindsight_store::StoreConfig {
        node_id: 2,
        ..support::config()
    };
    let err = hindsight_store::open(dir.path(), config, Arc::new(NoopListener))
        .await
        .err()
        .expect("refused");
    assert!(
        matches!(err, hindsight_store::StoreError::Config(ref m) if m.contains("node 1")),
        "{err}"
    );
}
