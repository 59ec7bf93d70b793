//! Faults: a crashed bank actor and a restarted node lose no acknowledged write.

use hindsight_node::Node;

use crate::harness::{bank, config, recall_ids, write};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_bank_actor_is_restarted_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(config(dir.path())).await.unwrap();
    // Enough that the restarted actor takes a while to read them all back: none was dumped.
    for part in 0..4 {
        let batch = (0..500)
            .map(|i| write("a/b", &format!("fact {} about the ledger", part * 500 + i)))
            .collect();
        node.write_batch(batch).await.unwrap();
    }
    let whole = records_bytes(&node).expect("the bank is loaded");
    node.inject_bank_panic(&bank("a/b")).await.unwrap();
    // Catch the restarted actor while it reads the bank back (its view holds part of it).
    let reading = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        // Registered again but not yet read back whole; `None` is the moment between the two
        // actors, when no view is registered at all.
        while records_bytes(&node).is_none_or(|bytes| bytes >= whole / 2) {
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert!(
        reading.is_ok(),
        "the restarted actor was never seen reading the bank back"
    );
    // A recall that arrives meanwhile waits for all of it, rather than answering from the
    // part read so far.
    let early = recall_ids(&node, &["a/b"], "fact 1789 about the ledger", None).await;
    assert_eq!(
        early.first().map(String::as_str),
        Some("fact 1789 about the ledger")
    );
    // The next requests work whether or not the restart has finished.
    node.write(write("a/b", "fact after the crash about the ledger"))
        .await
        .unwrap();
    let found = recall_ids(&node, &["a/b"], "ledger", None).await;
    assert_eq!(found.len(), 10);
    let after = recall_ids(&node, &["a/b"], "fact after the crash", None).await;
    assert_eq!(after[0], "fact after the crash about the ledger");
    let info = node.get_bank(bank("a/b")).await.unwrap();
    assert_eq!(info.memory_count, 2_001);
    node.shutdown().await;
}

/// Heap bytes of the records of the bank "a/b" in the view registered now, if any.
fn records_bytes(node: &Node) -> Option<u64> {
    node.bank_heap_bytes(&bank("a/b"))
        .and_then(|parts| parts.first().map(|(_, bytes)| *bytes))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_node_keeps_every_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let mut ids = vec![];
    let before;
    {
        let node = Node::start(config(dir.path())).await.unwrap();
        let batch = (0..50)
            .map(|i| write("a/b", &format!("durable memory {i} of the archive")))
            .collect();
        ids.extend(
            node.write_batch(batch)
                .await
                .unwrap()
                .into_iter()
                .map(|o| o.id),
        );
        before = recall_ids(&node, &["a/b"], "durable memory archive", None).await;
        node.shutdown().await;
    }
    let node = Node::start(config(dir.path())).await.unwrap();
    for id in &ids {
        node.get(*id).await.unwrap();
    }
    let after = recall_ids(&node, &["a/b"], "durable memory archive", None).await;
    assert_eq!(before, after);
    node.shutdown().await;
}
