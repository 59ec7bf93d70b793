//! The review of a bank runs on its leader, whichever node took the write.

use std::time::{Duration, Instant};

use hindsight_core::{Consistency, Status};

use crate::harness::{
    stop_all, three_with, watchdog, within, write, Member, STEP_LIMIT, TEST_LIMIT,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_contradiction_written_through_a_follower_gets_the_leader_to_review() {
    let _turn = watchdog(
        "a_contradiction_written_through_a_follower_gets_the_leader_to_review",
        TEST_LIMIT,
    )
    .await;
    let root = tempfile::tempdir().unwrap();
    // No periodic cycles: only the hint can start one.
    let members = three_with(root.path(), |config| {
        config.review.on_likely_conflict = true;
        config.review.hint_delay_ms = 50;
    })
    .await;
    // Every node's actor system links to the two others'.
    for member in &members {
        let mut others: Vec<u64> = members.iter().map(|m| m.id).collect();
        others.retain(|id| *id != member.id);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let status = member.node.link_status().await.expect("the link runs");
            if status.linked_nodes == others {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "node {} links only to {:?}",
                member.id,
                status.linked_nodes
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let followers: Vec<&Member> = members.iter().filter(|m| !m.node.is_leader()).collect();
    let old = within(
        "a write",
        STEP_LIMIT,
        followers[0]
            .node
            .write(write("My usual coffee is a flat white.")),
    )
    .await
    .expect("write acknowledged")
    .id;
    within(
        "a write",
        STEP_LIMIT,
        followers[1]
            .node
            .write(write("Actually, I switched my coffee to an oat latte.")),
    )
    .await
    .expect("write acknowledged");

    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let memory = within(
            "a linearizable read",
            STEP_LIMIT,
            followers[0].node.get_with(old, Consistency::Linearizable),
        )
        .await
        .expect("the old memory is kept");
        if matches!(memory.status, Status::Superseded { .. }) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no review followed the contradicting write: {:?}",
            memory.status
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The hint reached the leader's review inbox over the actor link, not the RPC.
    let leader = members.iter().find(|m| m.node.is_leader()).unwrap();
    let received = leader.node.link_status().await.unwrap().hints_received;
    assert!(received >= 1, "the leader got no hint over the link");
    let mut sent = 0;
    for follower in &followers {
        sent += follower.node.link_status().await.unwrap().hints_sent;
    }
    assert!(sent >= 1, "no follower sent a hint over the link");
    stop_all(members).await;
}
