//! Bad input: invalid requests are refused and change nothing.

use hindsight_core::RecallRequest;
use hindsight_node::{BankPatch, Node, NodeError};

use crate::harness::{bank, config, write};

fn invalid<T>(result: Result<T, NodeError>) -> bool {
    matches!(result, Err(NodeError::Invalid(_)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_requests_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(config(dir.path())).await.unwrap();
    node.create_bank(bank("a/b"), BankPatch::default())
        .await
        .unwrap();
    assert!(invalid(node.write(write("a/b", "  ")).await));
    let huge = "x".repeat(node.config().limits.max_content_bytes + 1);
    assert!(invalid(node.write(write("a/b", &huge)).await));
    let batch = vec![write("a/b", "fine"), write("a/b", "")];
    assert!(
        invalid(node.write_batch(batch).await),
        "one bad item refuses the batch"
    );
    assert!(invalid(
        node.recall(RecallRequest::new(vec![bank("a/b")], "q", 0))
            .await
    ));
    assert!(invalid(
        node.recall(RecallRequest::new(vec![bank("a/b")], "q", 1_000_000))
            .await
    ));
    assert!(matches!(
        node.recall(RecallRequest::new(vec![bank("no/such")], "q", 5))
            .await,
        Err(NodeError::NotFound(_))
    ));
    assert!(matches!(
        node.create_bank(bank("a/b"), BankPatch::default()).await,
        Err(NodeError::AlreadyExists(_))
    ));
    let patch = BankPatch {
        min_confidence: Some(2.0),
        ..BankPatch::default()
    };
    assert!(invalid(node.update_bank(bank("a/b"), patch).await));
    assert_eq!(node.get_bank(bank("a/b")).await.unwrap().memory_count, 0);
    node.shutdown().await;
}
