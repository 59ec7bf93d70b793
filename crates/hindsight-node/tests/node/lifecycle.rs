//! Lifecycle of a memory: working-memory TTLs and soft and hard forgetting.

use hindsight_core::{Kind, RecallRequest, Status};
use hindsight_node::{Node, NodeError};

use crate::harness::{bank, config, recall_ids, ts, write};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn working_memory_expires_by_ttl_and_review_records_it() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(config(dir.path())).await.unwrap();
    let mut short = write("a/b", "I have a cold today, keep meetings short");
    short.kind = Kind::Working;
    short.occurred_at = Some(ts("2026-02-10T10:00:00Z"));
    short.ttl_secs = Some(3 * 86_400);
    let id = node.write(short).await.unwrap().id;
    let stored = node.get(id).await.unwrap();
    assert_eq!(stored.expires_at, Some(ts("2026-02-13T10:00:00Z")));

    let alive = recall_ids(
        &node,
        &["a/b"],
        "cold meetings",
        Some(ts("2026-02-11T00:00:00Z")),
    )
    .await;
    assert_eq!(alive.len(), 1);
    let gone = recall_ids(
        &node,
        &["a/b"],
        "cold meetings",
        Some(ts("2026-02-14T00:00:00Z")),
    )
    .await;
    assert!(
        gone.is_empty(),
        "expired memories are not recalled as of later times"
    );

    let report = node
        .review(bank("a/b"), Some(ts("2026-02-14T00:00:00Z")))
        .await
        .unwrap();
    assert_eq!(report.expired, vec![id]);
    let expired = node.get(id).await.unwrap();
    assert_eq!(expired.status, Status::Expired);
    // Point in time: before expiry it was active, and recall as of then still finds it.
    let before = recall_ids(
        &node,
        &["a/b"],
        "cold meetings",
        Some(ts("2026-02-11T00:00:00Z")),
    )
    .await;
    assert_eq!(before.len(), 1);
    let again = node
        .review(bank("a/b"), Some(ts("2026-02-15T00:00:00Z")))
        .await
        .unwrap();
    assert!(again.expired.is_empty(), "a second review changes nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn working_memory_gets_the_default_ttl() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(config(dir.path())).await.unwrap();
    let mut task = write("a/b", "step 3 of the migration is running");
    task.kind = Kind::Working;
    task.occurred_at = Some(ts("2026-03-01T00:00:00Z"));
    let id = node.write(task).await.unwrap().id;
    assert_eq!(
        node.get(id).await.unwrap().expires_at,
        Some(ts("2026-03-02T00:00:00Z"))
    );
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soft_forget_hides_and_hard_forget_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(config(dir.path())).await.unwrap();
    let id = node
        .write(write("a/b", "the office wifi password hint is blue"))
        .await
        .unwrap()
        .id;
    node.forget(id, false, String::new()).await.unwrap();
    assert_eq!(node.get(id).await.unwrap().status, Status::Archived);
    assert!(recall_ids(&node, &["a/b"], "wifi password hint", None)
        .await
        .is_empty());
    let mut with_history = RecallRequest::new(vec![bank("a/b")], "wifi password hint", 5);
    with_history.include_history = true;
    assert_eq!(node.recall(with_history).await.unwrap().hits.len(), 1);
    node.forget(id, true, "user asked".into()).await.unwrap();
    assert!(matches!(node.get(id).await, Err(NodeError::NotFound(_))));
    assert!(matches!(node.trace(id).await, Err(NodeError::NotFound(_))));
    node.shutdown().await;
}
