//! Snapshots: built, persisted, survive restarts and log purges; installing one replaces the state.

use std::collections::BTreeSet;
use std::sync::Arc;

use hindsight_core::{Command, MemoryId};
use hindsight_store::{NoopListener, StateMachineStore, StoreConfig, TypeConfig};
use openraft::storage::RaftStateMachine;
use openraft::{
    BasicNode, CommittedLeaderId, Entry, EntryPayload, LogId, Membership, RaftSnapshotBuilder,
};

use crate::support::{self, forget, snapshot_and_purge, write, Heard, Recorder, BANK};

/// Everything a snapshot's data holds, read from its start.
async fn bytes_of(data: &mut tokio::fs::File) -> Vec<u8> {
    use tokio::io::{AsyncReadExt, AsyncSeekExt};
    data.seek(std::io::SeekFrom::Start(0)).await.unwrap();
    let mut bytes = Vec::new();
    data.read_to_end(&mut bytes).await.unwrap();
    bytes
}

fn purging_config() -> StoreConfig {
    StoreConfig {
        max_in_snapshot_log_to_keep: 0,
        ..support::config()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_survives_a_snapshot_a_purge_and_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let store = support::open_with(dir.path(), purging_config(), Arc::new(NoopListener)).await;
    store.propose(support::create_bank(BANK)).await.unwrap();
    for id in 1..=30u128 {
        store.propose(write(id, BANK)).await.unwrap();
    }
    store.propose(forget(3, false)).await.unwrap();

    let applied_before = store.reader().last_applied_index();
    let snapshot_index = snapshot_and_purge(&store).await;
    assert_eq!(snapshot_index, applied_before);
    // Some entries after the snapshot, so the restart needs both the snapshot's state and the log.
    for id in 31..=35u128 {
        store.propose(write(id, BANK)).await.unwrap();
    }
    let applied = store.reader().last_applied_index();
    store.shutdown().await.unwrap();
    drop(store);

    let store = support::open_with(dir.path(), purging_config(), Arc::new(NoopListener)).await;
    let metrics = store.metrics();
    assert_eq!(metrics.snapshot_index, Some(snapshot_index), "{metrics:?}");
    assert!(metrics.purged_index >= Some(snapshot_index), "{metrics:?}");
    let reader = store.reader();
    assert!(reader.last_applied_index() >= applied);
    let bank = BANK.parse().unwrap();
    let ids: BTreeSet<MemoryId> = reader.bank_memory_ids(&bank).unwrap().into_iter().collect();
    assert_eq!(ids, (1..=35u128).map(MemoryId).collect());
    assert_eq!(reader.history(MemoryId(3)).unwrap().len(), 2);
    let current = store
        .raft()
        .get_snapshot()
        .await
        .unwrap()
        .expect("a snapshot");
    assert_eq!(
        current.meta.last_log_id.map(|l| l.index),
        Some(snapshot_index)
    );
    store.shutdown().await.unwrap();
}

fn entry(index: u64, payload: EntryPayload<TypeConfig>) -> Entry<TypeConfig> {
    Entry {
        log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
        payload,
    }
}

fn membership() -> EntryPayload<TypeConfig> {
    EntryPayload::Membership(Membership::new(
        vec![BTreeSet::from([1u64])],
        [(1u64, BasicNode::new("127.0.0.1:7400"))]
            .into_iter()
            .collect::<std::collections::BTreeMap<_, _>>(),
    ))
}

fn normal(command: Command) -> EntryPayload<TypeConfig> {
    EntryPayload::Normal(std::sync::Arc::new(command))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn installing_a_snapshot_replaces_the_state_instead_of_merging() {
    let dir = tempfile::tempdir().unwrap();
    let open = |name: &str, listener| {
        StateMachineStore::open(&dir.path().join(name), 0, 4 << 20, listener).unwrap()
    };

    let mut source = open("source", Arc::new(NoopListener));
    source
        .apply([
            entry(1, membership()),
            entry(2, normal(support::create_bank(BANK))),
            entry(3, normal(write(1, BANK))),
            entry(4, normal(write(2, BANK))),
        ])
        .await
        .unwrap();
    let mut snapshot = source
        .get_snapshot_builder()
        .await
        .build_snapshot()
        .await
        .unwrap();
    assert_eq!(snapshot.meta.last_log_id.map(|l| l.index), Some(4));

    let recorder = Arc::new(Recorder::default());
    let mut target = open("target", recorder.clone());
    target
        .apply([
            entry(1, normal(support::create_bank("other"))),
            entry(2, normal(write(99, "other"))),
            entry(3, normal(forget(99, false))),
        ])
        .await
        .unwrap();
    let reader = target.reader();
    assert!(reader.memory(MemoryId(99)).unwrap().is_some());

    // A corrupt snapshot is refused and changes nothing.
    let mut garbage = target.begin_receiving_snapshot().await.unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut *garbage, b"not a snapshot")
        .await
        .unwrap();
    assert!(target
        .install_snapshot(&snapshot.meta, garbage)
        .await
        .is_err());
    assert!(reader.memory(MemoryId(99)).unwrap().is_some());
    assert_eq!(reader.last_applied_index(), 3);

    let sent = bytes_of(&mut snapshot.snapshot).await;
    assert!(
        sent.starts_with(b"HSSNAP01"),
        "a snapshot's data is the state's frame"
    );
    let mut received = target.begin_receiving_snapshot().await.unwrap();
    // In the pieces and order a transfer writes them.
    for piece in sent.chunks(7) {
        tokio::io::AsyncWriteExt::write_all(&mut *received, piece)
            .await
            .unwrap();
    }
    target
        .install_snapshot(&snapshot.meta, received)
        .await
        .unwrap();

    let check = |reader: &hindsight_store::StateReader| {
        let other = "other".parse().unwrap();
        assert!(reader.bank(&other).unwrap().is_none(), "old bank merged in");
        assert!(
            reader.memory(MemoryId(99)).unwrap().is_none(),
            "old memory merged in"
        );
        assert!(reader.history(MemoryId(99)).unwrap().is_empty());
        assert_eq!(reader.bank_memory_count(&other).unwrap(), 0);
        let names: Vec<String> = reader
            .banks()
            .unwrap()
            .into_iter()
            .map(|b| b.name.to_string())
            .collect();
        assert_eq!(names, vec![BANK.to_string()]);
        let bank = BANK.parse().unwrap();
        let ids: Vec<MemoryId> = reader.bank_memory_ids(&bank).unwrap();
        assert_eq!(ids, vec![MemoryId(1), MemoryId(2)]);
        assert_eq!(reader.bank_memory_count(&bank).unwrap(), 2);
        assert_eq!(reader.last_applied_index(), 4);
    };
    check(&reader);
    let (applied, membership) = target.applied_state().await.unwrap();
    assert_eq!(applied, snapshot.meta.last_log_id);
    assert_eq!(membership, snapshot.meta.last_membership);
    assert_eq!(recorder.heard().last(), Some(&Heard::SnapshotInstalled));

    drop(reader);
    drop(target);
    let mut reopened = open("target", Arc::new(NoopListener));
    check(&reopened.reader());
    assert_eq!(
        reopened.applied_state().await.unwrap().0,
        snapshot.meta.last_log_id
    );
    let mut current = reopened
        .get_current_snapshot()
        .await
        .unwrap()
        .expect("persisted");
    assert_eq!(current.meta, snapshot.meta);
    assert_eq!(bytes_of(&mut current.snapshot).await, sent);
}
