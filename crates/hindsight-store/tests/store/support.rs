use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hindsight_core::apply::Effect;
use hindsight_core::command::WriteResult;
use hindsight_core::{
    BankConfig, Command, CommandOutcome, Memory, MemoryId, Provenance, SourceKind, Timestamp,
    WriteItem,
};
use hindsight_store::{ApplyListener, StoreConfig, StoreHandle};

pub const BANK: &str = "acme/agent-7";

/// Short Raft timers so elections and waits resolve quickly.
pub fn config() -> StoreConfig {
    StoreConfig {
        cache_capacity_bytes: 8 * 1024 * 1024,
        heartbeat_interval: Duration::from_millis(50),
        election_timeout_min: Duration::from_millis(150),
        election_timeout_max: Duration::from_millis(300),
        ..StoreConfig::default()
    }
}

pub async fn open(dir: &Path, listener: Arc<dyn ApplyListener>) -> StoreHandle {
    open_with(dir, config(), listener).await
}

pub async fn open_with(
    dir: &Path,
    config: StoreConfig,
    listener: Arc<dyn ApplyListener>,
) -> StoreHandle {
    hindsight_store::open(dir, config, listener)
        .await
        .expect("store opens")
}

/// Builds a snapshot of everything applied and waits until the log behind it is purged; returns
/// the snapshot's last index.
pub async fn snapshot_and_purge(store: &StoreHandle) -> u64 {
    let snapshot_index = store.trigger_snapshot().await.unwrap();
    store
        .raft()
        .wait(Some(Duration::from_secs(10)))
        .metrics(
            |m| m.purged.map(|p| p.index) >= Some(snapshot_index),
            "log purged behind the snapshot",
        )
        .await
        .unwrap();
    snapshot_index
}

pub fn memory(id: u128, bank: &str, content: &str) -> Memory {
    Memory::new(
        MemoryId(id),
        bank.parse().unwrap(),
        content,
        Provenance::from_source(SourceKind::User),
        Timestamp(1_000_000 + id as i64),
    )
}

pub fn create_bank(name: &str) -> Command {
    Command::CreateBank {
        config: BankConfig::new(name.parse().unwrap(), Timestamp(1)),
    }
}

pub fn write(id: u128, bank: &str) -> Command {
    Command::Write {
        items: vec![WriteItem::Create {
            memory: Box::new(memory(id, bank, &format!("memory number {id}"))),
        }],
    }
}

pub fn forget(id: u128, hard: bool) -> Command {
    Command::Forget {
        id: MemoryId(id),
        hard,
        at: Timestamp(9_000_000),
        reason: "test".into(),
    }
}

pub fn created(id: u128) -> CommandOutcome {
    CommandOutcome::Written(vec![WriteResult::Created { id: MemoryId(id) }])
}

pub fn rejected_write(outcome: &CommandOutcome, id: u128) -> bool {
    matches!(
        outcome,
        CommandOutcome::Written(results)
            if matches!(results.as_slice(), [WriteResult::Rejected { id: r, .. }] if *r == MemoryId(id))
    )
}

#[derive(Clone, Debug, PartialEq)]
pub enum Heard {
    Applied(u64, Vec<Effect>),
    SnapshotInstalled,
}

/// Records every call, in order.
#[derive(Default)]
pub struct Recorder {
    heard: Mutex<Vec<Heard>>,
}

impl Recorder {
    pub fn heard(&self) -> Vec<Heard> {
        self.heard.lock().unwrap().clone()
    }

    pub fn applied(&self) -> Vec<(u64, Vec<Effect>)> {
        self.heard()
            .into_iter()
            .filter_map(|h| match h {
                Heard::Applied(index, effects) => Some((index, effects)),
                Heard::SnapshotInstalled => None,
            })
            .collect()
    }
}

impl ApplyListener for Recorder {
    fn on_apply(&self, log_index: u64, effects: &[Effect]) {
        self.heard
            .lock()
            .unwrap()
            .push(Heard::Applied(log_index, effects.to_vec()));
    }

    fn on_snapshot_installed(&self) {
        self.heard.lock().unwrap().push(Heard::SnapshotInstalled);
    }
}
