//! Opening a log whose membership does not count this node.

use std::sync::Arc;

use hindsight_store::{NoopListener, StoreConfig, StoreError};

use crate::support;

fn as_node(id: u64, open_when_removed: bool) -> StoreConfig {
    StoreConfig {
        node_id: id,
        initialize_if_empty: false,
        open_when_removed,
        ..support::config()
    }
}

/// A log left by node 1 alone: what node 3's replica holds once its group removed node 3 while
/// node 3 was down, and also what a data directory of node 1 looks like.
async fn log_of_node_1(dir: &std::path::Path) {
    let store = support::open(dir, Arc::new(NoopListener)).await;
    store.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_main_store_refuses_a_data_directory_of_another_node() {
    let dir = tempfile::tempdir().unwrap();
    log_of_node_1(dir.path()).await;
    let refused = hindsight_store::open(dir.path(), as_node(3, false), Arc::new(NoopListener))
        .await
        .err()
        .expect("node 3 must not start on node 1's directory");
    assert!(
        matches!(&refused, StoreError::Config(m) if m.contains("belongs to node 1, but node_id is 3")),
        "{refused}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_its_group_removed_opens_as_a_non_member_and_keeps_its_log() {
    let dir = tempfile::tempdir().unwrap();
    log_of_node_1(dir.path()).await;
    let store = hindsight_store::open(dir.path(), as_node(3, true), Arc::new(NoopListener))
        .await
        .expect("a removed replica opens, to be added back or closed");
    let voters: Vec<u64> = store
        .raft()
        .with_raft_state(|st| st.membership_state.effective().voter_ids().collect())
        .await
        .unwrap();
    assert_eq!(voters, vec![1], "the log's membership is kept as it is");
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let leader = store.raft().metrics().borrow().current_leader;
    assert_ne!(leader, Some(3), "a non-member never leads");
    store.shutdown().await.unwrap();
    drop(store);
    // Node 1's own start on the same log is unaffected.
    let again = support::open(dir.path(), Arc::new(NoopListener)).await;
    again.shutdown().await.unwrap();
}
