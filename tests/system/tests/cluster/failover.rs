//! A leader that stops or is cut off: another is elected, the old one refuses and catches up,
//! and a stopped member is marked down.

use std::time::{Duration, Instant};

use hindsight_api::pb;
use hindsight_core::{Consistency, MemoryId};

use crate::harness::{
    stop_all, take_leader, three, wait_until, watchdog, within, write, write_distinct, Member,
    STEP_LIMIT, TEST_LIMIT,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_leader_stopping_elects_another_and_it_catches_up_after_restart() {
    let _turn = watchdog(
        "the_leader_stopping_elects_another_and_it_catches_up_after_restart",
        TEST_LIMIT,
    )
    .await;
    let root = tempfile::tempdir().unwrap();
    let mut members = three(root.path()).await;
    let before = write_distinct(&members[2].node, 10, "before").await;
    let old = take_leader(&mut members);
    let leader_id = old.id;
    let old_grpc = old.grpc;
    old.stop().await;

    let stopped_at = Instant::now();
    wait_until("a new leader", Duration::from_secs(15), || {
        members.iter().any(|m| m.node.is_leader())
    })
    .await;
    let elected_in = stopped_at.elapsed();
    assert!(
        elected_in < Duration::from_secs(10),
        "election took {elected_in:?}"
    );
    let during = write_distinct(&members[0].node, 10, "during").await;

    // The old leader comes back on its data and address, and catches up as a follower.
    let back = Member::start(root.path(), leader_id, Some(old_grpc), None).await;
    for id in before.iter().chain(&during) {
        let memory = within(
            "a linearizable read",
            STEP_LIMIT,
            back.node.get_with(*id, Consistency::Linearizable),
        )
        .await
        .unwrap_or_else(|e| panic!("the restarted node misses {id}: {e}"));
        assert_eq!(memory.id, *id);
    }
    members.push(back);
    stop_all(members).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_leader_cut_off_from_its_majority_says_for_how_long_and_refuses_at_once() {
    let _turn = watchdog(
        "a_leader_cut_off_from_its_majority_says_for_how_long_and_refuses_at_once",
        TEST_LIMIT,
    )
    .await;
    let root = tempfile::tempdir().unwrap();
    let mut members = three(root.path()).await;
    let leader = take_leader(&mut members);
    for follower in &members {
        assert_eq!(
            follower.node.cluster_status().millis_since_quorum_ack,
            None,
            "only a leader counts its acknowledgements"
        );
    }
    let acked = leader
        .node
        .cluster_status()
        .millis_since_quorum_ack
        .expect("a leader with its followers knows when they last answered");
    assert!(acked < 1_000, "heartbeats answered {acked} ms ago");

    // With both followers gone the leader still calls itself leader (no one can elect
    // another), and the time since a majority last answered it grows past any election timeout.
    stop_all(members).await;
    wait_until(
        "the leader to go unacknowledged",
        Duration::from_secs(15),
        || {
            leader
                .node
                .cluster_status()
                .millis_since_quorum_ack
                .is_some_and(|ms| ms > 2_000)
        },
    )
    .await;
    assert_eq!(leader.node.cluster_status().state, "Leader");
    // It says so at once instead of waiting for a commit or a confirmation that cannot come,
    // so that a client goes on to another member.
    let started = Instant::now();
    let refused = within(
        "a write on a cut-off leader",
        STEP_LIMIT,
        leader.node.write(write("written while alone")),
    )
    .await
    .expect_err("no majority can commit it");
    assert!(
        refused.to_string().contains("no majority has answered it"),
        "{refused}"
    );
    let refused = within(
        "a linearizable read on a cut-off leader",
        STEP_LIMIT,
        leader.node.get_with(MemoryId(1), Consistency::Linearizable),
    )
    .await
    .expect_err("no majority can confirm the leadership");
    assert!(
        refused.to_string().contains("no majority has answered it"),
        "{refused}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "answered in {:?}",
        started.elapsed()
    );
    leader.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_leader_marks_a_stopped_member_down_and_a_follower_does_not_guess() {
    let _turn = watchdog(
        "the_leader_marks_a_stopped_member_down_and_a_follower_does_not_guess",
        TEST_LIMIT,
    )
    .await;
    let root = tempfile::tempdir().unwrap();
    let mut members = three(root.path()).await;
    let leader = take_leader(&mut members);
    let member_on = |m: &Member, id: u64| {
        m.node
            .cluster_status()
            .members
            .into_iter()
            .find(|member| member.node_id == id)
            .expect("a member")
    };
    wait_until("every member up on the leader", STEP_LIMIT, || {
        let status = leader.node.cluster_status();
        status.members.iter().all(|m| m.reachable == Some(true))
    })
    .await;
    for follower in &members {
        let answered = member_on(&leader, follower.id)
            .millis_since_ack
            .expect("the leader calls every member");
        assert!(
            answered < 1_000,
            "node {} answered {answered} ms ago",
            follower.id
        );
        // A follower sends no heartbeats: it knows itself up, and nothing of the others.
        for m in follower.node.cluster_status().members {
            let expected = (m.node_id == follower.id).then_some(true);
            assert_eq!(
                m.reachable, expected,
                "node {} on {}",
                m.node_id, follower.id
            );
            assert_eq!(m.millis_since_ack, None);
        }
    }

    let gone = members.pop().expect("two followers");
    let gone_id = gone.id;
    gone.stop().await;
    let stopped_at = Instant::now();
    wait_until(
        "the leader to count the stopped node down",
        Duration::from_secs(10),
        || member_on(&leader, gone_id).reachable == Some(false),
    )
    .await;
    let noticed_in = stopped_at.elapsed();
    assert!(
        noticed_in < Duration::from_secs(5),
        "noticed after {noticed_in:?}"
    );
    let silent = member_on(&leader, gone_id)
        .millis_since_ack
        .expect("how long it has been silent");
    assert!(silent > 2_000, "down after {silent} ms of silence");
    assert_eq!(member_on(&leader, members[0].id).reachable, Some(true));

    // The admin API carries the same to `hindsight cluster`.
    let mut admin =
        pb::node_service_client::NodeServiceClient::connect(format!("http://{}", leader.grpc))
            .await
            .expect("the admin API answers");
    let status = admin
        .cluster_status(pb::ClusterStatusRequest {})
        .await
        .expect("cluster status")
        .into_inner();
    let gone_row = status
        .members
        .iter()
        .find(|m| m.node_id == gone_id)
        .expect("the stopped node is still a member");
    assert_eq!(gone_row.reachable, Some(false));
    assert!(
        gone_row.millis_since_ack.is_some_and(|ms| ms > 2_000),
        "{gone_row:?}"
    );
    let leader_row = status
        .members
        .iter()
        .find(|m| m.node_id == leader.id)
        .expect("the leader is a member");
    assert_eq!(leader_row.reachable, Some(true));

    members.push(leader);
    stop_all(members).await;
}
