//! Stopping a store whose leader cannot commit: the shutdown ends, and callers hear about it.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hindsight_core::{Command, CommandOutcome};
use hindsight_store::network::NoPeersNetwork;
use hindsight_store::{LeaderLink, LinkFuture, NoopListener, StoreError};
use openraft::{BasicNode, ChangeMembers};

use crate::support;

/// This node always leads in these tests, so nothing is ever forwarded.
struct NoLeaderElsewhere;

impl LeaderLink for NoLeaderElsewhere {
    fn propose(&self, _: u64, _: String, _: Arc<Command>) -> LinkFuture<(u64, CommandOutcome)> {
        Box::pin(async { Err(StoreError::Internal("no other leader in this test".into())) })
    }

    fn read_index(&self, _: u64, _: String) -> LinkFuture<u64> {
        Box::pin(async { Err(StoreError::Internal("no other leader in this test".into())) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_lost_its_quorum_still_shuts_down_and_its_callers_get_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        hindsight_store::open_cluster(
            dir.path(),
            support::config(),
            Arc::new(NoopListener),
            NoPeersNetwork,
            Arc::new(NoLeaderElsewhere),
        )
        .await
        .expect("store opens"),
    );
    store
        .propose(support::create_bank(support::BANK))
        .await
        .expect("a one-node cluster commits alone");

    // A second voter that never answers: from the joint configuration on, nothing commits.
    store
        .raft()
        .add_learner(2, BasicNode::new("127.0.0.1:9"), false)
        .await
        .unwrap();
    let raft = store.raft().clone();
    tokio::spawn(async move {
        let _ = raft
            .change_membership(ChangeMembers::AddVoterIds(BTreeSet::from([2])), false)
            .await;
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stuck = {
        let store = store.clone();
        tokio::spawn(async move { store.propose(support::write(1, support::BANK)).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!stuck.is_finished(), "nothing can commit without node 2");

    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(20), store.shutdown())
        .await
        .expect("the shutdown does not wait for a commit that cannot come")
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "shutdown took {:?}",
        started.elapsed()
    );
    let answer = tokio::time::timeout(Duration::from_secs(5), stuck)
        .await
        .expect("the caller is answered")
        .unwrap();
    assert!(
        answer.is_err(),
        "an uncommitted write is not acknowledged: {answer:?}"
    );
}
