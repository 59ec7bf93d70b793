//! Concurrent proposals share log entries, and every caller still gets its own outcome.

use std::collections::BTreeSet;
use std::sync::Arc;

use hindsight_core::{Command, CommandOutcome};
use hindsight_store::NoopListener;
use tokio::task::JoinSet;

use crate::support::{self, created, rejected_write, write, BANK};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_proposals_share_few_entries() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(support::open(dir.path(), Arc::new(NoopListener)).await);
    store.propose(support::create_bank(BANK)).await.unwrap();
    let before = store.metrics();

    let mut callers = JoinSet::new();
    for n in 0..200u128 {
        let store = store.clone();
        callers.spawn(async move {
            let id = 10_000 + n;
            // Every tenth caller writes to a bank that does not exist.
            let bank = if n % 10 == 7 { "nowhere" } else { BANK };
            (n, id, store.propose(write(id, bank)).await.unwrap())
        });
    }
    let mut entries_used = BTreeSet::new();
    let mut rejected = 0;
    while let Some(joined) = callers.join_next().await {
        let (n, id, out) = joined.unwrap();
        if n % 10 == 7 {
            assert!(
                rejected_write(&out.outcome, id),
                "caller {n}: {:?}",
                out.outcome
            );
            rejected += 1;
        } else {
            assert_eq!(out.outcome, created(id), "caller {n}");
        }
        entries_used.insert(out.log_index);
    }
    assert_eq!(rejected, 20);

    let after = store.metrics();
    let commands = after.commands_proposed - before.commands_proposed;
    let entries = after.entries_proposed - before.entries_proposed;
    assert_eq!(commands, 200);
    assert_eq!(entries, entries_used.len() as u64);
    assert!(
        entries * 5 <= commands,
        "{entries} entries for {commands} commands is not group commit"
    );
    assert_eq!(
        after.last_log_index.unwrap() - before.last_log_index.unwrap(),
        entries,
        "one log entry per proposed batch"
    );
    let bank = BANK.parse().unwrap();
    assert_eq!(store.reader().bank_memory_count(&bank).unwrap(), 180);
    store.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_s_own_batch_comes_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let store = support::open(dir.path(), Arc::new(NoopListener)).await;
    let out = store
        .propose(Command::Batch(vec![
            support::create_bank(BANK),
            write(1, BANK),
            write(1, BANK),
        ]))
        .await
        .unwrap();
    let CommandOutcome::Batch(outcomes) = out.outcome else {
        panic!("{:?}", out.outcome)
    };
    assert_eq!(outcomes.len(), 3);
    assert_eq!(outcomes[0], CommandOutcome::BankCreated);
    assert_eq!(outcomes[1], created(1));
    assert!(rejected_write(&outcomes[2], 1), "{:?}", outcomes[2]);
    store.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proposals_after_shutdown_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = support::open(dir.path(), Arc::new(NoopListener)).await;
    store.shutdown().await.unwrap();
    let err = store.propose(support::create_bank(BANK)).await.unwrap_err();
    assert_eq!(err, hindsight_store::StoreError::ShuttingDown);
    store.shutdown().await.unwrap();
}
