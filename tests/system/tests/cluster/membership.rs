//! Nodes joining and leaving a cluster while it takes writes.

use std::sync::Arc;
use std::time::Duration;

use hindsight_core::Consistency;
use tokio::sync::oneshot;

use crate::harness::{
    stop_all, three, voters, wait_until, watchdog, within, write, Member, STEP_LIMIT, TEST_LIMIT,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_fourth_node_joins_and_an_original_leaves_while_writes_continue() {
    let _turn = watchdog(
        "a_fourth_node_joins_and_an_original_leaves_while_writes_continue",
        TEST_LIMIT,
    )
    .await;
    let root = tempfile::tempdir().unwrap();
    let mut members = three(root.path()).await;
    let writer_node = members[1].node.clone();
    let acked = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let (stop_writes, mut writes_stopped) = oneshot::channel::<()>();
    let writer = {
        let acked = acked.clone();
        tokio::spawn(async move {
            let mut i = 0usize;
            loop {
                if writes_stopped.try_recv().is_ok() {
                    return;
                }
                let content = format!(
                    "continuous record {i} about harbor {} and meadow {}",
                    i * 7,
                    i * 11
                );
                match within("a write", STEP_LIMIT, writer_node.write(write(&content))).await {
                    Ok(outcome) => acked.lock().push(outcome.id),
                    Err(e) => eprintln!("write {i} failed: {e}"),
                }
                i += 1;
            }
        })
    };

    // Writes under way before the membership changes, during them and after.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let fourth = Member::start(root.path(), 4, None, Some(members[0].grpc)).await;
    wait_until("node 4 to vote", Duration::from_secs(30), || {
        voters(&fourth).contains(&4)
    })
    .await;
    members.push(fourth);
    // Node 1 leaves; the request goes through node 3, which hands it to the leader.
    within(
        "removing node 1",
        STEP_LIMIT,
        members[2].node.remove_member(1),
    )
    .await
    .expect("node 1 removed");
    wait_until(
        "node 1 gone from the membership",
        Duration::from_secs(30),
        || !voters(&members[2]).contains(&1),
    )
    .await;
    // Writes go on for a while in the new configuration too.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let _ = stop_writes.send(());
    within("the writer to stop", STEP_LIMIT, writer)
        .await
        .unwrap();
    let acked = acked.lock().clone();
    assert!(acked.len() > 5, "writes continued: {}", acked.len());

    let removed = members.remove(0);
    removed.stop().await;
    assert_eq!(voters(&members[0]).len(), 3);
    for member in &members {
        for id in &acked {
            within(
                "a linearizable read",
                STEP_LIMIT,
                member.node.get_with(*id, Consistency::Linearizable),
            )
            .await
            .unwrap_or_else(|e| panic!("node {} misses acknowledged {id}: {e}", member.id));
        }
    }
    stop_all(members).await;
}
