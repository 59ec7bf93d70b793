//! Residency: idle banks and banks past the memory budget leave memory and come back whole.

use std::time::{Duration, Instant};

use hindsight_node::Node;

use crate::harness::{bank, config, recall_ids, write};

async fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "{what} within {limit:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_bank_leaves_memory_and_the_next_request_loads_it_whole() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.index.unload_idle_secs = 1;
    {
        let node = Node::start(cfg.clone()).await.unwrap();
        for content in [
            "the standup moved to half past nine",
            "the staging database is called heron",
            "invoices go out on the first working day",
        ] {
            node.write(write("team/ops", content)).await.unwrap();
        }
        assert!(node.bank_heap_bytes(&bank("team/ops")).is_some());
        wait_until("the idle bank to unload", Duration::from_secs(20), || {
            node.status().banks_loaded == 0
        })
        .await;
        assert!(node.bank_heap_bytes(&bank("team/ops")).is_none());

        // A write to the unloaded bank loads it again; a recall then sees the old and the new.
        node.write(write("team/ops", "the heron database is backed up nightly"))
            .await
            .unwrap();
        let found = recall_ids(&node, &["team/ops"], "heron database", None).await;
        assert!(
            found.contains(&"the staging database is called heron".to_string())
                && found.contains(&"the heron database is backed up nightly".to_string()),
            "{found:?}"
        );
        assert_eq!(
            node.get_bank(bank("team/ops")).await.unwrap().memory_count,
            4
        );

        // Unloaded again, then the node restarts from the dump it left.
        wait_until("the bank to unload again", Duration::from_secs(20), || {
            node.status().banks_loaded == 0
        })
        .await;
        node.shutdown().await;
    }
    let node = Node::start(cfg).await.unwrap();
    let found = recall_ids(&node, &["team/ops"], "when is the standup", None).await;
    assert!(
        found.contains(&"the standup moved to half past nine".to_string()),
        "{found:?}"
    );
    node.shutdown().await;
}

/// The budget is the node's resident memory; a test process alone holds more than 1 MiB, so
/// every bank not in use leaves. Which go first is `residency::plan_unloads`'s unit tests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_memory_budget_banks_leave_memory_and_answer_from_their_dumps() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.index.memory_budget_mb = 1;
    let node = Node::start(cfg).await.unwrap();
    let names: Vec<String> = (0..40).map(|i| format!("agents/a{i}")).collect();
    for name in &names {
        let batch = (0..25)
            .map(|j| {
                write(
                    name,
                    &format!("{name} keeps note number {j} about its own work"),
                )
            })
            .collect();
        node.write_batch(batch).await.unwrap();
    }
    let heap = |node: &Node| -> u64 {
        names
            .iter()
            .filter_map(|n| node.bank_heap_bytes(&bank(n)))
            .flatten()
            .map(|(_, bytes)| bytes)
            .sum()
    };
    assert!(
        heap(&node) > 1 << 20,
        "the banks together exceed the budget"
    );
    // Banks used in the last seconds stay; once none is, they leave.
    wait_until("the loaded banks to leave", Duration::from_secs(30), || {
        node.status().banks_loaded == 0
    })
    .await;
    // Every bank still answers, from its dump.
    for name in &names {
        let found = recall_ids(&node, &[name], "note number 7", None).await;
        assert!(
            found.contains(&format!("{name} keeps note number 7 about its own work")),
            "{name}: {found:?}"
        );
    }
    node.shutdown().await;
}
