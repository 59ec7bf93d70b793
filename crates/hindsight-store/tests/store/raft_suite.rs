//! openraft's own conformance suite for the log store and the state machine.

use std::sync::Arc;

use hindsight_store::{LogStore, NoopListener, StateMachineStore, TypeConfig};
use openraft::testing::{StoreBuilder, Suite};
use openraft::StorageError;
use tempfile::TempDir;

struct FreshStores;

impl StoreBuilder<TypeConfig, LogStore, StateMachineStore, TempDir> for FreshStores {
    async fn build(&self) -> Result<(TempDir, LogStore, StateMachineStore), StorageError<u64>> {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = LogStore::open(&dir.path().join("raft-log"), 0, 4 << 20).expect("log opens");
        let state = StateMachineStore::open(
            &dir.path().join("state"),
            0,
            4 << 20,
            Arc::new(NoopListener),
        )
        .expect("state opens");
        Ok((dir, log, state))
    }
}

#[test]
fn passes_openraft_storage_suite() {
    Suite::test_all(FreshStores).expect("storage suite");
}
