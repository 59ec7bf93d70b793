//! Faults: a crashed bank actor and a restarted node lose no acknowledged write.

use hindsight_node::Node;

use crate::harness::{bank, config, recall_ids, write};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_bank_actor_is_restarted_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(config(dir.path())).await.unwrap();
    for i in 0..30 {
        node.write(write("a/b", &format!("fact {i} about the ledger")))
            .await
            .unwrap();
    }
    node.inject_bank_panic(&bank("a/b")).await.unwrap();
    // The next requests work whether or not the restart has finished.
    node.write(write("a/b", "fact after the crash about the ledger"))
        .await
        .unwrap();
    let found = recall_ids(&node, &["a/b"], "ledger", None).await;
    assert_eq!(found.len(), 10);
    let after = recall_ids(&node, &["a/b"], "fact after the crash", None).await;
    assert_eq!(after[0], "fact after the crash about the ledger");
    let info = node.get_bank(bank("a/b")).await.unwrap();
    assert_eq!(info.memory_count, 31);
    node.shutdown().await;
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
