//! A command the domain rules refuse leaves the state exactly as it was.

use std::sync::Arc;

use hindsight_core::{BankConfig, Command, CommandOutcome, MemoryId, Timestamp};
use hindsight_store::StateReader;

use crate::support::{self, forget, rejected_write, write, Recorder, BANK};

#[derive(Debug, PartialEq)]
struct Dump {
    banks: Vec<BankConfig>,
    memories: Vec<hindsight_core::Memory>,
    history: Vec<hindsight_core::HistoryEntry>,
    count: u64,
}

fn dump(reader: &StateReader) -> Dump {
    let bank = BANK.parse().unwrap();
    Dump {
        banks: reader.banks().unwrap(),
        memories: reader.bank_memories(&bank).unwrap(),
        history: reader.history(MemoryId(1)).unwrap(),
        count: reader.bank_memory_count(&bank).unwrap(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejected_commands_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let recorder = Arc::new(Recorder::default());
    let store = support::open(dir.path(), recorder.clone()).await;
    store.propose(support::create_bank(BANK)).await.unwrap();
    store.propose(write(1, BANK)).await.unwrap();
    let before = dump(store.reader());
    let applied_before = store.reader().last_applied_index();

    let out = store.propose(write(2, "nowhere")).await.unwrap();
    assert!(rejected_write(&out.outcome, 2), "{:?}", out.outcome);
    let out = store.propose(write(1, BANK)).await.unwrap();
    assert!(
        rejected_write(&out.outcome, 1),
        "duplicate id: {:?}",
        out.outcome
    );

    let refused = [
        (support::create_bank(BANK), false),
        (
            Command::UpdateBank {
                config: BankConfig::new("nowhere".parse().unwrap(), Timestamp(2)),
            },
            true,
        ),
        (
            Command::DeleteBank {
                name: "nowhere".parse().unwrap(),
            },
            true,
        ),
        (forget(404, true), true),
    ];
    for (command, expect_not_found) in refused {
        let out = store.propose(command.clone()).await.unwrap();
        match out.outcome {
            CommandOutcome::Rejected { not_found, reason } => {
                assert_eq!(not_found, expect_not_found, "{command:?}: {reason}");
                assert!(!reason.is_empty());
            }
            other => panic!("{command:?} was not rejected: {other:?}"),
        }
    }

    assert_eq!(dump(store.reader()), before);
    assert!(store.reader().memory(MemoryId(2)).unwrap().is_none());
    assert!(store
        .reader()
        .bank(&"nowhere".parse().unwrap())
        .unwrap()
        .is_none());
    // Refused entries are still applied (the log moved on) but report no effects.
    assert_eq!(store.reader().last_applied_index(), applied_before + 6);
    let quiet: Vec<_> = recorder
        .applied()
        .into_iter()
        .filter(|(i, _)| *i > applied_before)
        .collect();
    assert_eq!(quiet.len(), 6);
    assert!(quiet.iter().all(|(_, effects)| effects.is_empty()));
    store.shutdown().await.unwrap();
}
