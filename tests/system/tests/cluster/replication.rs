//! A write acknowledged by one node is on every other, and a member that missed writes catches up.

use std::time::Duration;

use hindsight_core::{BankName, Consistency, RecallRequest};
use hindsight_node::{BankPatch, NodeConfig};

use crate::harness::{
    bank, stop_all, three, three_with, wait_until, watchdog, within, write_distinct, Member,
    STEP_LIMIT, TEST_LIMIT,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_acknowledged_by_one_node_is_read_on_every_other() {
    let _turn = watchdog(
        "a_write_acknowledged_by_one_node_is_read_on_every_other",
        TEST_LIMIT,
    )
    .await;
    let root = tempfile::tempdir().unwrap();
    let members = three(root.path()).await;
    // Written through a follower: the command is forwarded to the leader, never bounced.
    let follower = members.iter().find(|m| !m.node.is_leader()).unwrap();
    let ids = write_distinct(&follower.node, 5, "forwarded").await;
    for reader in &members {
        for id in &ids {
            let memory = within(
                "a linearizable read",
                STEP_LIMIT,
                reader.node.get_with(*id, Consistency::Linearizable),
            )
            .await
            .unwrap_or_else(|e| panic!("node {} misses {id} right after its ack: {e}", reader.id));
            assert!(memory.content.starts_with("forwarded record"));
        }
    }
    // A bank created a moment ago is new to the other replicas; a linearizable recall there
    // still finds it, instead of answering that the bank does not exist.
    let leader = members.iter().find(|m| m.node.is_leader()).unwrap();
    for round in 0..20 {
        let fresh: BankName = format!("fresh-{round}").parse().unwrap();
        leader
            .node
            .create_bank(fresh.clone(), BankPatch::default())
            .await
            .unwrap();
        for reader in members.iter().filter(|m| m.id != leader.id) {
            let mut recall = RecallRequest::new(vec![fresh.clone()], "anything", 5);
            recall.consistency = Consistency::Linearizable;
            let response = within("a recall", STEP_LIMIT, reader.node.recall(recall))
                .await
                .unwrap_or_else(|e| panic!("recall of {fresh} on node {}: {e}", reader.id));
            assert!(response.hits.is_empty());
        }
    }
    // A review asked of a follower runs on the leader, which alone reviews the bank.
    let client = hindsight_api::HindsightClient::connect(&follower.grpc.to_string())
        .await
        .unwrap();
    let report = within("a review", STEP_LIMIT, client.review(bank(), None))
        .await
        .expect("review through a follower");
    assert!(
        report.considered >= 5,
        "the leader's reviewer saw the writes: {report:?}"
    );
    // The follower's service layer says who leads, so that a caller can go there itself.
    let leader = members.iter().find(|m| m.node.is_leader()).unwrap();
    match follower.node.review(bank(), None).await {
        Err(hindsight_node::NodeError::NotLeader {
            leader_id,
            leader_address,
            ..
        }) => {
            assert_eq!(leader_id, leader.id);
            assert_eq!(leader_address, leader.grpc.to_string());
        }
        other => panic!("a review on a follower must name the leader, got {other:?}"),
    }

    let status = members[0].node.cluster_status();
    let leader = status.leader_id.expect("a leader");
    let leader_view = members
        .iter()
        .find(|m| m.id == leader)
        .unwrap()
        .node
        .cluster_status();
    assert_eq!(leader_view.members.len(), 3);
    assert!(
        leader_view.committed_index.is_some(),
        "the leader knows the commit index"
    );
    stop_all(members).await;
}

/// Snapshots often and no log kept behind them: a member that misses a few writes can only
/// catch up from a snapshot.
fn snapshot_often(config: &mut NodeConfig) {
    config.store.snapshot_every_entries = 10;
    config.store.log_entries_kept_after_snapshot = 0;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_member_behind_the_purged_log_catches_up_from_a_streamed_snapshot() {
    let _turn = watchdog(
        "a_member_behind_the_purged_log_catches_up_from_a_streamed_snapshot",
        TEST_LIMIT,
    )
    .await;
    let root = tempfile::tempdir().unwrap();
    let mut members = three_with(root.path(), snapshot_often).await;
    let before = write_distinct(&members[0].node, 5, "before").await;
    let at = members
        .iter()
        .position(|m| !m.node.is_leader())
        .expect("a follower");
    let follower = members.remove(at);
    let (follower_id, follower_grpc) = (follower.id, follower.grpc);
    let follower_last = follower.node.cluster_status().last_log_index.unwrap_or(0);
    follower.stop().await;

    let during = write_distinct(&members[0].node, 40, "during").await;
    let leader = members
        .iter()
        .find(|m| m.node.is_leader())
        .expect("a leader");
    wait_until(
        "the leader to purge its log past the stopped member",
        Duration::from_secs(30),
        || leader.node.cluster_status().purged_index > Some(follower_last),
    )
    .await;
    let purged = leader.node.cluster_status().purged_index;

    let back = Member::start_with(
        root.path(),
        follower_id,
        Some(follower_grpc),
        None,
        snapshot_often,
    )
    .await;
    for id in before.iter().chain(&during) {
        let memory = within(
            "a linearizable read",
            STEP_LIMIT,
            back.node.get_with(*id, Consistency::Linearizable),
        )
        .await
        .unwrap_or_else(|e| panic!("the restarted member misses {id}: {e}"));
        assert_eq!(memory.id, *id);
    }
    let status = back.node.cluster_status();
    assert!(
        status.snapshot_index >= purged,
        "caught up without the snapshot: snapshot {:?}, leader purged {purged:?}",
        status.snapshot_index
    );
    // It serves writes' data locally too, and takes part in new writes.
    let after = write_distinct(&back.node, 3, "after").await;
    for id in &after {
        within("a local read", STEP_LIMIT, back.node.get(*id))
            .await
            .expect("written through the restarted member");
    }
    members.push(back);
    stop_all(members).await;
}
